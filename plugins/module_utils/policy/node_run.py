# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One record per node run, and the transitions of a node's validation as pure functions over it.

validate.yml keeps one fact per node, ``netval_run``, and moves it on with the ``node_run`` filter
(``netval_run | gpufleet.netval.node_run('finish_pass', {...})``); the verdict role grades what ``verdict_inputs``
says; nothing else of the lifecycle lives in YAML.  A transition never changes the record it is given: it returns
the next one, so a table of (record, transition, arguments) in, record out pins the whole lifecycle
(tests/unit/plugins/module_utils/test_node_run.py).

The record::

    {schema, node, tier, run,                 who and which run
     slot, candidates,                        the node's block of test ports and its peers in the order it asks them
     peer_qualification,                      the known-good peers graded for the node's tier: {peer: {qualified, reasons...}}
     healthy_peers, peer_findings,            the qualified peers in the node's order, a finding when none is
     tests_skipped,                           why the tier tests do not run (None while they may)
     tests_started, plan_seconds,             when the tests began, epoch seconds on the node's clock (the kernel-log window
                                              opens there); their planned time
     passes: [{kind, peer, lease, retest_tests, measurements, expected, findings, nccl_transport, lost, done}],
     link_findings,                           link events and AER over the whole test window (the last kernel-log read)
     lost_peers, tried_peers,                 peers that went away while the node was on them; every peer it took
     first_verdict, suspect_peer,             the first peer's verdict when a second re-tested; the first peer as suspect
     broke}                                   where and why the run broke (None while it has not)

A pass is ``peer`` (the tests against a known-good peer; after a lost peer, another ``peer`` pass on the next),
``retest`` (the rejected re-testable tests on a second peer) or ``local`` (the tests that need no peer, while the
node waits for one or after it gave its peer back).  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import measurements, peer_policy

SCHEMA = 'gpufleet.netval/node-run'
PEER, RETEST, LOCAL = 'peer', 'retest', 'local'
PASS_KINDS = (PEER, RETEST, LOCAL)
# Findings of the kernel log, read over the whole window: a later read replaces an earlier one's.
KERNEL_CHECKS = ('link_flap', 'pcie_aer', 'gpu_xid')
CHECK_MODE = 'check mode: preflight only'
NO_HEALTHY_PEER = 'no healthy known-good peer'


class NodeRunError(ValueError):
    """A transition that does not fit the record (a pass finished before it started, an unknown pass kind...)."""


def _copy(record):
    if not isinstance(record, dict) or record.get('schema') != SCHEMA:
        raise NodeRunError('expected a node run record (%s), got %r' % (SCHEMA, type(record).__name__))
    return copy.deepcopy(record)


def _epoch(started):
    """Epoch seconds (an int) from what the node's clock read, or None when it read nothing."""
    if started in (None, ''):
        return None
    try:
        return int(float(started))
    except (TypeError, ValueError):
        raise NodeRunError('the tests\' start is epoch seconds read on the node, got %r' % (started,))


def new(node, tier=None, run=None):
    """The record of a node whose run just began."""
    return {'schema': SCHEMA, 'node': node, 'tier': tier, 'run': run, 'slot': None, 'candidates': [],
            'peer_qualification': {}, 'healthy_peers': [], 'peer_findings': [], 'tests_skipped': None, 'tests_started': None,
            'plan_seconds': None, 'passes': [], 'link_findings': [], 'lost_peers': [], 'tried_peers': [],
            'first_verdict': None, 'suspect_peer': None, 'broke': None}


def place(record, slot, candidates):
    """The node's block of test ports (its place in the run's sorted hosts) and its known-good peers in order."""
    record = _copy(record)
    record['slot'] = int(slot)
    record['candidates'] = list(candidates or [])
    return record


def check_peers(record, qualification):
    """The qualified peers, the node's preferred one first, from the run's one qualification of every peer graded for the
    node's tier (peer_policy.qualify_peers); with none, a finding that says so and why each candidate was not (unknown,
    blocking: the node cannot be measured, which is never its fault)."""
    record = _copy(record)
    record['peer_qualification'] = copy.deepcopy(dict(qualification or {}))
    record['healthy_peers'] = peer_policy.healthy_peers(record['peer_qualification'], record['candidates'])
    record['peer_findings'] = peer_policy.peer_findings(record['peer_qualification'], record['candidates'])
    return record


