"""scripts/bench.py without the lab: the figures from a synthetic timeline and synthetic ledgers, the last line, the
ceil and projection arithmetic, the matrix cells, the ledger reader, and the whole script against stand-ins for the
lab CLI and ansible-playbook (nothing here touches /run/netval-lab or the real lab).

Every timeline, ledger and lab layout in this file is synthetic: hand-written, shaped like the
gpufleet.netval.task_timeline callback's document, lab/netval_lab/fabric.py's ledgers and lab.json.
"""
import argparse
import importlib.util
import json
import math
import os
import re
import stat
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from lab.netval_lab import __main__ as lab_cli
from tests.unit import fixtures

SCRIPT = os.path.join(fixtures.ROOT, 'scripts', 'bench.py')
_SPEC = importlib.util.spec_from_file_location('netval_bench_script', SCRIPT)
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)

NETVAL = 'gpufleet.netval.'
TIER_TESTS = NETVAL + 'tier_tests'
LAST_LINE = re.compile(r'^ratio_to_ideal=-?\d+\.\d\d overhead_per_node_s=-?\d+\.\d\d controller_peak_mib=-?\d+\.\d\d '
                       r'peer_overlap_s=-?\d+\.\d\d ratio_to_bound=(-?\d+\.\d\d|nan) forks=(\d+|nan)$')
PRE, MEASURE, REPORT = 'Preflight', 'Measure', 'Report'


def rec(host, task, start, end, play, action='ansible.builtin.set_fact', role=None, delegated_to=()):
    return {'host': host, 'play': play, 'task': task, 'task_template': None, 'task_uuid': '%s-%s' % (task, start),
            'role': role, 'action': action, 'start': start, 'end': end, 'duration_s': end - start, 'status': 'ok',
            'ignored': False, 'loop': False, 'items': 0, 'retries': 0, 'delegated_to': list(delegated_to), 'handler': False}


def node_records(host, acquired, test_start, play3_end=30.5):
    """synthetic: one node's run: preflight 0..3, a lease taken at 3 (acquired at ``acquired``), 10 s of perftest, the
    lease given back, evidence, then the report play at 30."""
    return [
        rec(host, 'Read the RDMA ports', 0.0, 2.0, PRE, action=NETVAL + 'rdma_info', role=NETVAL + 'preflight'),
        rec(host, 'Keep the healthy peers', 2.0, 3.0, PRE),
        rec(host, bench.TAKE_TASK, 3.0, acquired, MEASURE, action=NETVAL + 'peer_lease'),
        rec(host, 'Run the clients of b0', test_start, test_start + 10.0, MEASURE, action=NETVAL + 'perftest', role=TIER_TESTS),
        rec(host, 'Give the peer back', test_start + 10.5, test_start + 11.0, MEASURE, action=NETVAL + 'peer_lease'),
        rec(host, 'Evidence', test_start + 11.0, test_start + 12.0, MEASURE, role=NETVAL + 'evidence'),
        rec(host, 'Drain or resume the node in Slurm (optional hook)', 30.0, play3_end, REPORT),
    ]


def timeline(records, start=0.0, end=33.0, total=250.5):
    return {'format': task_timeline.FORMAT, 'playbooks': ['playbooks/validate.yml'], 'playbook_start': start, 'playbook_end': end,
            'peak_rss_mib': {'self': 150.25, 'children': 100.25, 'total': total}, 'loop_timing': 'per task', 'records': records,
            'controller': {'pid': 1, 'forks': 8}}


# synthetic: N=4 nodes, P=2 peers; node01 and node02 lease at once and test 4..14, node03 and node04 wait until 15.5
# and test 16..26; node01 writes the reports (30.5..32).
FOUR_ON_TWO = timeline(
    node_records('node01', 3.5, 4.0, play3_end=30.5) + [rec('node01', 'Reports', 30.5, 32.0, REPORT, role=NETVAL + 'report')]
    + node_records('node02', 3.5, 4.0) + node_records('node03', 15.5, 16.0) + node_records('node04', 15.5, 16.0))

LAB = lab_cli.plan('healthy-400g', {'path': 'lab/profiles/healthy-400g.yml', 'tier': '400G'}, 4, 2, site_name='ideal')


def session(sid, start, end, label='ib_write_bw server port 18515'):
    return {'id': sid, 'label': label, 'start': start, 'end': end, 'ends': 0, 'capacity': 4.9e10}


def ledger_store(peer_sessions, node_sessions, seen_at=40.0):
    """synthetic: {host: {device: [sessions]}} for peers and nodes, folded like one read of the lab's ledgers."""
    store = {}
    for books in (peer_sessions, node_sessions):
        for host, devices in books.items():
            for device, sessions in devices.items():
                bench.merge_ledger(store, host, device, {'sessions': sessions, 'retired_bytes': 0}, seen_at)
    return store


# synthetic: each node's perftest sessions on its peer's mlx5_0, one at a time per peer, the same ids in the nodes'
# own ledgers (both ends of a session enter it under one id); rail ledgers too.
NO_OVERLAP = ledger_store(
    {'peer01': {'mlx5_0': [session('a', 5.0, 13.0), session('c', 17.0, 25.0)], 'rail-fab-node01': [session('a', 5.0, 13.0)]},
     'peer02': {'mlx5_0': [session('b', 5.0, 13.0), session('d', 17.0, 25.0)]}},
    {'node01': {'mlx5_0': [session('a', 5.0, 13.0, 'ib_write_bw client to 10.252.0.2:18515')]},
     'node02': {'mlx5_0': [session('b', 5.0, 13.0)]},
     'node03': {'mlx5_0': [session('c', 17.0, 25.0)]},
     'node04': {'mlx5_0': [session('d', 17.0, 25.0)]}})


# --------------------------------------------------------------------------- arithmetic

def test_matrix_cells_skip_more_peers_than_nodes():
    assert bench.matrix_cells() == [(1, 1), (4, 1), (4, 2), (4, 4), (16, 1), (16, 2), (16, 4)]
    assert bench.matrix_cells((2, 3), (1, 2, 4)) == [(2, 1), (2, 2), (3, 1), (3, 2)]
    assert all(p <= n for n, p in bench.matrix_cells())


@pytest.mark.parametrize('nodes, peers, rounds', [(1, 1, 1), (4, 4, 1), (1, 4, 1), (16, 4, 4), (17, 4, 5), (5, 2, 3),
                                                  (4, 1, 4), (1024, 4, 256), (1023, 4, 256), (1025, 4, 257)])
