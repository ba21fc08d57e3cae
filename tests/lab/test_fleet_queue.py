"""The queue for known-good peers at fleet scale, on the lab: fewer forks than waiting nodes finish, no more nodes than
forks are in the tests play, the holders' tasks are not starved, and two controllers that share the peers through a shared
lease backend never measure through one peer at the same time."""
import json
import os
import subprocess
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import lease_redis
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.lab.conftest import BIN, LAB_ROOT, ROOT, bench_script, cli, lab_env
from tests.lab.test_validate import node_result
from tests.redis_server import RedisServer

pytestmark = pytest.mark.lab

NODES = ['node%02d' % i for i in range(1, 7)]
TESTS_PLAY = 'Measure each node against a known-good peer it has to itself'
# validate.yml's tests play runs under ansible.builtin.host_pinned: no more nodes in it than forks, each with its worker,
# so a peer holder's next task waits for no worker.  What it may wait for is the host loop's turn and the lab's two
# cores, shared with the other holder's perftest clients and the waiting nodes' lease polls.
HOLDER_SLACK_S = 3.0


def playbook(reports, *extra, env=None, limit='new_nodes', background=False):
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', 'inventories/lab', 'playbooks/validate.yml', '-l', limit,
            '-e', 'report_root=%s' % reports, '-e', 'evidence_controller_dir=%s' % (reports.parent / 'evidence')] + list(extra)
    if background:
        # Its output goes to <reports>/../playbook.log: a pipe nobody reads while the run goes on would fill and stop it.
        reports.parent.mkdir(parents=True, exist_ok=True)
        with open(reports.parent / 'playbook.log', 'w', encoding='utf-8') as log:
            return subprocess.Popen(argv, cwd=ROOT, env=env or lab_env(), stdout=log, stderr=subprocess.STDOUT)  # pylint: disable=consider-using-with
    proc = subprocess.run(argv, timeout=1800, check=False, cwd=ROOT, env=env or lab_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    return proc.returncode, proc.stdout


def summary_line(reports):
    return (reports / 'latest' / 'summary.txt').read_text().splitlines()[0]


def holder_gaps(bench, doc):
    """{node: the waits of its tasks for a worker while it held a peer}: in each hold (bench.lease_hold_spans: the take's
    end to the give-back's start), every task's start minus the end of the task before it."""
    gaps = {}
    for node, spans in bench.lease_hold_spans(doc).items():
        records = sorted((r for r in doc['records'] if r['host'] == node), key=lambda r: r['start'])
        for begin, end in spans:
            last = begin
            for record in records:
                if begin <= record['start'] <= end:
                    gaps.setdefault(node, []).append(record['start'] - last)
                    last = max(last, record['end'])
    return gaps


@pytest.mark.parametrize('forks, peers', [(2, 1), (3, 2)])
def test_with_fewer_forks_than_waiting_nodes_every_node_is_measured_and_the_holders_are_not_starved(
        lab_session, tmp_path, forks, peers):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-100g', '--nodes', str(len(NODES)), '--peers', str(peers), '--unpinned', check=True)
    bench = bench_script()
    timeline = tmp_path / 'timeline.json'
    env = dict(lab_env(), ANSIBLE_CALLBACKS_ENABLED='gpufleet.netval.task_timeline', NETVAL_TASK_TIMELINE=str(timeline))
    started = time.time()
    with bench.LedgerPoller(os.path.join(LAB_ROOT, 'nodes')) as poller:
        rc, out = playbook(tmp_path / 'reports', '--forks', str(forks), '-e', 'netval_lease_dir=%s' % (tmp_path / 'leases'), env=env)
    window = (started, time.time())
    assert rc == 0, out[-6000:]
    assert summary_line(tmp_path / 'reports') == '6 of 6 nodes reported: 6 A (accept), 0 B (investigate), 0 C (return to provider)'
    for node in NODES:
        assert node_result(tmp_path / 'reports', node)['bucket'] == 'A'
    doc = task_timeline.read_timeline(str(timeline))
    assert doc['controller']['forks'] == forks
    # More nodes than forks waited for a peer, but never more than forks were in the tests play, and some did wait.
    assert len(NODES) - peers > forks and task_timeline.hosts_in_play_peak(doc, TESTS_PLAY) == forks
    waits = [r for r in doc['records'] if r['task'] == 'Wait for a free known-good peer and lease it' and r['status'] == 'changed']
    assert len(waits) >= forks - peers
    gaps = holder_gaps(bench, doc)
    assert sorted(gaps) == NODES, gaps
    longest = max(max(found) for found in gaps.values())
    print('forks=%d peers=%d: the longest wait of a holder\'s task for its next task %.2f s (bound %.1f s), %d waits for a peer'
          % (forks, peers, longest, HOLDER_SLACK_S, len(waits)))
    assert longest < HOLDER_SLACK_S, dict((node, round(max(found), 2)) for node, found in gaps.items())
    intervals, _unattributed = bench.session_intervals(poller.store, NODES, ['peer%02d' % i for i in range(1, peers + 1)], window=window)
    assert intervals and task_timeline.peer_overlap_s(intervals) == 0


def output(reports):
    """What a playbook started in the background (playbook(..., background=True)) wrote."""
    return (reports.parent / 'playbook.log').read_text(encoding='utf-8', errors='replace')


def wait_for_leases(url, peers, nodes, run, reports, timeout=900):
    """Wait until every one of ``peers`` is leased in the Redis at ``url`` to one of ``nodes`` (the background run
    ``run``, writing its reports to ``reports``); fails when the run ends first or the time is up."""
    leases = lease_redis.RedisLeases(url)
    deadline = time.time() + timeout
    while time.time() < deadline:
        held = [leases.read(peer) or {} for peer in peers]
        if all(lease.get('node') in nodes for lease in held):
            return held
        assert run.poll() is None, 'the first run ended before its nodes held %s at once:\n%s' % (peers, output(reports)[-3000:])
        time.sleep(0.2)
    raise AssertionError('%s never held %s at once in %d s' % (nodes, peers, timeout))


def test_two_controllers_sharing_two_peers_through_redis_never_measure_through_one_peer_at_once(lab_session, tmp_path):  # pylint: disable=unused-argument
    """Two ansible-playbook runs at once, each with its own lease folder (two controllers, or two AWX jobs' containers),
    two nodes each, both sharing the lab's two peers through one Redis.  The second starts once the first's nodes hold
    both peers, so its nodes meet live leases of another run and both runs measure through the same peers (started at
    the same instant, each run can by chance keep to one peer of its own, and the check below would prove nothing)."""
    cli('up', '--profile', 'healthy-100g', '--nodes', '4', '--peers', '2', '--unpinned', check=True)
    bench = bench_script()
    with RedisServer(tmp_path / 'redis') as server:
        started = time.time()
        with bench.LedgerPoller(os.path.join(LAB_ROOT, 'nodes')) as poller:
            runs = {}
            for name, limit in (('a', 'node01,node02'), ('b', 'node03,node04')):
                if runs:
                    wait_for_leases(server.url, ['peer01', 'peer02'], {'node01', 'node02'}, runs['a'], tmp_path / 'a' / 'reports')
                runs[name] = playbook(tmp_path / name / 'reports', '-e', 'netval_lease_dir=%s' % (tmp_path / name / 'leases'),
                                      '-e', 'netval_lease_backend=%s' % server.url, limit=limit, background=True)
            for proc in runs.values():
                proc.wait(timeout=1800)
            outputs = dict((name, output(tmp_path / name / 'reports')) for name in runs)
        window = (started, time.time())
    for name, proc in runs.items():
        assert proc.returncode == 0, outputs[name][-6000:]
        assert summary_line(tmp_path / name / 'reports').startswith('2 of 2 nodes reported: 2 A'), outputs[name][-3000:]
    nodes = ['node01', 'node02', 'node03', 'node04']
    intervals, _unattributed = bench.session_intervals(poller.store, nodes, ['peer01', 'peer02'], window=window)
    by_peer = {}
    for peer, _hca, node, _start, _end in intervals:
        by_peer.setdefault(peer, set()).add(node)
    # The runs did share the peers: some peer measured nodes of both.
    assert any(found & {'node01', 'node02'} and found & {'node03', 'node04'} for found in by_peer.values()), by_peer
    overlap = task_timeline.peer_overlap_s(intervals)
    print('two controllers, two peers through one Redis: %d peer sessions, overlap %.2f s' % (len(intervals), overlap))
    assert overlap == 0, task_timeline.peer_overlap_spans(intervals)
    results = [json.loads((tmp_path / name / 'reports' / 'latest' / 'nodes' / ('%s.json' % node)).read_text())
               for name, pair in (('a', nodes[:2]), ('b', nodes[2:])) for node in pair]
    assert [r['bucket'] for r in results] == ['A'] * 4
