# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: healthy_peers
short_description: The known-good peers qualified for the run
version_added: 0.1.0
description:
  - Takes the peers' qualification (P(gpufleet.netval.qualify_peers#filter)) and returns the names of the qualified peers,
    sorted, or in the order of O(order). A peer that could not be reached or failed qualification is left out.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The peers' qualification, per peer its C(qualified), C(reasons) and C(notes).
    type: dict
    required: true
  order:
    description:
      - The peers in the order one node prefers them (P(gpufleet.netval.peer_order#filter)); the result keeps that order and
        leaves out peers not in it, so one qualification per peer serves every node of the run.
    type: list
    elements: str
'''

EXAMPLES = r'''
- name: Keep the healthy peers
  ansible.builtin.set_fact:
    usable_peers: "{{ peer_qualification | gpufleet.netval.healthy_peers }}"

- name: The same, in this node's order of preference
  ansible.builtin.set_fact:
    usable_peers: "{{ peer_qualification | gpufleet.netval.healthy_peers(netval_peer_candidates) }}"
'''

RETURN = r'''
_value:
  description: Peer names.
  type: list
  elements: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import healthy_peers


class FilterModule(object):
    def filters(self):
        return {'healthy_peers': healthy_peers}
