# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Re-grade a past run from its evidence: today's parsers on the raw outputs, today's (or a given) contract on the figures.

``regrade(results, outputs, facts, profile)`` takes what one evidence bundle holds (reporting/evidence_reads.py reads
and verifies it): ``results`` (the node's verdict as it was written, ``results.json``), ``outputs`` ({index in its
tests: the raw output}, ``tests/*.txt``), ``facts`` (the preflight facts, ``preflight.json``) and the profile to grade
with.  It returns the node's verdict as today's collection would give it, never contacting the node:

* every figure whose raw output the bundle holds is read again by today's parser and measurement reader (perftest,
  iperf3, ping, nccl-tests, dcgmi diag; repeats split on their ``# repeat`` headers and combined again); an output
  today's parser cannot read is ``unknown`` with the parser's reason (a parser change shows), never a traceback;
* a figure without a raw output (the all-NICs aggregate and the pause rates are computed, not printed) or whose test
  failed when it ran (its module's ``error_class``: the failure is a fact of that run) keeps its recorded figure;
* the preflight findings are taken again from the facts with the profile's checks; the findings of the test window
  (link flaps, AER, peer health, a broken run) are kept as recorded;
* a metric today's profile grades that the bundle has no figure of at all is ``unknown`` (not measurable then):
  a contract that asks for more than was measured cannot be passed from old evidence.

Pure functions, no Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
from collections.abc import Mapping

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi, iperf3, nccl, perftest, ping
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, measurements, preflight, verdict

# Findings of the test window and of the run, not of preflight: kept as they were recorded.
RECORDED_CHECKS = ('link_flap', 'pcie_aer', 'peer_health', verdict.RUN_INCOMPLETE)
# What a grading adds to a measurement: dropped before the figure is graded again.
GRADING_FIELDS = ('status', 'expected', 'threshold', verdict.FLEET_OUTLIER, 'expected_contract')
# Identity fields of a verdict the re-grade carries over.
IDENTITY_FIELDS = ('node', 'peer', 'tier', 'sku', 'tier_description', 'contract_text', 'identity', 'nic_pci', 'ruled_out', 'timestamp',
                   'tests_skipped', 'retested_against', 'first_peer', 'first_peer_tests', 'lost_peers', 'run_incomplete', 'evidence')
# Module failures that are not about reading the output: the recorded entry stands.
_REREAD_CLASSES = (None, 'parse_error')
_REPEAT = re.compile(r'^# repeat (\d+) of (\d+)( \(graded\))?$', re.M)
_LEVEL = re.compile(r'(?:^|\s)-r\s+(\d+)(?:\s|$)')


def _recorded(test):
    entry = dict((key, value) for key, value in test.items() if key not in GRADING_FIELDS)
    entry['regraded'] = 'recorded'
    return entry


def _repeats(text):
    """The repeats of one figure's raw output (combine_repeats wrote each under a '# repeat i of n' header), or [text]."""
    marks = list(_REPEAT.finditer(text))
    if not marks:
        return [text]
    parts = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        parts.append(text[mark.end():end].strip('\n') + '\n')
    return parts


def _unreadable(test, tool, exc):
    entry = _recorded(test)
    entry.update(value=None, as_printed=None, error='today\'s %s parser cannot read the recorded output: %s' % (tool, exc),
                 error_class='parse_error', error_side='ours', regraded='parse_error')
    return entry


def _keep_ids(entry, test):
    entry['id'] = test.get('id') or entry['id']
    entry['direction'] = test.get('direction')
    entry['peer_device'] = test.get('peer_device')
    entry['regraded'] = 'parsed'
    entry['raw'] = ''
    return entry


def _perftest(test, text):
    metric = test['metric']
    reader = measurements.perftest_lat if catalogue.metric(metric)['reads'] == 'perftest_lat' else measurements.perftest_bw
    entries = []
    for part in _repeats(text):
        try:
            parsed = perftest.parse_perftest(part)
        except ParseError as exc:
            entries.append(_unreadable(test, 'perftest', exc))
            continue
        result = {'perftest': parsed, 'stdout': part, 'cmd': test.get('cmd')}
        entries.append(_keep_ids(reader(result, test.get('subject'), metric, test.get('peer')), test))
    return entries


def _iperf3(test, text):
    try:
        parsed = iperf3.parse_iperf3(text)
    except ParseError as exc:
        return [_unreadable(test, 'iperf3', exc)]
    result = dict(parsed, stdout=text, cmd=test.get('cmd'))
    return [_keep_ids(measurements.iperf3(result, test.get('subject'), test['metric'], test.get('peer')), test)]


def _ping(test, text):
    try:
        parsed = ping.parse_ping(text)
    except ParseError as exc:
        return [_unreadable(test, 'ping', exc)]
    which = 'loss' if catalogue.metric(test['metric'])['reads'] == 'ping_loss' else 'rtt'
    entry = measurements.ping(dict(parsed, stdout=text, cmd=test.get('cmd')), test.get('subject'), test['metric'], test.get('peer'), which)
    return [_keep_ids(entry, test)]


def _nccl(test, text, profile):
    try:
        parsed = nccl.parse_nccl_tests(text)
    except ParseError as exc:
        return [_unreadable(test, 'nccl-tests', exc)], None
    at_bytes = ((profile.get('tests') or {}).get('nccl') or {}).get('at_bytes')
    # The bundle keeps the rails the run tested on each entry; the HCAs NCCL used are rank 0's (the node under test).
    result = dict(parsed, stdout=text, cmd=test.get('cmd'), local_ib_hcas=nccl.local_hcas(parsed))
    found = measurements.nccl(result, test.get('subject'), test.get('peer'), at_bytes, test.get('rails'))
    mine = [_keep_ids(entry, test) for entry in found if entry.get('metric') == test['metric']]
    return mine or [_unreadable(test, 'nccl-tests', 'no %s figure in it' % test['metric'])], parsed.get('transport')


def _dcgmi(test, text):
    try:
        parsed = dcgmi.parse_dcgmi_diag(text)
    except ParseError as exc:
        return [_unreadable(test, 'dcgmi', exc)]
    match = _LEVEL.search(test.get('cmd') or '')
    level = int(match.group(1)) if match else None
    parsed['level'] = level
    parsed['level_not_run'] = dcgmi.level_not_run(parsed, level)
    found = measurements.dcgmi(dict(parsed, stdout=text, cmd=test.get('cmd')), test.get('subject'), test.get('peer'))
    for entry in found:
        entry['regraded'] = 'parsed'
        entry['raw'] = ''
    return found


def remeasure(tests, outputs, profile):
    """(measurements, the NCCL transport, notes) from a bundle's recorded ``tests`` and raw ``outputs`` ({index: text}).

    The order is the recorded one; one recorded dcgmi output gives today's dcgmi entries once, in place of the recorded
    ones.  ``notes`` are sentences about what could not be read again (a metric the catalogue no longer knows)."""
    found, notes, transport, transport_read = [], [], None, False
    tests = [test if isinstance(test, Mapping) else None for test in tests or []]
    # One dcgmi run gives every dcgmi entry the same output: when one of them is read again, today's entries replace all.
    dcgmi_outputs = set(outputs.get(index) for index, test in enumerate(tests) if test and test.get('metric') in catalogue.METRICS
                        and catalogue.metric(test['metric'])['reads'] == 'dcgmi' and test.get('error_class') in _REREAD_CLASSES
                        and isinstance(outputs.get(index), str) and outputs[index].strip())
    done_outputs = set()
    for index, test in enumerate(tests):
        if test is None:
            continue
        metric = test.get('metric')
        if metric == verdict.NCCL_TRANSPORT:
            if not transport_read:
                transport = test.get('value') if test.get('value') in ('IB', 'Socket') else None
            continue
        if metric not in catalogue.METRICS:
            notes.append('%s (%s) is not a metric of today\'s catalogue: left out' % (test.get('id'), metric))
            continue
        text = outputs.get(index)
        reads = catalogue.metric(metric)['reads']
        if reads == 'dcgmi' and text in dcgmi_outputs:
            if text not in done_outputs:
                done_outputs.add(text)
                found.extend(_dcgmi(test, text))
            continue
        if not isinstance(text, str) or not text.strip() or test.get('error_class') not in _REREAD_CLASSES \
                or reads in ('aggregate_bw', 'pause_rate'):
            found.append(_recorded(test))
            continue
        if reads in ('perftest_bw', 'perftest_lat'):
            found.extend(_perftest(test, text))
        elif reads == 'iperf3':
            found.extend(_iperf3(test, text))
        elif reads in ('ping_loss', 'ping_rtt'):
            found.extend(_ping(test, text))
        elif reads == 'nccl':
            entries, read = _nccl(test, text, profile)
            found.extend(entries)
            transport, transport_read = read, True
        else:
            found.append(_recorded(test))
    return found, transport, notes


def refind(recorded, facts, profile):
    """Today's preflight findings of the recorded ``facts`` with ``profile``, and the recorded findings of the test window."""
    kept = [dict(f) for f in recorded or [] if isinstance(f, Mapping) and f.get('check') in RECORDED_CHECKS]
    return preflight.preflight_findings(facts if isinstance(facts, Mapping) else {}, profile) + kept


def not_measured(found, profile):
    """The plan's expectation a bundle can still meet: one figure of every metric today's profile grades that the bundle
    has (none for one it has no figure of at all: that one is unknown, not measurable from this evidence)."""
    have = set(entry.get('metric') for entry in found)
    expected = []
    for entry in catalogue.enabled_tests(profile):
        ungraded = catalogue.ungraded_metrics(profile, entry['name'])
        for metric in entry['metrics']:
            if metric in ungraded or metric in have:
                continue
            expected.append({'id': '%s:*' % metric, 'metric': metric, 'subject': None, 'test': entry['name'],
                             'reason': 'the evidence holds no %s: the test was not run when the node was validated'
                                       % catalogue.label(metric)})
    return expected


def regrade(results, outputs, facts, profile):
    """The node's verdict from its evidence as today's collection gives it (see the module's docstring), with
    ``regrade_notes``.  Raises verdict.ThresholdError when ``profile`` cannot grade."""
    results = results if isinstance(results, Mapping) else {}
    found, transport, notes = remeasure(results.get('tests'), outputs or {}, profile)
    findings = refind(results.get('findings'), facts, profile)
    result = verdict.node_verdict(found, findings, profile, {'nccl_transport': transport, 'expected': not_measured(found, profile)})
    for key in IDENTITY_FIELDS:
        if key in results:
            result[key] = results[key]
    if isinstance(results.get('first_peer_tests'), list):
        # The first peer's figures of a re-test, graded again with the same thresholds (the letter and the common element read them).
        result['first_peer_tests'] = verdict.grade_measurements([_recorded(t) for t in results['first_peer_tests'] if isinstance(t, Mapping)],
                                                                profile['thresholds'])
    if results.get(verdict.RUN_INCOMPLETE) and not any(f.get('check') == verdict.RUN_INCOMPLETE for f in findings):
        notes.append('the run broke (%s) but its finding is not in the evidence' % results.get(verdict.RUN_INCOMPLETE))
    result['regrade_notes'] = notes
    return result