def after_preflight(record, blocking, check_mode=False, started=None, plan_seconds=None):
    """Whether the tier tests may run after preflight (``blocking``: its blocking findings); ``started``: when they
    begin, epoch seconds read on the node (the end of preflight, which read the kernel log up to then); ``plan_seconds``: their planned time (the
    run's prediction reads it), kept only when they run."""
    record = _copy(record)
    if check_mode:
        record['tests_skipped'] = CHECK_MODE
    elif not record['healthy_peers']:
        record['tests_skipped'] = NO_HEALTHY_PEER
    elif blocking:
        record['tests_skipped'] = 'preflight found blocking problems: ' + '; '.join(str(f.get('detail')) for f in blocking)
    record['tests_started'] = _epoch(started)
    record['plan_seconds'] = None if record['tests_skipped'] else plan_seconds
    return record


def start_pass(record, kind, peer=None, lease=None, retest_tests=()):
    """A pass begins: against ``peer`` under ``lease`` (peer_lease's result: waited_s, acquired_at), or local.  A peer
    pass keeps its lease's waited_s (how long the node waited for the peer)."""
    if kind not in PASS_KINDS:
        raise NodeRunError('a pass is %s, got %r' % (', '.join(PASS_KINDS), kind))
    if kind != LOCAL and not peer:
        raise NodeRunError('a %s pass needs the peer it runs against' % kind)
    record = _copy(record)
    lease = dict((k, (lease or {}).get(k)) for k in ('waited_s', 'acquired_at')) if kind != LOCAL else None
    record['passes'].append({'kind': kind, 'peer': peer if kind != LOCAL else None, 'lease': lease,
                             'retest_tests': list(retest_tests or []), 'measurements': [], 'expected': [], 'findings': [],
                             'nccl_transport': None, 'lost': None, 'done': False})
    if kind != LOCAL:
        record['tried_peers'].append(peer)
    return record


def finish_pass(record, outputs):
    """The open pass ends with what the tier_tests role left (``outputs``: measurements, expected, findings,
    nccl_transport, peer_lost), as far as it got when it broke.  A peer that went away is kept with the node; after a
    local pass that saw the GPU diagnostic fail, the node gives up its place in the queue."""
    record = _copy(record)
    current = open_pass(record)
    if not current:
        raise NodeRunError('no pass is open to finish')
    outputs = outputs or {}
    current.update(measurements=list(outputs.get('measurements') or []), expected=list(outputs.get('expected') or []),
                   findings=list(outputs.get('findings') or []), nccl_transport=outputs.get('nccl_transport'), done=True)
    lost = outputs.get('peer_lost') or {}
    if lost and current['kind'] != LOCAL:
        current['lost'] = dict(lost)
        record['lost_peers'].append(dict(lost, node=record['node']))
    # Only while it waits: after its peer tests the node has nothing left to give up.
    if current['kind'] == LOCAL and not record['tests_skipped'] and not [p for p in record['passes'] if p['kind'] != LOCAL]:
        record['tests_skipped'] = peer_policy.gives_up_peer(current['measurements']) or None
    return record


def read_kernel(record, kernel_result):
    """Link events, AER and Xids since the tests began (gpu_info's kernel-log read over every pass so far); an event
    the node's journal dates before the window never counts."""
    record = _copy(record)
    record['link_findings'] = measurements.link_flap_findings(kernel_result or {}, record['tests_started'])
    return record


def break_run(record, where, why, outputs=None):
    """Where and why the run broke.  What was measured before stays: a pass still open is finished with what the
    tier_tests role left (``outputs``, as finish_pass takes them), as far as it got."""
    if open_pass(_copy(record)):
        record = finish_pass(record, outputs)
    record = _copy(record)
    record['broke'] = {'where': ' '.join(str(where or 'the run').split()), 'why': why}
    return record


def _without_raw(entries):
    return [dict((key, value) for key, value in entry.items() if key != 'raw') if isinstance(entry, dict) else entry
            for entry in entries or []]


def outputs_kept(record):
    """Once the node's evidence bundle holds the tools' whole outputs: the record without them (``raw`` of each pass's
    measurements and of the first verdict's tests; their figures, verbatim lines and commands stay).  The controller
    keeps every node's record until the report, and the raw outputs are most of it."""
    record = _copy(record)
    for one_pass in record['passes']:
        one_pass['measurements'] = _without_raw(one_pass['measurements'])
    if isinstance(record['first_verdict'], dict) and isinstance(record['first_verdict'].get('tests'), list):
        record['first_verdict']['tests'] = _without_raw(record['first_verdict']['tests'])
    return record


def keep_first_verdict(record, verdict):
    """The first peer's verdict, kept before a second peer re-tests what it rejected."""
    record = _copy(record)
    record['first_verdict'] = copy.deepcopy(verdict)
    return record


def suspect(record, verdict):
    """After a re-test: the first peer as a suspect when a figure it rejected was healthy against the second."""
    record = _copy(record)
    first_peer = _peer_of(_first_peer_pass(record))
    found = peer_policy.suspect_peer(_first_peer_tests(record), (verdict or {}).get('tests'), first_peer)
    record['suspect_peer'] = found or None
    return record


