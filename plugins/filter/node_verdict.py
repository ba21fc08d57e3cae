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
    with the likely causes read from the pattern of results by the rules in C(CAUSE_RULES) of plugins/module_utils/policy/verdict.py.
  - A figure whose test could not run, did not finish or gave unreadable output is C(unknown), never a reject; the node
    goes to bucket B with a cause that says what to fix on our side.
  - With C(context.expected), every figure the test plan expected and no measurement gave becomes an C(unknown) entry;
    a node is in bucket A only when every expected figure exists and is healthy.
  - Every marginal or reject result gets a named cause; one no rule explains is named by the catch-all cause C(unexplained).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description:
      - The measurements, dicts with C(id), C(kind), C(metric), C(subject), C(peer), C(value), C(unit), C(as_printed),
        C(error), C(error_class), C(error_side) (C(ours), C(node), C(unknown) or null) and, for dcgmi, C(preset_status).
    type: list
    elements: dict
    required: true
  findings:
    description: Preflight and test findings, dicts with C(check), C(subject), C(status) (healthy, marginal, reject or unknown) and C(detail).
    type: list
    elements: dict
    required: true
  profile:
    description:
      - The resolved tier profile (C(tier_profile_resolved)); the filter reads its C(thresholds), C(cause_rules) and C(tests).
    type: dict
    required: true
  context:
    description:
      - C(expected), the test plan's figures, dicts with C(id), C(metric), C(subject) (null for at least one figure of the metric),
        C(test) and C(reason) (why the plan already knows the figure cannot be measured).
      - C(nccl_transport), the transport the NCCL log shows (C(IB), C(Socket) or null), graded against the profile's
        C(tests.nccl.require_transport) (default C(IB)).
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Grade the node
  ansible.builtin.set_fact:
    node_result: >-
      {{ measurements | gpufleet.netval.node_verdict(findings, tier_profile_resolved,
                                                     {'nccl_transport': 'IB', 'expected': plan_expected}) }}
'''

RETURN = r'''
_value:
  description:
    - C(bucket) (A, B or C), C(tests) (graded measurements with C(status), C(expected) and C(threshold), plus the missing
      figures and the NCCL transport), C(findings), C(causes) (dicts with C(cause), C(detail) and C(subjects)) and
      C(counts) (healthy, marginal, reject, unknown, info).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.verdict import ThresholdError, node_verdict


def _node_verdict(measurements, findings, profile, context=None):
    try:
        return node_verdict(measurements or [], findings or [], profile or {}, context or {})
    except ThresholdError as exc:
        raise AnsibleFilterError('node_verdict: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'node_verdict': _node_verdict}
