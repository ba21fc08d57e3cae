"""Bad input gives a clear message (no traceback); down removes everything, also from a half-built lab."""
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.lab.conftest import LAB_ROOT, ROOT, cli, lab_env, run

pytestmark = pytest.mark.lab


def no_traceback(proc):
    return 'Traceback' not in proc.stdout + proc.stderr


def lab_leftovers():
    """Everything of the lab that still exists: namespaces, root links, processes, files."""
    left = []
    left += [line.split()[0] for line in run(['ip', 'netns', 'list']).stdout.splitlines() if line.startswith('nvlab-')]
    for line in run(['ip', '-o', 'link', 'show']).stdout.splitlines():
        name = line.split(':', 2)[1].strip().split('@')[0]
        if name.startswith(('nvlab-', 'nvm-', 'nvi-', 'nvfa', 'nvfb')):
            left.append('link ' + name)
    me = os.getpid()
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                cmdline = handle.read().replace(b'\0', b' ').decode('utf-8', 'replace')
        except OSError:
            continue
        if LAB_ROOT in cmdline:
            left.append('process %s: %s' % (pid, cmdline))
    for path in (LAB_ROOT, os.path.join(ROOT, 'inventories', 'lab')):
        if os.path.exists(path):
            left.append(path)
    return left


@pytest.mark.parametrize('args,needle', [
    (['--nodes', '65'], '--nodes must be between 1 and 64'),
    (['--nodes', '0'], '--nodes must be between 1 and 64'),
    (['--peers', '0'], '--peers must be between 1 and 4'),
    (['--peers', '5'], '--peers must be between 1 and 4'),
    (['--profile', 'no-such-profile'], 'no-such-profile'),
])
def test_up_rejects_bad_arguments(args, needle, lab_session):  # pylint: disable=unused-argument
    proc = cli('up', *args)
    assert proc.returncode != 0 and needle in proc.stderr and no_traceback(proc), proc.stderr


def test_up_names_the_misspelled_profile_field(tmp_path, lab_session):  # pylint: disable=unused-argument
    bad = tmp_path / 'typo.yml'
    bad.write_text('name: typo\ntier: 400G\nnic_defaults:\n  rate_gpbs: 400\n', encoding='utf-8')
    proc = cli('up', '--profile', str(bad))
    assert proc.returncode != 0 and no_traceback(proc), proc.stderr
    assert 'rate_gpbs' in proc.stderr and 'typo.yml' in proc.stderr, proc.stderr


def test_not_root_gets_a_clear_message():
    proc = subprocess.run(['runuser', '-u', 'nobody', '--', '/usr/bin/python3', '-m', 'lab.netval_lab', 'status'], cwd=ROOT,
                          env=lab_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert proc.returncode == 2 and 'must run as root' in proc.stderr and no_traceback(proc), proc.stderr


def test_down_removes_everything_and_is_idempotent(lab):  # pylint: disable=unused-argument
    # Leave some of everything running: a flap loop, busy ports, an ssh ControlPersist master, an iperf3 server.
    cli('fault', 'link-flap', check=True)
    cli('fault', 'port-busy', check=True)
    run(['ip', 'netns', 'exec', 'nvlab-node01', 'iperf3', '-s', '-D', '-p', '5302'])
    key = os.path.join(LAB_ROOT, 'ssh', 'id_ed25519')
    run(['ssh', '-i', key, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'ControlMaster=auto',
         '-o', 'ControlPersist=60s', '-o', 'ControlPath=/tmp/netval-lab-test-%C', 'root@' + lab['hosts']['node01']['mgmt_ip'], 'true'])
    proc = cli('down', check=True)
    assert 'lab down' in proc.stdout
    assert lab_leftovers() == []
    assert 'lab is down' in cli('status', check=True).stdout
    proc = cli('down', check=True)  # nothing there: still fine
    assert lab_leftovers() == []


def test_down_cleans_a_half_built_lab(lab_session):  # pylint: disable=unused-argument
    cli('down', check=True)
    proc = subprocess.Popen([sys.executable, '-m', 'lab.netval_lab', 'up', '--profile', 'healthy-400g', '--nodes', '3', '--peers', '1'],
                            cwd=ROOT, env=lab_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and 'nvlab-node02' not in run(['ip', 'netns', 'list']).stdout:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up after itself
    proc.wait()
    assert lab_leftovers(), 'the interrupted up left nothing to clean; the test did not interrupt it'
    cli('down', check=True)
    assert lab_leftovers() == []


def test_up_with_different_arguments_rebuilds(lab):  # pylint: disable=unused-argument
    proc = cli('up', '--profile', 'platform-slow', '--nodes', '1', '--peers', '1', check=True)
    assert 'tearing down the existing lab first' in proc.stdout
    assert 'nvlab-node02' not in run(['ip', 'netns', 'list']).stdout
    status = cli('status', check=True).stdout
    assert 'platform-slow' in status and 'node02' not in status
