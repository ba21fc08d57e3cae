# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One validation_report task: its options, their checks and its result, whoever runs it.

The action plugin (plugins/action/validation_report.py) runs it inside the
controller's worker process, with no module process of its own; the module
(plugins/modules/validation_report.py) runs the same function where it is
executed as a module.  ``write`` returns the task's result: ``failed: true``
and ``msg`` on failure.  No Ansible import; matplotlib (through html_report)
is imported only when a report is written, so the plugin loads light, and a
controller without it still writes every report (the page without charts).

Every node's result goes through the trust boundary (node_input) first, and
each node's outputs are built on their own: a node whose data breaks a writer
gets its run_incomplete verdict instead, and the other nodes' reports are
written as they are.

Once every node is known, the nodes are compared with each other and with the accepted fleet's baselines (policy/fleet.py:
a figure far below its siblings' while it meets the contract is marginal, fleet_outlier, bucket B at worst; the node,
peer, peer HCA or rail common to the failing pairs is named), and with ``link_baselines`` each node the report accepts
gets its ``evidence/<node>/baseline`` link (the evidence role wrote its baseline.json; an outlier's is never linked).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import json
import os
import time

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import evidence_reads, node_input
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import fleet, peer_policy, prediction, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report
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
    evidence_dir=dict(type='path'),
    fleet_rules=dict(type='dict', default={}),
    link_baselines=dict(type='bool', default=False),
    peer_qualification=dict(type='list', elements='dict', default=[]),
)
# The run's textfile in node_exporter's textfile directory (drift_report writes netval_drift.prom beside it).
TEXTFILE_NAME = 'netval_validate.prom'
# Why a host of the run has no entry in the report's nodes.
NOT_REPORTED = 'the node\'s result never reached the report'


def cause_texts(node):
    return [cause['detail'] if isinstance(cause, dict) else cause for cause in node.get('causes') or []]


def input_problems(params):
    """Every problem with the task's own options, each naming its field, before anything is written.  The node results
    are not among them: each is checked on its own (node_report), and one that cannot be rendered is that node's
    run_incomplete, never the run's failure."""
    problems = checks.control_characters({'root': params['root'], 'textfile_dir': params['textfile_dir'] or '',
                                          'evidence_dir': params['evidence_dir'] or ''})
    if not checks.fullmatch(evidence.STAMP_RE, params['timestamp']):
        problems.append('timestamp %r must look like 20261130T014500Z (UTC)' % (params['timestamp'],))
    for name in sorted(params['nodes'], key=str):
        problems.append(checks.check_path_component('nodes key %r' % (name,), name))
    for index, name in enumerate(params['hosts']):
        problems.append(checks.check_path_component('hosts[%d]' % index, name))
    problems = checks.problems_of(problems)
    try:
        report.check_sender(params['sender'])
    except report.ReportError as exc:
        problems.append(str(exc))
    problems.append(evidence.foreign_link_problem(os.path.join(params['root'], 'latest')))
    if params['link_baselines'] and not params['evidence_dir']:
        problems.append('link_baselines needs evidence_dir (the folder that holds evidence/<node>/<stamp>)')
    for tier, rules in sorted(params['fleet_rules'].items(), key=lambda kv: str(kv[0])):
        problems.extend('fleet_rules.%s: %s' % (tier, problem) for problem in fleet.rules_errors(rules))
    return checks.problems_of(problems)


def _why(exc):
    """An exception as text: a report's own message names the fields, anything else says what it was."""
    return str(exc) if isinstance(exc, report.ReportError) else '%s: %s' % (type(exc).__name__, exc)


def node_report(name, raw):
    """(the node's result as the reports take it, the node's problems): through the trust boundary
    (node_input.clean_node; its problems a node_data finding), then checked by the writers' own checks; a result they
    cannot take is the node's run_incomplete (incomplete_report) naming each field."""
    clean, problems = node_input.clean_node(name, raw)
    try:
        html_report().check_nodes({name: clean})
    except Exception as exc:  # pylint: disable=broad-except
        return incomplete_report(name, clean, _why(exc), problems), problems
    return node_input.with_problems(clean, problems), problems


