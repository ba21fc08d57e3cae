# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ibv_devinfo
short_description: Parse the output of ibv_devinfo
version_added: 0.1.0
description:
  - Reads the output of C(ibv_devinfo) or C(ibv_devinfo -v) (libibverbs utilities) into devices and ports.
  - Port C(state) is the verbs word (C(PORT_ACTIVE)) with C(state_code) (4); MTUs are in bytes.
  - Every other line of the form C(key) colon C(value) is kept as printed under C(fields); C(-v) GID lines become C(gids).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ibv_devinfo).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Firmware of mlx5_0 from a captured ibv_devinfo output
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'ibv_devinfo.txt') | gpufleet.netval.parse_ibv_devinfo).devices.mlx5_0.fw_ver }}"
'''

RETURN = r'''
_value:
  description: >-
    C(devices) - hca_id to C(transport), C(transport_code), C(fw_ver), C(node_guid), C(sys_image_guid), C(vendor_id),
    C(vendor_part_id), C(hw_ver), C(board_id), C(phys_port_cnt), C(fields) and C(ports) - number to C(state), C(state_code),
    C(max_mtu), C(active_mtu), C(sm_lid), C(port_lid), C(port_lmc), C(link_layer), C(phys_state), C(phys_state_code),
    C(active_width), C(active_speed), C(gids), C(fields).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.rdma import parse_ibv_devinfo
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ibv_devinfo': as_filter('parse_ibv_devinfo', parse_ibv_devinfo)}