def test_queue_rounds_is_the_ceiling_of_nodes_over_peers(nodes, peers, rounds):
    assert bench.queue_rounds(nodes, peers) == rounds == math.ceil(nodes / peers)


def test_ideal_is_ceil_nodes_over_peers_times_one_node():
    assert bench.ideal_s(5, 2, 10.0) == 30.0
    assert bench.ideal_s(4, 2, 10.0) == 20.0
    assert bench.ideal_s(1, 4, 7.5) == 7.5
    with pytest.raises(ValueError):
        bench.queue_rounds(0, 1)
    with pytest.raises(ValueError):
        bench.queue_rounds(4, 0)


def test_promotion_rounds_follow_the_doubling_formula_exactly():
    for peers in (1, 2, 3, 4):
        for nodes in range(1, 2100):
            expected = max(0, math.ceil(math.log2(nodes / peers))) + 1
            assert bench.promotion_rounds(nodes, peers) == expected, (nodes, peers)
    assert bench.promotion_rounds(256, 4) == 7      # 64 = 2^6
    assert bench.promotion_rounds(1024, 4) == 9
    assert bench.promotion_rounds(1024, 1) == 11
    assert bench.promotion_rounds(3, 4) == 1


def test_median_and_ratio():
    assert bench.median([3.0, 1.0, 2.0]) == 2.0
    assert bench.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert bench.median([]) is None
    assert bench.ratio(33.0, 20.0) == 1.65
    assert bench.ratio(1.0, 0.0) is None and bench.ratio(1.0, None) is None


def test_last_line_has_the_figures_with_two_decimals_and_the_forks():
    line = bench.last_line({'ratio_to_ideal': 1.655, 'overhead_per_node_s': 5.5, 'controller_peak_mib': 250.456,
                            'peer_overlap_s': 0.0, 'wall_s': 99.0, 'ratio_to_bound': 1.234, 'forks': 64})
    assert line == 'ratio_to_ideal=1.66 overhead_per_node_s=5.50 controller_peak_mib=250.46 peer_overlap_s=0.00 ratio_to_bound=1.23 forks=64'
    assert LAST_LINE.match(line)
    assert bench.last_line({'ratio_to_ideal': None, 'overhead_per_node_s': 1, 'controller_peak_mib': 2, 'peer_overlap_s': 3}) == \
        'ratio_to_ideal=nan overhead_per_node_s=1.00 controller_peak_mib=2.00 peer_overlap_s=3.00 ratio_to_bound=nan forks=nan'


# --------------------------------------------------------------------------- the timeline

def test_play_spans_leave_out_the_waits_between_plays():
    spans = bench.play_spans(FOUR_ON_TWO)
    # node01: preflight 0..3, measure 3..16, report 30..32; node03: 0..3, 3..28, 30..30.5
    assert spans == {'node01': 18.0, 'node02': 16.5, 'node03': 28.5, 'node04': 28.5}
    assert bench.play_spans(FOUR_ON_TWO, {'node02'}) == {'node02': 16.5}


def test_lease_holds_pair_each_lease_taken_with_the_one_given_back():
    # taken at 3.5 (15.5), given back from 14.5 (26.5)
    assert bench.lease_holds(FOUR_ON_TWO) == {'node01': 11.0, 'node02': 11.0, 'node03': 11.0, 'node04': 11.0}
    # a re-test takes a second lease: both holds count; an unpaired take (the run broke) holds nothing
    records = node_records('node01', 3.5, 4.0) + [
        rec('node01', bench.TAKE_TASK, 16.5, 17.0, MEASURE, action=NETVAL + 'peer_lease'),
        rec('node01', 'Give the peer back', 20.0, 21.0, MEASURE, action=NETVAL + 'peer_lease'),
        rec('node01', bench.TAKE_TASK, 22.0, 23.0, MEASURE, action=NETVAL + 'peer_lease')]
    assert bench.lease_holds(timeline(records)) == {'node01': 11.0 + 3.0}
    assert bench.lease_hold_spans(timeline(records)) == {'node01': [(3.5, 14.5), (17.0, 20.0)]}
    assert bench.lease_holds(FOUR_ON_TWO, {'node03'}) == {'node03': 11.0}


def test_lease_pairs_skip_a_suspicion_and_skipped_records_and_follow_the_playbooks_names():
    records = node_records('node01', 3.5, 4.0) + [
        rec('node01', bench.TAKE_TASK, 16.5, 17.0, MEASURE, action=NETVAL + 'peer_lease'),
        rec('node01', 'Record the suspicion (a peer two nodes suspect leaves the pool for the rest of the run)', 18.0, 18.5, MEASURE,
            action=NETVAL + 'peer_lease'),
        rec('node01', 'Give the peer back', 20.0, 21.0, MEASURE, action=NETVAL + 'peer_lease'),
        dict(rec('node01', bench.TAKE_TASK, 22.0, 22.0, MEASURE, action=NETVAL + 'peer_lease'),
             status='skipped')]
    assert bench.lease_holds(timeline(records)) == {'node01': 11.0 + 3.0}
    # renamed tasks: the records pair in turn
    renamed = [dict(r, task=r['task'].upper()) for r in node_records('node01', 3.5, 4.0)]
    assert bench.lease_holds(timeline(renamed)) == {'node01': 11.0}


def test_the_lease_task_names_are_the_playbooks():
    names = []
    for name in ('lease_peer.yml', 'give_peer_back.yml'):
        with open(os.path.join(fixtures.ROOT, 'playbooks', 'tasks', name), encoding='utf-8') as handle:
            tasks = yaml.safe_load(handle)
        names += [(task['name'], 'gpufleet.netval.peer_lease' in task) for task in tasks]
        names += [(task['name'], 'gpufleet.netval.peer_lease' in task) for block in tasks for key in ('block', 'always', 'rescue')
                  for task in block.get(key) or []]
    assert (bench.TAKE_TASK, True) in names and (bench.GIVE_TASK, True) in names
    with open(os.path.join(fixtures.ROOT, 'playbooks', 'validate.yml'), encoding='utf-8') as handle:
        plays = yaml.safe_load(handle)
    at_once = [task for play in plays for task in play.get('tasks') or [] for inner in task.get('block') or [] for task in [inner]
               if task.get('name') == bench.TAKE_AT_ONCE_TASK]
    assert len(at_once) == 1 and at_once[0]['gpufleet.netval.peer_lease']['wait'] == 0


