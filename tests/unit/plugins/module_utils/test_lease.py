"""Exclusive peers: lease files taken atomically, given back, and taken over only when stale."""
import multiprocessing
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import lease

RUN = '20261201T000000Z'


def fake_proc(tmp_path, pid, start):
    """A /proc/<pid>/stat as the kernel writes it (comm may hold spaces and parentheses)."""
    folder = tmp_path / 'proc' / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    fields = ['S', '1'] + ['0'] * 17 + [str(start)] + ['0'] * 10
    (folder / 'stat').write_text('%d (ansible (x) y) %s\n' % (pid, ' '.join(fields)))
    (folder / 'cmdline').write_bytes(b'/usr/bin/python3\0/usr/bin/ansible-playbook\0validate.yml\0')
    return str(tmp_path / 'proc')


def test_process_start_time_reads_field_22_after_the_command_name(tmp_path):
    proc = fake_proc(tmp_path, 4242, 987654)
    assert lease.process_start_time(4242, proc) == 987654
    assert lease.process_start_time(4243, proc) is None
    assert lease.process_start_time(os.getpid()) == lease.process_start_time(os.getpid())


def test_a_peer_is_leased_to_one_node_at_a_time_and_the_next_free_peer_is_taken(tmp_path):
    folder = str(tmp_path / 'leases')
    first, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node01', 'run': RUN}, ttl=600, wait=0)
    second, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node02', 'run': RUN}, ttl=600, wait=0)
    third, waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node03', 'run': RUN}, ttl=600, wait=0)
    assert (first['peer'], second['peer'], third) == ('peer01', 'peer02', None) and waited >= 0
    assert not lease.release(folder, 'peer01', {'node': 'node02', 'run': RUN})  # not its lease
    assert lease.release(folder, 'peer01', {'node': 'node01', 'run': RUN})
    again, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node03', 'run': RUN}, ttl=600, wait=0)
    assert again['peer'] == 'peer01' and again['node'] == 'node03'


def test_the_same_holder_gets_its_own_lease_back(tmp_path):
    folder = str(tmp_path)
    one, _waited = lease.acquire(folder, ['peer01'], {'node': 'node01', 'run': RUN}, ttl=600, wait=0)
    two, _waited = lease.acquire(folder, ['peer01'], {'node': 'node01', 'run': RUN}, ttl=600, wait=0)
    assert one == two


def test_an_expired_lease_or_one_whose_controller_is_gone_is_taken_over(tmp_path):
    folder = str(tmp_path / 'leases')
    proc = fake_proc(tmp_path, 4242, 1000)
    os.makedirs(folder)
    held = {'node': 'node01', 'run': RUN, 'peer': 'peer01', 'acquired': 0, 'expires': 10 ** 10,
            'controller_pid': 4242, 'controller_start': 1000}
    with open(os.path.join(folder, 'peer01.lease'), 'w') as handle:
        handle.write(__import__('json').dumps(held))
    assert not lease.stale(held, now=100, proc=proc)
    assert lease.try_acquire(folder, 'peer01', {'node': 'node02', 'run': RUN}, 600, now=100, proc=proc) is None
    # The controller process exited and its pid now belongs to another process (another start time).
    fake_proc(tmp_path, 4242, 2000)
    assert lease.stale(held, now=100, proc=proc)
    taken = lease.try_acquire(folder, 'peer01', {'node': 'node02', 'run': RUN}, 600, now=100, proc=proc)
    assert taken['node'] == 'node02'
    assert lease.stale(dict(held, controller_pid=None, expires=50), now=100)


def test_a_bad_peer_name_is_refused_before_any_file_is_touched(tmp_path):
    try:
        lease.acquire(str(tmp_path), ['../etc/passwd'], {'node': 'n', 'run': RUN}, ttl=1, wait=0)
    except lease.LeaseError as exc:
        assert 'cannot name a lease file' in str(exc)
    else:
        raise AssertionError('expected a LeaseError')
    assert os.listdir(str(tmp_path)) == []


def _take(args):
    folder, node = args
    got, _waited = lease.acquire(folder, ['peer01'], {'node': node, 'run': RUN}, ttl=600, wait=0)
    return got['node'] if got else None


def test_concurrent_takers_never_share_a_peer(tmp_path):
    folder = str(tmp_path / 'leases')
    os.makedirs(folder)
    with multiprocessing.Pool(8) as pool:
        winners = [w for w in pool.map(_take, [(folder, 'node%02d' % i) for i in range(32)]) if w]
    assert len(winners) == 1


