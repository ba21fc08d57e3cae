# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: peer_findings
short_description: The finding that a node has no qualified known-good peer
version_added: 0.1.0
description:
  - Empty when one of the node's candidate peers is qualified (P(gpufleet.netval.qualify_peers#filter)); otherwise one finding
    C(peer_health) (unknown and blocking; the node cannot be measured, never its fault) naming why each candidate was not.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The peers' qualification.
    type: dict
    required: true
  order:
    description: The node's candidate peers in its order of preference.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Say why the node has no peer
  ansible.builtin.set_fact:
    netval_peer_findings: "{{ netval_peer_qualification | gpufleet.netval.peer_findings(netval_peer_candidates) }}"
'''

RETURN = r'''
_value:
  description: No finding, or the one peer_health finding.
  type: list
  elements: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import peer_findings


class FilterModule(object):
    def filters(self):
        return {'peer_findings': peer_findings}
