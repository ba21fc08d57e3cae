"""Exclusive peers: a lease per peer, held by a run and renewed while it lives; a lapsed lease is taken over, a live one
never.  Every case of the lease itself runs on both backends: the lease folder and a real Redis (Debian's redis-server)."""
import json
import multiprocessing
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import lease, lease_redis, lease_renewer
from tests.redis_server import PASSWORD, RedisServer

RUN = '20261201T000000Z-0a1b2c3d'
OTHER_RUN = '20261201T000000Z-ffffffff'


@pytest.fixture(scope='module')
def redis_url(tmp_path_factory):
    with RedisServer(tmp_path_factory.mktemp('redis')) as server:
        yield server.url


@pytest.fixture(params=['folder', 'redis'])
def backend(request, tmp_path):
    """(folder, backend URL or '') of a clean lease store."""
    if request.param == 'folder':
        return str(tmp_path / 'leases'), ''
    url = request.getfixturevalue('redis_url')
    client = lease_redis.RedisClient(url)
    client.call('FLUSHDB')
    client.close()
    return str(tmp_path / 'leases'), url


def leases_of(backend):
    return lease.leases_for(*backend)


def take(backend, peers, node, run=RUN, ttl=600, wait=0, **extra):
    leases = leases_of(backend)
    try:
        return lease.acquire(leases, backend[0], peers, {'node': node, 'run': run}, ttl=ttl, wait=wait, **extra)[0]
    finally:
        leases.close()


def test_a_peer_is_leased_to_one_node_at_a_time_and_the_next_free_peer_is_taken(backend):
    first = take(backend, ['peer01', 'peer02'], 'node01')
    second = take(backend, ['peer01', 'peer02'], 'node02')
    third = take(backend, ['peer01', 'peer02'], 'node03')
    assert (first['peer'], second['peer'], third) == ('peer01', 'peer02', None)
    leases = leases_of(backend)
    assert not leases.give_back('peer01', {'node': 'node02', 'run': RUN})  # not its lease
    assert leases.give_back('peer01', {'node': 'node01', 'run': RUN})
    again = take(backend, ['peer01', 'peer02'], 'node03')
    assert again['peer'] == 'peer01' and again['node'] == 'node03' and again['run'] == RUN
    assert leases.read('peer01')['node'] == 'node03' and leases.read('peer01')['deadline'] > time.time() + 590
    assert sorted(held['peer'] for held in leases.held_by(RUN)) == ['peer01', 'peer02'] and leases.held_by(OTHER_RUN) == []


def test_the_same_holder_gets_its_own_lease_back_renewed_and_another_run_with_the_same_node_does_not(backend):
    one = take(backend, ['peer01'], 'node01', ttl=60)
    two = take(backend, ['peer01'], 'node01', ttl=600)
    assert two['acquired'] == one['acquired'] and two['deadline'] > one['deadline'] + 500
    assert take(backend, ['peer01'], 'node01', run=OTHER_RUN) is None


def test_a_live_lease_is_never_taken_a_lapsed_one_is_and_its_old_holder_can_neither_renew_nor_give_it_back(backend):
    leases = leases_of(backend)
    held = take(backend, ['peer01'], 'node01', ttl=1)
    assert held['deadline'] <= time.time() + 1
    assert leases.renew('peer01', {'node': 'node01', 'run': RUN}, 1)
    assert take(backend, ['peer01'], 'node02', run=OTHER_RUN) is None  # live: another run's node waits
    time.sleep(1.3)  # no renewal: the lease lapses on its deadline (Redis: on the server's clock)
    taken = take(backend, ['peer01'], 'node02', run=OTHER_RUN)
    assert taken is not None and taken['node'] == 'node02' and taken['run'] == OTHER_RUN
    assert not leases.renew('peer01', {'node': 'node01', 'run': RUN}, 600)
    assert not leases.give_back('peer01', {'node': 'node01', 'run': RUN})
    assert leases.read('peer01')['run'] == OTHER_RUN


def test_renewals_keep_a_lease_past_its_ttl(backend):
    leases = leases_of(backend)
    take(backend, ['peer01'], 'node01', ttl=1)
    for _round in range(4):
        time.sleep(0.4)
        assert lease_renewer.renew_all(leases, RUN, 1) == ['peer01']
    assert take(backend, ['peer01'], 'node02', run=OTHER_RUN) is None


