"""Task timeline summaries (per task, per host, before/after, peer overlap) and the document writer.

Every timeline in this file is synthetic: hand-written records shaped like the
gpufleet.netval.task_timeline callback's (tests/unit/plugins/callback/ runs the
callback itself under ansible-playbook).
"""
import errno
import glob
import json
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue
from tests.unit import fixtures

NETVAL = 'gpufleet.netval.'
TIER_TESTS = NETVAL + 'tier_tests'


def rec(host, task, start, end, action='ansible.builtin.set_fact', role=None, status='ok', template=None):
    return {'host': host, 'play': 'p', 'task': task, 'task_template': template, 'task_uuid': '%s-%s' % (task, start),
            'role': role, 'action': action, 'start': start, 'end': end, 'duration_s': end - start, 'status': status,
            'ignored': False, 'loop': False, 'items': 0, 'retries': 0, 'delegated_to': [], 'handler': False}


def doc(records, start=0.0, end=100.0):
    return {'format': task_timeline.FORMAT, 'playbooks': ['validate.yml'], 'playbook_start': start, 'playbook_end': end,
            'peak_rss_mib': {'self': 1.0, 'children': 2.0, 'total': 3.0}, 'loop_timing': 'per task', 'records': records}


# synthetic: two nodes; node01 runs a preflight info module, waits for a peer, runs perftest and iperf3 tests,
# the all-NICs wait and counter snapshots, a set_fact; node02 does less.
SYNTHETIC = doc([
    rec('node01', 'Read the RDMA ports', 10.0, 12.0, action=NETVAL + 'rdma_info', role=NETVAL + 'preflight'),
    rec('node01', 'Snapshot NIC counters', 12.0, 12.5, action=NETVAL + 'nic_info', role=NETVAL + 'preflight'),
    rec('node01', 'Wait for a free known-good peer and lease it', 13.0, 20.0, action=NETVAL + 'peer_lease'),
    rec('node01', 'Start the servers of node01-b0', 20.0, 21.0, action=NETVAL + 'perftest', role=TIER_TESTS,
        template='Start the servers of {{ tier_tests_batch.id }}'),
    rec('node01', 'Run the iperf3 client on the peer (multi-stream)', 21.0, 31.0, action=NETVAL + 'iperf3', role=TIER_TESTS),
    rec('node01', 'Snapshot NIC counters before the sustained test', 31.0, 31.5, action=NETVAL + 'nic_info', role=TIER_TESTS),
    rec('node01', 'Wait for every client', 31.5, 41.5, action='ansible.builtin.async_status', role=TIER_TESTS),
    rec('node01', 'Record the measurements', 42.0, 42.25, role=TIER_TESTS),
    rec('node02', 'Read the RDMA ports', 10.0, 11.0, action=NETVAL + 'rdma_info', role=NETVAL + 'preflight'),
    rec('node02', 'Start the servers of node02-b0', 11.0, 14.0, action=NETVAL + 'perftest', role=TIER_TESTS,
        template='Start the servers of {{ tier_tests_batch.id }}'),
    rec('node02', 'Ping the peer with do-not-fragment jumbo frames', 14.0, 15.0, action=NETVAL + 'jumbo_ping', role=TIER_TESTS,
        status='failed'),
    rec('node02', 'Wait for clients elsewhere', 15.0, 16.0, action='ansible.builtin.async_status'),
])


def test_the_test_modules_are_the_catalogues():
    modules = task_timeline.modules_that_test()
    for entry in catalogue.TESTS:
        assert NETVAL + entry['module'] in modules and entry['module'] in modules
    assert NETVAL + 'rdma_info' not in modules and NETVAL + 'peer_lease' not in modules
    assert set(name for name in modules if name.startswith(NETVAL)) == set(NETVAL + entry['module'] for entry in catalogue.TESTS)


