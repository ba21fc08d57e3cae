# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: first_peer_tests
short_description: The first peer's graded results of the metrics a second peer re-measured
version_added: 0.1.0
description:
  - Keeps the first peer's results next to the second peer's, so the report and the letter show both.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The first verdict's C(tests).
    type: list
    elements: dict
    required: true
  second:
    description: The second peer's measurements.
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Keep the first peer's figures
  ansible.builtin.set_fact:
    first_tests: "{{ first_result.tests | gpufleet.netval.first_peer_tests(second_measurements) }}"
'''

RETURN = r'''
_value:
  description: The first peer's graded results of the re-measured metrics.
  type: list
  elements: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import first_peer_tests


class FilterModule(object):
    def filters(self):
        return {'first_peer_tests': first_peer_tests}
