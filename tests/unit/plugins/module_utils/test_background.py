"""Real processes: a server is started, identified (pid + start time + exe), stopped, and leaves nothing behind."""
import os
import socket
import stat
import sys
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import background

LISTENER = ('import socket,sys,time\n'
            's=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n'
            's.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)\n'
            'print("listening", flush=True)\n'
            'import subprocess; subprocess.Popen(["sleep", "300"])\n'
            'time.sleep(300)\n')


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def start(tmp_path, code=LISTENER, deadline=60, **kwargs):
    port = free_port()
    return background.start_server([sys.executable, '-c', code, str(port)], str(tmp_path), port, deadline, **kwargs)


def wait_until(predicate, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_start_wait_ready_and_stop_leaves_no_process_and_no_file(tmp_path):
    info = start(tmp_path)
    folder = os.path.dirname(info['log_path'])
    assert background.is_ours(info['pid'], info['start_time'], info['exe'])
    assert info['exe'] == os.path.realpath(sys.executable) and info['port'] in background.listening_ports()
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700 and os.path.basename(info['log_path']) == 'server.log'
    # The listener starts its child sleep after it listens: on a busy machine that can take a moment.
    assert wait_until(lambda: len(background.group_members(info['pgid'])) >= 2, 10)  # the listener and its child sleep
    result = background.stop_server(info['pid'], info['start_time'], info['exe'], info['log_path'])
    assert result['state'] == 'stopped' and result['stopped'] and result['was_running'] and result['signalled']
    assert 'listening' in result['output'] and result['log_problem'] is None
    assert background.group_members(info['pgid']) == [] and info['port'] not in background.listening_ports()
    assert not os.path.exists(folder)


def test_stop_reads_start_time_and_exe_from_the_private_dir_when_not_given(tmp_path):
    info = start(tmp_path)
    result = background.stop_server(info['pid'], log_path=info['log_path'])
    assert result['state'] == 'stopped' and result['stopped'] and background.group_members(info['pid']) == []


def test_port_already_in_use_is_refused_and_leaves_no_directory(tmp_path):
    sock = socket.socket()
    sock.bind(('0.0.0.0', 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        with pytest.raises(background.ServerError, match='already in use') as caught:
            background.start_server([sys.executable, '-c', LISTENER, str(port)], str(tmp_path), port, 60)
    finally:
        sock.close()
    assert caught.value.port_in_use and os.listdir(str(tmp_path)) == []


def test_server_that_dies_early_is_reported_with_its_output(tmp_path):
    with pytest.raises(background.ServerError, match='exited with rc=3') as caught:
        start(tmp_path, code='import sys; print("no device", flush=True); sys.exit(3)')
    assert 'no device' in caught.value.output and os.listdir(str(tmp_path)) == []


def test_server_that_never_listens_is_killed(tmp_path):
    code = 'import time, os; open(os.environ["PIDFILE"], "w").write(str(os.getpid())); time.sleep(60)'
    pidfile = tmp_path / 'pid'
    with pytest.raises(background.ServerError, match='did not listen'):
        background.start_server([sys.executable, '-c', code], str(tmp_path / '..'), free_port(), 60,
                                ready_timeout=1.0, env={'PIDFILE': str(pidfile)})
    assert not background.pid_alive(int(pidfile.read_text()))


# Listens only after a second, as a slow server would: a batch of them started one after another would take a second each.
SLOW_LISTENER = 'import time; time.sleep(1.0)\n' + LISTENER


def test_a_batch_starts_side_by_side_and_each_outcome_stays_in_its_place(tmp_path):
    ports = [free_port() for _index in range(4)]
    specs = [dict(argv=[sys.executable, '-c', SLOW_LISTENER, str(port)], log_dir=str(tmp_path), port=port, deadline=60)
             for port in ports]
    # Second place: exits before it listens.  Last place: asks for the first one's port again.
    specs[1] = dict(specs[1], argv=[sys.executable, '-c', 'import sys; print("no device", flush=True); sys.exit(3)'])
    specs.append(dict(specs[0], name='twice'))
    begin = time.time()
    outcomes = background.start_servers(specs)
    elapsed = time.time() - begin
    try:
        assert [type(outcome).__name__ for outcome in outcomes] == ['dict', 'ServerError', 'dict', 'dict', 'ServerError']
        # Three one-second starts side by side: well under the three seconds of one after another.
        assert elapsed < 2.5, elapsed
        assert [outcome['port'] for outcome in outcomes if isinstance(outcome, dict)] == [ports[0], ports[2], ports[3]]
        assert 'no device' in outcomes[1].output and not outcomes[1].port_in_use
        assert outcomes[4].port_in_use and 'port %d' % ports[0] in str(outcomes[4])
        for outcome in outcomes:
            if isinstance(outcome, dict):
                assert background.is_ours(outcome['pid'], outcome['start_time'], outcome['exe'])
                assert outcome['port'] in background.listening_ports()
    finally:
        for outcome in outcomes:
            if isinstance(outcome, dict):
                assert background.stop_server(outcome['pid'], log_path=outcome['log_path'])['stopped']
    # Only the started servers' folders existed, and their stops removed them.
    assert os.listdir(str(tmp_path)) == []


def test_a_batch_broken_half_way_stops_every_server_it_started(tmp_path, monkeypatch):
    # One server is ready at once, the other never gets there: an interrupt in the wait must take both down.
    code = 'import os, sys; open(os.environ["PIDFILE"], "w").write(str(os.getpid()))\n'
    fast, slow = free_port(), free_port()
    specs = [dict(argv=[sys.executable, '-c', code + LISTENER, str(fast)], log_dir=str(tmp_path), port=fast, deadline=60,
                  env={'PIDFILE': str(tmp_path / 'fast.pid')}),
             dict(argv=[sys.executable, '-c', code + 'import time; time.sleep(60)'], log_dir=str(tmp_path), port=slow,
                  deadline=60, env={'PIDFILE': str(tmp_path / 'slow.pid')})]
    real_sleep = time.sleep
    calls = []

    def interrupted(seconds):
        calls.append(seconds)
        if len(calls) == 25:   # once, as an operator's ^C: the clean-up's own waits go on
            raise KeyboardInterrupt()
        real_sleep(seconds)

    monkeypatch.setattr(background.time, 'sleep', interrupted)
    with pytest.raises(KeyboardInterrupt):
        background.start_servers(specs)
    monkeypatch.setattr(background.time, 'sleep', real_sleep)
    for name in ('fast.pid', 'slow.pid'):
        pid = int((tmp_path / name).read_text())
        assert wait_until(lambda: not background.pid_alive(pid), 5), name
    assert sorted(os.listdir(str(tmp_path))) == ['fast.pid', 'slow.pid']   # no server folder left


def test_stopping_a_server_that_is_gone_is_fine(tmp_path):
    result = background.stop_server(2 ** 22 + 12345, 12345)
    assert result['state'] == 'exited' and result['stopped'] and not result['was_running'] and not result['signalled']


def test_a_reused_pid_is_stopped_for_us_and_never_signalled():
    # This test process stands for "someone else got the pid": same pid, another start time.
    me = background.process_identity(os.getpid())
    result = background.stop_server(os.getpid(), me['start_time'] + 1, wait_exit=0)
    assert result['state'] == 'pid_reused' and result['stopped'] and not result['signalled']
    result = background.stop_server(os.getpid(), me['start_time'], '/not/our/exe', wait_exit=0)
    assert result['state'] == 'pid_reused' and not result['signalled']


def test_the_identity_is_start_time_from_proc_stat_field_22():
    with open('/proc/self/stat') as handle:
        field22 = int(handle.read().rsplit(')', 1)[1].split()[19])
    assert background.process_identity(os.getpid())['start_time'] == field22 == background.process_identity(os.getpid())['start_time']