def test_every_collection_module_in_tier_tests_is_a_test_a_test_companion_or_known_not_to_test():
    """A new test module in roles/tier_tests without a catalogue entry (or companion rule) would count as overhead."""
    # The peer's ports before the plan, the kernel log after the tests; the NCCL launcher's checks and trust around nccl-tests
    # (orchestration, as a cluster's job launcher is: overhead, not test time).
    not_tests = {NETVAL + 'rdma_info', NETVAL + 'gpu_info', NETVAL + 'mpi_launcher_info', NETVAL + 'launcher_key', NETVAL + 'launcher_trust'}
    actions = set()
    for path in glob.glob(os.path.join(fixtures.ROOT, 'roles', 'tier_tests', 'tasks', '*.yml')):
        with open(path, encoding='utf-8') as handle:
            stack = list(yaml.safe_load(handle) or [])
        while stack:
            task = stack.pop()
            for key in ('block', 'rescue', 'always'):
                stack.extend(task.get(key) or [])
            actions.update(key for key in task if key.startswith(NETVAL) or key == 'ansible.builtin.async_status')
    assert actions, 'no collection modules found in roles/tier_tests/tasks'
    for action in sorted(actions):
        record = {'action': action, 'role': TIER_TESTS}
        assert task_timeline.is_test_task(record) or action in not_tests, action
    # The all-NICs test snapshots counters around its clients (preflight_info's nic and rdma reads, on both boxes) and
    # runs them at once in one perftest call; the IP tests check the route first (fabric_route).
    assert NETVAL + 'preflight_info' in actions and NETVAL + 'perftest' in actions and NETVAL + 'fabric_route' in actions


def test_task_costs_group_by_role_and_name_as_written_sorted_by_total():
    rows = task_timeline.task_costs(SYNTHETIC)
    assert [row['total_s'] for row in rows] == sorted((row['total_s'] for row in rows), reverse=True)
    by_task = dict((row['task'], row) for row in rows)
    servers = by_task[TIER_TESTS + ' : Start the servers of {{ tier_tests_batch.id }}']
    assert servers['count'] == 2 and servers['total_s'] == 4.0 and servers['mean_s'] == 2.0 and servers['max_s'] == 3.0
    ports = by_task[NETVAL + 'preflight : Read the RDMA ports']
    assert ports['count'] == 2 and ports['total_s'] == 3.0 and ports['mean_s'] == 1.5
    assert by_task['Wait for a free known-good peer and lease it']['total_s'] == 7.0   # no role: the name alone
    assert rows[0]['task'] in (TIER_TESTS + ' : Run the iperf3 client on the peer (multi-stream)', TIER_TESTS + ' : Wait for every client')
    assert sum(row['count'] for row in rows) == len(SYNTHETIC['records'])


def test_equal_totals_are_ordered_by_name():
    rows = task_timeline.task_costs(doc([rec('a', 'b', 0, 1), rec('a', 'a', 1, 2)]))
    assert [row['task'] for row in rows] == ['a', 'b']


def test_host_costs_wall_test_lease_and_overhead():
    hosts = dict((row['host'], row) for row in task_timeline.host_costs(SYNTHETIC))
    assert sorted(hosts) == ['node01', 'node02']
    one = hosts['node01']
    assert one['wall_s'] == 32.25                       # 10.0 .. 42.25
    # perftest 1 + iperf3 10 + counter snapshot 0.5 + async wait 10; not the preflight nic_info nor rdma_info
    assert one['test_s'] == 21.5
    assert one['lease_s'] == 7.0
    assert one['tasks'] == 8 and one['tasks_s'] == 31.25
    assert one['other_s'] == one['tasks_s'] - one['test_s']
    assert one['overhead_s'] == one['wall_s'] - one['test_s'] == 10.75
    two = hosts['node02']
    # perftest 3 + jumbo ping 1 (a failed test still took its time); the async wait outside tier_tests is not a test
    assert two['wall_s'] == 6.0 and two['test_s'] == 4.0 and two['overhead_s'] == 2.0 and two['lease_s'] == 0.0


def test_host_costs_take_another_module_list():
    hosts = task_timeline.host_costs(SYNTHETIC, modules=(NETVAL + 'rdma_info',))
    by_host = dict((row['host'], row) for row in hosts)
    assert by_host['node02']['test_s'] == 1.0           # rdma_info only: perftest and jumbo_ping are not in that list
    assert by_host['node01']['test_s'] == 2.0 + 10.5    # rdma_info, and the tier_tests async wait and counter snapshot


