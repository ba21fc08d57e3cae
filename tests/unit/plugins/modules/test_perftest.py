"""perftest module: the client through the run_module harness, the server with a real stand-in process."""
import os
import socket
import sys
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname
from ansible_collections.gpufleet.netval.plugins.modules import perftest
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

TIMEOUT = ['/usr/bin/timeout', '--kill-after=5']
CLIENT = {'test': 'ib_write_bw', 'role': 'client', 'server': '10.0.0.2', 'device': 'mlx5_0', 'gid_index': 2, 'size': 8,
          'duration': 60, 'report_gbits': True}
CLIENT_ARGV = ['/usr/bin/ib_write_bw', '-d', 'mlx5_0', '-x', '2', '-s', '8', '-D', '60', '--report_gbits', '-p', '18515', '-F',
               '10.0.0.2']


def test_client_success_on_real_output():
    out = fixtures.local('perftest/ib_write_bw_post_list_D60_8B_gbits_roce_issue273.txt')
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=0, out=out)])
    assert not failed, result
    assert result['changed'] is False and result['error_class'] is None and result['timeout'] == 120
    assert result['cmd'] == ' '.join(CLIENT_ARGV)
    row = result['perftest']['results'][0]
    assert (row['bytes'], row['bw_avg'], row['bw_peak']) == (8, 0.48, None)
    assert result['summary']['bw_avg_gbps'] == 0.48


def test_latency_client_defaults_to_300s_and_reads_stderr_warnings():
    out = fixtures.shared('perftest/ib_read_lat_roce_cx5_gid12_macvlan_pod_spiderpool_doc.txt')
    warn = [line for line in out.splitlines() if line.startswith('Conflicting')]
    stdout = '\n'.join(line for line in out.splitlines() if not line.startswith('Conflicting'))
    args = {'test': 'ib_read_lat', 'role': 'client', 'server': 'peer-01.lab', 'gid_index': 12}
    argv = TIMEOUT + ['300', '/usr/bin/ib_read_lat', '-x', '12', '-p', '18515', '-F', 'peer-01.lab']
    result, failed = run_module(perftest.main, args, calls=[Call(argv, rc=0, out=stdout, err='\n'.join(warn))])
    assert not failed, result
    assert result['summary']['t_typical_us'] == 7.04 and result['summary']['p99_us'] == 7.38
    assert len(result['perftest']['warnings']) == 2


def test_client_timeout_is_classified():
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=124, out='', err='')])
    assert failed and result['error_class'] == 'timeout'
    assert hostname() in result['msg'] and ' '.join(CLIENT_ARGV) in result['msg'] and 'timeout' in result['msg']


def test_missing_binary_names_tool_and_package():
    result, failed = run_module(perftest.main, CLIENT, missing=('ib_write_bw',))
    assert failed and result['_ran'] == []
    assert 'ib_write_bw' in result['msg'] and 'perftest' in result['msg'] and hostname() in result['msg']


def test_garbage_output_fails_cleanly():
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=0, out='%%% garbage %%%\n')])
    assert failed and 'could not be parsed' in result['msg'] and 'Traceback' not in result['msg']
    assert hostname() in result['msg'] and (result['error_class'], result['error_side']) == ('parse_error', 'ours')


def test_garbage_output_with_failing_rc():
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=3, err='segfault?\n')])
    assert failed and result['error_class'] == 'unknown_error' and 'rc=3' in result['msg']


def test_connect_failure_is_classified_with_host_command_and_hint():
    out = fixtures.local('perftest/ib_write_bw_connect_failed_pr228.txt')
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=1, err=out)])
    assert failed and result['error_class'] == 'connect_failed' and result['rc'] == 1
    assert hostname() in result['msg'] and ' '.join(CLIENT_ARGV) in result['msg'] and 'connect_failed' in result['msg']
    assert "Couldn't connect to" in result['msg']


def test_qp_modify_failure_message_gives_the_gid_hint():
    out = fixtures.local('perftest/ib_write_bw_qp_rtr_grh_required_issue393.txt')
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=1, err=out)])
    assert failed and 'QP modify failure: wrong GID index? check show_gids and pass gid_index' in result['msg']


