"""iperf3 module: client runs against recorded real outputs; server start/stop with the background helpers faked."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.modules import iperf3
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

TIMEOUT = ['/usr/bin/timeout', '--kill-after=5']


def out(name):
    return fixtures.local('iperf3/iperf3_3.12_%s_netns_veth.txt' % name)


def client_argv(extra=(), duration=3, timeout=None, parallel=1):
    timeout = timeout if timeout is not None else duration + 30
    return TIMEOUT + [str(timeout), '/usr/bin/iperf3', '-c', '10.213.77.2', '-p', '5201', '-t', str(duration),
                      '-P', str(parallel), '-i', '1'] + list(extra) + ['-J']


def test_client_tcp_parallel_success():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'parallel': 4, 'duration': 3},
                                calls=[Call(client_argv(parallel=4), 0, out('tcp_p4_client_json'))])
    assert not failed, result
    assert result['changed'] is False
    assert result['received_bps'] == pytest.approx(16741964463.923893)
    assert result['received_gbps'] == 16.742
    assert result['retransmits'] == 0 and result['lost_percent'] is None
    assert len(result['per_stream']) == 4 and result['streams'] == 4
    assert result['min_interval_bps'] == pytest.approx(15701320036.157637)
    assert result['cpu']['host_total'] > 90
    assert result['cmd'] == '/usr/bin/iperf3 -c 10.213.77.2 -p 5201 -t 3 -P 4 -i 1 -J'


def test_client_udp_reverse_bind_omit_argv_and_loss():
    args = {'role': 'client', 'server': '10.213.77.2', 'duration': 3, 'udp': True, 'bandwidth': '1G', 'omit': 1,
            'bind': '10.213.77.1', 'reverse': True, 'timeout': 20}
    argv = client_argv(['-O', '1', '-B', '10.213.77.1', '-R', '-u', '-b', '1G'], timeout=20)
    result, failed = run_module(iperf3.main, args, calls=[Call(argv, 0, out('udp_1g_client_json'))])
    assert not failed, result
    assert result['lost_percent'] == pytest.approx(1.0739856801909309) and result['protocol'] == 'udp'


def test_client_text_output_when_json_false():
    argv = client_argv()[:-1]
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3, 'json': False},
                                calls=[Call(argv, 0, out('tcp_reverse_client_text'))])
    assert not failed and result['received_bps'] == 15.0e9 and result['result']['received_printed'] == '15.0 Gbits/sec'


def test_client_missing_tool_names_package():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.0.0.2'}, missing=('iperf3',))
    assert failed and "'iperf3'" in result['msg'] and 'iperf3' in result['msg'] and 'package' in result['msg']


@pytest.mark.parametrize('name,cause', [('refused', 'connect_refused'), ('noroute', 'no_route'), ('busy', 'server_busy')])
def test_client_real_json_errors_with_rc_0_fail_with_cause(name, cause):
    # iperf 3.12 exits 0 when -J is given and the test never ran: the error field decides
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3},
                                calls=[Call(client_argv(), 0, out('error_%s_json' % name))])
    assert failed and result['error_class'] == cause
    assert iperf3.hostname() in result['msg']
    assert '/usr/bin/iperf3 -c 10.213.77.2 -p 5201' in result['msg'] and cause in result['msg']


def test_client_text_error_on_stderr_rc_1():
    argv = client_argv()[:-1]
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3, 'json': False},
                                calls=[Call(argv, 1, '', out('error_refused_text'))])
    assert failed and result['error_class'] == 'connect_refused' and result['rc'] == 1
    assert 'Connection refused' in result['msg'] and iperf3.hostname() in result['msg']


def test_client_timeout():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3},
                                calls=[Call(client_argv(), 124, '', '')])
    assert failed and result['error_class'] == 'timeout' and 'within 33 s' in result['msg'] and result['timed_out']


def test_client_tool_failure_without_error_text():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3},
                                calls=[Call(client_argv(), 1, '', 'Segmentation fault')])
    assert failed and result['error_class'] == 'tool_failed' and 'rc=1' in result['msg'] and iperf3.hostname() in result['msg']


def test_client_garbage_output_fails_cleanly():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3},
                                calls=[Call(client_argv(), 0, '{"half": ')])
    assert failed and result['error_class'] == 'parse_error' and 'iperf3 output' in result['msg']
    assert 'Traceback' not in result['msg']


def test_client_check_mode_runs_nothing():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'duration': 3}, check_mode=True)
    assert not failed and result['_ran'] == [] and result['changed'] is False
    assert result['cmd'].startswith('/usr/bin/iperf3 -c 10.213.77.2')


@pytest.mark.parametrize('args,words', [
    ({'role': 'client', 'server': 'bad host;rm'}, 'server must be a host name'),
    ({'role': 'client', 'server': '10.0.0.2', 'port': 70000}, 'port must be 1-65535'),
    ({'role': 'client', 'server': '10.0.0.2', 'parallel': 0}, 'parallel must be 1-128'),
    ({'role': 'client', 'server': '10.0.0.2', 'bandwidth': '10 gig'}, 'bandwidth must look like'),
    ({'role': 'client', 'server': '10.0.0.2', 'bind': 'eth0'}, 'bind must be an IP address'),
    ({'role': 'client', 'server': '10.0.0.2', 'duration': 5, 'omit': 9}, 'omit must be 0-5'),
    ({'role': 'client', 'server': '10.0.0.2', 'interval': float('inf')}, 'interval must be 0'),
    ({'role': 'server', 'log_path': '/tmp/x.log'}, 'log_path is chosen by the module'),
    ({'role': 'server', 'timeout': 10 ** 7}, 'timeout must be a finite number of seconds'),
])
def test_bad_options_fail_clearly(args, words):
    result, failed = run_module(iperf3.main, args)
    assert failed and words in result['msg'] and result['_ran'] == []
    assert (result['error_class'], result['error_side']) == ('invalid_options', 'ours')


def test_server_start(monkeypatch):
    seen = {}

    def fake_start(argv, log_dir, port, deadline, **kwargs):
        seen.update(argv=argv, log_dir=log_dir, port=port, deadline=deadline)
        return {'pid': 4242, 'pgid': 4242, 'start_time': 777, 'exe': '/usr/bin/iperf3', 'log_path': '/tmp/netval-x/server.log',
                'port': port, 'argv': argv, 'deadline_s': deadline, 'deadline_at': 1000}

    monkeypatch.setattr(background, 'start_server', fake_start)
    result, failed = run_module(iperf3.main, {'role': 'server', 'port': 5202, 'bind': '10.213.77.2'})
    assert not failed, result
    assert seen == {'argv': ['/usr/bin/iperf3', '-s', '-1', '-p', '5202', '-B', '10.213.77.2', '-J'],
                    'log_dir': '/tmp', 'port': 5202, 'deadline': 3600}
    assert (result['pid'], result['start_time'], result['exe']) == (4242, 777, '/usr/bin/iperf3')
    assert result['changed'] is True and result['port'] == 5202 and result['timeout'] == 3600 and result['error_class'] is None
    assert result['cmd'] == '/usr/bin/iperf3 -s -1 -p 5202 -B 10.213.77.2 -J'


def test_server_start_port_in_use(monkeypatch):
    def fake_start(argv, log_dir, port, deadline, **kwargs):
        raise background.ServerError('TCP port %d is already in use on this host' % port, port_in_use=True)

    monkeypatch.setattr(background, 'start_server', fake_start)
    result, failed = run_module(iperf3.main, {'role': 'server'})
    assert failed and (result['error_class'], result['error_side']) == ('port_in_use', 'ours')
    assert iperf3.hostname() in result['msg'] and '/usr/bin/iperf3 -s -1 -p 5201 -J' in result['msg']


def test_server_start_missing_tool():
    result, failed = run_module(iperf3.main, {'role': 'server'}, missing=('iperf3',))
    assert failed and 'iperf3' in result['msg'] and 'package' in result['msg']
    assert (result['error_class'], result['error_side']) == ('tool_missing', 'ours')


def test_server_start_check_mode_starts_nothing(monkeypatch):
    monkeypatch.setattr(background, 'start_server', lambda *a, **k: pytest.fail('started in check mode'))
    result, failed = run_module(iperf3.main, {'role': 'server'}, check_mode=True)
    assert not failed and result['changed'] is True and result['pid'] is None


def fake_outcome(state, output='', **extra):
    outcome = {'state': state, 'stopped': state not in ('still_running', 'unverified'), 'was_running': state == 'stopped',
               'signalled': state in ('stopped', 'still_running'), 'output': output, 'log_read': bool(output), 'log_problem': None}
    outcome.update(extra)
    return outcome


def test_server_stop_parses_its_report(monkeypatch):
    seen = {}

    def fake_stop(pid, start_time, exe, log_path, wait_exit=0.0):
        seen.update(pid=pid, start_time=start_time, exe=exe, log_path=log_path, wait_exit=wait_exit)
        return fake_outcome('exited', out('tcp_p4_server_json'))

    monkeypatch.setattr(background, 'stop_server', fake_stop)
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped', 'pid': 4242, 'start_time': 777,
                                              'exe': '/usr/bin/iperf3', 'log_path': '/tmp/netval-x/server.log'})
    assert not failed, result
    assert seen == {'pid': 4242, 'start_time': 777, 'exe': '/usr/bin/iperf3', 'log_path': '/tmp/netval-x/server.log', 'wait_exit': 2}
    assert result['stopped'] is True and result['was_running'] is False and result['changed'] is False
    assert result['server_state'] == 'exited' and result['error_class'] is None
    assert result['received_bps'] == pytest.approx(16741964463.923893) and result['sent_bps'] is None


@pytest.mark.parametrize('state,stopped', [('pid_reused', True), ('still_running', False), ('unverified', False)])
def test_server_stop_never_fails_the_host(monkeypatch, state, stopped):
    monkeypatch.setattr(background, 'stop_server', lambda *a, **k: fake_outcome(state))
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped', 'pid': 4242})
    assert not failed, result
    assert result['server_state'] == state and result['stopped'] is stopped


def test_server_stop_without_pid_or_with_bad_wait_exit_does_not_fail(monkeypatch):
    monkeypatch.setattr(background, 'stop_server', lambda *a, **k: pytest.fail('nothing to stop'))
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped'})
    assert not failed and result['stopped'] is True and result['changed'] is False
    seen = {}
    monkeypatch.setattr(background, 'stop_server', lambda *a, **k: seen.update(k) or fake_outcome('exited'))
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped', 'pid': 4242, 'wait_exit': float('inf')})
    assert not failed and seen['wait_exit'] == 0.0


def test_server_stop_check_mode_signals_nothing(monkeypatch):
    monkeypatch.setattr(background, 'pid_alive', lambda pid: True)
    monkeypatch.setattr(background, 'stop_server', lambda *a, **k: pytest.fail('stopped in check mode'))
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped', 'pid': 4242}, check_mode=True)
    assert not failed and result['changed'] is True


def test_server_stop_with_garbage_log_warns_but_stops(monkeypatch):
    monkeypatch.setattr(background, 'stop_server', lambda *a, **k: fake_outcome('exited', 'garbage\n'))
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped', 'pid': 4242, 'log_path': '/tmp/none.log'})
    assert not failed and result['result'] is None and result['stopped'] is True


# ---------------------------------------------------------------- several processes at once (sessions)

def session_argv(port, bind, affinity=None, duration=3, parallel=4):
    return TIMEOUT + [str(duration + 30), '/usr/bin/iperf3', '-c', '10.213.77.2', '-p', str(port), '-t', str(duration),
                      '-P', str(parallel), '-i', '1', '-B', bind] + (['-A', str(affinity)] if affinity is not None else []) + ['-J']


@pytest.fixture(autouse=True)
def many_cpus(monkeypatch):
    # the module's host lets it run on 64 CPUs, whatever this machine has
    monkeypatch.setattr(iperf3, 'allowed_cpus', lambda: set(range(64)))


def test_clients_of_several_processes_run_at_once_and_their_receivers_are_summed():
    sessions = [{'id': 'iperf3#1', 'port': 5201, 'bind': '10.213.77.1'},
                {'id': 'iperf3#2', 'port': 5202, 'bind': '10.213.77.1', 'affinity': 3}]
    calls = [Call(session_argv(5201, '10.213.77.1'), 0, out('tcp_p4_client_json'), seconds=0.3),
             Call(session_argv(5202, '10.213.77.1', 3), 0, out('tcp_p4_client_json'), seconds=0.3)]
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'parallel': 4, 'duration': 3,
                                              'sessions': sessions}, calls=calls, any_order=True)
    assert not failed, result
    assert [c['id'] for c in result['clients']] == ['iperf3#1', 'iperf3#2']
    assert result['received_bps'] == pytest.approx(2 * 16741964463.923893) and result['received_gbps'] == 33.484
    assert result['retransmits'] == 0 and all(c['cpu']['host_total'] > 90 for c in result['clients'])
    (first, _s1, e1), (second, s2, _e2) = sorted(result['_spans'], key=lambda span: span[1])
    assert s2 < e1, 'the two clients ran one after the other, not at once'


def test_one_failed_process_fails_the_run_naming_it_and_keeps_the_others():
    sessions = [{'id': 'iperf3#1', 'port': 5201, 'bind': '10.213.77.1'}, {'id': 'iperf3#2', 'port': 5202, 'bind': '10.213.77.1'}]
    calls = [Call(session_argv(5201, '10.213.77.1'), 0, out('tcp_p4_client_json')),
             Call(session_argv(5202, '10.213.77.1'), 0, out('error_refused_json'))]
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'parallel': 4, 'duration': 3,
                                              'sessions': sessions}, calls=calls, any_order=True)
    assert failed and result['error_class'] == 'connect_refused' and '1 of 2 iperf3 clients failed' in result['msg']
    assert 'iperf3#2' in result['msg'] and result['clients'][0]['received_bps'] > 0 and 'received_bps' not in result


def test_sessions_are_checked_before_anything_runs():
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'sessions': [
        {'id': 'a', 'port': 5201, 'bind': '-B'}, {'id': 'b', 'port': 5201, 'colour': 'red'}]})
    assert failed and result['error_class'] == 'invalid_options'
    assert 'sessions[0] (a): bind' in result['msg'] and 'sessions use a port twice' in result['msg'] and "unknown key(s) colour" in result['msg']


def test_servers_of_several_sessions_start_and_stop_together(monkeypatch, tmp_path):
    started = []

    def fake_start(argv, log_dir, port, deadline, name=None):
        started.append(argv)
        return {'pid': 1000 + port, 'start_time': 7, 'exe': '/usr/bin/iperf3', 'log_path': '%s/netval-x/server.log' % log_dir,
                'deadline_s': deadline, 'deadline_at': 99}
    monkeypatch.setattr(background, 'start_server', fake_start)
    sessions = [{'id': 'iperf3#1', 'port': 5201, 'bind': '10.213.77.1', 'affinity': 2}, {'id': 'iperf3#2', 'port': 5202, 'bind': '10.213.77.1'}]
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'started', 'log_dir': str(tmp_path), 'timeout': 40,
                                              'sessions': sessions})
    assert not failed, result
    assert started[0][1:] == ['-s', '-1', '-p', '5201', '-B', '10.213.77.1', '-A', '2', '-J']
    assert [s['pid'] for s in result['servers']] == [6201, 6202] and result['servers'][1]['bind'] == '10.213.77.1'
    stops = []
    monkeypatch.setattr(background, 'stop_server', lambda pid, start_time, exe, log_path, wait_exit=2: stops.append(pid) or {
        'state': 'exited', 'stopped': True, 'was_running': False, 'signalled': False, 'output': out('tcp_p4_server_json'),
        'log_problem': None, 'log_read': True})
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'stopped', 'sessions': result['servers']})
    assert not failed and stops == [6201, 6202] and [s['server_state'] for s in result['servers']] == ['exited', 'exited']


def test_a_core_the_host_does_not_let_it_run_on_runs_the_process_unpinned_and_says_so(monkeypatch, tmp_path):
    # iperf3 3.12 on a 2-CPU host: `iperf3 -s -1 -p 5999 -A 7 -J` printed "iperf3: error - unable to set CPU affinity:
    # Invalid argument" and served nothing (a NIC's NUMA-local CPUs read from one box, the process run in a smaller cpuset).
    monkeypatch.setattr(iperf3, 'allowed_cpus', lambda: {0, 1})
    sessions = [{'id': 'iperf3#1', 'port': 5201, 'bind': '10.213.77.1', 'affinity': 1},
                {'id': 'iperf3#2', 'port': 5202, 'bind': '10.213.77.1', 'affinity': 7}]
    calls = [Call(session_argv(5201, '10.213.77.1', 1), 0, out('tcp_p4_client_json')),
             Call(session_argv(5202, '10.213.77.1'), 0, out('tcp_p4_client_json'))]
    result, failed = run_module(iperf3.main, {'role': 'client', 'server': '10.213.77.2', 'parallel': 4, 'duration': 3,
                                              'sessions': sessions}, calls=calls, any_order=True)
    assert not failed, result
    assert 'affinity_note' not in result['clients'][0]
    assert result['clients'][1]['affinity_note'] == 'core 7 is not one this host lets the process run on (allowed 0-1); it ran unpinned'
    started = []
    monkeypatch.setattr(background, 'start_server', lambda argv, log_dir, port, deadline, name=None: started.append(argv) or {
        'pid': 1000 + port, 'start_time': 7, 'exe': '/usr/bin/iperf3', 'log_path': '%s/s.log' % log_dir, 'deadline_s': deadline,
        'deadline_at': 99})
    result, failed = run_module(iperf3.main, {'role': 'server', 'state': 'started', 'log_dir': str(tmp_path), 'timeout': 40,
                                              'sessions': sessions})
    assert not failed, result
    assert started[1][1:] == ['-s', '-1', '-p', '5202', '-B', '10.213.77.1', '-J'] and '-A' in started[0]
    assert result['servers'][1]['affinity'] is None and 'core 7' in result['servers'][1]['affinity_note']