def incomplete_report(name, node, why, problems):
    """The run_incomplete verdict (where 'report') of a node whose report could not be built, ``why`` as one visible,
    bounded line; it keeps the node's tier, timestamp and evidence, and its node_data ``problems``."""
    node = node if isinstance(node, dict) else {}
    keep = dict((key, node[key]) for key in ('tier', 'timestamp', 'evidence') if isinstance(node.get(key), str))
    result = verdict.incomplete_verdict(name, 'report', checks.one_line(why)[:4000], tier=keep.pop('tier', None))
    result.update(keep)
    return node_input.with_problems(result, problems)


def html_report():
    """module_utils.html_report, imported when a report is written (it imports matplotlib)."""
    from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import html_report as module
    return module


def node_files(name, node, run_dir, stamp, sender, drawn):
    """Every output of one node, built on its own: {relative path: text} of its files, and ``section`` (its part of
    index.html).  Its parts of summary.txt, junit.xml and summary.md are built too, so that a node that breaks one of
    them breaks here, alone.  Raises whatever a writer raises."""
    page = html_report()
    files = {'nodes/%s.json' % name: json.dumps(node, indent=2, sort_keys=True, default=str),
             'nodes/%s.md' % name: report.node_markdown(node)}
    if node['bucket'] == 'C':
        files['letters/%s.txt' % name] = report.vendor_letter(node, sender)
    report.summary_table({name: node})
    report.junit_xml({name: node})
    page.summary_markdown({name: node}, stamp, run_dir)
    json.dumps(summary_entry(node), sort_keys=True)
    files['section'] = page.node_section(node, run_dir, drawn)
    return files


def summary_entry(node):
    return {'bucket': node['bucket'], 'causes': cause_texts(node), 'peer': node.get('peer'), 'tier': node.get('tier'),
            'evidence': node.get('evidence')}


def compare_with_fleet(nodes, params):
    """The run's nodes compared with each other and the accepted fleet (policy/fleet.py): (nodes with their fleet
    outliers marked, {batches, notes, common_elements}).  A comparison that cannot be made is a note, never the report's
    failure: every node keeps the verdict its contract lines gave it."""
    rules = params['fleet_rules']
    out = {'batches': [], 'notes': [], 'common_elements': []}
    try:
        baselines, problems = evidence_reads.accepted_baselines(params['evidence_dir'], skip=set(nodes))
        out['notes'].extend('fleet: a baseline was left out: %s' % problem for problem in problems)
        analysis = fleet.analyse(nodes, rules, baselines)
        nodes = dict((name, verdict.with_fleet_outliers(node, analysis['marks'].get(name))) for name, node in nodes.items())
        out['common_elements'] = fleet.common_elements(nodes, rules, analysis['low'])
    except Exception as exc:  # pylint: disable=broad-except
        # A node's data that breaks the comparison must not cost any node its report.
        out['notes'].append('fleet: the nodes were not compared with each other: %s' % _why(exc))
        return nodes, out
    out['notes'][:0] = analysis['notes']
    out['batches'] = [fleet.batch_summary(batch) for batch in analysis['batches']]
    return nodes, out


def fleet_lines(compared):
    """summary.txt's lines of the comparison: its notes, then one line per common element."""
    return [checks.one_line(note) for note in compared['notes']] + [
        checks.one_line('common element: %s' % c['detail']) for c in compared['common_elements']]


def link_baselines(nodes, params):
    """Point evidence/<node>/baseline at this run's bundle for every node the report accepts: ({node: link}, problems)."""
    linked, problems = {}, []
    for name in sorted(nodes):
        if nodes[name].get('bucket') != verdict.BUCKET_ACCEPT:
            continue
        try:
            link = evidence_reads.link_baseline(params['evidence_dir'], name, params['timestamp'])
        except (evidence.EvidenceError, OSError) as exc:
            problems.append('%s: its baseline link was not moved: %s' % (name, checks.one_line(exc)))
            continue
        if link:
            linked[name] = link
    return linked, problems


