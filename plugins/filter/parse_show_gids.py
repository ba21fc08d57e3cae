# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_show_gids
short_description: Parse the output of show_gids
version_added: 0.1.0
description:
  - Reads the GID table printed by the C(show_gids) script (MLNX_OFED / DOCA-OFED).
  - C(roce_v2_ipv4) gives, per device, the first GID that is RoCE v2 with an IPv4 address - the GID index for perftest C(-x) and C(NCCL_IB_GID_INDEX).
  - C(complete) is false when the C(n_gids_found=) trailer is missing (truncated output) or does not match the rows.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(show_gids).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: GID index to use on mlx5_0
  ansible.builtin.set_fact:
    gid_index: "{{ (show_gids_out.stdout | gpufleet.netval.parse_show_gids).roce_v2_ipv4.mlx5_0.index }}"
'''

RETURN = r'''
_value:
  description: >-
    C(gids) (list of C(device), C(port), C(index), C(gid), C(ipv4), C(roce_version), C(netdev)), C(roce_v2_ipv4) (device to
    C(port), C(index), C(ipv4), C(netdev)), C(n_gids_found) and C(complete).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.rdma import parse_show_gids
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_show_gids': as_filter('parse_show_gids', parse_show_gids)}