def test_the_holder_is_the_outermost_playbook_process_not_a_per_task_worker(tmp_path, monkeypatch):
    """ansible-playbook (pid 100) forks a worker (pid 200, same command line) that runs the module's shell (300)."""
    proc = tmp_path / 'proc'
    for pid, parent, start, argv in ((100, 1, 11, b'/usr/bin/python3\0/usr/bin/ansible-playbook\0validate.yml\0'),
                                     (200, 100, 22, b'/usr/bin/python3\0/usr/bin/ansible-playbook\0validate.yml\0'),
                                     (300, 200, 33, b'/bin/sh\0-c\0python3 AnsiballZ_peer_lease.py\0')):
        folder = proc / str(pid)
        folder.mkdir(parents=True)
        fields = ['S', str(parent)] + ['0'] * 17 + [str(start)] + ['0'] * 10
        (folder / 'stat').write_text('%d (x) %s\n' % (pid, ' '.join(fields)))
        (folder / 'cmdline').write_bytes(argv)
    monkeypatch.setattr(lease.os, 'getppid', lambda: 300)
    assert lease.controller_process(str(proc)) == (100, 11)


def _process_table(root, rows):
    for pid, parent, start, argv in rows:
        folder = root / str(pid)
        folder.mkdir(parents=True)
        fields = ['S', str(parent)] + ['0'] * 17 + [str(start)] + ['0'] * 10
        (folder / 'stat').write_text('%d (x) %s\n' % (pid, ' '.join(fields)))
        (folder / 'cmdline').write_bytes(argv)


def test_a_worker_whose_playbook_was_killed_takes_no_lease(tmp_path, monkeypatch):
    """Seen on the lab: a worker orphaned by a killed ansible-playbook wrote a lease held by init (pid 1, alive for ever),
    and every later run waited for that peer until the lease expired two hours later."""
    proc = tmp_path / 'proc'
    _process_table(proc, ((1, 0, 9, b'/sbin/init\0'),
                          (200, 1, 22, b'/usr/bin/python3\0/usr/bin/ansible-playbook\0validate.yml\0')))
    monkeypatch.setattr(lease.os, 'getppid', lambda: 1)
    with pytest.raises(lease.LeaseError, match='playbook process that started this task is gone'):
        lease.controller_process(str(proc))
    folder = tmp_path / 'leases'
    folder.mkdir()
    with pytest.raises(lease.LeaseError):
        lease.try_acquire(str(folder), 'peer01', {'node': 'node08', 'run': 'r1'}, 7200, proc=str(proc))
    assert not list(folder.iterdir())


def test_a_playbook_that_is_pid_1_in_its_container_holds_its_leases(tmp_path, monkeypatch):
    proc = tmp_path / 'proc'
    _process_table(proc, ((1, 0, 5, b'/usr/bin/python3\0/usr/local/bin/ansible-playbook\0validate.yml\0'),))
    monkeypatch.setattr(lease.os, 'getppid', lambda: 1)
    assert lease.controller_process(str(proc)) == (1, 5)


def test_a_peer_hca_two_nodes_failed_on_leaves_the_pool_for_that_run_only(tmp_path):
    folder = str(tmp_path / 'leases')
    figures = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'peer_device': 'mlx5_3', 'first_value': 28.2, 'second_value': 47.0}]  # synthetic
    assert lease.suspect(folder, 'peer01', RUN, 'node05', figures) == ['node05']
    assert lease.suspect(folder, 'peer01', RUN, 'node05', figures) == ['node05']  # once per node
    taken, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node06', 'run': RUN}, ttl=600, wait=0, suspect_limit=2)
    assert taken['peer'] == 'peer01'  # one suspicion is not enough
    lease.release(folder, 'peer01', {'node': 'node06', 'run': RUN})
    assert lease.suspect(folder, 'peer01', RUN, 'node07', figures) == ['node05', 'node07']
    assert lease.suspected_hcas(folder, 'peer01', RUN) == {'mlx5_3': ['node05', 'node07']}
    assert lease.excluded(folder, ['peer01', 'peer02'], RUN, 2) == {'peer01': ['node05', 'node07']}
    taken, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node08', 'run': RUN}, ttl=600, wait=0, suspect_limit=2)
    assert taken['peer'] == 'peer02'
    lease.release(folder, 'peer02', {'node': 'node08', 'run': RUN})
    later, _waited = lease.acquire(folder, ['peer01'], {'node': 'node09', 'run': '20261202T000000Z'}, ttl=600, wait=0, suspect_limit=2)
    assert later['peer'] == 'peer01'
    assert lease.excluded(folder, ['peer01'], RUN, 0) == {}