def test_header_without_results_is_a_failure():
    out = fixtures.shared('perftest/ib_write_bw_bidir_D30_q2_ngc_multinode_issue108_truncated.txt')
    result, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=0, out=out)])
    assert failed and result['error_class'] == 'unknown_error' and '0 result rows' in result['msg']


def test_client_check_mode_runs_nothing():
    result, failed = run_module(perftest.main, CLIENT, calls=[], check_mode=True)
    assert not failed and result['_ran'] == [] and result['argv'] == CLIENT_ARGV and result['timeout'] == 120


@pytest.mark.parametrize('args,needle', [
    (dict(CLIENT, device='mlx5_0; reboot'), 'device'),
    (dict(CLIENT, server='-oProxyCommand=x'), 'server'),
    (dict(CLIENT, server=None), 'server'),
    (dict(CLIENT, port=80), 'port 80'),
    (dict(CLIENT, test='ib_send_lat', report_gbits=True), 'bandwidth tests only'),
    (dict(CLIENT, connection='UD'), 'UD'),
    (dict(CLIENT, role='server', server=None, ready_timeout=float('inf')), 'ready_timeout must be a finite number'),
    (dict(CLIENT, timeout=0), 'timeout must be a finite number'),
    (dict(CLIENT, device='-mlx5_0'), 'device must be an RDMA device name'),
])
def test_bad_parameters_fail_clearly(args, needle):
    result, failed = run_module(perftest.main, args)
    assert failed and needle in result['msg'] and hostname() in result['msg'] and result['_ran'] == []
    assert (result['error_class'], result['error_side']) == ('invalid_options', 'ours')


# --- server side: a real detached stand-in for ib_send_bw ------------------------------------------

STAND_IN = r'''#!{python}
import os, socket, subprocess, sys, time
args = sys.argv[1:]
port = int(args[args.index('-p') + 1])
mode = [a for a in args if a.startswith('--standin=')][0].split('=', 1)[1]
if mode == 'no-device':
    sys.stderr.write(" Did not detect devices \n If device exists, check if driver is up\n Unable to find the Infiniband/RoCE device\n")
    sys.exit(1)
if mode == 'rdma-cm':
    # rdma_cm servers open no TCP socket: only the banner says they are ready.
    print("\n************************************\n* Waiting for client to connect... *\n************************************", flush=True)
    time.sleep(300)
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(('127.0.0.1', port))
sock.listen(1)
print("\n************************************\n* Waiting for client to connect... *\n************************************", flush=True)
if mode == 'hang':
    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', {marker!r}])
    time.sleep(300)
conn, _ = sock.accept()
conn.close()
print(open({table!r}).read(), flush=True)
'''
SERVER_TABLE = """---------------------------------------------------------------------------------------
                    Send BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 RX depth        : 512
 CQ Moderation   : 1
 Mtu             : 4096[B]
 Link type       : IB
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
 65536      1000             0.00               46557.03\t\t     0.744912
---------------------------------------------------------------------------------------
"""


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def make_stand_in(tmp_path):
    table = tmp_path / 'table.txt'
    table.write_text(SERVER_TABLE)
    script = tmp_path / 'ib_send_bw'
    script.write_text(STAND_IN.replace('{python}', sys.executable).replace('{marker!r}', repr(str(tmp_path)))
                      .replace('{table!r}', repr(str(table))))
    script.chmod(0o755)
    return script


def ours_running(tmp_path):
    """Processes whose command line mentions tmp_path: the stand-in and its child."""
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % name, 'rb') as handle:
                cmdline = handle.read().decode('utf-8', 'replace')
        except (IOError, OSError):
            continue
        if str(tmp_path) in cmdline and background.pid_alive(int(name)):
            found.append(int(name))
    return found


def server_args(tmp_path, port, mode, **extra):
    args = {'test': 'ib_send_bw', 'role': 'server', 'port': port, 'log_dir': str(tmp_path), 'extra_args': ['--standin=%s' % mode]}
    args.update(extra)
    return args


