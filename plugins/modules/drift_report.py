#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: drift_report
short_description: Write a drift run's reports on the controller (JSON, Markdown, JUnit XML, node_exporter textfile)
version_added: 0.1.0
description:
  - Takes every node's drift findings (from P(gpufleet.netval.drift_findings#filter)) and writes C(<root>/<timestamp>/) holding
    C(drift.json), C(nodes/<node>.md), C(junit.xml), C(netval.prom) and a checksum manifest; C(<root>/latest) is then pointed at it.
  - The run folder is written atomically and never overwritten; C(latest) is only replaced when it is a symlink to a run folder.
  - With O(textfile_dir), the node_exporter textfile is also written there as C(netval_drift.prom), replaced atomically (a temporary
    file renamed over the old one), so node_exporter never reads half a file and an alert on the last run's time sees a stale run.
  - Returns the nodes with a red finding; the playbook fails the run on them.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  root:
    description: Folder of the run folders (the reports root validate.yml uses).
    type: path
    required: true
  timestamp:
    description: The run's UTC stamp, such as C(20261201T030000Z); the run folder's name.
    type: str
    required: true
  nodes:
    description:
      - Node name to C({findings, timestamp, baseline_timestamp}) as drift.yml builds it; revalidate.yml adds C(bucket) and
        C(figure_deltas) (the rows of P(gpufleet.netval.figure_deltas#filter)).
      - "A node whose run broke gives C({run_incomplete: {where, why}, timestamp}) instead of C(findings) (C(why) a message or the
        failed task's result), and a node whose capture never arrived gives null; either is one red C(run_incomplete) finding,
        so every host of the run is in every report."
    type: dict
    required: true
  textfile_dir:
    description: node_exporter's C(--collector.textfile.directory), to expose the run to Prometheus.
    type: path
  kind:
    description:
      - C(drift) writes the run folder C(<root>/<timestamp>/) and points C(latest) at it.
      - C(revalidation) writes C(<root>/<timestamp>/revalidation/) inside the re-validation's own run folder (validate.yml's report
        of the same run), named C(revalidation.json), with each node's figure delta table in its Markdown; C(latest) is left alone.
    type: str
    choices: [drift, revalidation]
    default: drift
attributes:
  check_mode:
    description: Writes nothing in check mode; returns where it would write.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Write the drift reports
  gpufleet.netval.drift_report:
    root: "{{ report_root }}"
    timestamp: "{{ netval_run_timestamp }}"
    nodes: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'netval_drift_node'))) }}"
    textfile_dir: /var/lib/node_exporter/textfile_collector
  delegate_to: localhost
  run_once: true
  register: drift_report_result
'''

RETURN = r'''
run_dir:
  description: The run folder written.
  type: str
  returned: always
  sample: /srv/netval/reports/20261201T030000Z
red_nodes:
  description: The nodes with at least one red finding, sorted.
  type: list
  elements: str
  returned: always
summary_lines:
  description: One line per node, its red, expected and info counts.
  type: list
  elements: str
  returned: always
textfile:
  description: The node_exporter textfile written to O(textfile_dir), when given.
  type: str
  returned: when textfile_dir is given
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import drift
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import drift_writers
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks

TEXTFILE_NAMES = {'drift': 'netval_drift.prom', 'revalidation': 'netval_revalidate.prom'}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', required=True),
            timestamp=dict(type='str', required=True),
            nodes=dict(type='dict', required=True),
            textfile_dir=dict(type='path'),
            kind=dict(type='str', default='drift', choices=['drift', 'revalidation']),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = checks.control_characters({'root': params['root'], 'textfile_dir': params['textfile_dir'] or ''})
    if not checks.fullmatch(evidence.STAMP_RE, params['timestamp']):
        problems.append('timestamp %r must look like 20261130T014500Z (UTC)' % (params['timestamp'],))
    for name in sorted(params['nodes'], key=str):
        problems.append(checks.check_path_component('nodes key %r' % (name,), name))
    problems.append(evidence.foreign_link_problem(os.path.join(params['root'], 'latest')))
    checks.fail_if_invalid(module, 'drift_report', checks.problems_of(problems))
    try:
        nodes = drift_writers.check_nodes(params['nodes'])
        playbook = 'drift' if params['kind'] == 'drift' else 'revalidate'
        files = {'%s.json' % params['kind']: drift_writers.report_json(nodes, params['timestamp']),
                 'junit.xml': drift_writers.junit_xml(nodes), 'netval.prom': drift_writers.textfile(nodes, playbook, params['timestamp'])}
        for name in sorted(nodes):
            files['nodes/%s.md' % name] = drift_writers.node_markdown(name, nodes[name], params['kind'])
    except ValueError as exc:
        checks.fail_if_invalid(module, 'drift_report', [str(exc)])
    red = sorted(name for name, entry in nodes.items() if any(f.get('severity') == drift.RED for f in entry['findings']))
    summary = []
    for name in sorted(nodes):
        counted = drift.counts(nodes[name]['findings'])
        summary.append('%s: %d red, %d expected, %d info' % (name, counted[drift.RED], counted[drift.EXPECTED], counted[drift.INFO]))
    run_dir = os.path.join(params['root'], params['timestamp'])
    if params['kind'] == 'revalidation':
        run_dir = os.path.join(run_dir, 'revalidation')
    result = dict(run_dir=run_dir, red_nodes=red, summary_lines=summary)
    if params['textfile_dir']:
        result['textfile'] = os.path.join(params['textfile_dir'], TEXTFILE_NAMES[params['kind']])
    if module.check_mode:
        module.exit_json(changed=False, **result)
    try:
        evidence.build_bundle(run_dir, files)
        if params['kind'] == 'drift':
            evidence.replace_symlink(os.path.join(params['root'], 'latest'), params['timestamp'])
        if params['textfile_dir']:
            evidence.replace_file(result['textfile'], files['netval.prom'].encode('utf-8'))
    except (evidence.EvidenceError, IOError, OSError) as exc:
        module.fail_json(msg='drift_report: cannot write %s: %s' % (run_dir, exc))
    module.exit_json(changed=True, **result)


if __name__ == '__main__':
    main()