def _peer_passes(record, kind):
    return [p for p in record['passes'] if p['kind'] == kind]


def _first_peer_pass(record):
    """The peer pass whose figures count: the last one (a lost peer's pass is followed by the next peer's)."""
    passes = _peer_passes(record, PEER)
    return passes[-1] if passes else None


def _peer_of(one_pass):
    return one_pass['peer'] if one_pass else None


def _first_peer_tests(record):
    retests = _peer_passes(record, RETEST)
    if not record['first_verdict'] or not retests:
        return []
    return peer_policy.first_peer_tests(record['first_verdict'].get('tests'), retests[-1]['measurements'])


def _without_kernel(findings):
    return [f for f in findings if f.get('check') not in KERNEL_CHECKS]


def verdict_inputs(record):
    """What the verdict grades, merged from the record: the peer pass's figures (a re-test's for what it re-measured),
    the local pass's, the findings of every pass and the kernel log's over the whole window, and who measured what."""
    record = _copy(record)
    peer_pass = _first_peer_pass(record)
    retests = [p for p in _peer_passes(record, RETEST) if p['done']]
    local = [p for p in _peer_passes(record, LOCAL) if p['done']]
    measured, expected, findings = [], [], []
    transport = None
    if peer_pass:
        measured, expected, findings = list(peer_pass['measurements']), list(peer_pass['expected']), list(peer_pass['findings'])
        transport = peer_pass['nccl_transport']
    for one in local:
        measured += one['measurements']
        expected += one['expected']
        findings += one['findings']
    retested_against = None
    if retests and not record['broke']:
        second = retests[-1]
        measured = peer_policy.merge_retest(measured, second['measurements'])
        expected = peer_policy.merge_retest(expected, second['expected'])
        findings += second['findings']
        transport = second['nccl_transport'] or transport
        retested_against = second['peer']
    findings = _without_kernel(findings) + list(record['link_findings'])
    return {'measurements': measured, 'expected': expected, 'findings': findings, 'nccl_transport': transport,
            # A node that never took a peer (blocked in preflight, gave up its place) names the one it would have taken first.
            'peer': retested_against or _peer_of(peer_pass) or (record['healthy_peers'] or [None])[0],
            'first_peer': _peer_of(peer_pass) if retested_against else None,
            'first_peer_tests': _first_peer_tests(record) if retested_against else [], 'retested_against': retested_against,
            'tried_peers': list(record['tried_peers']), 'healthy_peers': list(record['healthy_peers']),
            'peer_findings': list(record['peer_findings']), 'tests_skipped': record['tests_skipped'],
            'lost_peers': list(record['lost_peers']), 'suspect_peer': record['suspect_peer'], 'broke': record['broke']}


def open_pass(record):
    """The pass that has begun and not yet ended ({kind, peer, retest_tests, ...}), {} when none is open: the tier tests of
    validate.yml's tests play run for the pass that is open, and a condition on it holds while they run."""
    open_passes = [p for p in record['passes'] if not p['done']]
    return open_passes[-1] if open_passes else {}


def peers_left(record):
    """The healthy peers the node has not taken yet, in order (a lost peer's replacement, a re-test's second peer)."""
    return [peer for peer in record['healthy_peers'] if peer not in record['tried_peers']]


def timeline(record):
    """[{peer, waited_s, acquired_at, retest}] of every pass against a peer (the progress and bench read it)."""
    return [dict(peer=p['peer'], retest=p['kind'] == RETEST, **(p['lease'] or {})) for p in record['passes'] if p['kind'] != LOCAL]


TRANSITIONS = {
    'place': place, 'check_peers': check_peers, 'after_preflight': after_preflight, 'start_pass': start_pass,
    'finish_pass': finish_pass, 'read_kernel': read_kernel, 'break_run': break_run, 'keep_first_verdict': keep_first_verdict,
    'suspect': suspect, 'outputs_kept': outputs_kept,
}
QUERIES = {'verdict_inputs': verdict_inputs, 'open_pass': open_pass, 'peers_left': peers_left, 'timeline': timeline}


def apply(record, name, args=None):
    """``record`` moved on by the transition ``name`` with ``args`` (a mapping of its keyword arguments), or a query's
    answer; ``new`` makes a record from nothing."""
    args = dict(args or {})
    if name == 'new':
        return new(**args)
    if name in TRANSITIONS:
        return TRANSITIONS[name](record, **args)
    if name in QUERIES:
        return QUERIES[name](_copy(record), **args)
    raise NodeRunError('node_run: %r is not a transition (%s) or a query (%s)'
                       % (name, ', '.join(['new'] + sorted(TRANSITIONS)), ', '.join(sorted(QUERIES))))