def test_lease_handovers_time_a_waiting_node_from_the_give_back_to_its_take():
    # node03 and node04 waited 3..15.5 while node01 and node02 gave back from 14.5; node01 and node02 did not wait
    assert bench.lease_handovers(FOUR_ON_TWO) == [1.0, 1.0]
    assert bench.lease_handovers(FOUR_ON_TWO, {'node01', 'node02'}) == []
    # a host's own give-back (before its re-test lease) is no handover
    records = node_records('node01', 3.5, 4.0) + [
        rec('node01', bench.TAKE_TASK, 14.0, 15.5, MEASURE, action=NETVAL + 'peer_lease'),
        rec('node01', 'Give the peer back', 20.0, 21.0, MEASURE, action=NETVAL + 'peer_lease')]
    assert bench.lease_handovers(timeline(records)) == []


def test_host_rows_overhead_is_time_in_plays_minus_test_minus_lease():
    rows = {row['host']: row for row in bench.host_rows(FOUR_ON_TWO)}
    assert rows['node01']['wall_s'] == 32.0 and rows['node01']['in_plays_s'] == 18.0 and rows['node01']['between_plays_s'] == 14.0
    assert rows['node01']['test_s'] == 10.0 and rows['node01']['lease_s'] == 1.0 and rows['node01']['overhead_s'] == 7.0
    assert rows['node03']['lease_s'] == 13.0 and rows['node03']['overhead_s'] == 5.5   # 28.5 - 10 - 13: the wait is not overhead
    assert [row['host'] for row in bench.host_rows(FOUR_ON_TWO, ['node04', 'node02'])] == ['node02', 'node04']


def test_figures_of_four_nodes_on_two_peers():
    figs = bench.figures(FOUR_ON_TWO, 4, 2, [])
    assert figs['wall_s'] == 33.0
    assert figs['one_node_test_s'] == 10.0
    assert figs['queue_rounds'] == 2 and figs['ideal_s'] == 20.0
    assert figs['ratio_to_ideal'] == pytest.approx(1.65)
    assert figs['overhead_per_node_s'] == 5.5                    # median of 7, 5.5, 5.5, 5.5
    assert figs['overhead_with_barriers_per_node_s'] == 13.5   # wall - test - lease: median of 21, 19.5, 7.5, 7.5
    assert figs['lease_per_node_s'] == 7.0                       # median of 1, 1, 13, 13
    assert figs['hold_per_node_s'] == 11.0 and figs['handover_s'] == 1.0 and figs['handovers'] == 2
    assert figs['per_node_peer_s'] == 12.0                       # a peer's period per node: hold + handover
    assert figs['controller_peak_mib'] == 250.5
    assert figs['peer_overlap_s'] == 0.0
    assert bench.fixed_s(figs) == 9.0                            # 33 - 2 x 12
    assert bench.last_line(figs) == ('ratio_to_ideal=1.65 overhead_per_node_s=5.50 controller_peak_mib=250.50 peer_overlap_s=0.00 '
                                     'ratio_to_bound=1.65 forks=8')


def test_figures_without_lease_records_fall_back_to_the_test_time_and_without_tests_have_no_ratio():
    records = [r for r in node_records('node01', 3.5, 4.0) if r['action'] != NETVAL + 'peer_lease']
    figs = bench.figures(timeline(records, end=20.0), 1, 1, [])
    assert figs['per_node_peer_s'] == 10.0 and figs['handover_s'] == 0.0 and figs['ratio_to_ideal'] == 2.0
    no_tests = timeline([rec('node01', 'Read the RDMA ports', 0.0, 2.0, PRE, action=NETVAL + 'rdma_info')], end=3.0)
    figs = bench.figures(no_tests, 1, 1, [])
    assert figs['one_node_test_s'] == 0.0 and figs['ratio_to_ideal'] is None
    assert bench.last_line(figs).startswith('ratio_to_ideal=nan ')


def test_a_document_that_is_not_a_timeline_is_refused():
    with pytest.raises(task_timeline.TimelineError):
        bench.figures({'format': 'something else', 'records': []}, 1, 1, [])


def test_promotion_seen_in_the_timeline_when_a_node_delegates_to_another_new_node():
    nodes = ['node01', 'node02']
    plain = timeline([rec('node02', 'Run the clients', 1.0, 2.0, MEASURE, action=NETVAL + 'perftest', role=TIER_TESTS,
                          delegated_to=['peer01', 'node02'])])
    assert bench.promoted_in_timeline(plain, nodes) == []       # its peer, or itself
    promoted = timeline([rec('node02', 'Run the clients', 1.0, 2.0, MEASURE, action=NETVAL + 'perftest', role=TIER_TESTS,
                             delegated_to=['node01'])])
    assert bench.promoted_in_timeline(promoted, nodes) == [('node02', 'node01')]


def test_each_promoted_pair_is_listed_once_whichever_source_and_direction_found_it():
    # the 16 x 4 PROMOTE=1 run printed node01<->node05 twice and node06<->node03 beside node03<->node06
    timeline_pairs = [('node01', 'node05'), ('node06', 'node03')]
    ledger_pairs = [('node01', 'node05'), ('node03', 'node06'), ('node07', 'node11')]
    assert bench.promoted_pairs(timeline_pairs, ledger_pairs) == [['node01', 'node05'], ['node03', 'node06'], ['node07', 'node11']]
    assert bench.promoted_pairs([], []) == []


# --------------------------------------------------------------------------- the ledgers

def test_lab_roles_of_a_lab_json():
    nodes, peers, addresses, fabric = bench.lab_roles(LAB)
    assert nodes == ['node01', 'node02', 'node03', 'node04'] and peers == ['peer01', 'peer02']
    assert addresses['node01'] == LAB['hosts']['node01']['mgmt_ip']
    assert fabric['10.252.0.1'] == 'node01' and fabric['10.252.0.2'] == 'peer01' and fabric['10.252.1.2'] == 'peer02'


def test_lab_roles_of_a_real_site_read_the_hosts_rail_ports():
    # a real site has no node-peer links: every host's addressed ports (lab['hosts'][host]['ports']) name it
    lab = lab_cli.plan('healthy-400g', {'path': 'lab/profiles/healthy-400g.yml', 'tier': '400G'}, 2, 1, site_name='real')
    assert lab['links'] == [] and lab['rails']
    lab['hosts']['node01']['ports'] = [{'rail': 0, 'ip': None}, {'rail': 1, 'ip': '10.252.1.11'}]
    lab['hosts']['peer01']['ports'] = [{'rail': 0, 'ip': '10.252.0.13'}, {'rail': 1, 'ip': '10.252.1.13'}]
    _nodes, _peers, _addresses, fabric = bench.lab_roles(lab)
    assert fabric == {'10.252.1.11': 'node01', '10.252.0.13': 'peer01', '10.252.1.13': 'peer01'}


