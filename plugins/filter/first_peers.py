# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: first_peers
short_description: The known-good peers a node may be measured against first
version_added: 0.1.0
description:
  - The node's explicit C(netval_peer) alone when it is healthy (the operator chose it, for example the box at the other end
    of a cable); otherwise every healthy peer, in preference order, so the node takes whichever frees first.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The healthy peers in preference order (the run record's C(healthy_peers)).
    type: list
    elements: str
    required: true
  explicit:
    description: The node's C(netval_peer), if set.
    type: str
'''

EXAMPLES = r'''
- name: Peers to wait for
  ansible.builtin.set_fact:
    candidates: "{{ netval_run.healthy_peers | gpufleet.netval.first_peers(netval_peer | default('')) }}"
'''

RETURN = r'''
_value:
  description: Peer names.
  type: list
  elements: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import first_peers


class FilterModule(object):
    def filters(self):
        return {'first_peers': first_peers}
