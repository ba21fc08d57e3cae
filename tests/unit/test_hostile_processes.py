"""Hostile and unlucky process handling (issue 13 item 4, issue 9 item 9), with real processes.

A decoy named like the tool survives a stop; a server whose children ignore SIGTERM is gone after its deadline
even when nobody stops it; a recycled pid is never signalled and never fails the host; a leader whose process group
does not exist is not "stopped" until it is gone; a log path that is not this server's (a foreign file, a symlink)
is never read.
"""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.modules import iperf3
from tests.unit.plugins.modules.utils import run_module

# Listens on the port given after -p, prints a banner, and with STUBBORN=1 ignores SIGTERM and starts a child that does too.
STAND_IN = r'''#!{python}
import os, signal, socket, subprocess, sys, time
args = sys.argv[1:]
port = int(args[args.index('-p') + 1])
if os.environ.get('STUBBORN'):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)',
                      'netval-stubborn-child'])
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(('127.0.0.1', port))
sock.listen(1)
print('Server listening on %d' % port, flush=True)
time.sleep(300)
'''


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def make_tool(folder, name='iperf3'):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(STAND_IN.replace('{python}', sys.executable))
    path.chmod(0o755)
    return path


def wait_until(predicate, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def alive(pid):
    return background.pid_alive(pid)


def start_iperf3(tmp_path, **extra):
    bin_dir = tmp_path / 'bin'
    make_tool(bin_dir)
    port = free_port()
    args = dict({'role': 'server', 'port': port, 'log_dir': str(tmp_path)}, **extra)
    started, failed = run_module(iperf3.main, args, bin_dir=str(bin_dir))
    assert not failed, started
    return started


def stop_iperf3(started, **override):
    args = {'role': 'server', 'state': 'stopped', 'pid': started['pid'], 'start_time': started['start_time'], 'exe': started['exe'],
            'log_path': started['log_path'], 'wait_exit': 0}
    args.update(override)
    return run_module(iperf3.main, args)


@pytest.fixture
def decoy(tmp_path):
    """`python3 /tmp/.../x/iperf3`: a process whose argv names the tool, that is not ours."""
    folder = tmp_path / 'x'
    folder.mkdir()
    script = folder / 'iperf3'
    script.write_text('import time\ntime.sleep(300)\n')
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def test_a_decoy_named_like_the_tool_survives_a_stop(tmp_path, decoy):
    started = start_iperf3(tmp_path)
    stopped, failed = stop_iperf3(started)
    assert not failed and stopped['server_state'] == 'stopped' and stopped['stopped'] is True
    assert not alive(started['pid']) and background.group_members(started['pid']) == []
    assert decoy.poll() is None and alive(decoy.pid)


@pytest.mark.parametrize('override', [
    {},  # the decoy's pid, no identity: as a stale pid from an old run
    {'start_time': 12345},  # the decoy's pid with the start time of a server that is long gone: a recycled pid
])
def test_a_stop_aimed_at_the_decoys_pid_signals_nothing_and_does_not_fail(decoy, override):
    args = dict({'role': 'server', 'state': 'stopped', 'pid': decoy.pid, 'wait_exit': 0}, **override)
    stopped, failed = run_module(iperf3.main, args)
    assert not failed, stopped
    assert stopped['changed'] is False and stopped['server_state'] in ('unverified', 'pid_reused')
    time.sleep(0.2)
    assert decoy.poll() is None


def test_a_server_whose_children_ignore_sigterm_is_gone_after_its_deadline(tmp_path, monkeypatch):
    monkeypatch.setenv('STUBBORN', '1')
    started = start_iperf3(tmp_path, timeout=2)
    assert started['timeout'] == 2 and started['deadline_at'] <= time.time() + 3
    assert wait_until(lambda: len(background.group_members(started['pid'])) >= 2, 5)
    # Nobody stops it: the watchdog does, SIGTERM at 2 s, SIGKILL 3 s later.
    assert wait_until(lambda: background.group_members(started['pid']) == [] and not alive(started['pid']), 15)
    stopped, failed = stop_iperf3(started)
    assert not failed and stopped['server_state'] == 'exited' and stopped['changed'] is False
    assert not os.path.exists(os.path.dirname(started['log_path']))


def test_a_stubborn_server_is_killed_by_stop(tmp_path, monkeypatch):
    monkeypatch.setenv('STUBBORN', '1')
    started = start_iperf3(tmp_path)
    assert wait_until(lambda: len(background.group_members(started['pid'])) >= 2, 5)
    begin = time.time()
    stopped, failed = stop_iperf3(started)
    assert not failed and stopped['server_state'] == 'stopped' and stopped['stopped'] is True and stopped['changed'] is True
    assert background.group_members(started['pid']) == [] and time.time() - begin < 10


def test_a_leader_whose_group_does_not_exist_is_not_stopped_until_it_is_gone():
    # Not a group leader: killpg(pid) finds no such group while the process lives on (and ignores SIGTERM).
    code = 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print("ignoring", flush=True); time.sleep(300)'
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b'ignoring\n'
        with pytest.raises(OSError):
            os.killpg(proc.pid, 0)
        identity = background.process_identity(proc.pid)
        assert background.stop_group(proc.pid, identity['start_time'], grace=0.5) is True
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()


def test_a_foreign_log_path_is_never_read(tmp_path):
    started = start_iperf3(tmp_path)
    stopped, failed = stop_iperf3(started, log_path='/etc/hostname')
    assert not failed and stopped['output'] == '' and stopped['stopped'] is True
    assert os.path.exists(started['log_path'])  # only its own log is removed, and this stop did not name it
    again, failed = stop_iperf3(started)
    assert not failed and again['server_state'] == 'exited' and not os.path.exists(started['log_path'])


def test_a_symlinked_server_log_is_refused(tmp_path):
    secret = tmp_path / 'secret.txt'
    secret.write_text('not the server log\n')
    started = start_iperf3(tmp_path)
    os.unlink(started['log_path'])
    os.symlink(str(secret), started['log_path'])
    stopped, failed = stop_iperf3(started)
    assert not failed and stopped['server_state'] == 'stopped'
    assert 'not the server log' not in stopped['output'] and stopped['output'] == ''
    assert secret.read_text() == 'not the server log\n'


def test_a_symlinked_private_directory_is_refused(tmp_path):
    started = start_iperf3(tmp_path)
    link = tmp_path / 'netval-iperf3-link'
    os.symlink(os.path.dirname(started['log_path']), str(link))
    stopped, failed = stop_iperf3(started, log_path=str(link / 'server.log'))
    assert not failed and stopped['output'] == '' and stopped['stopped'] is True
    assert os.path.exists(started['log_path'])
    stop_iperf3(started)


def test_logs_are_created_exclusively_in_a_private_directory(tmp_path):
    started = start_iperf3(tmp_path)
    folder = os.path.dirname(started['log_path'])
    info = os.lstat(folder)
    assert oct(info.st_mode & 0o777) == oct(0o700) and info.st_uid == os.getuid()
    assert oct(os.lstat(started['log_path']).st_mode & 0o777) == oct(0o600)
    stop_iperf3(started)
    assert not os.path.exists(folder)
