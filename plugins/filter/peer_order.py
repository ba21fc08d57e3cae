# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: peer_order
short_description: The known-good peers to try for a node, best first
version_added: 0.1.0
description:
  - The node's explicit C(netval_peer) first when set; otherwise nodes are spread round-robin over the sorted peers by their
    position among the run's sorted nodes. Every other peer follows, sorted, as a fallback.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's inventory name.
    type: str
    required: true
  nodes:
    description: Every node of the run (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  peers:
    description: The known-good peers (C(groups['known_good_peers'])).
    type: list
    elements: str
    required: true
  explicit:
    description: The node's C(netval_peer), if set.
    type: str
'''

EXAMPLES = r'''
- name: Order the peers
  ansible.builtin.set_fact:
    peers_to_try: "{{ inventory_hostname | gpufleet.netval.peer_order(ansible_play_hosts_all, groups['known_good_peers'], netval_peer | default('')) }}"
'''

RETURN = r'''
_value:
  description: Peer names, the preferred one first.
  type: list
  elements: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import PeerPolicyError, peer_order


def _peer_order(node, nodes, peers, explicit=None):
    try:
        return peer_order(node, nodes, peers, explicit)
    except PeerPolicyError as exc:
        raise AnsibleFilterError('peer_order: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'peer_order': _peer_order}