def test_merge_ledger_keeps_sessions_the_lab_has_dropped_and_takes_their_end_from_a_later_read():
    store = {}
    bench.merge_ledger(store, 'peer01', 'mlx5_0', {'sessions': [session('a', 5.0, None)]}, 6.0)
    assert store['peer01/mlx5_0/a']['end'] is None and store['peer01/mlx5_0/a']['last_seen'] == 6.0
    bench.merge_ledger(store, 'peer01', 'mlx5_0', {'sessions': [session('a', 5.0, None)]}, 8.0)
    assert store['peer01/mlx5_0/a']['last_seen'] == 8.0
    bench.merge_ledger(store, 'peer01', 'mlx5_0', {'sessions': [session('a', 5.0, 9.0), session('b', 10.0, None)]}, 10.0)
    bench.merge_ledger(store, 'peer01', 'mlx5_0', {'sessions': []}, 200.0)          # dropped 120 s after their end
    bench.merge_ledger(store, 'peer01', 'mlx5_0', [session('c', 1.0, 2.0)], 200.0)  # the old list format
    bench.merge_ledger(store, 'peer01', 'mlx5_0', 'garbage', 200.0)
    bench.merge_ledger(store, 'peer01', 'mlx5_0', {'sessions': [{'id': 'x'}, 'y', {'start': 1.0}]}, 200.0)
    assert sorted(store) == ['peer01/mlx5_0/a', 'peer01/mlx5_0/b', 'peer01/mlx5_0/c']
    assert store['peer01/mlx5_0/a']['end'] == 9.0
    assert store['peer01/mlx5_0/b']['end'] is None and store['peer01/mlx5_0/b']['last_seen'] == 10.0


def test_session_intervals_name_each_peer_sessions_node_by_id_then_by_label():
    nodes, peers, _addresses, fabric = bench.lab_roles(LAB)
    intervals, unattributed = bench.session_intervals(NO_OVERLAP, nodes, peers, fabric, (0.0, 33.0))
    assert sorted(intervals) == [('peer01', 'mlx5_0', 'node01', 5.0, 13.0), ('peer01', 'mlx5_0', 'node03', 17.0, 25.0),
                                 ('peer02', 'mlx5_0', 'node02', 5.0, 13.0), ('peer02', 'mlx5_0', 'node04', 17.0, 25.0)]
    assert unattributed == 0
    store = dict(NO_OVERLAP)
    # the peer's client (reverse direction) names the node's fabric address; an id no node holds and no label names
    bench.merge_ledger(store, 'peer01', 'mlx5_1', {'sessions': [session('r', 6.0, 7.0, 'ib_write_bw client to 10.252.0.1:18520'),
                                                                session('u', 6.0, 7.0, 'ib_write_bw server port 18516'),
                                                                session('o', 6.0, None)]}, 7.5)
    intervals, unattributed = bench.session_intervals(store, nodes, peers, fabric, (0.0, 33.0))
    assert ('peer01', 'mlx5_1', 'node01', 6.0, 7.0) in intervals and unattributed == 2
    # sessions of an earlier run are outside the window; one still open ends at the last read, clipped to the window
    bench.merge_ledger(store, 'peer02', 'mlx5_1', {'sessions': [session('old', -50.0, -40.0), session('e', 30.0, None)]}, 90.0)
    bench.merge_ledger(store, 'node02', 'mlx5_1', {'sessions': [session('e', 30.0, None)]}, 90.0)
    intervals, _unattributed = bench.session_intervals(store, nodes, peers, fabric, (0.0, 33.0))
    assert ('peer02', 'mlx5_1', 'node02', 30.0, 33.0) in intervals
    assert not [i for i in intervals if i[3] < 0]


def test_peer_overlap_from_ledgers_where_two_nodes_shared_a_peer_hca():
    nodes, peers, _addresses, fabric = bench.lab_roles(LAB)
    store = ledger_store({'peer01': {'mlx5_0': [session('a', 5.0, 13.0), session('x', 10.0, 14.0)]}},
                         {'node01': {'mlx5_0': [session('a', 5.0, 13.0)]}, 'node02': {'mlx5_0': [session('x', 10.0, 14.0)]}})
    intervals, _unattributed = bench.session_intervals(store, nodes, peers, fabric, (0.0, 33.0))
    figs = bench.figures(FOUR_ON_TWO, 4, 2, intervals)
    assert figs['peer_overlap_s'] == 3.0
    assert ' peer_overlap_s=3.00 ' in bench.last_line(figs)


def test_promotion_seen_in_the_ledgers_when_two_new_nodes_share_a_session():
    assert bench.promoted_in_ledgers(NO_OVERLAP, ['node01', 'node02', 'node03', 'node04']) == []
    store = ledger_store({}, {'node01': {'mlx5_0': [session('p', 1.0, 2.0)], 'rail-fab-peer01': [session('q', 1.0, 2.0)]},
                              'node02': {'mlx5_0': [session('p', 1.0, 2.0)], 'rail-fab-peer01': [session('q', 1.0, 2.0)]}})
    assert bench.promoted_in_ledgers(store, ['node01', 'node02']) == [('node01', 'node02')]


