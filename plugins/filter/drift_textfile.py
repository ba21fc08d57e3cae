# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: drift_textfile
short_description: A drift run as a Prometheus node_exporter textfile
version_added: 0.1.0
description:
  - Returns the text exposition format, with C(HELP) and C(TYPE) lines, of three gauges.
  - C(netval_drift_findings{node,check,severity}) - how many findings of each severity (red, expected, info) a node has for each
    check it has findings for (zeros included, so an alert on C(severity="red") sees a check clear).
  - C(netval_node_bucket{node,bucket}) - 1 for the node's bucket (A, B or C) and 0 for the others, for nodes given a C(bucket).
  - C(netval_last_run_timestamp_seconds{node,playbook}) - when the playbook last ran for the node.
  - Label values are escaped as the format requires (backslash, double quote, line feed).
  - Write it where node_exporter's C(--collector.textfile.directory) points with M(ansible.builtin.copy), which replaces the file
    atomically, so node_exporter never reads half a file.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: Node name to C({findings, bucket, timestamp}) or to a list of findings.
    type: dict
    required: true
  playbook:
    description: The playbook that ran (the C(playbook) label).
    type: str
    default: drift
  timestamp:
    description:
      - When it ran, for nodes without their own C(timestamp) - a run stamp such as C(20261202T030000Z), an ISO time or seconds
        since the epoch. A node with neither fails the filter.
    type: raw
'''

EXAMPLES = r'''
- name: Expose the drift run to Prometheus
  ansible.builtin.copy:
    content: "{{ drift_nodes | gpufleet.netval.drift_textfile('drift', netval_run_timestamp) }}"
    dest: /var/lib/node_exporter/textfile_collector/netval.prom
    mode: "0644"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
_value:
  description: The textfile's content.
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.drift import DriftError
from ansible_collections.gpufleet.netval.plugins.module_utils.drift_report import textfile


def drift_textfile(nodes, playbook='drift', timestamp=None):
    try:
        return textfile(nodes, playbook, timestamp)
    except DriftError as exc:
        raise AnsibleFilterError('drift_textfile: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'drift_textfile': drift_textfile}