def test_server_one_test_start_and_stop(tmp_path, monkeypatch):
    make_stand_in(tmp_path)
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path, os.environ.get('PATH', '')))
    port = free_port()
    started, failed = run_module(perftest.main, server_args(tmp_path, port, 'one-test'), bin_dir=str(tmp_path))
    try:
        assert not failed, started
        assert started['changed'] is True and started['port'] == port and started['_ran'] == []
        assert started['timeout'] == 3600 and started['deadline_at'] > time.time() + 3500 and started['error_class'] is None
        assert started['cmd'] == '%s/ib_send_bw -p %d -F --standin=one-test' % (tmp_path, port)
        assert background.pid_alive(started['pid']) and port in background.listening_ports()
        client = socket.create_connection(('127.0.0.1', port), timeout=5)
        client.close()
        stopped, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped',
                                                     'pid': started['pid'], 'start_time': started['start_time'],
                                                     'exe': started['exe'], 'log_path': started['log_path'], 'wait_exit': 10})
        assert not failed, stopped
        assert stopped['stopped'] is True and stopped['leftover'] is False
        parsed = stopped['perftest']
        assert parsed['side'] == 'server' and parsed['error_class'] is None
        assert parsed['results'][0]['bw_avg'] == 46557.03 and parsed['results'][0]['bw_peak'] is None
    finally:
        background.stop_group(started['pid'], started['start_time'])
    assert background.group_members(started['pid']) == [] and ours_running(tmp_path) == []


def test_rdma_cm_server_is_ready_on_its_banner_and_stops_clean(tmp_path, monkeypatch):
    make_stand_in(tmp_path)
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path, os.environ.get('PATH', '')))
    port = free_port()
    started, failed = run_module(perftest.main, server_args(tmp_path, port, 'rdma-cm', rdma_cm=True, ready_timeout=10),
                                 bin_dir=str(tmp_path))
    try:
        assert not failed, started
        assert '-R' in started['argv'] and port not in background.listening_ports()
        stopped, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped',
                                                     'pid': started['pid'], 'start_time': started['start_time'],
                                                     'exe': started['exe'], 'log_path': started['log_path']})
        assert not failed and stopped['leftover'] is False
    finally:
        background.stop_group(started['pid'], started['start_time'])
    assert ours_running(tmp_path) == []


def test_server_that_hangs_is_killed_with_its_children(tmp_path, monkeypatch):
    make_stand_in(tmp_path)
    port = free_port()
    started, failed = run_module(perftest.main, server_args(tmp_path, port, 'hang'), bin_dir=str(tmp_path))
    assert not failed, started
    try:
        deadline = time.time() + 5
        while len(ours_running(tmp_path)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert len(ours_running(tmp_path)) >= 2
        stopped, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped',
                                                     'pid': started['pid'], 'start_time': started['start_time'],
                                                     'exe': started['exe'], 'log_path': started['log_path'], 'wait_exit': 0})
        assert not failed, stopped
        assert stopped['was_running'] is True and stopped['changed'] is True and stopped['leftover'] is False
        assert stopped['perftest']['waiting_for_client'] is True and stopped['perftest']['results'] == []
    finally:
        background.stop_group(started['pid'], started['start_time'])
    assert background.group_members(started['pid']) == [] and ours_running(tmp_path) == []
    assert port not in background.listening_ports()


def test_server_port_in_use(tmp_path):
    make_stand_in(tmp_path)
    blocker = socket.socket()
    blocker.bind(('127.0.0.1', 0))
    blocker.listen(1)
    port = blocker.getsockname()[1]
    try:
        result, failed = run_module(perftest.main, server_args(tmp_path, port, 'one-test'), bin_dir=str(tmp_path))
    finally:
        blocker.close()
    assert failed and result['error_class'] == 'port_in_use'
    assert hostname() in result['msg'] and str(port) in result['msg'] and 'ib_send_bw' in result['msg']
    assert ours_running(tmp_path) == []


def test_server_without_device_fails_classified(tmp_path):
    make_stand_in(tmp_path)
    result, failed = run_module(perftest.main, server_args(tmp_path, free_port(), 'no-device'), bin_dir=str(tmp_path))
    assert failed and result['error_class'] == 'no_rdma_device' and 'ibv_devices' in result['msg']
    assert ours_running(tmp_path) == []