def test_nodes_that_failed_on_different_hcas_of_a_peer_do_not_make_it_suspect(tmp_path):
    folder = str(tmp_path / 'leases')
    lease.suspect(folder, 'peer01', RUN, 'node05', [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'peer_device': 'mlx5_0'}])
    lease.suspect(folder, 'peer01', RUN, 'node07', [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_4', 'peer_device': 'mlx5_4'}])
    assert lease.excluded(folder, ['peer01', 'peer02'], RUN, 2) == {}
    # Figures that name no peer HCA (all NICs at once, iperf3) count against the peer's link as a whole.
    lease.suspect(folder, 'peer02', RUN, 'node05', [{'metric': 'all_nics_gbs', 'subject': 'all NICs'}])
    lease.suspect(folder, 'peer02', RUN, 'node07', [{'metric': 'iperf3_gbps', 'subject': '10.0.0.2'}])
    assert lease.excluded(folder, ['peer01', 'peer02'], RUN, 2) == {'peer02': ['node05', 'node07']}


def test_suspicion_never_takes_the_last_peer_standing(tmp_path):
    folder = str(tmp_path / 'leases')
    figures = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'peer_device': 'mlx5_0'}]
    for peer in ('peer01', 'peer02'):
        for node in ('node05', 'node07', 'node09'):
            if peer == 'peer01' or node != 'node09':
                lease.suspect(folder, peer, RUN, node, figures)
    # Both are suspect: the less suspected (peer02, two nodes against three) stays, the other leaves.
    assert lease.left_pool(folder, ['peer01', 'peer02'], RUN, 2) == ({'peer01': ['node05', 'node07', 'node09']}, {})
    taken, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node10', 'run': RUN}, ttl=600, wait=0, suspect_limit=2)
    assert taken['peer'] == 'peer02'
    lease.release(folder, 'peer02', {'node': 'node10', 'run': RUN})
    # peer02 went away: peer01 is now the last one there and stays in the pool, however suspect.
    lease.mark_lost(folder, 'peer02', RUN, 'node10', 'the clients of ib_send_bw:0', 'unreachable')
    suspected, gone = lease.left_pool(folder, ['peer01', 'peer02'], RUN, 2)
    assert 'peer01' not in suspected and list(gone) == ['peer02']
    taken, _waited = lease.acquire(folder, ['peer01', 'peer02'], {'node': 'node11', 'run': RUN}, ttl=600, wait=0, suspect_limit=2)
    assert taken['peer'] == 'peer01'


def test_a_promoted_node_joins_the_pool_of_the_nodes_that_grow_it_after_the_known_good_peers(tmp_path):
    folder = str(tmp_path / 'leases')
    busy, _waited = lease.acquire(folder, ['peer01'], {'node': 'node02', 'run': RUN}, ttl=600, wait=0)
    assert busy['peer'] == 'peer01'
    # Nothing promoted yet: a node that grows the pool still finds every peer busy.
    assert lease.acquire(folder, ['peer01'], {'node': 'node03', 'run': RUN}, ttl=600, wait=0, grow=True)[0] is None
    record = lease.promote(folder, RUN, 'node01', 'peer01')
    assert record['node'] == 'node01' and record['validated_by'] == 'peer01'
    assert lease.promote(folder, RUN, 'node01', 'peer02')['validated_by'] == 'peer01'  # the first record stands
    assert [r['node'] for r in lease.promoted(folder, RUN)] == ['node01']
    # Without grow the pool is the known-good peers alone; with it node01 serves; never a node itself.
    assert lease.acquire(folder, ['peer01'], {'node': 'node03', 'run': RUN}, ttl=600, wait=0)[0] is None
    taken, _waited = lease.acquire(folder, ['peer01'], {'node': 'node03', 'run': RUN}, ttl=600, wait=0, grow=True)
    assert taken['peer'] == 'node01' and taken['node'] == 'node03'
    assert lease.pool(folder, ['peer01'], {'node': 'node01', 'run': RUN}, grow=True) == ['peer01']
    # A promoted node is leased like a peer (one node at a time) and leaves the pool like one.
    assert lease.acquire(folder, ['peer01'], {'node': 'node04', 'run': RUN}, ttl=600, wait=0, grow=True)[0] is None
    assert lease.release(folder, 'node01', {'node': 'node03', 'run': RUN})
    lease.mark_lost(folder, 'node01', RUN, 'node03', 'ib_send_bw', 'gone')
    assert lease.acquire(folder, ['peer01'], {'node': 'node04', 'run': RUN}, ttl=600, wait=0, grow=True)[0] is None
    # Another run has promoted nobody.
    assert lease.promoted(folder, '20261202T000000Z') == [] and lease.pool(folder, ['peer01'], {'node': 'n', 'run': '20261202T000000Z'}, True) == ['peer01']


def test_a_promotion_needs_names_that_can_name_files(tmp_path):
    for run, node in (('../x', 'node01'), (RUN, '../node01'), (RUN, '')):
        try:
            lease.promote(str(tmp_path), run, node, 'peer01')
        except lease.LeaseError as exc:
            assert 'name' in str(exc)
        else:
            raise AssertionError('promote accepted %r %r' % (run, node))
