#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_report
short_description: Write a validation run's reports on the controller
version_added: 0.1.0
description:
  - "Writes, under C(<root>/<timestamp>/): C(summary.json) with C({nodes: {NAME: {bucket, causes, peer}}}), C(summary.txt) (a table),
    C(junit.xml) (one test case per check), C(nodes/<node>.json) and C(nodes/<node>.md) for every node,
    and C(letters/<node>.txt) (the vendor letter) for every bucket C node."
  - "C(index.html): one self-contained page (no script, style, font or image from elsewhere; it works from C(file://)):
    the nodes by bucket with their causes in a sortable table, a node x peer heatmap of per-HCA bandwidth when several peers
    produced figures, and per node what is not healthy, charts of its per-HCA host-memory and GPUDirect RDMA figures and its
    node-level throughput against the healthy range and reject line, the message-size sweep and the baseline history when
    present, and links to its evidence bundle and vendor letter. The charts are drawn by matplotlib as inline SVG."
  - C(summary.md) holds the same facts in Markdown, for chat and tickets.
  - The run folder is written atomically and never overwritten; C(<root>/latest) is then pointed at it. C(latest) is only
    replaced when it is this module's symlink to a run folder; a file, a directory or another symlink of that name is an error,
    reported before anything is written.
  - Malformed input (a node result that is not a dict, a cause without C(cause) or C(detail), a test given as text,
    C(findings) that is not a list...) fails with a message naming each field; nothing is written.
  - C(junit.xml) is well-formed XML whatever the text; characters XML 1.0 cannot hold are written as backslash escapes such as C(\x01).
  - "Runs where the reports live, normally the controller (C(delegate_to: localhost), C(run_once: true))."
author:
  - gpufleet.netval maintainers (@gpufleet)
requirements:
  - matplotlib (on the host that runs the module, normally the controller)
options:
  root:
    description: Folder that holds every run's reports.
    type: path
    required: true
  timestamp:
    description: UTC timestamp of the run, such as C(20261130T014500Z).
    type: str
    required: true
  nodes:
    description:
      - Node name (one file name) to node result (bucket, causes, peer, tests, findings, ...).
      - C(tests), C(findings), C(causes) and C(ruled_out) must be lists when present; a cause is text or a dict with C(cause) and C(detail).
      - "Charted figures (C(value)) must be numbers or null and their C(threshold) well-formed. Optional: C(tests[].sweep), a list
        of C({bytes, value}) per message size, and C(history), a list of C({timestamp, figures: {test id: value}}) of the node's
        baseline, oldest first."
    type: dict
    required: true
  sender:
    description: C(signature) for the vendor letters.
    type: dict
    default: {}
  prediction:
    description:
      - The run's prediction made before its tests started (P(gpufleet.netval.run_prediction#filter)); the summary then gives
        predicted against actual (seconds since O(timestamp)) in C(summary.json)'s C(prediction) and the summary table, with
        the nodes re-tested on a second peer (time the prediction, which plans no re-test, could not know of).
    type: dict
    default: {}
attributes:
  check_mode:
    description: Writes nothing in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Write the run's reports
  gpufleet.netval.validation_report:
    root: "{{ playbook_dir }}/../reports"
    timestamp: "{{ netval_run_timestamp }}"
    nodes: "{{ node_results }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
run_dir:
  description: The run's report folder.
  returned: always
  type: str
summary_table:
  description: The summary table as text.
  returned: always
  type: str
letters:
  description: Paths of the vendor letters written.
  returned: always
  type: list
  elements: str
page:
  description: Path of the run's C(index.html).
  returned: always
  type: str
markdown:
  description: Path of the run's C(summary.md).
  returned: always
  type: str