def test_server_check_mode_starts_nothing(tmp_path):
    make_stand_in(tmp_path)
    port = free_port()
    result, failed = run_module(perftest.main, server_args(tmp_path, port, 'one-test'), bin_dir=str(tmp_path), check_mode=True)
    assert not failed and result['changed'] is True and 'pid' not in result
    assert ours_running(tmp_path) == [] and port not in background.listening_ports()
    assert list(tmp_path.glob('perftest-*.log')) == []


def test_stop_of_a_pid_that_is_someone_else_now_signals_nothing_and_does_not_fail(tmp_path):
    # pid reuse: our own pid stands for "a live process with another start time".
    result, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped', 'pid': os.getpid(),
                                                'start_time': 1, 'wait_exit': 0})
    assert not failed, result
    assert result['server_state'] == 'pid_reused' and result['stopped'] is True and result['changed'] is False


def test_stop_after_the_server_exited_by_itself(tmp_path, monkeypatch):
    make_stand_in(tmp_path)
    port = free_port()
    started, failed = run_module(perftest.main, server_args(tmp_path, port, 'one-test'), bin_dir=str(tmp_path))
    assert not failed, started
    socket.create_connection(('127.0.0.1', port), timeout=5).close()
    deadline = time.time() + 10
    while background.pid_alive(started['pid']) and time.time() < deadline:
        time.sleep(0.05)
    result, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped', 'pid': started['pid'],
                                                'log_path': started['log_path'], 'wait_exit': 0})
    assert not failed and result['was_running'] is False and result['changed'] is False and result['leftover'] is False
    assert result['server_state'] == 'exited'
    assert result['perftest']['results'][0]['bytes'] == 65536
    assert not os.path.exists(os.path.dirname(started['log_path']))


# --- batches: one call for every session of a test kind -------------------------------------------

BATCH_SHARED = {'test': 'ib_write_bw', 'role': 'client', 'size': 8, 'duration': 60, 'report_gbits': True}
BATCH_SESSIONS = [
    {'id': 'hca0', 'server': '10.0.0.2', 'device': 'mlx5_0', 'gid_index': 2, 'port': 18515},
    {'id': 'hca1', 'server': '10.0.1.2', 'device': 'mlx5_1', 'gid_index': 2, 'port': 18516, 'ib_port': 1},
    {'id': 'hca2', 'server': '10.0.2.2', 'device': 'mlx5_2', 'port': 18517, 'use_cuda': 3, 'timeout': 90, 'gid_index': None},
]
BATCH_ARGVS = [
    ['/usr/bin/ib_write_bw', '-d', 'mlx5_0', '-x', '2', '-s', '8', '-D', '60', '--report_gbits', '-p', '18515', '-F', '10.0.0.2'],
    ['/usr/bin/ib_write_bw', '-d', 'mlx5_1', '-i', '1', '-x', '2', '-s', '8', '-D', '60', '--report_gbits', '-p', '18516', '-F',
     '10.0.1.2'],
    ['/usr/bin/ib_write_bw', '-d', 'mlx5_2', '-s', '8', '-D', '60', '--use_cuda=3', '--report_gbits', '-p', '18517', '-F', '10.0.2.2'],
]


def test_client_batch_runs_in_order_and_a_failed_session_does_not_fail_the_call():
    good = fixtures.local('perftest/ib_write_bw_post_list_D60_8B_gbits_roce_issue273.txt')
    refused = fixtures.local('perftest/ib_write_bw_connect_failed_pr228.txt')
    calls = [Call(TIMEOUT + ['120'] + BATCH_ARGVS[0], rc=0, out=good), Call(TIMEOUT + ['120'] + BATCH_ARGVS[1], rc=1, err=refused),
             Call(TIMEOUT + ['90'] + BATCH_ARGVS[2], rc=0, out=good)]
    result, failed = run_module(perftest.main, dict(BATCH_SHARED, sessions=BATCH_SESSIONS), calls=calls)
    assert not failed, result
    assert result['_ran'] == [call.argv for call in calls] and result['changed'] is False
    assert 'cmd' not in result and 'error_class' not in result
    first, second, third = result['clients']
    assert [entry['id'] for entry in result['clients']] == ['hca0', 'hca1', 'hca2']
    for entry, argv, timeout in ((first, BATCH_ARGVS[0], 120), (third, BATCH_ARGVS[2], 90)):
        assert entry['failed'] is False and entry['msg'] is None and entry['argv'] == argv and entry['timeout'] == timeout
        assert (entry['error_class'], entry['error_hint'], entry['error_side']) == (None, None, None)
        assert entry['rc'] == 0 and entry['summary']['bw_avg_gbps'] == 0.48 and entry['perftest']['results'][0]['bytes'] == 8
    assert third['port'] == 18517 and third['cmd'] == ' '.join(BATCH_ARGVS[2])
    assert second['failed'] is True and second['rc'] == 1 and second['port'] == 18516 and second['summary'] is None
    assert (second['error_class'], second['error_side']) == ('connect_failed', 'ours') and second['error_hint']
    assert hostname() in second['msg'] and ' '.join(BATCH_ARGVS[1]) in second['msg'] and "Couldn't connect to" in second['msg']


