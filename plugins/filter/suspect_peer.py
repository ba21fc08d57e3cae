# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: suspect_peer
short_description: The first known-good peer as a suspect, when the second peer cleared what it rejected
version_added: 0.1.0
description:
  - After a re-test on a second peer, the figures the first peer rejected and the second found healthy (same metric, same HCA).
  - When there are any, the first peer is suspect (a degraded NIC or cable on the known-good side); a peer suspected by two nodes
    of one run leaves the pool (M(gpufleet.netval.peer_lease) with O(gpufleet.netval.peer_lease#module:state=suspected)).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The first peer's graded results of what was re-tested (C(first_peer_tests) of the node result).
    type: list
    elements: dict
    required: true
  final:
    description: The node's graded results after the re-test (C(verdict_node_result.tests)).
    type: list
    elements: dict
    required: true
  first_peer:
    description: The first peer's name.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Is the first peer suspect?
  ansible.builtin.set_fact:
    suspect: "{{ verdict_node_result.first_peer_tests | gpufleet.netval.suspect_peer(verdict_node_result.tests, 'peer01') }}"
'''

RETURN = r'''
_value:
  description:
    - C({peer, figures}) with one entry per cleared figure (C(metric), C(subject), C(unit), C(first_peer), C(first_value),
      C(first_status), C(second_peer), C(second_value), C(second_status)); an empty dict when the first peer is not suspect.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import suspect_peer


class FilterModule(object):
    def filters(self):
        return {'suspect_peer': suspect_peer}