def test_a_promoted_nodes_hca_counts_as_a_peers_and_shows_two_measurements_at_once():
    # node02 ran its own tests against peer01 (a, b), then served node03 (c: one session in both nodes' ledgers).
    store = ledger_store({'peer01': {'mlx5_0': [session('a', 1.0, 2.0), session('b', 3.0, 4.0)]}},
                         {'node02': {'mlx5_0': [session('a', 1.0, 2.0), session('b', 3.0, 4.0), session('c', 5.0, 6.0, 'ib_send_bw client to x:1')],
                                     'rail-fab-node03': [session('r', 5.0, 6.0)]},
                          'node03': {'mlx5_0': [session('c', 5.0, 6.0)]}, 'node01': {'mlx5_0': [session('z', 1.0, 9.0)]}})
    served = bench.promoted_intervals(store, ['node01', 'node02', 'node03'])
    assert sorted(served) == [('node02', 'mlx5_0', 'node02', 1.0, 2.0), ('node02', 'mlx5_0', 'node02', 3.0, 4.0),
                              ('node02', 'mlx5_0', 'node02+node03', 5.0, 6.0), ('node03', 'mlx5_0', 'node02+node03', 5.0, 6.0)]
    assert task_timeline.peer_overlap_s(served) == 0.0
    # Had node02 served node03 while its own session b still ran, its HCA carried two measurements for that second.
    early = ledger_store({}, {'node02': {'mlx5_0': [session('b', 3.0, 4.0), session('c', 3.0, 6.0)]}, 'node03': {'mlx5_0': [session('c', 3.0, 6.0)]}})
    assert task_timeline.peer_overlap_s(bench.promoted_intervals(early, ['node02', 'node03'])) == 1.0
    assert bench.promoted_intervals(NO_OVERLAP, ['node01', 'node02', 'node03', 'node04']) == []
    # a window keeps the sessions that start in it and clips their ends
    assert sorted(bench.promoted_intervals(store, ['node01', 'node02', 'node03'], window=(2.5, 5.5))) == [
        ('node02', 'mlx5_0', 'node02', 3.0, 4.0), ('node02', 'mlx5_0', 'node02+node03', 5.0, 5.5), ('node03', 'mlx5_0', 'node02+node03', 5.0, 5.5)]


def test_analyse_puts_timeline_ledgers_and_lab_together():
    figs = bench.analyse(FOUR_ON_TWO, NO_OVERLAP, LAB)
    assert figs['nodes'] == 4 and figs['peers'] == 2
    assert figs['peer_sessions'] == 4 and figs['peer_sessions_unattributed'] == 0
    assert figs['peer_overlap_s'] == 0.0 and figs['promoted'] == []
    assert bench.last_line(figs) == ('ratio_to_ideal=1.65 overhead_per_node_s=5.50 controller_peak_mib=250.50 peer_overlap_s=0.00 '
                                     'ratio_to_bound=1.65 forks=8')


def test_read_ledgers_reads_every_hosts_ledger_files(tmp_path):
    for host, device, sessions in (('peer01', 'mlx5_0', [session('a', 5.0, 13.0)]), ('node01', 'mlx5_0', [session('a', 5.0, 13.0)]),
                                   ('node01', 'rail-fab-peer01', [session('a', 5.0, 13.0)])):
        folder = tmp_path / host / 'ledger'
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ('%s.json' % device)).write_text(json.dumps({'sessions': sessions, 'retired_bytes': 0}))
    (tmp_path / 'peer01' / 'ledger' / 'mlx5_1.json').write_text('{not json')
    (tmp_path / 'peer02').mkdir()
    store = bench.read_ledgers(str(tmp_path), {}, 20.0)
    assert sorted(store) == ['node01/mlx5_0/a', 'node01/rail-fab-peer01/a', 'peer01/mlx5_0/a']
    assert bench.read_ledgers(str(tmp_path / 'missing'), {}) == {}


# --------------------------------------------------------------------------- projection and output

def test_projection_without_and_with_promotion():
    rows = bench.projection(11.5, 10.0, 2)
    assert [(r['nodes'], r['rounds'], r['wall_s'], r['promoted_rounds'], r['promoted_wall_s']) for r in rows] == [
        (256, 128, 128 * 11.5 + 10.0, 8, 8 * 11.5 + 10.0),
        (1024, 512, 512 * 11.5 + 10.0, 10, 10 * 11.5 + 10.0)]
    rows = bench.projection(60.0, 0.0, 4, (256, 1024, 3))
    assert [(r['rounds'], r['promoted_rounds']) for r in rows] == [(64, 7), (256, 9), (1, 1)]


def test_projection_rests_on_the_largest_measured_run_per_peer_count():
    def cell(nodes, peers, hold):
        return {'figures': {'nodes': nodes, 'peers': peers, 'per_node_peer_s': hold, 'wall_s': 100.0}}
    cells = [cell(1, 1, 5.0), cell(4, 1, 6.0), cell(4, 2, 7.0), cell(16, 1, 8.0), cell(16, 2, 9.0), cell(4, 4, None)]
    bases = bench.projection_bases(cells)
    assert [(b['nodes'], b['peers'], b['per_node_peer_s']) for b in bases] == [(16, 1, 8.0), (16, 2, 9.0)]
    lines = bench.projection_lines(bases)
    text = '\n'.join(lines)
    assert 'wall ~ ceil(N/P) x per_node_peer_s + fixed_s' in text
    assert 'rounds = ceil(log2(N/P)) + 1' in text
    assert 'from N=16 P=1: per_node_peer_s=8.00' in text and 'fixed_s=0.00' in text   # 100 - 16 x 8 < 0: at least 0
    assert 'from N=16 P=2: per_node_peer_s=9.00 (median peer hold - + median handover - over 0 waiting lease(s)), ' \
        'wall_s=100.00, fixed_s=28.00' in text
    assert bench.projection_lines([])[-1].startswith('  (no measured run')


def test_fixed_is_what_the_queue_does_not_explain():
    assert bench.fixed_s({'nodes': 4, 'peers': 2, 'wall_s': 33.0, 'per_node_peer_s': 11.5}) == 10.0
    assert bench.fixed_s({'nodes': 4, 'peers': 1, 'wall_s': 33.0, 'per_node_peer_s': 11.5}) == 0.0
    assert bench.fixed_s({'nodes': 4, 'peers': 1, 'wall_s': 33.0, 'per_node_peer_s': None}) is None


def test_matrix_and_cell_tables():
    figs = bench.figures(FOUR_ON_TWO, 4, 2, [])
    lines = bench.matrix_lines([{'figures': figs, 'process_wall_s': 40.0, 'serial_loop_s': 100.0},
                                {'figures': figs, 'process_wall_s': 40.0, 'serial_loop_s': None}])
    rows = lines[0].split('\n')
    assert rows[0].split()[:3] == ['N', 'P', 'wall']
    assert rows[2].split() == ['4', '2', '33.00', '10.00', '20.00', '1.65', '5.50', '250.50', '0.00', '40.00', '100.00', '2.50']
    assert rows[3].split()[-2:] == ['-', '-']
    cell = bench.cell_lines(figs)
    assert cell[0] == 'N=4 P=2: wall_s=33.00 one_node_test_s=10.00 ideal_s=20.00 (= ceil(4/2)=2 x 10.00)'
    assert 'overhead_per_node_s=5.50' in cell[1]
    assert cell[2].startswith('  bound_s=20.00 ')
    assert cell[3].startswith('  per_node_peer_s=12.00 (peer hold 11.00 + handover 1.00 over 2 waiting lease(s))')
    # plays 0..3, 3..28 and 30..32; each hold 11 s for 10 s of tests; holds 3.5..14.5 and 15.5..26.5; the run ends at 33
    assert cell[4] == ('  time spent: Preflight 3.00 s, Measure 25.00 s, Report 2.00 s; a hold beyond its tests 1.00 s (median); '
                       'no peer held between the first take and the last give-back 1.00 s; after the last give-back 6.50 s')
    assert cell[5].split('\n')[2].split() == ['node01', '32.00', '18.00', '10.00', '1.00', '11.00', '7.00']


