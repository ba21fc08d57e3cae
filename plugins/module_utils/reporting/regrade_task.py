# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One regrade_report task: re-grade past runs from their evidence bundles on the controller, without a node.

The action plugin (plugins/action/regrade_report.py) runs it in the controller's worker process; the module of the same
name documents it (and runs it where it is executed as a module).  ``run`` returns the task's result: ``failed: true``
and ``msg`` on failure.  No Ansible import.

For each bundle asked for (reporting/evidence_reads.find_bundles): its checksums are verified before anything of it is
read (a bundle that does not verify is reported, never graded); its raw outputs are read again by today's parsers and
graded with the profile of its tier (today's, or the contract the playbook resolved: ``profiles``) by
policy/regrade.py; the bundles of one run are then compared with each other and with the accepted fleet's baselines
(policy/fleet.py), as the run's report did.  The report says, per bundle, the bucket and causes before (as the run's
report gave them when that report verifies, else as the bundle's results.json recorded them) and after.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import fleet, regrade, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import evidence_reads, node_input, report

ARGUMENT_SPEC = dict(
    root=dict(type='path', required=True),
    timestamp=dict(type='str', required=True),
    profiles=dict(type='dict', required=True),
    evidence_dir=dict(type='path'),
    bundles=dict(type='list', elements='path', default=[]),
    nodes=dict(type='list', elements='str', default=[]),
    since=dict(type='str'),
    contract=dict(type='str', default='today\'s tier profiles'),
    reports_dir=dict(type='path'),
    max_bundle_bytes=dict(type='int', default=evidence.BUNDLE_LIMITS['max_bundle_bytes']),
    max_unpacked_bytes=dict(type='int', default=evidence.BUNDLE_LIMITS['max_unpacked_bytes']),
    max_members=dict(type='int', default=evidence.BUNDLE_LIMITS['max_members']),
)
LIMIT_OPTIONS = ('max_bundle_bytes', 'max_unpacked_bytes', 'max_members')
NOT_GRADED = 'not graded'


def option_problems(params):
    problems = checks.control_characters(dict((k, v) for k, v in params.items() if k != 'profiles'))
    if not checks.fullmatch(evidence.STAMP_RE, params['timestamp']):
        problems.append('timestamp %r must look like 20261130T014500Z (UTC)' % (params['timestamp'],))
    if not params['bundles'] and not params['evidence_dir']:
        problems.append('give evidence_dir (every bundle under it, or those of nodes / since) or bundles (bundle folders)')
    if params['since'] is not None and evidence_reads.since_seconds(params['since']) is None:
        problems.append('since must be a UTC date or time such as 2026-11-01 or 20261101T000000Z, got %r' % (params['since'],))
    for index, name in enumerate(params['nodes']):
        problems.append(checks.check_path_component('nodes[%d]' % index, name))
    for tier, profile in sorted(params['profiles'].items(), key=lambda kv: str(kv[0])):
        if not isinstance(profile, dict):
            problems.append('profiles.%s must be a resolved tier profile (a dict)' % tier)
    problems.extend(checks.check_number(name, params[name], 1, 1 << 50) for name in LIMIT_OPTIONS)
    problems.append(evidence.foreign_link_problem(os.path.join(params['root'], 'latest')))
    return checks.problems_of(problems)


def _causes(node):
    return [c.get('cause') for c in node.get('causes') or [] if isinstance(c, dict)]


def _reported(reports_dir, node, stamp):
    """(the node's verdict as the run's report gave it, None) when that report's manifest verifies it, else (None, why)."""
    if not reports_dir:
        return None, None
    run = os.path.join(reports_dir, stamp)
    rel = 'nodes/%s.json' % node
    try:
        entries = dict((path, digest) for digest, path in evidence.read_manifest(run))
    except (OSError, ValueError, UnicodeDecodeError):
        return None, 'no verified report of run %s' % stamp
    if rel not in entries or evidence.mismatches(run, [(entries[rel], rel)]):
        return None, 'the report of run %s does not verify for %s' % (stamp, node)
    try:
        with open(os.path.join(run, rel), 'rb') as handle:
            data = json.loads(handle.read().decode('utf-8'))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return None, 'the report of run %s: %s' % (stamp, exc)
    clean, _problems = node_input.clean_node(node, data)
    return (clean if isinstance(clean, dict) else None), None


def _figures(node):
    return dict((t.get('id'), t) for t in node.get('tests') or [] if isinstance(t, dict) and t.get('id'))


def figure_changes(before, after):
    """[{id, metric, subject, before, after, before_value, after_value, unit}] of every figure whose status or value changed."""
    old, new = _figures(before), _figures(after)
    rows = []
    for key in list(old) + [k for k in new if k not in old]:
        first, second = old.get(key) or {}, new.get(key) or {}
        if first.get('status') == second.get('status') and first.get('value') == second.get('value'):
            continue
        entry = second or first
        rows.append({'id': key, 'metric': entry.get('metric'), 'subject': entry.get('subject'), 'unit': entry.get('unit'),
                     'before': first.get('status'), 'after': second.get('status'), 'before_value': first.get('value'),
                     'after_value': second.get('value')})
    return rows


def regrade_one(node, stamp, folder, profiles, limits, reports_dir):
    """One bundle's entry: verified or why not, and its verdict after (the fleet comparison comes later, per run)."""
    entry = {'node': node, 'stamp': stamp, 'folder': folder, 'verified': False, 'graded': False, 'problems': [], 'notes': []}
    try:
        bundle = evidence_reads.read_bundle(folder, node, limits)
    except (evidence_reads.BundleError, evidence.EvidenceError, OSError) as exc:
        entry['problems'].append(checks.one_line(exc))
        return entry
    entry['verified'] = True
    results = bundle['results']
    reported, why = _reported(reports_dir, node, stamp)
    before = reported or results
    entry['before_verdict'] = before
    entry['before'] = {'bucket': before.get('bucket'), 'causes': _causes(before), 'source': 'report' if reported else 'bundle'}
    if why:
        entry['notes'].append(why)
    if bundle['problems']:
        entry['notes'].append('the bundle\'s data had to be cleaned: %s' % node_input.problems_text(bundle['problems']))
    tier = results.get('tier')
    profile = profiles.get(tier) if isinstance(tier, str) else None
    if profile is None:
        entry['problems'].append('tier %r is not a tier of the contract given (known: %s)' % (tier, ', '.join(sorted(profiles))))
        return entry
    try:
        after = regrade.regrade(results, bundle['outputs'], bundle['preflight'], profile)
    except verdict.ThresholdError as exc:
        entry['problems'].append('the profile of tier %s cannot grade: %s' % (tier, exc))
        return entry
    if not after.get('sku'):
        after['sku'] = fleet.sku_from_facts(bundle['preflight'])
    after['node'] = node
    entry['graded'] = True
    entry['notes'].extend(after.pop('regrade_notes', []))
    entry['after_verdict'] = after
    return entry


def fleet_pass(entries, profiles, evidence_dir):
    """The fleet comparison of each run among the graded bundles (their stamps), with the accepted fleet's baselines."""
    rules = dict((tier, profile['fleet_rules']) for tier, profile in profiles.items() if isinstance(profile.get('fleet_rules'), dict))
    runs = {}
    for entry in entries:
        if entry.get('graded'):
            runs.setdefault(entry['stamp'], {})[entry['node']] = entry
    out = {'batches': [], 'notes': [], 'common_elements': []}
    for stamp in sorted(runs):
        nodes = dict((name, e['after_verdict']) for name, e in runs[stamp].items())
        baselines, problems = evidence_reads.accepted_baselines(evidence_dir, skip=set(nodes)) if evidence_dir else ({}, [])
        out['notes'].extend('run %s: a baseline was left out: %s' % (stamp, p) for p in problems)
        try:
            analysis = fleet.analyse(nodes, rules, baselines)
        except fleet.FleetError as exc:
            out['notes'].append('run %s: not compared with siblings: %s' % (stamp, exc))
            continue
        for name, marks in analysis['marks'].items():
            runs[stamp][name]['after_verdict'] = verdict.with_fleet_outliers(nodes[name], marks)
        nodes = dict((name, e['after_verdict']) for name, e in runs[stamp].items())
        out['batches'].extend(dict(fleet.batch_summary(b), run=stamp) for b in analysis['batches'])
        out['notes'].extend('run %s: %s' % (stamp, note) for note in analysis['notes'])
        out['common_elements'].extend(dict(c, run=stamp) for c in fleet.common_elements(nodes, rules, analysis['low']))
    return out


def _after(entry):
    after = entry.get('after_verdict')
    if not after:
        return {'bucket': None, 'causes': []}
    return {'bucket': after.get('bucket'), 'causes': _causes(after), 'counts': after.get('counts')}


def table(entries, contract, lines):
    """The before/after table as text, a line of counts first, then one line per note."""
    changed = [e for e in entries if e.get('changed')]
    unverified = [e for e in entries if not e['verified']]
    head = ('node', 'run', 'before', 'after', 'before causes', 'after causes', 'changed')
    rows = []
    for e in entries:
        before, after = e.get('before') or {}, e.get('after') or {}
        rows.append(tuple(checks.one_line(cell) for cell in (
            e['node'], e['stamp'], before.get('bucket') or '-', after.get('bucket') or NOT_GRADED,
            ', '.join(before.get('causes') or []) or '-', ', '.join(after.get('causes') or []) or '-',
            'yes' if e.get('changed') else ('-' if e.get('graded') else 'not graded'))))
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    out = ['regrade of %d bundle(s) with %s: %d changed, %d unchanged, %d not verified, %d not graded'
           % (len(entries), checks.one_line(contract), len(changed), len([e for e in entries if e.get('graded') and not e.get('changed')]),
              len(unverified), len([e for e in entries if e['verified'] and not e.get('graded')])),
           '  '.join(h.ljust(widths[i]) for i, h in enumerate(head)).rstrip(), '  '.join('-' * w for w in widths)]
    out.extend('  '.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows)
    for e in entries:
        for problem in e['problems']:
            out.append(checks.one_line('%s %s: %s: %s' % (e['node'], e['stamp'], 'not verified, not graded' if not e['verified']
                                                          else NOT_GRADED, problem)))
    out.extend(checks.one_line(line) for line in lines)
    return '\n'.join(out) + '\n'


def markdown(entries, contract, stamp, lines):
    md = report.markdown_text
    out = ['# Re-grade %s' % md(stamp), '', 'Contract: %s' % md(contract), '',
           '| node | run | before | after | before causes | after causes | changed |', '| --- | --- | --- | --- | --- | --- | --- |']
    for e in entries:
        before, after = e.get('before') or {}, e.get('after') or {}
        out.append('| %s |' % ' | '.join(md(cell) for cell in (
            e['node'], e['stamp'], before.get('bucket') or '-', after.get('bucket') or NOT_GRADED, ', '.join(before.get('causes') or []) or '-',
            ', '.join(after.get('causes') or []) or '-', 'yes' if e.get('changed') else ('-' if e.get('graded') else NOT_GRADED))))
    problems = ['%s %s: %s' % (e['node'], e['stamp'], p) for e in entries for p in e['problems']]
    if problems or lines:
        out.append('')
        out.extend('- %s' % md(line) for line in problems + list(lines))
    return '\n'.join(out) + '\n'


def run(params, check_mode):
    problems = option_problems(params)
    if problems:
        return checks.invalid_result('regrade_report', problems)
    limits = dict((name, params[name]) for name in LIMIT_OPTIONS)
    since = evidence_reads.since_seconds(params['since']) if params['since'] is not None else None
    found, asked = evidence_reads.find_bundles(params['evidence_dir'], params['nodes'] or None, params['bundles'] or None, since)
    run_dir = os.path.join(params['root'], params['timestamp'])
    if check_mode:
        return dict(changed=False, run_dir=run_dir, bundles=[folder for _node, _stamp, folder in found], summary_table='', **SUCCESS)
    entries = [regrade_one(node, stamp, folder, params['profiles'], limits, params['reports_dir']) for node, stamp, folder in found]
    fleet_out = fleet_pass(entries, params['profiles'], params['evidence_dir'])
    files = {}
    for entry in entries:
        entry['after'] = _after(entry)
        before = entry.pop('before_verdict', None) or {}
        after = entry.pop('after_verdict', None)
        if after is None:
            continue
        entry['changed'] = (entry['before'].get('bucket'), entry['before'].get('causes')) != (entry['after']['bucket'], entry['after']['causes'])
        for test in after.get('tests') or []:
            test.pop('raw', None)
        clean, _problems = node_input.clean_node(entry['node'], after)
        files['nodes/%s/%s.json' % (entry['node'], entry['stamp'])] = json.dumps(clean, indent=2, sort_keys=True, default=str)
        entry['figures'] = figure_changes(before, clean)
    lines = list(asked) + fleet_out['notes'] + ['common element (run %s): %s' % (c['run'], c['detail']) for c in fleet_out['common_elements']]
    text = table(entries, params['contract'], lines)
    document = {'timestamp': params['timestamp'], 'contract': params['contract'], 'bundles': entries,
                'selection': {'evidence_dir': params['evidence_dir'], 'bundles': params['bundles'], 'nodes': params['nodes'],
                              'since': params['since']},
                'fleet': {'batches': fleet_out['batches'], 'notes': fleet_out['notes']}, 'common_elements': fleet_out['common_elements'],
                'asked': asked}
    files.update({'regrade.txt': text, 'regrade.md': markdown(entries, params['contract'], params['timestamp'], lines),
                  'regrade.json': json.dumps(document, indent=2, sort_keys=True, default=str)})
    try:
        evidence.build_bundle(run_dir, files)
        evidence.replace_symlink(os.path.join(params['root'], 'latest'), params['timestamp'])
    except (evidence.EvidenceError, OSError) as exc:
        return dict(failed=True, msg='regrade_report: cannot write %s: %s' % (run_dir, exc), **failure('unknown_error'))
    return dict(changed=True, run_dir=run_dir, summary_table=text, bundles=[e['folder'] for e in entries],
                changed_nodes=sorted(set(e['node'] for e in entries if e.get('changed'))),
                not_verified=['%s/%s' % (e['node'], e['stamp']) for e in entries if not e['verified']], **SUCCESS)
