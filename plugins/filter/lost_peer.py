# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: lost_peer
short_description: Whether the known-good peer went away during a step of a node's tests
version_added: 0.1.0
description:
  - Reads the results a step's tasks registered (with C(ignore_unreachable) on the tasks that run on the peer) and says
    whether one of them could not reach the peer. The tier_tests role then stops the node's tests on that peer, and
    validate.yml takes the peer out of the pool for the rest of the run and reschedules the node on another one.
  - A task on the node that could not reach the node is not the peer's doing and is ignored here.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The peer the node is tested on.
    type: str
    required: true
  steps:
    description: One C([result, on_peer, step]) per task of the step - its registered result, whether it ran on the peer, what it did.
    type: list
    elements: list
    required: true
'''

EXAMPLES = r'''
- name: Note when the peer went away while the servers started
  ansible.builtin.set_fact:
    tier_tests_peer_lost: "{{ netval_peer_host | gpufleet.netval.lost_peer([[servers, true, 'start the servers']]) }}"
'''

RETURN = r'''
_value:
  description: C({peer, step, detail}) for the first result that could not reach the peer, else an empty dict.
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import PeerPolicyError, lost_peer


def lost_peer_filter(peer, steps):
    try:
        return lost_peer(peer, steps)
    except PeerPolicyError as exc:
        raise AnsibleFilterError('lost_peer: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'lost_peer': lost_peer_filter}
