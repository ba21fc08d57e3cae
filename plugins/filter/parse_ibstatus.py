# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ibstatus
short_description: Parse the output of ibstatus
version_added: 0.1.0
description:
  - Reads the output of the C(ibstatus) script (infiniband-diags) into devices and ports.
  - C(state) is the kernel word (C(ACTIVE)) with C(state_code) (4); C(phys_state) C(LinkUp) with C(phys_state_code) (5).
  - C(rate_gbps) comes from the kernel rate text, kept as C(rate_text); RoCE 100G reads C(100 Gb/sec (4X EDR)).
  - Values ibstatus prints as C(unknown) are null.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ibstatus).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Show the rate of mlx5_0 port 1 from a captured ibstatus output
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'ibstatus.txt') | gpufleet.netval.parse_ibstatus).devices.mlx5_0.ports[1].rate_gbps }}"
'''

RETURN = r'''
_value:
  description: >-
    C(devices) - name to C(ports) - number to C(default_gid), C(base_lid), C(sm_lid), C(state), C(state_code),
    C(phys_state), C(phys_state_code), C(rate_gbps), C(rate_text), C(width), C(speed), C(link_layer) and C(warnings).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.rdma import parse_ibstatus
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ibstatus': as_filter('parse_ibstatus', parse_ibstatus)}
