# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: figure_deltas
short_description: Compare a re-validation's figures with the baseline's, per HCA, test and message size
version_added: 0.1.0
description:
  - Returns the rows of a delta table, one per metric, subject and message size, with the baseline and new figure (the mean of
    repeated samples), C(delta), C(delta_pct), the tolerance, the samples' spread and a C(verdict).
  - C(verdict) regression - worse than the baseline by more than the tolerance, even when the new figure still passes the tier;
    improved, within, inconclusive (the samples spread wider than the tolerance), missing (no new figure), new (no baseline figure).
  - Which way is worse comes from the figure's threshold (C(reject_below) - higher is better).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description:
      - The baseline's figures (C(baseline.figures)), a baseline document or a node result.
      - None or an empty mapping (a node never accepted) gives no rows, or with O(as_findings) one red C(baseline_missing) finding.
    type: raw
    required: true
  new:
    description: The re-validation's node result (its C(tests)), or a list of figures; repeated figures of one key are samples.
    type: raw
    required: true
  tolerances:
    description:
      - C(default_pct) and C(metrics), metric name to a percentage or C({pct, abs, by_bytes}) where C(by_bytes) maps a message size
        in bytes to a percentage or C({pct, abs}) (C(tier_profile_resolved.drift_rules.figure_tolerances)).
    type: dict
    required: true
  as_findings:
    description: Return drift findings for the rows that are not within tolerance (a regression is red) instead of the rows.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Delta table of a re-validation against the baseline
  ansible.builtin.set_fact:
    revalidation_rows: >-
      {{ drift_baseline.figures | gpufleet.netval.figure_deltas(verdict_node_result, tier_profile_resolved.drift_rules.figure_tolerances) }}

- name: Regressions only
  ansible.builtin.debug:
    msg: "{{ revalidation_rows | selectattr('verdict', 'equalto', 'regression') | map(attribute='detail') | list }}"
'''

RETURN = r'''
_value:
  description:
    - Rows with C(test), C(metric), C(subject), C(bytes), C(size), C(unit), C(better), C(peer_baseline), C(peer_new), C(baseline),
      C(new), C(delta), C(delta_pct), C(tolerance_pct), C(tolerance_abs), C(spread_pct), C(baseline_spread_pct),
      C(samples_baseline), C(samples_new), C(status_new), C(verdict) and C(detail); or, with O(as_findings), findings.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.drift import DriftError, baseline_missing, compare_figures, figure_findings


def figure_deltas(baseline_figures, new, tolerances, as_findings=False):
    if baseline_figures in (None, {}, ''):
        # A node never accepted has nothing to compare: no rows, and one red baseline finding.
        node = new.get('node') if isinstance(new, dict) else None
        return [baseline_missing(node)] if as_findings else []
    try:
        rows = compare_figures(baseline_figures, new, tolerances)
    except DriftError as exc:
        raise AnsibleFilterError('figure_deltas: %s' % exc)
    return figure_findings(rows) if as_findings else rows


class FilterModule(object):
    def filters(self):
        return {'figure_deltas': figure_deltas}
