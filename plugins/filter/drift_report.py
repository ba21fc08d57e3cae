# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: drift_report
short_description: The drift run's report as JSON text
version_added: 0.1.0
description:
  - "Returns JSON text C({schema, schema_version, generated, summary, nodes: {NAME: {findings, counts, status, ...}}}): per node
    its findings, C(counts) (red, expected, info), C(status) (red, changed or clean) and every other key the input gave it
    (bucket, timestamps, figure_deltas); C(summary) has the totals, the number of nodes and C(red_nodes)."
  - Malformed input (nodes not a dict, findings not a list, a finding without its keys or with another severity) fails with a
    message naming each field.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description:
      - Node name to C({findings, bucket, timestamp, baseline_timestamp, figure_deltas, ...}) or to a list of findings
        (P(gpufleet.netval.drift_findings#filter)).
    type: dict
    required: true
  generated:
    description: When the report was made (the run stamp), written as C(generated).
    type: str
'''

EXAMPLES = r'''
- name: Write the drift report
  ansible.builtin.copy:
    content: "{{ drift_nodes | gpufleet.netval.drift_report(netval_run_timestamp) }}"
    dest: "{{ playbook_dir }}/../reports/drift/{{ netval_run_timestamp }}.json"
    mode: "0644"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
_value:
  description: The report as JSON text (sorted keys, two-space indent, a final newline).
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.drift import DriftError
from ansible_collections.gpufleet.netval.plugins.module_utils.drift_report import report_json


def drift_report(nodes, generated=None):
    try:
        return report_json(nodes, generated)
    except DriftError as exc:
        raise AnsibleFilterError('drift_report: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'drift_report': drift_report}
