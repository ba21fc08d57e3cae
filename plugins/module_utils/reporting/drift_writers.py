# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a drift run for people, CI and Prometheus: the report JSON, per-node Markdown, JUnit XML and a
node_exporter textfile.

Every writer takes ``nodes``: ``{NAME: {findings: [...], bucket, timestamp, baseline_timestamp, figure_deltas, ...}}``
(a bare list of findings for a node is accepted too) and returns text; nothing here writes a file.  Put the text in
place with ``ansible.builtin.copy`` (atomic) or ``evidence.replace_file``: node_exporter must never read a half
written ``.prom`` file.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.gpufleet.netval.plugins.module_utils.failures import failure_text
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline as base
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import node_input
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import drift
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import prometheus
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting.report import markdown_text, xml_text

REPORT_SCHEMA = 'gpufleet.netval/drift-report'
REPORT_SCHEMA_VERSION = 1
BUCKETS = ('A', 'B', 'C')
_FINDING_KEYS = ('check', 'subject', 'severity', 'kind', 'baseline', 'current', 'detail')


def _type_name(value):
    return 'null' if value is None else type(value).__name__


def _node_data_finding(problems):
    """The red finding of a node whose data node_input had to bound or make visible (the node returned it)."""
    what = node_input.problems_text(problems)
    return {'check': node_input.NODE_DATA, 'subject': 'node result', 'severity': drift.RED, 'kind': node_input.NODE_DATA,
            'baseline': None, 'current': what,
            'detail': 'The node returned data the controller does not take as it is (%s); look at the node before trusting '
                      'this comparison.' % what}


def check_nodes(nodes):
    """``nodes`` normalized to {name: {findings: [...], ...}}; DriftError naming every malformed field.

    What the nodes returned is in the findings (device names, firmware strings, kernel-log lines): every entry goes
    through node_input.clean_value (text visible and bounded, nesting and sizes bounded), and a node whose data had to
    be changed gets a red ``node_data`` finding saying what.
    """
    if not isinstance(nodes, dict):
        raise drift.DriftError('nodes must be a dict of node name to {findings: [...]} (or to a list of findings), got %s' % _type_name(nodes))
    out = {}
    problems = []
    for name in sorted(nodes, key=str):
        where = 'nodes.%s' % name
        if not isinstance(name, str) or not name:
            problems.append('node names must be non-empty text, got %r' % (name,))
            continue
        entry, cleaner = node_input.clean_value(where, nodes[name])
        if entry is None:
            # A host of the run whose capture never reached the report: it stays in every report, red.
            entry = {'run_incomplete': {'where': 'the run', 'why': 'no capture of this node reached the report (it stopped answering '
                                                                   'or a task failed outside the run\'s rescue)'}}
        if isinstance(entry, dict) and isinstance(entry.get('run_incomplete'), dict) and 'findings' not in entry:
            broke = entry['run_incomplete']
            entry = dict(entry, findings=[drift.run_incomplete(broke.get('where'), failure_text(broke.get('why')), entry.get('timestamp'))])
        if cleaner.problems and isinstance(entry, (dict, list)):
            entry = {'findings': entry} if isinstance(entry, list) else dict(entry)
            if isinstance(entry.get('findings'), list):
                entry['findings'] = entry['findings'] + [_node_data_finding(cleaner.problems)]
        if isinstance(entry, list):
            entry = {'findings': entry}
        if not isinstance(entry, dict):
            problems.append('%s must be a dict with findings (or a list of findings), got %s' % (where, _type_name(entry)))
            continue
        findings = entry.get('findings')
        if not isinstance(findings, list):
            problems.append('%s.findings must be a list of findings, got %s' % (where, _type_name(findings)))
            continue
        for index, item in enumerate(findings):
            at = '%s.findings[%d]' % (where, index)
            if not isinstance(item, dict):
                problems.append('%s must be a dict (a finding), got %s' % (at, _type_name(item)))
                continue
            missing = [key for key in _FINDING_KEYS if key not in item]
            if missing:
                problems.append('%s lacks %s' % (at, ', '.join(missing)))
            if item.get('severity') not in drift.SEVERITIES:
                problems.append('%s.severity must be red, expected or info, got %r' % (at, item.get('severity')))
        bucket = entry.get('bucket')
        if bucket is not None and bucket not in BUCKETS:
            problems.append('%s.bucket must be A, B, C or null, got %r' % (where, bucket))
        deltas = entry.get('figure_deltas')
        if deltas is not None and (not isinstance(deltas, list) or not all(isinstance(row, dict) for row in deltas)):
            problems.append('%s.figure_deltas must be a list of rows (dicts), got %s' % (where, _type_name(deltas)))
        out[name] = dict(entry, findings=findings)
    if problems:
        raise drift.DriftError('; '.join(problems))
    return out


