# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: retest_tests
short_description: The tests a second known-good peer re-runs for a node
version_added: 0.1.0
description:
  - The test catalogue's re-testable tests (those that depend on the peer or the cable to it) among which the node's verdict
    has a reject, in run order. What passed against the first peer needs no second look.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's verdict (C(verdict_node_result)).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: What the second peer re-runs
  ansible.builtin.set_fact:
    again: "{{ verdict_node_result | gpufleet.netval.retest_tests }}"
'''

RETURN = r'''
_value:
  description: Test names of the catalogue.
  type: list
  elements: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import retest_tests


class FilterModule(object):
    def filters(self):
        return {'retest_tests': retest_tests}