def test_the_lease_folder_decides_by_the_deadline_alone_not_by_a_process(tmp_path):
    """A lease written by a controller in another PID namespace (an AWX job's container) names no pid this one could
    check: its deadline decides."""
    folder = tmp_path / 'leases'
    folder.mkdir()
    record = {'node': 'node01', 'run': RUN, 'peer': 'peer01', 'acquired': 0, 'renewed': 90, 'ttl': 120, 'deadline': 210,
              'controller_pid': 999999999}
    (folder / 'peer01.lease').write_text(json.dumps(record))
    leases = lease.FolderLeases(str(folder))
    assert leases.take('peer01', {'node': 'node02', 'run': OTHER_RUN}, 120, now=200) is None
    assert not lease.lapsed(leases.read('peer01'), now=200) and lease.lapsed(leases.read('peer01'), now=211)
    assert leases.take('peer01', {'node': 'node02', 'run': OTHER_RUN}, 120, now=211)['node'] == 'node02'


def test_a_lease_an_earlier_version_wrote_lapses_at_its_expiry_and_a_record_without_a_deadline_protects_no_one():
    old = {'node': 'node01', 'run': '20261130T000000Z', 'peer': 'peer01', 'acquired': 0, 'expires': 7200, 'controller_pid': 4242}
    assert not lease.lapsed(old, now=7000) and lease.lapsed(old, now=7201)
    assert lease.lapsed({'node': 'node01', 'run': RUN, 'peer': 'peer01'}, now=0)


def test_a_lease_an_earlier_version_wrote_lapses_once_its_playbook_process_is_gone(tmp_path):
    """Seen on the lab after the upgrade: a killed run's lease (pid 771, gone) held peer01 for its two hours."""
    proc = tmp_path / 'proc'
    _process_table(proc, ((771, 1, 1789559, b'/usr/bin/python3\0/usr/bin/ansible-playbook\0validate.yml\0'),))
    old = {'node': 'node01', 'run': '20261206T011034Z', 'peer': 'peer01', 'acquired': 0, 'expires': 7200,
           'controller_pid': 771, 'controller_start': 1789559}
    assert not lease.lapsed(old, now=100, proc=str(proc))  # its playbook still runs
    assert lease.lapsed(dict(old, controller_start=1789560), now=100, proc=str(proc))  # the pid now belongs to another process
    assert lease.lapsed(dict(old, controller_pid=772), now=100, proc=str(proc))  # gone
    # A lease of today's version is held by its deadline alone, whatever process wrote it.
    assert not lease.lapsed(dict(old, deadline=7200, controller_pid=772), now=100, proc=str(proc))


def test_a_lease_file_that_cannot_be_read_counts_as_held_for_a_minute(tmp_path):
    folder = tmp_path / 'leases'
    folder.mkdir()
    (folder / 'peer01.lease').write_text('{"node": "nod')
    leases = lease.FolderLeases(str(folder))
    mtime = os.path.getmtime(str(folder / 'peer01.lease'))
    assert leases.take('peer01', {'node': 'node02', 'run': RUN}, 120, now=mtime + 30) is None
    assert leases.take('peer01', {'node': 'node02', 'run': RUN}, 120, now=mtime + 61)['node'] == 'node02'


def test_a_bad_peer_name_is_refused_before_anything_is_touched(backend):
    with pytest.raises(lease.LeaseError, match='cannot name a lease'):
        take(backend, ['../etc/passwd'], 'node01')
    assert not os.path.exists(os.path.join(backend[0], '..', 'etc'))


def _take(args):
    folder, url, node = args
    leases = lease.leases_for(folder, url)
    got, _waited = lease.acquire(leases, folder, ['peer01'], {'node': node, 'run': RUN}, ttl=600, wait=0)
    return got['node'] if got else None


def test_concurrent_takers_never_share_a_peer(backend):
    folder, url = backend
    with multiprocessing.get_context('spawn').Pool(8) as pool:
        winners = [w for w in pool.map(_take, [(folder, url, 'node%02d' % i) for i in range(32)]) if w]
    assert len(winners) == 1


def test_a_redis_that_refuses_or_cannot_be_reached_is_a_lease_error_that_never_shows_the_password(redis_url, tmp_path):
    wrong = redis_url.replace(PASSWORD, 'not-the-password')
    with pytest.raises(lease.LeaseError) as refused:
        lease.leases_for(str(tmp_path), wrong).read('peer01')
    assert 'refused AUTH' in str(refused.value) and 'not-the-password' not in str(refused.value) and '***' in str(refused.value)
    closed = 'redis://:%s@127.0.0.1:%d/0' % (PASSWORD, lease_redis.DEFAULT_PORT - 1)
    with pytest.raises(lease.LeaseError, match='cannot reach the lease backend') as unreachable:
        lease.leases_for(str(tmp_path), closed).read('peer01')
    assert PASSWORD not in str(unreachable.value)


@pytest.mark.parametrize('url, expected', [
    ('redis://redis.example:6380/2', {'host': 'redis.example', 'port': 6380, 'db': 2, 'tls': False, 'username': None, 'password': None}),
    ('rediss://netval:s%40cret@redis.example',
     {'host': 'redis.example', 'port': 6379, 'db': 0, 'tls': True, 'username': 'netval', 'password': 's@cret'}),
])
def test_a_redis_url_names_the_server_the_database_and_the_credentials(url, expected):
    assert lease_redis.url_settings(url) == expected