def node_status(findings):
    """red (any red finding), changed (only expected or info ones) or clean."""
    counted = drift.counts(findings)
    if counted[drift.RED]:
        return 'red'
    return 'changed' if findings else 'clean'


# ---------------------------------------------------------------------------------------------------------------
# JSON


def report_json(nodes, generated=None):
    """The drift report: {schema, schema_version, generated, summary, nodes: {NAME: {findings, counts, status, ...}}}."""
    nodes = check_nodes(nodes)
    out = {'schema': REPORT_SCHEMA, 'schema_version': REPORT_SCHEMA_VERSION, 'generated': generated, 'nodes': {}}
    totals = dict((severity, 0) for severity in drift.SEVERITIES)
    red_nodes = []
    for name in sorted(nodes):
        entry = dict(nodes[name])
        entry['counts'] = drift.counts(entry['findings'])
        entry['status'] = node_status(entry['findings'])
        for severity in drift.SEVERITIES:
            totals[severity] += entry['counts'].get(severity, 0)
        if entry['status'] == 'red':
            red_nodes.append(name)
        out['nodes'][name] = entry
    out['summary'] = dict(totals, nodes=len(nodes), red_nodes=red_nodes)
    return json.dumps(out, indent=2, sort_keys=True, default=str) + '\n'


# ---------------------------------------------------------------------------------------------------------------
# Markdown


def _cell(value):
    return markdown_text(json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value)


_SECTION_TITLES = ((drift.RED, 'Red'), (drift.EXPECTED, 'Expected (maintenance)'), (drift.INFO, 'Info'))


def node_markdown(name, entry, kind='drift'):
    """Per-node Markdown: the node's status, its findings by severity and the figure delta table when present;
    ``kind`` (drift or revalidation) titles it."""
    entry = check_nodes({name: entry})[name]
    findings = entry['findings']
    counted = drift.counts(findings)
    lines = ['# %s: %s %s' % (_cell(name), kind, node_status(findings)), '',
             '- findings: %d red, %d expected, %d info' % (counted[drift.RED], counted[drift.EXPECTED], counted[drift.INFO])]
    for key, label in (('baseline_timestamp', 'baseline'), ('timestamp', 'checked'), ('bucket', 'bucket'), ('tier', 'tier')):
        if entry.get(key) is not None:
            lines.append('- %s: %s' % (label, _cell(entry[key])))
    lines.append('')
    if not findings:
        lines.extend(['Nothing differs from the baseline.', ''])
    for severity, title in _SECTION_TITLES:
        chosen = [f for f in findings if f.get('severity') == severity]
        if not chosen:
            continue
        lines.extend(['## %s' % title, '', '| check | subject | kind | baseline | current | detail |', '| --- | --- | --- | --- | --- | --- |'])
        for item in chosen:
            lines.append('| %s | %s | %s | %s | %s | %s |' % tuple(_cell(item.get(k)) for k in ('check', 'subject', 'kind', 'baseline', 'current', 'detail')))
        lines.append('')
    rows = entry.get('figure_deltas') or []
    if rows:
        lines.extend(['## Figures against the baseline', '',
                      '| test | subject | bytes | baseline | new | unit | delta % | tolerance % | spread % | verdict |',
                      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |'])
        for row in rows:
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % tuple(_cell(row.get(k)) for k in (
                'metric', 'subject', 'size', 'baseline', 'new', 'unit', 'delta_pct', 'tolerance_pct', 'spread_pct', 'verdict')))
        lines.append('')
    return '\n'.join(lines)


# ---------------------------------------------------------------------------------------------------------------
# JUnit


def _checks_of(entry):
    checks = [f.get('check') for f in entry['findings']]
    if any(f.get('kind') in (drift.BASELINE_MISSING, drift.RUN_INCOMPLETE) for f in entry['findings']):
        return sorted(set(str(c) for c in checks))
    compared = [c for c in drift.CHECKS if c not in ('baseline', 'maintenance')]
    return sorted(set(compared) | set(str(c) for c in checks))


def junit_xml(nodes):
    """JUnit XML: one testsuite per node, one testcase per node and check (every check compare runs, passed or not);
    a check with a red finding fails; expected and info findings are in the test case's system-out."""
    nodes = check_nodes(nodes)
    suites = []
    total = failures = 0
    for name in sorted(nodes):
        entry = nodes[name]
        cases = []
        node_failures = 0
        for check in _checks_of(entry):
            mine = [f for f in entry['findings'] if str(f.get('check')) == check]
            red = [f for f in mine if f.get('severity') == drift.RED]
            body = ''
            if red:
                node_failures += 1
                message = '; '.join('%s: %s' % (f.get('subject'), f.get('detail')) for f in red)
                text = '\n'.join('%s [%s]: %s' % (f.get('subject'), f.get('kind'), f.get('detail')) for f in red)
                body += '<failure type="red" message=%s>%s</failure>' % (quoteattr(xml_text(message[:1000])), escape(xml_text(text)))
            others = [f for f in mine if f.get('severity') != drift.RED]
            if others:
                body += '<system-out>%s</system-out>' % escape(xml_text('\n'.join('%s %s: %s' % (f.get('severity'), f.get('subject'), f.get('detail'))
                                                                                  for f in others)))
            cases.append('    <testcase classname=%s name=%s>%s</testcase>' % (quoteattr(xml_text('netval.drift.%s' % name)),
                                                                               quoteattr(xml_text(check)), body))
        total += len(cases)
        failures += node_failures
        suites.append('  <testsuite name=%s tests="%d" failures="%d">\n%s\n  </testsuite>'
                      % (quoteattr(xml_text(name)), len(cases), node_failures, '\n'.join(cases)))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="gpufleet.netval drift" tests="%d" failures="%d">\n%s\n</testsuites>\n'
            % (total, failures, '\n'.join(suites)))


