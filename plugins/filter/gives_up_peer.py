# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: gives_up_peer
short_description: Why a node whose peer-independent tests already failed should not take a known-good peer
version_added: 0.1.0
description:
  - Reads the measurements of the tests a node ran while it waited for a peer (dcgmi diag). A failed GPU diagnostic sends
    the node back to the provider whatever its network measures, so the node gives up its place in the queue; the result
    is the sentence that says so, or an empty string when the node should take a peer.
  - A warning, or a diagnostic that could not run (dcgmi not installed, our gap), keeps the node in the queue.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The measurements of the node's peer-independent tests (validate.yml's C(netval_local_measurements)).
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Leave the queue when the GPU diagnostics already failed
  ansible.builtin.set_fact:
    netval_tests_skipped: "{{ netval_local_measurements | gpufleet.netval.gives_up_peer }}"
  when: netval_local_measurements | gpufleet.netval.gives_up_peer | length > 0
'''

RETURN = r'''
_value:
  description: The reason, naming the failed diagnostics as dcgmi printed them, or an empty string.
  type: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import gives_up_peer


class FilterModule(object):
    def filters(self):
        return {'gives_up_peer': gives_up_peer}
