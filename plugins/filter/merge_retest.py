# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: merge_retest
short_description: Merge a second peer's re-test into the first peer's measurements
version_added: 0.1.0
description:
  - The second peer's figures for every metric it re-measured, the first peer's for every other metric.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The first peer's measurements.
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
- name: Merge
  ansible.builtin.set_fact:
    measurements: "{{ first_measurements | gpufleet.netval.merge_retest(second_measurements) }}"
'''

RETURN = r'''
_value:
  description: The merged measurements.
  type: list
  elements: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import merge_retest


class FilterModule(object):
    def filters(self):
        return {'merge_retest': merge_retest}