def write(params, check_mode):
    """Write the run's reports as the module documents; the task's result."""
    page = html_report()
    problems = input_problems(params)
    if problems:
        return checks.invalid_result('validation_report', problems)
    root, stamp, hosts = params['root'], params['timestamp'], params['hosts']
    run_dir = os.path.join(root, stamp)
    where = os.path.abspath(run_dir)
    nodes, problems = {}, {}
    for name in sorted(params['nodes']):
        nodes[name], problems[name] = node_report(name, params['nodes'][name])
    for name in hosts:
        if name not in nodes:
            nodes[name], problems[name] = verdict.incomplete_verdict(name, 'report', NOT_REPORTED), []
    nodes, compared = compare_with_fleet(nodes, params)
    # Each node's view of the known-good peers (graded for its tier), merged; its text is a peer's, passed through the boundary too.
    qualification, dummy = node_input.clean_value('peer_qualification', peer_policy.merge_qualifications(params.get('peer_qualification') or []))
    drawn, failed = ({}, {}) if check_mode else page.draw_charts(nodes)
    per_node = {}
    for name in sorted(nodes):
        if name in failed:
            nodes[name] = incomplete_report(name, nodes[name], failed[name], problems[name])
        try:
            per_node[name] = node_files(name, nodes[name], where, stamp, params['sender'], drawn.get(name) if page.HAS_MATPLOTLIB else None)
        except Exception as exc:  # pylint: disable=broad-except
            # One node's data never stops another node's report: this node's is its run_incomplete.
            nodes[name] = incomplete_report(name, nodes[name], _why(exc), problems[name])
            per_node[name] = node_files(name, nodes[name], where, stamp, params['sender'], [] if page.HAS_MATPLOTLIB else None)
    table = report.summary_table(nodes, hosts, qualification)
    table += ''.join(line + '\n' for line in fleet_lines(compared))
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
                   page=os.path.join(run_dir, 'index.html'), markdown=os.path.join(run_dir, 'summary.md'),
                   verdicts=dict((name, {'bucket': nodes[name]['bucket'], 'causes': nodes[name].get('causes') or [],
                                         'counts': nodes[name].get('counts') or {}}) for name in sorted(nodes)))
    if params['textfile_dir']:
        written['textfile'] = os.path.join(params['textfile_dir'], TEXTFILE_NAME)
    if check_mode:
        return dict(changed=False, **written)

    summary = {'timestamp': stamp, 'nodes': dict((name, summary_entry(nodes[name])) for name in sorted(nodes))}
    files = {'summary.txt': table, 'junit.xml': report.junit_xml(nodes),
             'netval.prom': report.validation_textfile(nodes, started if started is not None else time.time(), hosts)}
    for name in sorted(nodes):
        files.update((path, text) for path, text in per_node[name].items() if path != 'section')
    summary['suspect_peers'] = report.suspect_peers(nodes)
    summary['prediction'] = timing
    summary['lost_peers'] = report.lost_peers(nodes)
    summary['chain'] = report.validation_chain(nodes)
    summary['promoted'] = report.promoted_nodes(nodes)
    summary['fleet'] = {'batches': compared['batches'], 'notes': compared['notes']}
    summary['common_elements'] = compared['common_elements']
    summary['peer_qualification'] = qualification
    files['summary.json'] = json.dumps(summary, indent=2, sort_keys=True)
    # Links to the evidence bundles are relative to where the page lands.
    files['index.html'] = page.render_page(nodes, stamp, where, sections=dict((name, per_node[name]['section']) for name in nodes),
                                           qualification=qualification)
    files['summary.md'] = page.summary_markdown(nodes, stamp, where, qualification)
    try:
        evidence.build_bundle(run_dir, files)
        evidence.replace_symlink(os.path.join(root, 'latest'), stamp)
        if params['textfile_dir']:
            evidence.replace_file(written['textfile'], files['netval.prom'].encode('utf-8'))
    except (evidence.EvidenceError, IOError, OSError) as exc:
        return dict(failed=True, msg='validation_report: cannot write %s: %s' % (run_dir, exc), **failure('unknown_error'))
    if params['link_baselines']:
        written['baselines'], written['baseline_problems'] = link_baselines(nodes, params)
    return dict(changed=True, **written)
