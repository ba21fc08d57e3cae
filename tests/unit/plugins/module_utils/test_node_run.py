"""The validation lifecycle of one node, pinned without the lab: sequences of transitions in, the record and what the
verdict grades out (in the manner of community.general's tables of commands)."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import node_run, verdict
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    P400 = yaml.safe_load(handle)['tier_profile_tiers']['400G']

# The run's qualification of its known-good peers (peer_policy.qualify_peers), as check_peers takes it.
QUALIFIED = {'qualified': True, 'reasons': [], 'notes': [], 'checked': ['port_state']}
QUALIFICATION = {'peer01': QUALIFIED, 'peer02': QUALIFIED,
                 'peer03': {'qualified': False, 'reasons': ['cannot be reached: timed out'], 'notes': [], 'checked': []}}
LEASE = {'peer': 'peer01', 'waited_s': 0.0, 'acquired_at': 1764900000.0}


def bw(subject, value, peer, metric='ib_send_bw_gbs'):
    return {'id': '%s:%s' % (metric, subject), 'metric': metric, 'subject': subject, 'value': value, 'unit': 'GB/s',
            'kind': 'perftest_bw', 'peer': peer, 'as_printed': '%s GB/s' % value}


def expect(subject, metric='ib_send_bw_gbs', test='ib_send_bw'):
    return {'id': '%s:%s' % (metric, subject), 'metric': metric, 'subject': subject, 'test': test, 'reason': None}


def rdma(peer, values):
    return [bw('mlx5_%d' % i, value, peer) for i, value in enumerate(values)]


DIAG_PASS = {'id': 'dcgmi_diag:gpus', 'metric': 'dcgmi_diag', 'subject': 'gpus', 'preset_status': 'healthy', 'as_printed': 'Pass'}
DIAG_FAIL = dict(DIAG_PASS, preset_status='reject', as_printed='GPU Memory: Fail (GPU 3)')
FLAP = {'check': 'link_flap', 'subject': 'mlx5_2', 'status': 'reject', 'detail': 'mlx5_2 went down 1 time(s) during validation'}
KERNEL_FLAP = {'kernel_log': {'link_events': [{'event': 'down', 'device': 'mlx5_2', 'line': 'mlx5_2: Link down'},
                                              {'event': 'up', 'device': 'mlx5_2', 'line': 'mlx5_2: Link up'}]}}
LOST = {'peer': 'peer01', 'step': 'the clients of ib_send_bw', 'detail': 'known-good peer peer01 went away during the clients'}


def outputs(measurements, expected=(), findings=(), transport=None, lost=None):
    return {'measurements': list(measurements), 'expected': list(expected), 'findings': list(findings),
            'nccl_transport': transport, 'peer_lost': lost or {}}


def run(*steps):
    """The record after ``steps``: (transition, args) in order, from a node placed in a run of peer01 and peer02."""
    record = node_run.apply(None, 'new', {'node': 'node01', 'tier': '400G', 'run': '20261205T100000Z'})
    record = node_run.apply(record, 'place', {'slot': 0, 'candidates': ['peer01', 'peer02', 'peer03']})
    for name, args in steps:
        record = node_run.apply(record, name, args)
    return record


PEERS_OK = ('check_peers', {'qualification': QUALIFICATION})
# The tests' start as the node's clock read it (epoch seconds; a string, as a registered fact templates it).
STARTED = 1764928860
PREFLIGHT_OK = ('after_preflight', {'blocking': [], 'started': str(STARTED), 'plan_seconds': {'peer_s': 30.0}})


def graded(record):
    inputs = node_run.verdict_inputs(record)
    result = verdict.node_verdict(inputs['measurements'], inputs['findings'], P400,
                                  {'expected': inputs['expected'], 'nccl_transport': inputs['nccl_transport']})
    return dict(result, peer=inputs['peer'])


# The lifecycle table: (sequence, what the record and the verdict's inputs must say).
SEQUENCES = {
    'healthy: local while waiting, then the peer': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'local'}), ('finish_pass', {'outputs': outputs([DIAG_PASS])}),
         ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
         ('finish_pass', {'outputs': outputs(rdma('peer01', [47.1] * 8), [expect('mlx5_%d' % i) for i in range(8)], transport='IB')}),
         ('read_kernel', {'kernel_result': {}})],
        {'tests_skipped': None, 'tried_peers': ['peer01'], 'peer': 'peer01', 'measured': 9, 'retested_against': None,
         'lost_peers': [], 'broke': None, 'transport': 'IB'}),
    'preflight blocks the tests': (
        [PEERS_OK, ('after_preflight', {'blocking': [{'detail': '7 of 8 GPUs'}], 'plan_seconds': {'peer_s': 30.0}})],
        {'tests_skipped': 'preflight found blocking problems: 7 of 8 GPUs', 'plan_seconds': None, 'tried_peers': [], 'measured': 0,
         'peer': 'peer01'}),
    'no healthy peer': (
        [('check_peers', {'qualification': {'peer03': QUALIFICATION['peer03']}}), PREFLIGHT_OK],
        {'tests_skipped': 'no healthy known-good peer', 'peer_findings': ['peer_health'], 'healthy_peers': [], 'measured': 0, 'peer': None}),
    'check mode': (
        [PEERS_OK, ('after_preflight', {'blocking': [], 'check_mode': True})],
        {'tests_skipped': 'check mode: preflight only', 'measured': 0}),
    'diagnostic failed while waiting: gives up its place': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'local'}), ('finish_pass', {'outputs': outputs([DIAG_FAIL])})],
        {'tests_skipped_starts': 'dcgmi diag failed while the node waited for a peer (GPU Memory: Fail (GPU 3))', 'tried_peers': [],
         'measured': 1}),
    'diagnostic failed after the peer: nothing left to give up': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
         ('finish_pass', {'outputs': outputs(rdma('peer01', [47.1] * 8))}), ('start_pass', {'kind': 'local'}),
         ('finish_pass', {'outputs': outputs([DIAG_FAIL])})],
        {'tests_skipped': None, 'measured': 9, 'peer': 'peer01'}),
    'peer lost mid-run, rescheduled on the next': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
         ('finish_pass', {'outputs': outputs(rdma('peer01', [47.1] * 2), lost=LOST)}),
         ('start_pass', {'kind': 'peer', 'peer': 'peer02', 'lease': dict(LEASE, peer='peer02')}),
         ('finish_pass', {'outputs': outputs(rdma('peer02', [47.2] * 8))})],
        {'lost_peers': ['peer01'], 'tried_peers': ['peer01', 'peer02'], 'peer': 'peer02', 'measured': 8, 'peers_left': [],
         'measured_peers': ['peer02']}),
    'peer lost with none left: the run breaks, the partial figures stay': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
         ('finish_pass', {'outputs': outputs(rdma('peer01', [47.1] * 2), lost=LOST)}),
         ('start_pass', {'kind': 'peer', 'peer': 'peer02', 'lease': dict(LEASE, peer='peer02')}),
         ('finish_pass', {'outputs': outputs([], lost=dict(LOST, peer='peer02'))}),
         ('break_run', {'where': 'tests: reschedule', 'why': 'no other healthy peer is left'})],
        {'lost_peers': ['peer01', 'peer02'], 'broke': 'tests: reschedule', 'measured': 0, 'peer': 'peer02'}),
    'a break inside a pass closes it with what the role left': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
         ('break_run', {'where': 'tests: Run the clients', 'why': {'msg': 'rc=1'}, 'outputs': outputs(rdma('peer01', [47.1] * 3))})],
        {'broke': 'tests: Run the clients', 'measured': 3, 'peer': 'peer01', 'open_passes': 0}),
    'kernel reads: the last one counts, over every pass': (
        [PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
         ('finish_pass', {'outputs': outputs(rdma('peer01', [47.1] * 8), findings=[FLAP])}),
         ('read_kernel', {'kernel_result': KERNEL_FLAP}), ('read_kernel', {'kernel_result': KERNEL_FLAP})],
        {'link_findings': ['mlx5_2'], 'measured': 8}),
}


@pytest.mark.parametrize('name', sorted(SEQUENCES))
def test_each_lifecycle_sequence_ends_in_the_record_and_verdict_inputs_it_must(name):
    steps, want = SEQUENCES[name]
    record = run(*steps)
    inputs = node_run.verdict_inputs(record)
    checks = {
        'tests_skipped': lambda: record['tests_skipped'],
        'tests_skipped_starts': lambda: (record['tests_skipped'] or '')[:len(want['tests_skipped_starts'])],
        'plan_seconds': lambda: record['plan_seconds'],
        'tried_peers': lambda: record['tried_peers'],
        'healthy_peers': lambda: record['healthy_peers'],
        'peer_findings': lambda: [f['check'] for f in record['peer_findings']],
        'peer': lambda: inputs['peer'],
        'measured': lambda: len(inputs['measurements']),
        'measured_peers': lambda: sorted(set(m.get('peer') for m in inputs['measurements'])),
        'retested_against': lambda: inputs['retested_against'],
        'lost_peers': lambda: [entry['peer'] for entry in record['lost_peers']],
        'broke': lambda: (record['broke'] or {}).get('where'),
        'transport': lambda: inputs['nccl_transport'],
        'peers_left': lambda: node_run.peers_left(record),
        'open_passes': lambda: len([p for p in record['passes'] if not p['done']]),
        'link_findings': lambda: [f['subject'] for f in inputs['findings'] if f['check'] == 'link_flap'],
    }
    assert dict((key, checks[key]()) for key in want) == want
    # Every lost peer is kept with the node that was on it, for the report.
    assert all(entry['node'] == 'node01' for entry in record['lost_peers'])


def test_the_healthy_sequence_grades_a_and_the_timeline_lists_the_lease():
    record = run(*SEQUENCES['healthy: local while waiting, then the peer'][0])
    assert graded(record)['bucket'] == 'A'
    assert node_run.timeline(record) == [{'peer': 'peer01', 'retest': False, 'waited_s': 0.0, 'acquired_at': 1764900000.0}]
    assert record['plan_seconds'] == {'peer_s': 30.0} and record['tests_started'] == STARTED


def retested(second_values, broke=False):
    first = run(PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}),
                ('finish_pass', {'outputs': outputs(rdma('peer01', [30.0] + [47.1] * 7), [expect('mlx5_%d' % i) for i in range(8)])}),
                ('start_pass', {'kind': 'local'}), ('finish_pass', {'outputs': outputs([DIAG_PASS])}))
    first_verdict = graded(first)
    steps = [('keep_first_verdict', {'verdict': first_verdict}),
             ('start_pass', {'kind': 'retest', 'peer': 'peer02', 'lease': dict(LEASE, peer='peer02'), 'retest_tests': ['ib_send_bw']}),
             ('finish_pass', {'outputs': outputs(rdma('peer02', second_values), [expect('mlx5_%d' % i) for i in range(8)])})]
    if broke:
        steps.append(('break_run', {'where': 'tests: Record the suspicion', 'why': 'rc=1'}))
    record = first
    for name, args in steps:
        record = node_run.apply(record, name, args)
    return first_verdict, record


def test_a_reject_the_second_peer_clears_takes_its_figures_and_names_the_first_peer_suspect():
    first_verdict, record = retested([47.2] * 8)
    assert first_verdict['bucket'] == 'C' and first_verdict['peer'] == 'peer01'
    inputs = node_run.verdict_inputs(record)
    assert (inputs['peer'], inputs['first_peer'], inputs['retested_against']) == ('peer02', 'peer01', 'peer02')
    # The second peer's figures for what it re-measured; the local pass's are kept beside them.
    assert sorted(set(m['peer'] for m in inputs['measurements'] if m['metric'] == 'ib_send_bw_gbs')) == ['peer02']
    assert any(m['metric'] == 'dcgmi_diag' for m in inputs['measurements'])
    assert [(t['subject'], t['status']) for t in inputs['first_peer_tests'] if t['status'] != 'healthy'] == [('mlx5_0', 'reject')]
    final = graded(record)
    assert final['bucket'] == 'A'
    record = node_run.suspect(record, final)
    assert record['suspect_peer']['peer'] == 'peer01'
    assert [(f['subject'], f['first_value'], f['second_value']) for f in record['suspect_peer']['figures']] == [('mlx5_0', 30.0, 47.2)]


def test_a_reject_the_second_peer_confirms_suspects_no_one():
    _first, record = retested([30.5] + [47.2] * 7)
    final = graded(record)
    assert final['bucket'] == 'C' and node_run.suspect(record, final)['suspect_peer'] is None


def test_a_retest_that_broke_keeps_the_first_peers_figures():
    _first, record = retested([47.2] * 8, broke=True)
    inputs = node_run.verdict_inputs(record)
    assert inputs['retested_against'] is None and inputs['peer'] == 'peer01' and inputs['first_peer_tests'] == []
    assert set(m['peer'] for m in inputs['measurements'] if m.get('peer')) == {'peer01'}
    assert inputs['broke']['where'] == 'tests: Record the suspicion'


def test_a_peer_left_out_is_named_with_its_reason_and_the_node_keeps_its_view_of_the_peers():
    record = run(('check_peers', {'qualification': {'peer01': dict(QUALIFIED, qualified=False, reasons=['port_rate: mlx5_3 at 200 Gb/s']),
                                                    'peer02': QUALIFIED}}))
    assert record['healthy_peers'] == ['peer02'] and record['peer_findings'] == []
    assert record['peer_qualification']['peer01']['reasons'] == ['port_rate: mlx5_3 at 200 Gb/s']
    alone = run(('check_peers', {'qualification': {'peer01': dict(QUALIFIED, qualified=False, reasons=['no live RDMA port'])}}))
    assert alone['healthy_peers'] == [] and 'peer01: no live RDMA port' in alone['peer_findings'][0]['detail']


def test_link_events_the_nodes_journal_dates_before_the_tests_never_count():
    burnin = {'event': 'down', 'device': 'mlx5_1', 'line': 'mlx5_1: Link down', 'time': '2025-12-05T10:00:59+0800'}
    during = {'event': 'down', 'device': 'mlx5_2', 'line': 'mlx5_2: Link down', 'time': '2025-12-05T18:01:30+0800'}
    record = run(PEERS_OK, PREFLIGHT_OK, ('read_kernel', {'kernel_result': {'kernel_log': {'link_events': [burnin, during]}}}))
    assert [f['subject'] for f in record['link_findings']] == ['mlx5_2']


def test_a_start_that_is_not_the_nodes_epoch_is_refused():
    with pytest.raises(node_run.NodeRunError, match='epoch seconds read on the node'):
        run(PEERS_OK, ('after_preflight', {'blocking': [], 'started': '2026-12-05 10:01:00'}))


def test_a_peer_pass_keeps_how_long_the_node_waited_for_its_peer():
    record = run(PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer02', 'lease': {
        'peer': 'peer02', 'waited_s': 97.5, 'acquired_at': 1764900000.0, 'deadline': 1764900120.0}}))
    # Only what the timeline reads is kept of the lease (its deadline moves while the run renews it).
    assert node_run.timeline(record) == [{'peer': 'peer02', 'retest': False, 'waited_s': 97.5, 'acquired_at': 1764900000.0}]
    record = node_run.start_pass(record, 'local')
    assert node_run.timeline(record) == [{'peer': 'peer02', 'retest': False, 'waited_s': 97.5, 'acquired_at': 1764900000.0}]


def test_a_transition_never_changes_the_record_it_was_given():
    record = run(PEERS_OK, PREFLIGHT_OK, ('start_pass', {'kind': 'peer', 'peer': 'peer01', 'lease': LEASE}))
    before = copy.deepcopy(record)
    node_run.finish_pass(record, outputs(rdma('peer01', [47.1] * 8)))
    node_run.break_run(record, 'x', 'y')
    node_run.verdict_inputs(record)
    assert record == before


@pytest.mark.parametrize('name, args, message', [
    ('finish_pass', {'outputs': {}}, 'no pass is open to finish'),
    ('start_pass', {'kind': 'peer'}, 'a peer pass needs the peer it runs against'),
    ('start_pass', {'kind': 'sideways', 'peer': 'peer01'}, "a pass is peer, retest, local, got 'sideways'"),
    ('jump', {}, "'jump' is not a transition"),
])
def test_a_transition_that_does_not_fit_says_why(name, args, message):
    with pytest.raises(node_run.NodeRunError, match=message):
        node_run.apply(run(PEERS_OK, PREFLIGHT_OK), name, args)


def test_anything_but_a_record_is_refused():
    with pytest.raises(node_run.NodeRunError, match='expected a node run record'):
        node_run.apply({'node': 'node01'}, 'verdict_inputs')


def with_raw(measurements, text):
    return [dict(m, raw=text + m['subject']) for m in measurements]


def test_once_the_bundle_holds_the_outputs_the_record_drops_them_and_grades_the_same():
    first_verdict, record = retested([47.2] * 8)
    for one_pass in record['passes']:
        one_pass['measurements'] = with_raw(one_pass['measurements'], 'the output of ')
    record['first_verdict']['tests'] = with_raw([t for t in record['first_verdict']['tests'] if 'subject' in t], 'first ')
    kept = node_run.apply(record, 'outputs_kept')
    assert not [m for p in kept['passes'] for m in p['measurements'] if 'raw' in m]
    assert not [t for t in kept['first_verdict']['tests'] if 'raw' in t]
    # Only the outputs go: every figure, the grading and the record given stay as they were.
    assert [[m.get('value') for m in p['measurements']] for p in kept['passes']] == \
        [[m.get('value') for m in p['measurements']] for p in record['passes']]
    graded_before = graded(record)
    assert [t for t in graded_before['tests'] if t.get('raw')]
    assert graded(kept) == dict(graded_before, tests=[dict((k, v) for k, v in t.items() if k != 'raw') for t in graded_before['tests']])
    assert record['passes'][0]['measurements'][0]['raw'] == 'the output of mlx5_0'


def test_the_open_pass_is_the_one_begun_and_not_ended():
    record = run(PEERS_OK, PREFLIGHT_OK)
    assert node_run.apply(record, 'open_pass') == {}
    record = node_run.start_pass(record, 'local')
    assert node_run.apply(record, 'open_pass')['kind'] == 'local'
    record = node_run.finish_pass(record, {})
    assert node_run.apply(record, 'open_pass') == {}
    record = node_run.start_pass(record, 'peer', 'peer02', LEASE, ['ib_send_bw'])
    opened = node_run.apply(record, 'open_pass')
    assert (opened['kind'], opened['peer'], opened['retest_tests']) == ('peer', 'peer02', ['ib_send_bw'])
    assert node_run.apply(node_run.break_run(record, 'tests: x', {}), 'open_pass') == {}
