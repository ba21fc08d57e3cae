"""Real processes: a server that listens is started, found listening, stopped, and leaves nothing behind."""
import os
import socket
import sys

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


def test_start_wait_ready_and_stop_leaves_no_process(tmp_path):
    port = free_port()
    info = background.start_server([sys.executable, '-c', LISTENER, str(port)], str(tmp_path / 'srv.log'), port)
    assert background.pid_alive(info['pid'])
    assert port in background.listening_ports()
    members = background._group_members(info['pgid'])
    assert len(members) >= 2  # the listener and its child sleep
    result = background.stop_server(info['pid'], info['log_path'])
    assert result['stopped'] and result['was_running']
    assert 'listening' in result['output']
    assert background._group_members(info['pgid']) == []
    assert port not in background.listening_ports()


def test_port_already_in_use_is_refused(tmp_path):
    sock = socket.socket()
    sock.bind(('0.0.0.0', 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        with pytest.raises(background.ServerError, match='already in use'):
            background.start_server([sys.executable, '-c', LISTENER, str(port)], str(tmp_path / 'srv.log'), port)
    finally:
        sock.close()


def test_server_that_dies_early_is_reported(tmp_path):
    with pytest.raises(background.ServerError, match='exited with rc=3'):
        background.start_server([sys.executable, '-c', 'import sys; print("no device"); sys.exit(3)'],
                                str(tmp_path / 'srv.log'), free_port())


def test_server_that_never_listens_is_killed(tmp_path):
    code = 'import time, os; open(os.environ["PIDFILE"], "w").write(str(os.getpid())); time.sleep(60)'
    pidfile = tmp_path / 'pid'
    with pytest.raises(background.ServerError, match='did not listen'):
        background.start_server([sys.executable, '-c', code], str(tmp_path / 'srv.log'), free_port(),
                                ready_timeout=1.0, env={'PIDFILE': str(pidfile)})
    pid = int(pidfile.read_text())
    assert not background.pid_alive(pid)


def test_stopping_an_already_exited_server_is_fine(tmp_path):
    result = background.stop_server(2 ** 22 + 12345, None)
    assert result['stopped'] and not result['was_running']
    assert os.getpid() > 0