def test_compare_task_costs_before_and_after():
    # synthetic: a task got cheaper, one new, one gone
    before = doc([rec('n1', 'Plan', 0, 4), rec('n2', 'Plan', 0, 4), rec('n1', 'Gone', 4, 5)])
    after = doc([rec('n1', 'Plan', 0, 1), rec('n2', 'Plan', 0, 1), rec('n1', 'New', 1, 1.5)])
    rows = task_timeline.compare_task_costs(before, after)
    assert [(row['task'], row['before_s'], row['after_s'], row['delta_s']) for row in rows] == [
        ('Plan', 8.0, 2.0, -6.0), ('Gone', 1.0, 0.0, -1.0), ('New', 0.0, 0.5, 0.5)]
    assert rows[0]['before_count'] == 2 and rows[2]['before_count'] == 0 and rows[2]['after_count'] == 1


def test_a_record_without_an_end_costs_nothing_and_a_wrong_document_is_refused():
    assert task_timeline.duration({'start': 5.0, 'end': None}) == 0.0
    assert task_timeline.duration({'start': 5.0, 'end': 4.0}) == 0.0
    with pytest.raises(task_timeline.TimelineError, match='not a task timeline'):
        task_timeline.task_costs({'format': 'something else', 'records': []})
    with pytest.raises(task_timeline.TimelineError, match='has no start'):
        task_timeline.check_timeline(doc([{'host': 'a', 'task': 'b', 'end': 1.0, 'status': 'ok'}]))
    with pytest.raises(task_timeline.TimelineError, match='not a number'):
        task_timeline.check_timeline(doc([dict(rec('a', 'b', 0, 1), start='0')]))
    with pytest.raises(task_timeline.TimelineError, match='not a number'):
        task_timeline.check_timeline(doc([dict(rec('a', 'b', 0, 1), end=True)]))
    with pytest.raises(task_timeline.TimelineError, match='not a number'):
        task_timeline.check_timeline(doc([dict(rec('a', 'b', 0, 1), end=float('inf'))]))
    with pytest.raises(task_timeline.TimelineError, match='list of records'):
        task_timeline.check_timeline(dict(doc([]), records={}))


def test_read_timeline(tmp_path):
    good = tmp_path / 'good.json'
    good.write_text(json.dumps(SYNTHETIC))
    assert task_timeline.read_timeline(str(good)) == SYNTHETIC
    bad = tmp_path / 'bad.json'
    bad.write_text('{"format": ')
    with pytest.raises(task_timeline.TimelineError, match='bad.json is not JSON'):
        task_timeline.read_timeline(str(bad))
    other = tmp_path / 'other.json'
    other.write_text('[]')
    with pytest.raises(task_timeline.TimelineError, match='other.json: not a task timeline'):
        task_timeline.read_timeline(str(other))


# Peer overlap; every interval list below is synthetic: (peer, hca, node, start, end).

def test_no_overlap_when_one_node_at_a_time_or_on_different_hcas_or_peers():
    assert task_timeline.peer_overlap_s([]) == 0.0
    assert task_timeline.peer_overlap_s([('p1', 'mlx5_0', 'n1', 0, 10), ('p1', 'mlx5_0', 'n2', 10, 20)]) == 0.0   # touching
    assert task_timeline.peer_overlap_s([('p1', 'mlx5_0', 'n1', 0, 10), ('p1', 'mlx5_1', 'n2', 0, 10)]) == 0.0
    assert task_timeline.peer_overlap_s([('p1', 'mlx5_0', 'n1', 0, 10), ('p2', 'mlx5_0', 'n2', 0, 10)]) == 0.0


def test_one_nodes_own_sessions_overlapping_do_not_count():
    assert task_timeline.peer_overlap_s([('p1', 'mlx5_0', 'n1', 0, 10), ('p1', 'mlx5_0', 'n1', 5, 15)]) == 0.0


def test_two_nodes_on_one_peer_hca_overlap_for_the_shared_seconds():
    intervals = [('p1', 'mlx5_0', 'n1', 0, 10), ('p1', 'mlx5_0', 'n2', 6, 20)]
    assert task_timeline.peer_overlap_s(intervals) == 4.0
    assert task_timeline.peer_overlap_spans(intervals) == {('p1', 'mlx5_0'): [(6.0, 10.0)]}


def test_a_node_leaving_while_another_of_its_sessions_runs_keeps_the_overlap():
    intervals = [('p1', 'mlx5_0', 'n1', 0, 4), ('p1', 'mlx5_0', 'n1', 3, 12), ('p1', 'mlx5_0', 'n2', 2, 8),
                 ('p1', 'mlx5_0', 'n3', 10, 11)]
    # n1 and n2 share 2..8; n1 and n3 share 10..11
    assert task_timeline.peer_overlap_s(intervals) == 7.0
    assert task_timeline.peer_overlap_spans(intervals)[('p1', 'mlx5_0')] == [(2.0, 8.0), (10.0, 11.0)]