@pytest.mark.parametrize('url', ['http://redis.example', 'redis://', 'redis://redis.example/x', 'redis://redis.example:99999'])
def test_a_url_that_is_not_redis_is_refused_by_name(url):
    with pytest.raises(lease.LeaseError, match='lease backend'):
        lease_redis.url_settings(url)


def test_the_redacted_url_keeps_everything_but_the_password():
    assert lease_redis.redacted('redis://user:pw@host:1/2') == 'redis://user:***@host:1/2'
    assert lease_redis.redacted('redis://:pw@host') == 'redis://:***@host'
    assert lease_redis.redacted('redis://host') == 'redis://host'


def _fake_controller():
    return subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])  # pylint: disable=consider-using-with


def test_the_renewer_holds_the_runs_leases_while_its_controller_lives_and_they_lapse_after_it_is_gone(backend):
    folder, url = backend
    controller = _fake_controller()
    renewer = None
    try:
        held = take(backend, ['peer01'], 'node01', ttl=1)
        assert held is not None
        renewer = lease_renewer.ensure(folder, url, RUN, 1, controller=(controller.pid, lease.process_start_time(controller.pid)))
        assert renewer is not None
        deadline = time.time() + 10
        while not lease_renewer.running(folder, RUN) and time.time() < deadline:
            time.sleep(0.05)
        assert lease_renewer.running(folder, RUN)
        assert lease_renewer.ensure(folder, url, RUN, 1, controller=(controller.pid, None)) is None  # one renewer per run
        time.sleep(2.5)  # more than twice the ttl: only the renewals keep it
        assert take(backend, ['peer01'], 'node02', run=OTHER_RUN) is None
        controller.kill()
        controller.wait()
        os.waitpid(renewer, 0)  # the renewer sees its controller gone and stops
        renewer = None
        time.sleep(1.2)
        taken = take(backend, ['peer01'], 'node02', run=OTHER_RUN)
        assert taken is not None and taken['run'] == OTHER_RUN
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait()
        if renewer is not None:
            os.kill(renewer, 9)
            os.waitpid(renewer, 0)


def test_the_controller_is_alive_while_its_pid_has_the_start_time_it_had(tmp_path):
    proc = fake_proc(tmp_path, 4242, 1000)
    assert lease_renewer.controller_alive(4242, 1000, proc) and lease_renewer.controller_alive(4242, -1, proc)
    fake_proc(tmp_path, 4242, 2000)  # the pid now belongs to another process
    assert not lease_renewer.controller_alive(4242, 1000, proc) and not lease_renewer.controller_alive(4243, -1, proc)


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


def test_the_renewer_follows_the_outermost_playbook_process_not_a_per_task_worker(tmp_path, monkeypatch):
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


def test_a_peer_hca_two_nodes_failed_on_leaves_the_pool_for_that_run_only(backend):
    folder = backend[0]
    figures = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'peer_device': 'mlx5_3', 'first_value': 28.2, 'second_value': 47.0}]  # synthetic
    assert lease.suspect(folder, 'peer01', RUN, 'node05', figures) == ['node05']
    assert lease.suspect(folder, 'peer01', RUN, 'node05', figures) == ['node05']  # once per node
    taken = take(backend, ['peer01', 'peer02'], 'node06', suspect_limit=2)
    assert taken['peer'] == 'peer01'  # one suspicion is not enough
    leases_of(backend).give_back('peer01', {'node': 'node06', 'run': RUN})
    assert lease.suspect(folder, 'peer01', RUN, 'node07', figures) == ['node05', 'node07']
    assert lease.suspected_hcas(folder, 'peer01', RUN) == {'mlx5_3': ['node05', 'node07']}
    assert lease.excluded(folder, ['peer01', 'peer02'], RUN, 2) == {'peer01': ['node05', 'node07']}
    taken = take(backend, ['peer01', 'peer02'], 'node08', suspect_limit=2)
    assert taken['peer'] == 'peer02'
    leases_of(backend).give_back('peer02', {'node': 'node08', 'run': RUN})
    started = time.time()
    assert take(backend, ['peer01'], 'node09', wait=5, suspect_limit=2)['peer'] == 'peer01'  # the last peer there stays
    assert time.time() - started < 2
    leases_of(backend).give_back('peer01', {'node': 'node09', 'run': RUN})
    assert take(backend, ['peer01'], 'node09', run=OTHER_RUN, suspect_limit=2)['peer'] == 'peer01'
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