def test_command_lines_and_environment():
    assert bench.lab_up_argv('/x/python', 16, 4) == ['/x/python', '-m', 'lab.netval_lab', 'up', '--profile', 'healthy-400g',
                                                     '--nodes', '16', '--peers', '4', '--unpinned']
    assert bench.lab_up_argv('/x/python', 4, 1, mesh=True)[-2:] == ['--unpinned', '--mesh']
    assert bench.playbook_argv('ap', 'new_nodes', '/t/r', '/t/e', False) == [
        'ap', '-i', 'inventories/lab', 'playbooks/validate.yml', '-l', 'new_nodes', '-e', 'report_root=/t/r',
        '-e', 'evidence_controller_dir=/t/e']
    assert bench.playbook_argv('ap', 'node03', '/t/r', '/t/e', True)[-2:] == ['-e', 'netval_promote_accepted=true']
    assert bench.playbook_argv('ap', 'node03', '/t/r', '/t/e', False, profile_durations=True)[-2:] == ['-e', 'tier_tests_duration_override=0']
    env = bench.playbook_env('/t/timeline.json', base={'PATH': '/bin', 'NETVAL_TASK_TIMELINE': 'old'})
    assert env == {'PATH': '/bin', 'ANSIBLE_COLLECTIONS_PATH': os.path.join(fixtures.ROOT, '.cache', 'collections'),
                   'ANSIBLE_CONFIG': os.path.join(fixtures.ROOT, 'ansible.cfg'),
                   'ANSIBLE_CALLBACKS_ENABLED': 'gpufleet.netval.task_timeline', 'NETVAL_TASK_TIMELINE': '/t/timeline.json'}
    plain = bench.playbook_env(None, base={'NETVAL_TASK_TIMELINE': 'old'})
    assert 'NETVAL_TASK_TIMELINE' not in plain and 'ANSIBLE_CALLBACKS_ENABLED' not in plain


# --------------------------------------------------------------------------- the whole script, with stand-ins

FAKE_LAB_CLI = r'''
import json, os, sys
sys.path.insert(0, %(root)r)
from lab.netval_lab import __main__ as lab_cli
args = sys.argv[1:]
with open(os.path.join(%(calls)r), 'a') as log:
    log.write(json.dumps({'argv': args}) + '\n')
assert args[:3] == ['-m', 'lab.netval_lab', 'up'] and '--unpinned' in args, args
nodes, peers = int(args[args.index('--nodes') + 1]), int(args[args.index('--peers') + 1])
lab = lab_cli.plan('healthy-400g', {'path': 'lab/profiles/healthy-400g.yml', 'tier': '400G'}, nodes, peers)
os.makedirs(os.path.join(%(lab_root)r, 'nodes'), exist_ok=True)
with open(os.path.join(%(lab_root)r, 'lab.json'), 'w') as handle:
    json.dump(lab, handle)
print('lab up (stand-in)')
'''

# A stand-in for ansible-playbook on the lab: node i takes peer i %% P in round i // P; each round is 2 s of the
# timeline, 1 s of it perftest; the peers' and nodes' ledgers hold the sessions for a moment, then drop them (as the lab
# does 120 s after their end), so only the poller sees them.
FAKE_PLAYBOOK = r'''
import json, os, sys, time
args = sys.argv[1:]
env = dict((k, os.environ.get(k)) for k in ('ANSIBLE_COLLECTIONS_PATH', 'ANSIBLE_CONFIG', 'ANSIBLE_CALLBACKS_ENABLED',
                                            'NETVAL_TASK_TIMELINE'))
with open(%(calls)r, 'a') as log:
    log.write(json.dumps({'argv': args, 'env': env, 'cwd': os.getcwd()}) + '\n')
path = os.environ.get('NETVAL_TASK_TIMELINE')
if not path:
    sys.exit(0)
lab = json.load(open(os.path.join(%(lab_root)r, 'lab.json')))
nodes = [h for h in lab['order'] if lab['hosts'][h]['role'] == 'new']
peers = [h for h in lab['order'] if lab['hosts'][h]['role'] == 'peer']
base = time.time()
rounds = -(-len(nodes) // len(peers))
records, books = [], {}
def rec(host, task, start, end, play, action='ansible.builtin.set_fact', role=None):
    records.append({'host': host, 'play': play, 'task': task, 'task_template': None, 'task_uuid': task, 'role': role,
                    'action': action, 'start': base + start, 'end': base + end, 'duration_s': end - start, 'status': 'ok',
                    'delegated_to': []})
def add(host, sid, start, end):
    books.setdefault((host, 'mlx5_0'), []).append({'id': sid, 'label': 'ib_write_bw server port 18515', 'start': base + start,
                                                   'end': base + end, 'ends': 0, 'capacity': 1.0})
for i, node in enumerate(nodes):
    r = i // len(peers)
    rec(node, 'Read the RDMA ports', 0.0, 1.0, 'pre', action='gpufleet.netval.rdma_info')
    rec(node, 'Wait for a free known-good peer and lease it', 1.0, 1.1 + 2 * r, 'measure',
        action='gpufleet.netval.peer_lease')
    rec(node, 'Run the clients', 1.2 + 2 * r, 2.2 + 2 * r, 'measure', action='gpufleet.netval.perftest', role='gpufleet.netval.tier_tests')
    rec(node, 'Give the peer back', 2.3 + 2 * r, 2.4 + 2 * r, 'measure', action='gpufleet.netval.peer_lease')
    rec(node, 'Evidence', 2.4 + 2 * r, 2.6 + 2 * r, 'measure')
    rec(node, 'Report', 2 * rounds + 1.5, 2 * rounds + 1.6, 'report')
    add(peers[i %% len(peers)], 's%%d' %% i, 1.3 + 2 * r, 2.1 + 2 * r)
    add(node, 's%%d' %% i, 1.3 + 2 * r, 2.1 + 2 * r)
def write_books(keep):
    for (host, device), sessions in books.items():
        folder = os.path.join(%(lab_root)r, 'nodes', host, 'ledger')
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, device + '.json'), 'w') as handle:
            json.dump({'sessions': sessions if keep else [], 'retired_bytes': 0}, handle)
write_books(True)
time.sleep(0.6)
write_books(False)
doc = {'format': 'gpufleet.netval.task_timeline/1', 'playbooks': ['playbooks/validate.yml'], 'playbook_start': base,
       'playbook_end': base + 2 * rounds + 2, 'peak_rss_mib': {'self': 100.0, 'children': 50.0, 'total': 150.0},
       'controller': {'pid': os.getpid(), 'forks': 20},
       'loop_timing': 'per task', 'records': sorted(records, key=lambda r: r['start'])}
with open(path, 'w') as handle:
    json.dump(doc, handle)
'''