def test_concurrent_client_batch_runs_every_client_at_once_and_lists_them_in_session_order():
    good = fixtures.local('perftest/ib_write_bw_post_list_D60_8B_gbits_roce_issue273.txt')
    refused = fixtures.local('perftest/ib_write_bw_connect_failed_pr228.txt')
    calls = [Call(TIMEOUT + ['120'] + BATCH_ARGVS[0], rc=0, out=good, seconds=0.6),
             Call(TIMEOUT + ['120'] + BATCH_ARGVS[1], rc=1, err=refused, seconds=0.6),
             Call(TIMEOUT + ['90'] + BATCH_ARGVS[2], rc=0, out=good, seconds=0.6)]
    began = time.time()
    result, failed = run_module(perftest.main, dict(BATCH_SHARED, sessions=BATCH_SESSIONS, concurrent=True), calls=calls, any_order=True)
    assert not failed, result
    assert time.time() - began < 1.5  # one after the other would take 1.8 s
    starts, ends = [span[1] for span in result['_spans']], [span[2] for span in result['_spans']]
    assert max(starts) < min(ends)  # every client was running at one moment
    assert [entry['id'] for entry in result['clients']] == ['hca0', 'hca1', 'hca2']
    assert [entry['argv'] for entry in result['clients']] == BATCH_ARGVS
    assert [entry['failed'] for entry in result['clients']] == [False, True, False]
    assert result['clients'][1]['error_class'] == 'connect_failed' and result['clients'][2]['timeout'] == 90


@pytest.mark.parametrize('args', [dict(BATCH_SHARED, concurrent=True, server='10.0.0.2'),
                                  dict(BATCH_SHARED, role='server', concurrent=True, sessions=[{'id': 'a', 'port': 18515}])])
def test_concurrent_is_for_client_sessions_only(args):
    result, failed = run_module(perftest.main, args)
    assert failed and result['_ran'] == [] and 'concurrent applies to role=client with sessions only' in result['msg'], result['msg']


def test_client_batch_entry_has_the_keys_of_a_single_client_call():
    out = fixtures.local('perftest/ib_write_bw_post_list_D60_8B_gbits_roce_issue273.txt')
    single, failed = run_module(perftest.main, CLIENT, calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=0, out=out)])
    assert not failed
    session = {'id': 'x', 'server': '10.0.0.2', 'device': 'mlx5_0', 'gid_index': 2}
    batch, failed = run_module(perftest.main, dict(BATCH_SHARED, sessions=[session]), calls=[Call(TIMEOUT + ['120'] + CLIENT_ARGV, rc=0, out=out)])
    assert not failed
    entry = batch['clients'][0]
    assert set(entry) == set(single) - {'changed', '_ran'} | {'id', 'msg', 'failed'}
    assert dict((key, entry[key]) for key in single if key not in ('changed', '_ran')) == dict(
        (key, single[key]) for key in single if key not in ('changed', '_ran'))


def test_client_batch_check_mode_runs_nothing_and_shows_every_command():
    result, failed = run_module(perftest.main, dict(BATCH_SHARED, sessions=BATCH_SESSIONS), calls=[], check_mode=True)
    assert not failed and result['_ran'] == []
    assert [entry['argv'] for entry in result['clients']] == BATCH_ARGVS
    assert [entry['timeout'] for entry in result['clients']] == [120, 120, 90]
    assert all(entry['rc'] is None and entry['failed'] is False for entry in result['clients'])