'''

import calendar
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence, html_report, prediction, report
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks


def cause_texts(node):
    return [cause['detail'] if isinstance(cause, dict) else cause for cause in node.get('causes') or []]


def check_input(module):
    """Every problem with the input, each naming its field, before anything is written."""
    params = module.params
    problems = checks.control_characters({'root': params['root']})
    if not checks.fullmatch(evidence.STAMP_RE, params['timestamp']):
        problems.append('timestamp %r must look like 20261130T014500Z (UTC)' % (params['timestamp'],))
    for name in sorted(params['nodes'], key=str):
        problems.append(checks.check_path_component('nodes key %r' % (name,), name))
    problems = checks.problems_of(problems)
    try:
        html_report.check_nodes(params['nodes'])
        report.check_sender(params['sender'])
    except report.ReportError as exc:
        problems.append(str(exc))
    problems.append(evidence.foreign_link_problem(os.path.join(params['root'], 'latest')))
    checks.fail_if_invalid(module, 'validation_report', checks.problems_of(problems))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', required=True),
            timestamp=dict(type='str', required=True),
            nodes=dict(type='dict', required=True),
            sender=dict(type='dict', default={}),
            prediction=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    if not html_report.HAS_MATPLOTLIB:
        module.fail_json(msg=missing_required_lib('matplotlib'), exception=html_report.MATPLOTLIB_IMPORT_ERROR)
    check_input(module)
    root = module.params['root']
    stamp = module.params['timestamp']
    nodes = module.params['nodes']
    for name, node in nodes.items():
        node.setdefault('node', name)
    run_dir = os.path.join(root, stamp)
    table = report.summary_table(nodes)
    timing = None
    try:
        started = calendar.timegm(time.strptime(stamp, '%Y%m%dT%H%M%SZ'))
    except ValueError:
        started = None
    if started is not None:
        timing = prediction.compare(module.params['prediction'], time.time() - started)
    if timing:
        # The prediction plans no re-test: a reject re-tested on a second peer adds peer time it could not know of.
        timing['retested_nodes'] = sorted(name for name in nodes if nodes[name].get('retested_against'))
        table += 'run: predicted %.0f s (without re-tests), took %.0f s%s%s\n' % (
            timing['predicted_s'], timing['actual_s'], ' (%+.0f %%)' % timing['error_pct'] if timing['error_pct'] is not None else '',
            '; %d node(s) re-tested on a second peer' % len(timing['retested_nodes']) if timing['retested_nodes'] else '')
    letters = ['letters/%s.txt' % name for name in sorted(nodes) if nodes[name]['bucket'] == 'C']
    written = dict(run_dir=run_dir, summary_table=table, letters=[os.path.join(run_dir, p) for p in letters],
                   page=os.path.join(run_dir, 'index.html'), markdown=os.path.join(run_dir, 'summary.md'))
    if module.check_mode:
        module.exit_json(changed=False, **written)

    summary = {'timestamp': stamp, 'nodes': {}}
    files = {'summary.txt': table, 'junit.xml': report.junit_xml(nodes)}
    for name in sorted(nodes):
        node = nodes[name]
        summary['nodes'][name] = {'bucket': node['bucket'], 'causes': cause_texts(node), 'peer': node.get('peer'),
                                  'tier': node.get('tier'), 'evidence': node.get('evidence')}
        files['nodes/%s.json' % name] = json.dumps(node, indent=2, sort_keys=True, default=str)
        files['nodes/%s.md' % name] = report.node_markdown(node)
        if node['bucket'] == 'C':
            files['letters/%s.txt' % name] = report.vendor_letter(node, module.params['sender'])
    summary['suspect_peers'] = report.suspect_peers(nodes)
    summary['prediction'] = timing
    summary['lost_peers'] = report.lost_peers(nodes)
    summary['chain'] = report.validation_chain(nodes)
    summary['promoted'] = report.promoted_nodes(nodes)
    files['summary.json'] = json.dumps(summary, indent=2, sort_keys=True)
    # Links to the evidence bundles are relative to where the page lands.
    files['index.html'] = html_report.render_page(nodes, stamp, os.path.abspath(run_dir))
    files['summary.md'] = html_report.summary_markdown(nodes, stamp, os.path.abspath(run_dir))
    try:
        evidence.build_bundle(run_dir, files)
        evidence.replace_symlink(os.path.join(root, 'latest'), stamp)
    except (evidence.EvidenceError, IOError, OSError) as exc:
        module.fail_json(msg='validation_report: cannot write %s: %s' % (run_dir, exc))
    module.exit_json(changed=True, **written)


if __name__ == '__main__':
    main()
