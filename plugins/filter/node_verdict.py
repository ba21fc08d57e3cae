# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: node_verdict
short_description: Grade a node's measurements and preflight findings into a bucket with likely causes
version_added: 0.1.0
description:
  - Grades each measurement against the profile's threshold for its metric (healthy, marginal or reject),
    folds in the preflight findings, and returns the node's bucket (A accept, B investigate, C return to provider)
    with the likely causes read from the pattern of results.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The measurements, a list of dicts with C(id), C(metric), C(subject), C(value), C(unit) and C(as_printed).
    type: list
    elements: dict
    required: true
  findings:
    description: Preflight findings, dicts with C(check), C(subject), C(status) (ok, marginal or reject) and C(detail).
    type: list
    elements: dict
    required: true
  thresholds:
    description: The profile's thresholds, metric name to C(healthy), C(reject_below) or C(reject_above), C(unit), C(direction).
    type: dict
    required: true
  context:
    description: Extra facts for cause detection, such as C(nccl_transport).
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Grade the node
  ansible.builtin.set_fact:
    node_result: "{{ measurements | gpufleet.netval.node_verdict(findings, netval_profile.thresholds, {'nccl_transport': 'IB'}) }}"
'''

RETURN = r'''
_value:
  description: C(bucket), C(tests) (graded measurements), C(findings), C(causes) and C(counts).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.verdict import ThresholdError, node_verdict


def _node_verdict(measurements, findings, thresholds, context=None):
    try:
        return node_verdict(measurements or [], findings or [], thresholds or {}, context or {})
    except ThresholdError as exc:
        raise AnsibleFilterError('node_verdict: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'node_verdict': _node_verdict}