def test_overlaps_on_two_pairs_at_the_same_time_are_counted_once():
    intervals = [('p1', 'mlx5_0', 'n1', 0, 10), ('p1', 'mlx5_0', 'n2', 0, 10),
                 ('p2', 'mlx5_1', 'n3', 5, 15), ('p2', 'mlx5_1', 'n4', 5, 15),
                 ('p1', 'mlx5_1', 'n5', 0, 0)]   # an empty session carries nothing
    assert task_timeline.peer_overlap_s(intervals) == 15.0
    assert sorted(task_timeline.peer_overlap_spans(intervals)) == [('p1', 'mlx5_0'), ('p2', 'mlx5_1')]


# The writer: atomic, never over an existing file.

def test_write_document_creates_the_folder_and_never_overwrites(tmp_path):
    target = tmp_path / 'new' / 't.json'
    first = task_timeline.write_document(str(target), {'n': 1})
    assert first == str(target) and json.loads(target.read_text()) == {'n': 1}
    second = task_timeline.write_document(str(target), {'n': 2})
    third = task_timeline.write_document(str(target), {'n': 3})
    assert second == str(tmp_path / 'new' / 't.1.json') and third == str(tmp_path / 'new' / 't.2.json')
    assert json.loads(target.read_text()) == {'n': 1} and json.loads((tmp_path / 'new' / 't.1.json').read_text()) == {'n': 2}
    assert sorted(os.listdir(str(tmp_path / 'new'))) == ['t.1.json', 't.2.json', 't.json']   # no temporary file left
    assert oct(os.stat(first).st_mode & 0o777) == oct(0o644)


def test_write_document_skips_a_dangling_symlink_and_renames_where_there_are_no_hard_links(tmp_path, monkeypatch):
    os.symlink(str(tmp_path / 'elsewhere'), str(tmp_path / 't.json'))

    def no_links(_src, _dst):
        raise OSError(errno.EPERM, 'Operation not permitted')

    monkeypatch.setattr(task_timeline.os, 'link', no_links)
    written = task_timeline.write_document(str(tmp_path / 't.json'), {'n': 1})
    assert written == str(tmp_path / 't.1.json') and json.loads((tmp_path / 't.1.json').read_text()) == {'n': 1}
    assert not (tmp_path / 'elsewhere').exists()
    assert sorted(os.listdir(str(tmp_path))) == ['t.1.json', 't.json']


def test_write_document_refuses_values_json_cannot_hold_and_leaves_nothing(tmp_path):
    with pytest.raises(ValueError):
        task_timeline.write_document(str(tmp_path / 't.json'), {'start': float('nan')})
    assert os.listdir(str(tmp_path)) == []


def test_document_candidates():
    names = list(task_timeline.document_candidates('/x/t.json', limit=3))
    assert names == ['/x/t.json', '/x/t.1.json', '/x/t.2.json']
    assert list(task_timeline.document_candidates('/x/timeline', limit=2)) == ['/x/timeline', '/x/timeline.1']


def test_hosts_in_a_play_at_once_are_counted_from_each_hosts_first_start_to_its_last_end_there():
    tests_play = 'Measure each node'
    records = [dict(rec('node01', 'a', 0.0, 5.0), play=tests_play), dict(rec('node01', 'b', 6.0, 10.0), play=tests_play),
               dict(rec('node02', 'a', 1.0, 4.0), play=tests_play),
               # node03 enters as node01 leaves (spans that touch do not overlap); node04 is in another play then.
               dict(rec('node03', 'a', 10.0, 12.0), play=tests_play), dict(rec('node04', 'a', 2.0, 3.0), play='Preflight')]
    assert task_timeline.hosts_in_play_peak(doc(records), tests_play) == 2
    # An earlier task of node03 makes three (node01's gap between its two tasks still counts as in the play).
    records.append(dict(rec('node03', 'b', 3.0, 3.5), play=tests_play))
    assert task_timeline.hosts_in_play_peak(doc(records), tests_play) == 3
    assert task_timeline.hosts_in_play_peak(doc(records), 'Report') == 0
