# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: drift_findings
short_description: Compare a node's current state with its baseline
version_added: 0.1.0
description:
  - Returns a list of flat findings, red first, each C(check), C(subject), C(severity), C(kind), C(baseline), C(current),
    C(detail) and C(maintenance) (the record's reason when it explains the finding); counter findings add C(growth), C(hours),
    C(rate_per_hour) and C(limit_per_hour).
  - "C(severity) red: a NIC or GPU missing, a port not Active any more or below its rate, a NIC's PCIe LnkSta speed or width
    (or an upstream hop's) dropped, a kernel cmdline token lost, a port flap (link down counter grew), or an error counter
    (symbol and receive errors, pause frames, rx_discards_phy, Xids, uncorrectable ECC) growing faster than its limit per hour."
  - C(severity) expected - a difference that a maintenance record lists with the value it reached. C(severity) info - anything
    else that differs (firmware, mlxconfig, rings, modules, hugepages, ...), unless C(rules.escalate_checks) makes it red.
  - C(kind) fault (something physical got worse), spec_mismatch (the configuration differs from the accepted one),
    baseline_missing or not_captured (a part the capture or the baseline lacks, not compared).
  - A node without a baseline (null or an empty dict) gets one red finding, check C(baseline), kind baseline_missing, so an
    unmonitored node fails the drift check until it is validated; a malformed baseline (not a dict, another schema or
    schema_version) fails the filter with a message saying what was expected.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's baseline document (P(gpufleet.netval.netval_baseline#filter)), or null or {} when it has none.
    type: raw
    required: true
  current:
    description: The node's current state (P(gpufleet.netval.drift_current#filter)).
    type: dict
    required: true
  rules:
    description:
      - The C(drift_rules) mapping (C(tier_profile_resolved.drift_rules); defaults in the tier_profile role) with
        C(counter_limits_per_hour) (per counter class), C(min_window_hours), C(escalate_checks) and C(figure_tolerances).
    type: dict
    required: true
  maintenance:
    description:
      - Optional maintenance record C({reason, changes}) or a list of them; each change C({check, subject, to}) and optionally
        C(from). C(subject) may be a shell pattern such as C(mlx5_*).
      - "Example: C({reason: NIC firmware update, changes: [{check: firmware, subject: mlx5_0, to: 28.40.1000}]})."
    type: raw
'''

EXAMPLES = r'''
- name: Compare with the baseline, a firmware update expected
  ansible.builtin.set_fact:
    drift_node_findings: >-
      {{ drift_baseline | gpufleet.netval.drift_findings(drift_state, tier_profile_resolved.drift_rules,
                                                         {'reason': 'NIC firmware update',
                                                          'changes': [{'check': 'firmware', 'subject': 'mlx5_*', 'to': '28.40.1000'}]}) }}

- name: Fail on red findings
  ansible.builtin.assert:
    that: drift_node_findings | selectattr('severity', 'equalto', 'red') | list | length == 0
    fail_msg: "{{ drift_node_findings | selectattr('severity', 'equalto', 'red') | map(attribute='detail') | list }}"
'''

RETURN = r'''
_value:
  description: The findings, red first, then expected, then info; each sorted by check and subject.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.drift import DriftError, compare


def drift_findings(baseline, current, rules, maintenance=None):
    try:
        return compare(baseline, current, rules, maintenance)
    except DriftError as exc:
        raise AnsibleFilterError('drift_findings: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'drift_findings': drift_findings}
