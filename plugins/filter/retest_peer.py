# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: retest_peer
short_description: The peer that should re-test a node before a reject is final, or an empty string
version_added: 0.1.0
description:
  - Once, when enabled, for a bucket C node with a reject among the figures a second peer re-measures (the test catalogue's
    C(retest) tests, every test that depends on the peer or the cable to it, not NCCL), the first healthy peer not yet tried.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's verdict (C(verdict_node_result)).
    type: dict
    required: true
  healthy:
    description: Healthy peers, in preference order.
    type: list
    elements: str
    required: true
  tried:
    description: Peers that already measured this node.
    type: list
    elements: str
    required: true
  enabled:
    description: Whether re-tests are allowed.
    type: bool
    default: true
'''

EXAMPLES = r'''
- name: Decide on a re-test
  ansible.builtin.set_fact:
    second_peer: "{{ verdict_node_result | gpufleet.netval.retest_peer(healthy_peers, [netval_peer_host]) }}"
'''

RETURN = r'''
_value:
  description: A peer name, or an empty string when no re-test should happen.
  type: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import retest_peer


class FilterModule(object):
    def filters(self):
        return {'retest_peer': retest_peer}