@pytest.mark.parametrize('change,needle', [
    ({'device': 'mlx5_1; reboot'}, 'sessions[1].device must be an RDMA device name'),
    ({'server': '-oProxyCommand=x'}, 'sessions[1].server must be a host name'),
    ({'server': None}, 'sessions[1].server (the address'),
    ({'port': 80}, 'sessions[1].port 80 is outside'),
    ({'port': 'eighty'}, "sessions[1].port must be an integer, got 'eighty'"),
    ({'timeout': 0}, 'sessions[1].timeout must be a finite number'),
    ({'gid_index': True}, 'sessions[1].gid_index must be an integer'),
    ({'devcie': 'mlx5_1'}, 'sessions[1].devcie is not a key of a client session'),
    ({'id': 'hca0'}, "sessions[1].id 'hca0' is also the id of sessions[0]"),
    ({'id': ''}, 'sessions[1].id must be a non-empty label'),
    ({'id': ['hca1']}, "sessions[1].id must be a non-empty label, got ['hca1']"),
    ({'device': 'mlx5_1\n'}, 'sessions[1].device must not contain newlines'),
])
def test_client_batch_with_an_invalid_session_runs_nothing(change, needle):
    sessions = [dict(BATCH_SESSIONS[0]), dict(BATCH_SESSIONS[1], **change), dict(BATCH_SESSIONS[2])]
    result, failed = run_module(perftest.main, dict(BATCH_SHARED, sessions=sessions))
    assert failed and result['_ran'] == [] and needle in result['msg'] and hostname() in result['msg'], result['msg']
    assert (result['error_class'], result['error_side']) == ('invalid_options', 'ours')


@pytest.mark.parametrize('option', ['device', 'server', 'port', 'timeout'])
def test_sessions_exclude_the_single_session_options(option):
    value = {'device': 'mlx5_0', 'server': '10.0.0.2', 'port': 18515, 'timeout': 60}[option]
    result, failed = run_module(perftest.main, dict(BATCH_SHARED, sessions=BATCH_SESSIONS, **{option: value}))
    assert failed and result['_ran'] == [] and 'mutually exclusive' in result['msg'] and option in result['msg']


def batch_server_args(tmp_path, sessions):
    args = server_args(tmp_path, None, 'one-test', sessions=sessions)
    del args['port']
    return args


def test_server_batch_starts_every_server_and_a_batch_stop_takes_the_entries_back(tmp_path):
    make_stand_in(tmp_path)
    ports = [free_port(), free_port()]
    sessions = [{'id': 'hca0', 'port': ports[0], 'device': 'mlx5_0', 'timeout': 600}, {'id': 'hca1', 'port': ports[1], 'gid_index': 3}]
    started, failed = run_module(perftest.main, batch_server_args(tmp_path, sessions),
                                 bin_dir=str(tmp_path))
    servers = started.get('servers') or []
    try:
        assert not failed, started
        assert started['changed'] is True and 'pid' not in started and len(servers) == 2
        assert [entry['id'] for entry in servers] == ['hca0', 'hca1'] and [entry['port'] for entry in servers] == ports
        assert servers[0]['cmd'] == '%s/ib_send_bw -d mlx5_0 -p %d -F --standin=one-test' % (tmp_path, ports[0])
        assert servers[1]['cmd'] == '%s/ib_send_bw -x 3 -p %d -F --standin=one-test' % (tmp_path, ports[1])
        assert [entry['timeout'] for entry in servers] == [600, 3600]
        assert servers[0]['deadline_at'] < servers[1]['deadline_at'] - 2900
        for entry in servers:
            assert entry['msg'] is None and entry['error_class'] is None and entry['pgid'] == entry['pid']
            assert background.pid_alive(entry['pid']) and entry['port'] in background.listening_ports()
            assert background.is_ours(entry['pid'], entry['start_time'], entry['exe']) and os.path.isfile(entry['log_path'])
        # The first server gets its one client; the second is still waiting when it is stopped.
        socket.create_connection(('127.0.0.1', ports[0]), timeout=5).close()
        stopped, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped', 'wait_exit': 10,
                                                     'sessions': servers})
        assert not failed, stopped
        assert [entry['id'] for entry in stopped['stops']] == ['hca0', 'hca1'] and stopped['changed'] is True
        first, second = stopped['stops']
        assert [first['pid'], second['pid']] == [entry['pid'] for entry in servers]
        assert first['stopped'] is True and first['leftover'] is False and first['error_class'] is None
        assert first['perftest']['results'][0]['bw_avg'] == 46557.03 and first['parse_error'] is None
        assert second['was_running'] is True and second['server_state'] == 'stopped' and second['stopped'] is True
        assert second['perftest']['waiting_for_client'] is True and second['perftest']['results'] == []
        assert not any(os.path.exists(os.path.dirname(entry['log_path'])) for entry in servers)
    finally:
        for entry in servers:
            if entry.get('pid'):
                background.stop_group(entry['pid'], entry['start_time'])
    assert ours_running(tmp_path) == [] and not set(ports) & set(background.listening_ports())


