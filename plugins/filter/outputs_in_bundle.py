# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: outputs_in_bundle
short_description: A node's verdict without the tools' whole outputs, once its evidence bundle holds them
version_added: 0.1.0
description:
  - Takes the node's verdict (C(verdict_node_result)) after its evidence bundle was stored, and returns it with each
    test's whole output (C(raw)) replaced by C(raw_file), the path inside the bundle that holds it. The figures, the
    verbatim lines the vendor letter quotes and the commands stay.
  - The controller keeps every node's verdict until the report, and the raw outputs are most of it.
  - Anything but a verdict with a list of tests is returned as it is, so letting go of memory never costs a node its report.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's verdict.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Let go of the raw outputs the node's bundle now holds
  ansible.builtin.set_fact:
    verdict_node_result: "{{ verdict_node_result | gpufleet.netval.outputs_in_bundle }}"
  when: evidence_location is defined
'''

RETURN = r'''
_value:
  description: The verdict, each test with C(raw_file) (its output's path in the bundle) in place of C(raw).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence


class FilterModule(object):
    def filters(self):
        return {'outputs_in_bundle': evidence.outputs_in_bundle}
