# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One validation_report task: its options, their checks and its result, whoever runs it.

The action plugin (plugins/action/validation_report.py) runs it inside the
controller's worker process, with no module process of its own; the module
(plugins/modules/validation_report.py) runs the same function where it is
executed as a module.  ``write`` returns the task's result: ``failed: true``
and ``msg`` on failure.  No Ansible import; matplotlib (through html_report)
is imported only when a report is written, so the plugin loads light.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import json
import os
import time

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence, prediction, report, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import failure

ARGUMENT_SPEC = dict(
    root=dict(type='path', required=True),
    timestamp=dict(type='str', required=True),
    nodes=dict(type='dict', required=True),
    sender=dict(type='dict', default={}),
    prediction=dict(type='dict', default={}),
    hosts=dict(type='list', elements='str', default=[]),
    textfile_dir=dict(type='path'),
)
# The run's textfile in node_exporter's textfile directory (drift_report writes netval_drift.prom beside it).
TEXTFILE_NAME = 'netval_validate.prom'
# Why a host of the run has no entry in the report's nodes.
NOT_REPORTED = 'the node\'s result never reached the report'



def cause_texts(node):
    return [cause['detail'] if isinstance(cause, dict) else cause for cause in node.get('causes') or []]


def input_problems(params, html_report):
    """Every problem with the input, each naming its field, before anything is written."""
    problems = checks.control_characters({'root': params['root'], 'textfile_dir': params['textfile_dir'] or ''})
    if not checks.fullmatch(evidence.STAMP_RE, params['timestamp']):
        problems.append('timestamp %r must look like 20261130T014500Z (UTC)' % (params['timestamp'],))
    for name in sorted(params['nodes'], key=str):
        problems.append(checks.check_path_component('nodes key %r' % (name,), name))
    for index, name in enumerate(params['hosts']):
        problems.append(checks.check_path_component('hosts[%d]' % index, name))
    problems = checks.problems_of(problems)
    try:
        html_report.check_nodes(params['nodes'])
        report.check_sender(params['sender'])
    except report.ReportError as exc:
        problems.append(str(exc))
    problems.append(evidence.foreign_link_problem(os.path.join(params['root'], 'latest')))
    return checks.problems_of(problems)


def write(params, check_mode):
    """Write the run's reports as the module documents; the task's result."""
    from ansible_collections.gpufleet.netval.plugins.module_utils import html_report

    if not html_report.HAS_MATPLOTLIB:
        return dict(failed=True, msg='validation_report: Failed to import the required Python library (matplotlib) on the '
                                     'controller, which draws the report charts (pip install matplotlib): %s'
                                     % (html_report.MATPLOTLIB_IMPORT_ERROR,),
                    **failure('tool_missing'))
    problems = input_problems(params, html_report)
    if problems:
        return checks.invalid_result('validation_report', problems)
    root, stamp, nodes, hosts = params['root'], params['timestamp'], params['nodes'], params['hosts']
    for name, node in nodes.items():
        node.setdefault('node', name)
    for name in hosts:
        if name not in nodes:
            nodes[name] = verdict.incomplete_verdict(name, 'report', NOT_REPORTED)
    run_dir = os.path.join(root, stamp)
    table = report.summary_table(nodes, hosts)
    timing = None
    try:
        started = calendar.timegm(time.strptime(stamp, '%Y%m%dT%H%M%SZ'))
    except ValueError:
        started = None
    if started is not None:
        timing = prediction.compare(params['prediction'], time.time() - started)
    if timing:
        # The prediction plans no re-test: a reject re-tested on a second peer adds peer time it could not know of.
        timing['retested_nodes'] = sorted(name for name in nodes if nodes[name].get('retested_against'))
        table += 'run: predicted %.0f s (without re-tests), took %.0f s%s%s\n' % (
            timing['predicted_s'], timing['actual_s'], ' (%+.0f %%)' % timing['error_pct'] if timing['error_pct'] is not None else '',
            '; %d node(s) re-tested on a second peer' % len(timing['retested_nodes']) if timing['retested_nodes'] else '')
    letters = ['letters/%s.txt' % name for name in sorted(nodes) if nodes[name]['bucket'] == 'C']
    written = dict(run_dir=run_dir, summary_table=table, letters=[os.path.join(run_dir, p) for p in letters],
                   page=os.path.join(run_dir, 'index.html'), markdown=os.path.join(run_dir, 'summary.md'))
    if params['textfile_dir']:
        written['textfile'] = os.path.join(params['textfile_dir'], TEXTFILE_NAME)
    if check_mode:
        return dict(changed=False, **written)

    summary = {'timestamp': stamp, 'nodes': {}}
    files = {'summary.txt': table, 'junit.xml': report.junit_xml(nodes),
             'netval.prom': report.validation_textfile(nodes, started if started is not None else time.time(), hosts)}
    for name in sorted(nodes):
        node = nodes[name]
        summary['nodes'][name] = {'bucket': node['bucket'], 'causes': cause_texts(node), 'peer': node.get('peer'),
                                  'tier': node.get('tier'), 'evidence': node.get('evidence')}
        files['nodes/%s.json' % name] = json.dumps(node, indent=2, sort_keys=True, default=str)
        files['nodes/%s.md' % name] = report.node_markdown(node)
        if node['bucket'] == 'C':
            files['letters/%s.txt' % name] = report.vendor_letter(node, params['sender'])
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
        if params['textfile_dir']:
            evidence.replace_file(written['textfile'], files['netval.prom'].encode('utf-8'))
    except (evidence.EvidenceError, IOError, OSError) as exc:
        return dict(failed=True, msg='validation_report: cannot write %s: %s' % (run_dir, exc), **failure('unknown_error'))
    return dict(changed=True, **written)