def test_server_batch_a_server_that_cannot_start_does_not_fail_the_call(tmp_path):
    make_stand_in(tmp_path)
    blocker = socket.socket()
    blocker.bind(('127.0.0.1', 0))
    blocker.listen(1)
    busy = blocker.getsockname()[1]
    free = free_port()
    sessions = [{'id': 'busy', 'port': busy}, {'id': 'free', 'port': free}]
    try:
        started, failed = run_module(perftest.main, batch_server_args(tmp_path, sessions),
                                     bin_dir=str(tmp_path))
    finally:
        blocker.close()
    servers = started.get('servers') or []
    try:
        assert not failed, started
        assert started['changed'] is True
        refused, running = servers
        assert refused['id'] == 'busy' and refused['pid'] is None and refused['log_path'] is None
        assert (refused['error_class'], refused['error_side']) == ('port_in_use', 'ours') and str(busy) in refused['msg']
        assert hostname() in refused['msg'] and refused['cmd'].endswith('-p %d -F --standin=one-test' % busy)
        assert running['id'] == 'free' and running['error_class'] is None and background.pid_alive(running['pid'])
        stopped, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped', 'wait_exit': 0,
                                                     'sessions': servers})
        assert not failed, stopped
        assert [entry['server_state'] for entry in stopped['stops']] == ['unverified', 'stopped']
    finally:
        for entry in servers:
            if entry.get('pid'):
                background.stop_group(entry['pid'], entry['start_time'])
    assert ours_running(tmp_path) == []


@pytest.mark.parametrize('change,needle', [
    ({'port': 80}, 'sessions[1].port 80 is outside'),
    ({'server': '10.0.0.2'}, 'sessions[1].server is not a key of a started session'),
    ({'port': 'SAME'}, 'sessions[1].port %d is also the port of sessions[0]'),
    ({'timeout': 10 ** 9}, 'sessions[1].timeout must be a finite number'),
])
def test_server_batch_with_an_invalid_session_starts_nothing(tmp_path, change, needle):
    make_stand_in(tmp_path)
    port = free_port()
    second = dict({'id': 'b', 'port': free_port()}, **change)
    if second['port'] == 'SAME':
        second['port'] = port
        needle = needle % port
    sessions = [{'id': 'a', 'port': port}, second]
    result, failed = run_module(perftest.main, batch_server_args(tmp_path, sessions),
                                bin_dir=str(tmp_path))
    assert failed and needle in result['msg'] and result['error_class'] == 'invalid_options', result
    assert 'servers' not in result and ours_running(tmp_path) == [] and list(tmp_path.glob('netval-*')) == []
    assert port not in background.listening_ports()


def test_server_batch_check_mode_starts_nothing(tmp_path):
    make_stand_in(tmp_path)
    sessions = [{'id': 'a', 'port': free_port()}, {'id': 'b', 'port': free_port()}]
    result, failed = run_module(perftest.main, batch_server_args(tmp_path, sessions),
                                bin_dir=str(tmp_path), check_mode=True)
    assert not failed and result['changed'] is True
    assert [entry['pid'] for entry in result['servers']] == [None, None]
    assert [entry['argv'][-3:] for entry in result['servers']] == [['%d' % s['port'], '-F', '--standin=one-test'] for s in sessions]
    assert ours_running(tmp_path) == [] and list(tmp_path.glob('netval-*')) == []