def test_suspicion_never_takes_the_last_peer_standing(backend):
    folder = backend[0]
    figures = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'peer_device': 'mlx5_0'}]
    for peer in ('peer01', 'peer02'):
        for node in ('node05', 'node07', 'node09'):
            if peer == 'peer01' or node != 'node09':
                lease.suspect(folder, peer, RUN, node, figures)
    # Both are suspect: the less suspected (peer02, two nodes against three) stays, the other leaves.
    assert lease.left_pool(folder, ['peer01', 'peer02'], RUN, 2) == ({'peer01': ['node05', 'node07', 'node09']}, {})
    assert take(backend, ['peer01', 'peer02'], 'node10', suspect_limit=2)['peer'] == 'peer02'
    leases_of(backend).give_back('peer02', {'node': 'node10', 'run': RUN})
    # peer02 went away: peer01 is now the last one there and stays in the pool, however suspect.
    lease.mark_lost(folder, 'peer02', RUN, 'node10', 'the clients of ib_send_bw:0', 'unreachable')
    suspected, gone = lease.left_pool(folder, ['peer01', 'peer02'], RUN, 2)
    assert 'peer01' not in suspected and list(gone) == ['peer02']
    assert take(backend, ['peer01', 'peer02'], 'node11', suspect_limit=2)['peer'] == 'peer01'


def test_a_promoted_node_joins_the_pool_of_the_nodes_that_grow_it_after_the_known_good_peers(backend):
    folder = backend[0]
    assert take(backend, ['peer01'], 'node02')['peer'] == 'peer01'
    # Nothing promoted yet: a node that grows the pool still finds every peer busy.
    assert take(backend, ['peer01'], 'node03', grow=True) is None
    record = lease.promote(folder, RUN, 'node01', 'peer01')
    assert record['node'] == 'node01' and record['validated_by'] == 'peer01'
    assert lease.promote(folder, RUN, 'node01', 'peer02')['validated_by'] == 'peer01'  # the first record stands
    assert [r['node'] for r in lease.promoted(folder, RUN)] == ['node01']
    # Without grow the pool is the known-good peers alone; with it node01 serves; never a node itself.
    assert take(backend, ['peer01'], 'node03') is None
    taken = take(backend, ['peer01'], 'node03', grow=True)
    assert taken['peer'] == 'node01' and taken['node'] == 'node03'
    assert lease.pool(folder, ['peer01'], {'node': 'node01', 'run': RUN}, grow=True) == ['peer01']
    # A promoted node is leased like a peer (one node at a time) and leaves the pool like one.
    assert take(backend, ['peer01'], 'node04', grow=True) is None
    assert leases_of(backend).give_back('node01', {'node': 'node03', 'run': RUN})
    lease.mark_lost(folder, 'node01', RUN, 'node03', 'ib_send_bw', 'gone')
    assert take(backend, ['peer01'], 'node04', grow=True) is None
    # Another run has promoted nobody.
    assert lease.promoted(folder, OTHER_RUN) == [] and lease.pool(folder, ['peer01'], {'node': 'n', 'run': OTHER_RUN}, True) == ['peer01']


def test_a_promotion_needs_names_that_can_name_files(tmp_path):
    for run, node in (('../x', 'node01'), (RUN, '../node01'), (RUN, '')):
        with pytest.raises(lease.LeaseError, match='name'):
            lease.promote(str(tmp_path), run, node, 'peer01')


def _process_table(root, rows):
    for pid, parent, start, argv in rows:
        folder = root / str(pid)
        folder.mkdir(parents=True)
        fields = ['S', str(parent)] + ['0'] * 17 + [str(start)] + ['0'] * 10
        (folder / 'stat').write_text('%d (x) %s\n' % (pid, ' '.join(fields)))
        (folder / 'cmdline').write_bytes(argv)


def test_a_worker_whose_playbook_was_killed_starts_no_renewer_that_follows_init(tmp_path, monkeypatch):
    """Seen on the lab: a worker orphaned by a killed ansible-playbook has init (pid 1, alive for ever) as its parent; a
    renewer following it would keep the run's leases for ever.  Its lease lapses after one ttl instead."""
    proc = tmp_path / 'proc'
    _process_table(proc, ((1, 0, 9, b'/sbin/init\0'),
                          (200, 1, 22, b'/usr/bin/python3\0/usr/bin/ansible-playbook\0validate.yml\0')))
    monkeypatch.setattr(lease.os, 'getppid', lambda: 1)
    with pytest.raises(lease.LeaseError, match='playbook process that started this task is gone'):
        lease.controller_process(str(proc))


def test_a_playbook_that_is_pid_1_in_its_container_is_followed_by_its_renewer(tmp_path, monkeypatch):
    proc = tmp_path / 'proc'
    _process_table(proc, ((1, 0, 5, b'/usr/bin/python3\0/usr/local/bin/ansible-playbook\0validate.yml\0'),))
    monkeypatch.setattr(lease.os, 'getppid', lambda: 1)
    assert lease.controller_process(str(proc)) == (1, 5)
