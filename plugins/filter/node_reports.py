# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: node_reports
short_description: The run report's per-node results, each with the controller path of its evidence bundle
version_added: 0.1.0
description:
  - Takes the nodes' verdicts (C(verdict_node_result) of each host) and, in the same order, where each node's evidence
    landed on the controller (C(evidence_location), or null when no bundle was fetched), and returns the node name to
    result mapping that P(gpufleet.netval.validation_report#module) writes.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The nodes' verdicts.
    type: list
    elements: dict
    required: true
  evidence:
    description: The controller folder of each node's evidence bundle, in the order of the verdicts.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Gather node results
  ansible.builtin.set_fact:
    nodes: "{{ verdicts | gpufleet.netval.node_reports(evidence_folders) }}"
'''

RETURN = r'''
_value:
  description: Node name to its result (the verdict plus C(evidence) where a bundle exists).
  type: dict
'''

from ansible.errors import AnsibleFilterError


def node_reports(results, evidence):
    if not isinstance(results, list) or not isinstance(evidence, list) or len(results) != len(evidence):
        raise AnsibleFilterError('node_reports: expected two lists of the same length (verdicts, evidence folders), got %r and %r'
                                 % (type(results).__name__, type(evidence).__name__))
    nodes = {}
    for result, location in zip(results, evidence):
        if not isinstance(result, dict) or not result.get('node'):
            raise AnsibleFilterError('node_reports: a verdict without its node name: %r' % (result,))
        nodes[result['node']] = dict(result, evidence=location) if location else dict(result)
    return nodes


class FilterModule(object):
    def filters(self):
        return {'node_reports': node_reports}