def test_batch_stop_never_fails_even_on_malformed_sessions(tmp_path):
    sessions = [{'id': 'gone', 'pid': 2 ** 22 + 77, 'start_time': 5}, {'id': 'bad', 'pid': 'not-a-pid'}, {'pid': os.getpid(), 'start_time': 1}]
    result, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped', 'wait_exit': 0,
                                                'sessions': sessions})
    assert not failed, result
    assert [entry['id'] for entry in result['stops']] == ['gone', 'bad', None]
    assert [entry['server_state'] for entry in result['stops']] == ['exited', 'unverified', 'pid_reused']
    assert all(entry['stopped'] is True for entry in result['stops']) and result['changed'] is False
    assert background.pid_alive(os.getpid())


def test_a_batch_stop_waits_once_for_all_its_servers_not_once_each(monkeypatch):
    """Servers whose clients never ran (a peer that went away) must not cost wait_exit each: the batch shares one wait."""
    waits = []

    def fake_stop(pid, start_time=None, exe=None, log_path=None, wait_exit=0.0):
        waits.append(wait_exit)
        time.sleep(min(wait_exit, 0.3))  # the server that never finishes uses the whole wait it is given
        return {'state': 'stopped', 'stopped': True, 'was_running': True, 'signalled': True, 'output': '', 'log_read': False, 'log_problem': None}
    monkeypatch.setattr(background, 'stop_server', fake_stop)
    sessions = [{'id': 's%d' % i, 'pid': 5000 + i, 'start_time': 7} for i in range(4)]
    started = time.time()
    result, failed = run_module(perftest.main, {'test': 'ib_send_bw', 'role': 'server', 'state': 'stopped', 'wait_exit': 0.3,
                                                'sessions': sessions})
    assert not failed, result
    assert len(waits) == 4 and abs(waits[0] - 0.3) < 0.05 and all(w < 0.05 for w in waits[1:]), waits
    assert time.time() - started < 1.0


def test_a_gpu_client_names_its_gpu_by_bus_id_with_dmabuf_after_it_and_pci_order_only_with_an_ordinal():
    good = fixtures.local('perftest/ib_write_bw_post_list_D60_8B_gbits_roce_issue273.txt')
    sessions = [{'id': 'gpu', 'server': '10.0.0.2', 'device': 'mlx5_0', 'port': 18515, 'use_cuda': 2, 'use_cuda_bus_id': '0000:1b:00.0'},
                {'id': 'ordinal', 'server': '10.0.1.2', 'device': 'mlx5_1', 'port': 18516, 'use_cuda': 1},
                {'id': 'host', 'server': '10.0.2.2', 'device': 'mlx5_2', 'port': 18517}]
    argvs = [['/usr/bin/ib_write_bw', '-d', 'mlx5_0', '-s', '8', '--use_cuda_bus_id=0000:1b:00.0', '--use_cuda_dmabuf', '-p', '18515', '-F',
              '10.0.0.2'],
             ['/usr/bin/ib_write_bw', '-d', 'mlx5_1', '-s', '8', '--use_cuda=1', '--use_cuda_dmabuf', '-p', '18516', '-F', '10.0.1.2'],
             ['/usr/bin/ib_write_bw', '-d', 'mlx5_2', '-s', '8', '-p', '18517', '-F', '10.0.2.2']]
    result, failed = run_module(perftest.main, {'test': 'ib_write_bw', 'role': 'client', 'size': 8, 'use_cuda_dmabuf': True,
                                                'cuda_device_order': 'PCI_BUS_ID', 'sessions': sessions},
                                calls=[Call(TIMEOUT + ['300'] + argv, out=good) for argv in argvs])
    assert not failed, result
    # CUDA_DEVICE_ORDER only where a GPU is named: the host-memory session runs without it.
    assert result['_environ'] == [{'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'}, {'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'}, {}]


def test_a_session_bus_id_that_is_no_pci_address_is_refused():
    result, failed = run_module(perftest.main, {'test': 'ib_write_bw', 'role': 'client', 'server': '10.0.0.2',
                                                'use_cuda_bus_id': '1b:00'})
    assert failed and "use_cuda_bus_id '1b:00' is not a PCI address" in result['msg'] and result['_ran'] == []