def stand_ins(tmp_path):
    lab_root = tmp_path / 'lab-root'
    lab_root.mkdir()
    calls = tmp_path / 'calls.jsonl'
    values = {'root': fixtures.ROOT, 'calls': str(calls), 'lab_root': str(lab_root)}
    paths = []
    for name, body in (('python', FAKE_LAB_CLI), ('ansible-playbook', FAKE_PLAYBOOK)):
        path = tmp_path / name
        path.write_text('#!%s\n%s' % (sys.executable, body % values))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        paths.append(str(path))
    return paths[0], paths[1], str(lab_root), calls


def run_bench(tmp_path, *args):
    python, playbook, lab_root, calls = stand_ins(tmp_path)
    argv = [sys.executable, SCRIPT, '--python', python, '--ansible-playbook', playbook, '--lab-root', lab_root,
            '--poll-s', '0.05', '--work-dir', str(tmp_path / 'work')] + list(args)
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False, timeout=300)
    with open(str(calls), encoding='utf-8') as handle:
        recorded = [json.loads(line) for line in handle]
    return proc, recorded


def test_one_run_with_stand_ins_for_the_lab_and_ansible_playbook(tmp_path):
    proc, calls = run_bench(tmp_path, '--nodes', '4', '--peers', '2', '--promote', '--project', '--json-out', str(tmp_path / 'out.json'))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # 2 rounds: wall 6 s, 1 s of test per node, ideal 2 s; in plays 1 + (1.0..2.6+2r) + 0.1, less 1 s test and the lease
    assert lines[-1] == 'ratio_to_ideal=3.00 overhead_per_node_s=1.50 controller_peak_mib=150.00 peer_overlap_s=0.00 ratio_to_bound=3.00 forks=20'
    assert bench.PROMOTE_NOTE in lines
    assert 'rounds = ceil(log2(N/P)) + 1 (the pool doubles each round), wall ~ rounds x per_node_peer_s + fixed_s' in proc.stdout
    # --promote: the nodes are meshed, so a promoted node can reach the others
    assert calls[0]['argv'] == ['-m', 'lab.netval_lab', 'up', '--profile', 'healthy-400g', '--nodes', '4', '--peers', '2', '--unpinned',
                                '--mesh']
    run = calls[1]
    folder = str(tmp_path / 'work' / 'n4-p2')
    assert run['argv'] == ['-i', 'inventories/lab', 'playbooks/validate.yml', '-l', 'new_nodes',
                           '-e', 'report_root=%s' % os.path.join(folder, 'reports'),
                           '-e', 'evidence_controller_dir=%s' % os.path.join(folder, 'evidence'),
                           '-e', 'netval_promote_accepted=true']
    assert run['cwd'] == fixtures.ROOT
    assert run['env'] == {'ANSIBLE_COLLECTIONS_PATH': os.path.join(fixtures.ROOT, '.cache', 'collections'),
                          'ANSIBLE_CONFIG': os.path.join(fixtures.ROOT, 'ansible.cfg'),
                          'ANSIBLE_CALLBACKS_ENABLED': 'gpufleet.netval.task_timeline',
                          'NETVAL_TASK_TIMELINE': os.path.join(folder, 'timeline.json')}
    out = json.load(open(str(tmp_path / 'out.json'), encoding='utf-8'))
    figs = out['cells'][0]['figures']
    assert figs['peer_sessions'] == 4 and figs['peer_sessions_unattributed'] == 0   # seen by the poller, then dropped
    assert figs['wall_s'] == pytest.approx(6.0) and figs['ideal_s'] == pytest.approx(2.0)
    # the stand-in's queue: a round every 2 s, 1.2 s held and 0.8 s handed over, 2 s outside the queue
    assert figs['per_node_peer_s'] == pytest.approx(2.0) and bench.fixed_s(figs) == pytest.approx(2.0)
    assert [(row['nodes'], row['peers'], row['rounds'], row['promoted_rounds']) for row in out['projection']] == [(256, 2, 128, 8), (1024, 2, 512, 10)]
    # the kept folder recomputes to the same last line
    again = subprocess.run([sys.executable, SCRIPT, '--analyse', folder], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, check=False, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == lines[-1]


def test_matrix_with_the_serial_loop_once_per_node_count(tmp_path):
    proc, calls = run_bench(tmp_path, '--matrix', '--project')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ups = [call['argv'] for call in calls if call['argv'][:1] == ['-m']]
    assert [(a[a.index('--nodes') + 1], a[a.index('--peers') + 1]) for a in ups] == [
        ('1', '1'), ('4', '1'), ('4', '2'), ('4', '4'), ('16', '1'), ('16', '2'), ('16', '4')]
    limits = [call['argv'][call['argv'].index('-l') + 1] for call in calls if '-l' in call['argv']]
    serial = [limit for limit in limits if limit != 'new_nodes']
    assert serial == ['node01'] + ['node%02d' % i for i in range(1, 5)] + ['node%02d' % i for i in range(1, 17)]
    assert limits.count('new_nodes') == 7
    assert all(call['env']['NETVAL_TASK_TIMELINE'] is None for call in calls if '-l' in call['argv'] and call['argv'][4] != 'new_nodes')
    lines = proc.stdout.splitlines()
    table_start = lines.index([line for line in lines if line.startswith('Matrix')][0])
    header = lines[table_start + 1].split()
    assert header[:2] == ['N', 'P'] and 'serial/process' in header
    body = [line.split() for line in lines[table_start + 3:table_start + 10]]
    assert [(row[0], row[1]) for row in body] == [('1', '1'), ('4', '1'), ('4', '2'), ('4', '4'), ('16', '1'), ('16', '2'), ('16', '4')]
    assert all(row[10] != '-' for row in body)                         # the serial loop beside every cell
    # the last line is the last cell's: N=16 P=4, 4 rounds: wall 10 s over ideal 4 s
    assert lines[-1] == 'ratio_to_ideal=2.50 overhead_per_node_s=1.50 controller_peak_mib=150.00 peer_overlap_s=0.00 ratio_to_bound=2.50 forks=20'
    assert 'from N=16 P=1' in proc.stdout and 'from N=16 P=4' in proc.stdout and 'from N=4 P=4' not in proc.stdout
    assert proc.stdout.count('(median peer hold 1.20 + median handover 0.80 over ') == 3 and proc.stdout.count('fixed_s=2.00') == 3
    assert bench.PROMOTE_NOTE not in lines
    assert json.load(open(str(tmp_path / 'work' / 'bench.json'), encoding='utf-8'))['mode'] == 'matrix'


def test_the_matrix_in_parts_runs_only_the_fleet_sizes_asked_for(tmp_path):
    proc, calls = run_bench(tmp_path, '--matrix', '--matrix-nodes', '1,4')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ups = [call['argv'] for call in calls if call['argv'][:1] == ['-m']]
    assert [(a[a.index('--nodes') + 1], a[a.index('--peers') + 1]) for a in ups] == [('1', '1'), ('4', '1'), ('4', '2'), ('4', '4')]
    serial = [call['argv'][call['argv'].index('-l') + 1] for call in calls if '-l' in call['argv']]
    assert [limit for limit in serial if limit != 'new_nodes'] == ['node01'] + ['node%02d' % i for i in range(1, 5)]


@pytest.mark.parametrize('text', ['', '0,4', '4,4', 'a,b'])
def test_matrix_nodes_must_be_distinct_fleet_sizes(text):
    with pytest.raises(argparse.ArgumentTypeError):
        bench.node_counts(text)
    assert bench.node_counts('16,1') == (16, 1)


def test_a_failed_lab_up_stops_the_benchmark_with_its_log(tmp_path):
    python, playbook, lab_root, _calls = stand_ins(tmp_path)
    failing = tmp_path / 'failing-python'
    failing.write_text('#!%s\nimport sys\nprint("netval-lab: error: must run as root")\nsys.exit(2)\n' % sys.executable)
    failing.chmod(0o755)
    proc = subprocess.run([sys.executable, SCRIPT, '--python', str(failing), '--ansible-playbook', playbook, '--lab-root', lab_root,
                           '--work-dir', str(tmp_path / 'work'), '--nodes', '2', '--peers', '1'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 1
    assert 'lab up --nodes 2 --peers 1 failed (rc 2)' in proc.stderr and 'must run as root' in proc.stderr
    assert python  # the working stand-in was not used


def test_the_bound_counts_the_peer_queue_or_one_nodes_own_tests_whichever_is_longer():
    # synthetic: the four nodes of FOUR_ON_TWO, each with an 8 s dcgmi diag while it held no peer
    diag = [rec(host, 'Run dcgmi diag at the tier\'s level', 20.0, 28.0, MEASURE, action=NETVAL + 'dcgmi_diag', role=TIER_TESTS)
            for host in ('node01', 'node02', 'node03', 'node04')]
    doc = timeline(FOUR_ON_TWO['records'] + diag)
    figs = bench.figures(doc, 4, 2, [])
    assert (figs['local_test_s'], figs['peer_test_s']) == (8.0, 10.0)
    assert figs['bound_s'] == 20.0 and figs['ratio_to_bound'] == pytest.approx(33.0 / 20.0)   # max(2 x 10, 8 + 10)
    assert bench.bound_s(1, 1, 10.0, 8.0) == 18.0 and bench.bound_s(4, 2, None, 8.0) is None
    assert '  bound_s=20.00 (= max(2 rounds x peer_test_s 10.00, local_test_s 8.00 + peer_test_s)) ratio_to_bound=1.65 forks=8' in \
        bench.cell_lines(figs)
    assert LAST_LINE.match(bench.last_line(figs))


def test_with_promotion_the_bound_counts_the_rounds_of_a_doubling_pool():
    # 16 nodes on 4 peers: 4 rounds in a queue; promoted, 4 then 8 then 16 serve: 3 rounds.
    assert bench.bound_s(16, 4, 10.0, 8.0) == 40.0 and bench.bound_s(16, 4, 10.0, 8.0, promote=True) == 30.0
    assert bench.bound_s(1024, 2, 5.0, 1.0, promote=True) == 50.0    # 2 x 2^9 = 1024: ten rounds, not 512
    figs = bench.figures(FOUR_ON_TWO, 4, 2, [], promote=True)
    assert figs['bound_rounds'] == 2 and figs['bound_s'] == 20.0


def test_the_play_at_a_moment_is_the_one_whose_tasks_span_it():
    # synthetic FOUR_ON_TWO: preflight 0..3, the tests play 3..28, the report play 30..32 (nothing ran 28..30).
    assert bench.play_bounds(FOUR_ON_TWO) == [(PRE, 0.0, 3.0), (MEASURE, 3.0, 28.0), (REPORT, 30.0, 32.0)]
    assert [bench.play_at(FOUR_ON_TWO, moment) for moment in (1.0, 20.0, 29.0, 31.0, None)] == [PRE, MEASURE, None, REPORT, None]


def test_tree_memory_waits_long_enough_that_its_samples_take_at_most_their_share_of_a_core():
    memory = bench.TreeMemory(interval=2.0, max_share=0.02)
    assert memory.wait_s() == 2.0
    memory.sample_cpu_s = 0.5
    assert memory.wait_s() == pytest.approx(25.0)
    memory.sample_cpu_s = 0.01
    assert memory.wait_s() == 2.0


def test_tree_memory_samples_this_process_and_times_its_sample():
    memory = bench.TreeMemory()
    memory.root = os.getpid()
    memory.sample()
    assert len(memory.samples) == 1 and memory.peak_mib > 0 and memory.peak_at is not None
    assert memory.sample_cpu_s > 0