# ---------------------------------------------------------------------------------------------------------------
# Prometheus textfile


def textfile(nodes, playbook='drift', timestamp=None):
    """node_exporter textfile: netval_drift_hosts (how many nodes the run watched, labelled with the playbook when it is not
    drift; netval_drift_hosts 0 is a run that watched nothing), netval_drift_findings{node,check,severity} (a gauge of counts: every severity of every
    check a node has findings for, zeros included), netval_node_bucket{node,bucket} (1 for the node's bucket, 0 for the
    others, for nodes with a bucket) and netval_last_run_timestamp_seconds{node,playbook}.

    ``timestamp``: the run's time (a run stamp such as 20261201T100556Z or seconds) for nodes without their own
    ``timestamp``; a node with neither is an error.
    """
    nodes = check_nodes(nodes)
    if not isinstance(playbook, str) or not playbook:
        raise drift.DriftError('playbook must be non-empty text (the playbook that ran, such as drift), got %r' % (playbook,))
    findings_lines, bucket_lines, time_lines = [], [], []
    for name in sorted(nodes):
        entry = nodes[name]
        checks = sorted(set(str(f.get('check')) for f in entry['findings']))
        for check in checks:
            mine = [f for f in entry['findings'] if str(f.get('check')) == check]
            for severity in drift.SEVERITIES:
                count = len([f for f in mine if f.get('severity') == severity])
                findings_lines.append(prometheus.sample('netval_drift_findings', (('node', name), ('check', check), ('severity', severity)), count))
        if entry.get('bucket') is not None:
            for bucket in BUCKETS:
                bucket_lines.append(prometheus.sample('netval_node_bucket', (('node', name), ('bucket', bucket)), 1 if entry['bucket'] == bucket else 0))
        stamp = entry.get('timestamp') if entry.get('timestamp') is not None else timestamp
        seconds = base.stamp_seconds(stamp)
        if seconds is None:
            raise drift.DriftError('nodes.%s: no run time: give the node a timestamp or the filter one (a run stamp such as '
                                   '20261201T100556Z or seconds since the epoch), got %r' % (name, stamp))
        time_lines.append(prometheus.sample('netval_last_run_timestamp_seconds', (('node', name), ('playbook', playbook)), prometheus.number_text(seconds)))
    return prometheus.exposition((
        # How many nodes the run watched: 0 is a schedule pointed at an empty group, never a clean fleet.
        ('netval_drift_hosts', 'Nodes the run watched (0: a schedule pointed at an empty group, never a clean fleet).',
         [prometheus.sample('netval_drift_hosts', () if playbook == 'drift' else (('playbook', playbook),), len(nodes))]),
        ('netval_drift_findings', 'Drift findings of the node against its baseline, by check and severity (red, expected, info).',
         findings_lines),
        ('netval_node_bucket', 'The node\'s validation bucket: 1 for the current one (A accept, B investigate, C return to provider).',
         bucket_lines),
        ('netval_last_run_timestamp_seconds', 'When a gpufleet.netval playbook last ran for the node, in seconds since the epoch.',
         time_lines)))
