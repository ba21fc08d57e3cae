# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ibstat
short_description: Parse the output of ibstat
version_added: 0.1.0
description:
  - Reads the output of C(ibstat) (infiniband-diags) into devices and ports.
  - C(state) and C(physical_state) are ibstat's words (C(Active), C(Down), C(LinkUp), C(Polling), C(Disabled)...); C(rate_gbps) is its C(Rate) in Gb/s.
  - ibstat prints a rate for ports that are down too; it is a link speed only where the state is C(Active).
  - Fields cut off by a truncated output are null; a CA whose ports were cut off has no ports.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ibstat).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Every port of a captured ibstat output must be Active
  ansible.builtin.assert:
    that: >-
      (ibstat_text | gpufleet.netval.parse_ibstat).devices | dict2items
      | map(attribute='value.ports') | map('dict2items') | flatten
      | rejectattr('value.state', 'equalto', 'Active') | list | length == 0
  vars:
    ibstat_text: "{{ lookup('ansible.builtin.file', 'ibstat.txt') }}"
'''

RETURN = r'''
_value:
  description: >-
    C(devices) - name to C(ca_type), C(number_of_ports), C(firmware_version), C(hardware_version), C(node_guid),
    C(system_image_guid) and C(ports) - number to C(state), C(physical_state), C(rate_gbps), C(base_lid), C(lid), C(sm_lid),
    C(capability_mask), C(port_guid), C(link_layer).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.rdma import parse_ibstat
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ibstat': as_filter('parse_ibstat', parse_ibstat)}
