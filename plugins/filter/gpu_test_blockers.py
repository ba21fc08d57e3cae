# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: gpu_test_blockers
short_description: The tests a failed GPU prerequisite rules out, with why
version_added: 0.1.0
description:
  - From a node's preflight findings, the tests that cannot run because a GPU prerequisite failed (no GPUDirect path rules out
    the GPUDirect test; an NVSwitch fabric not ready rules out GPUDirect, NCCL and dcgmi; the DCGM host engine down rules out
    dcgmi), each with the
    finding's words. The test plan expects their figures with that reason and runs nothing.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's preflight findings.
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Tests the node cannot run
  ansible.builtin.set_fact:
    blocked: "{{ preflight_findings | gpufleet.netval.gpu_test_blockers }}"
'''

RETURN = r'''
_value:
  description: "{test name: reason}"
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import gpu_test_blockers


class FilterModule(object):
    def filters(self):
        return {'gpu_test_blockers': gpu_test_blockers}
