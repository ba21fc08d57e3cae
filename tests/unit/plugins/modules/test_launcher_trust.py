"""The NCCL launcher's trust: a key for one run and pair, restricted on the peer, a private folder on the node, and no
trace left on any exit path (the always path, a failed session check, a run killed before it could clean up).

The peer's authorized_keys is a real file in a temporary home; the watchdog is the real detached process.
"""
import collections
import hashlib
import os
import subprocess
import sys
import time
from unittest import mock

import pytest

from ansible_collections.gpufleet.netval.plugins.action import launcher_key as launcher_key_action
from ansible_collections.gpufleet.netval.plugins.module_utils import launcher
from ansible_collections.gpufleet.netval.plugins.modules import launcher_key, launcher_trust
from tests.unit.plugins.modules.utils import Call, run_module

Entry = collections.namedtuple('Entry', 'pw_dir pw_uid pw_gid')
NODE_ADDRESS = '10.251.0.11'
PEER_ADDRESS = '10.251.0.13'
ADMIN = b'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGFkbWluIGtleSBvZiB0aGUgc2l0ZSwgbm90IG91cnM= admin@jump\n'


def sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The test user's home on the peer: a real folder, the user this test runs as."""
    folder = tmp_path / 'home'
    folder.mkdir()
    monkeypatch.setattr(launcher, 'user_home', lambda user: Entry(str(folder), os.getuid(), os.getgid()))
    return folder


@pytest.fixture
def watchdogs(monkeypatch):
    """The watchdogs the module starts, recorded instead of started (one test below starts a real one)."""
    started = []
    monkeypatch.setattr(launcher, 'start_watchdog', lambda args: started.append(list(args)) or 0)
    return started


def new_key(node='node01', peer='peer02'):
    result = launcher.key_result({'run': '20261205T210000Z', 'node': node, 'peer': peer}, False)
    assert result['error_class'] is None
    return result


def authorize(key, **extra):
    args = dict({'state': 'authorized', 'user': 'root', 'public_key': key['public_key'], 'from_addresses': [NODE_ADDRESS]}, **extra)
    return run_module(launcher_trust.main, args)


def revoke(trust):
    return run_module(launcher_trust.main, {'state': 'revoked', 'trust': trust})


# ------------------------------------------------------------------------------------------------------------- the key

def test_the_key_is_new_for_each_run_and_pair_and_marked_as_ours():
    first, second = new_key(), new_key()
    assert first['private_key'].startswith('-----BEGIN OPENSSH PRIVATE KEY-----')
    assert first['public_key'].startswith('ssh-ed25519 ') and first['public_key'] != second['public_key']
    assert first['comment'].startswith('netval-launcher:20261205T210000Z:node01:peer02:') and first['comment'] != second['comment']
    assert first['public_key'].endswith(' ' + first['comment']) and first['changed'] is False


def test_the_key_is_made_on_the_controller_as_the_module_makes_it():
    task = mock.MagicMock(async_val=0, check_mode=False, args={'run': 'r1', 'node': 'node01', 'peer': 'peer01'})
    action = launcher_key_action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                              shared_loader_obj=None)
    made = action.run(task_vars={})
    assert not made.get('failed') and made['comment'].startswith('netval-launcher:r1:node01:peer01:')
    refused = launcher_key_action.ActionModule(mock.MagicMock(async_val=0, check_mode=False, args={'run': 'r 1', 'node': 'n', 'peer': 'p'}),
                                               mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    bad = refused.run(task_vars={})
    assert bad['failed'] and 'run must be a name' in bad['msg'] and bad['error_class'] == 'invalid_options'
    result, failed = run_module(launcher_key.main, {'run': 'r1', 'node': 'node01', 'peer': 'peer01'})
    assert not failed and result['public_key'].startswith('ssh-ed25519 ')


# ------------------------------------------------------------------------------------------------------------- the peer

def test_the_key_is_restricted_to_the_node_and_to_running_a_command(home, watchdogs):
    key = new_key()
    result, failed = authorize(key)
    assert not failed, result
    line = (home / '.ssh' / 'authorized_keys').read_text()
    expiry = time.strftime('%Y%m%d%H%M', time.localtime(int(result['deadline']) // 60 * 60 + 60))
    assert line == ('from="%s",no-port-forwarding,no-X11-forwarding,no-agent-forwarding,no-pty,expiry-time="%s" %s\n'
                    % (NODE_ADDRESS, expiry, key['public_key']))
    assert result['trust']['created_file'] and result['trust']['created_dir']
    assert oct((home / '.ssh').stat().st_mode & 0o777) == '0o700' and oct((home / '.ssh' / 'authorized_keys').stat().st_mode & 0o777) == '0o600'
    # The watchdog takes it back at the deadline if nothing else does.
    assert len(watchdogs) == 1 and watchdogs[0][0] == 'key' and float(watchdogs[0][1]) == pytest.approx(time.time() + 3600, abs=30)


@pytest.mark.parametrize('before', [None, b'', ADMIN, ADMIN.rstrip(b'\n'), ADMIN + b'\n# trailing comment without newline'])
def test_authorized_keys_is_byte_identical_after_the_run(home, watchdogs, before):
    folder = home / '.ssh'
    path = folder / 'authorized_keys'
    if before is not None:
        folder.mkdir(mode=0o700)
        path.write_bytes(before)
        path.chmod(0o644)
        inode = path.stat().st_ino
    result, failed = authorize(new_key())
    assert not failed and path.read_bytes() != (before or b'')
    removed, failed = revoke(result['trust'])
    assert not failed and removed['removed'] is True
    if before is None:
        assert not folder.exists(), 'the ~/.ssh the key needed is gone again'
    else:
        assert path.read_bytes() == before and path.stat().st_ino == inode and oct(path.stat().st_mode & 0o777) == '0o644'
    again, failed = revoke(result['trust'])
    assert not failed and again['removed'] is False


def test_removal_keeps_what_others_added_meanwhile(home, watchdogs):
    folder = home / '.ssh'
    folder.mkdir(mode=0o700)
    path = folder / 'authorized_keys'
    path.write_bytes(ADMIN)
    result, _failed = authorize(new_key())
    with open(str(path), 'ab') as handle:
        handle.write(b'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG90aGVyIGtleSBhZGRlZCBkdXJpbmcgdGhlIHJ1bg== ops@site\n')
    revoke(result['trust'])
    assert path.read_bytes() == ADMIN + b'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG90aGVyIGtleSBhZGRlZCBkdXJpbmcgdGhlIHJ1bg== ops@site\n'


def test_a_run_killed_before_its_always_path_leaves_nothing_once_the_deadline_passes(home):
    folder = home / '.ssh'
    folder.mkdir(mode=0o700)
    path = folder / 'authorized_keys'
    path.write_bytes(ADMIN)
    before = sha256(str(path))
    record = launcher.add_authorized('root', launcher.authorized_line(new_key()['public_key'], [NODE_ADDRESS]))
    # The real watchdog, detached in its own session: the module (and the whole run) may be gone.
    pid = launcher.start_watchdog(launcher.key_watchdog_args(record, time.time() + 1.5))
    assert sha256(str(path)) != before
    deadline = time.time() + 15
    while sha256(str(path)) != before and time.time() < deadline:
        time.sleep(0.2)
    assert sha256(str(path)) == before
    os.waitpid(pid, 0)


def test_revoking_refuses_a_line_that_is_not_the_launchers(home):
    result, failed = run_module(launcher_trust.main, {'state': 'revoked', 'trust': {
        'path': str(home / '.ssh' / 'authorized_keys'), 'line': ADMIN.decode().strip(), 'added_newline': False,
        'created_file': False, 'created_dir': False}})
    assert failed and 'not a line of the launcher' in result['msg'] and result['error_class'] == 'invalid_options'
    result, failed = run_module(launcher_trust.main, {'state': 'revoked', 'trust': {'path': '/etc/passwd', 'line': 'x'}})
    assert failed and 'authorized_keys file of a ~/.ssh folder' in result['msg']


@pytest.mark.parametrize('override, needle', [
    ({'from_addresses': []}, 'from_addresses is required'),
    ({'from_addresses': ['10.0.0.1" ,command="id']}, 'not an address'),
    ({'public_key': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGFkbWluIGtleSBvZiB0aGUgc2l0ZSwgbm90IG91cnM= admin@jump'}, 'netval-launcher'),
    ({'user': 'root; id'}, 'user must be a user name'),
    ({'lifetime': 10 ** 9}, 'lifetime'),
])
def test_bad_trust_options_fail_clearly_and_change_nothing(home, watchdogs, override, needle):
    result, failed = authorize(new_key(), **override)
    assert failed and needle in result['msg'] and result['error_side'] == 'ours'
    assert not (home / '.ssh').exists() and watchdogs == []


# ------------------------------------------------------------------------------------------------------------- the node

def present(key, peer_host_keys, calls=(), **extra):
    args = dict({'state': 'present', 'private_key': key['private_key'], 'peer_address': PEER_ADDRESS,
                 'peer_host_keys': peer_host_keys}, **extra)
    return run_module(launcher_trust.main, args, calls=calls)


HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBlZXIwMidzIGhvc3Qga2V5IGZvciB0aGUgdGVzdA=='


def check_argv(folder):
    return ['/usr/bin/timeout', '--kill-after=5', '30', '/usr/bin/ssh', '-i', os.path.join(folder, 'id_launcher'),
            '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes',
            '-o', 'UserKnownHostsFile=%s' % os.path.join(folder, 'known_hosts'), '-o', 'GlobalKnownHostsFile=/dev/null',
            '-o', 'UpdateHostKeys=no', '-o', 'ConnectTimeout=20', PEER_ADDRESS, 'true']


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The private folder mkdtemp would make, at a known path."""
    path = str(tmp_path / 'netval-launcher-test')
    real = launcher.tempfile.mkdtemp

    def fake_mkdtemp(prefix=None, dir=None):  # pylint: disable=redefined-builtin
        assert prefix == launcher.DIR_PREFIX
        os.mkdir(path, 0o700)
        return path
    monkeypatch.setattr(launcher.tempfile, 'mkdtemp', fake_mkdtemp)
    assert real
    return path


def test_the_node_gets_key_and_host_key_privately_and_the_session_is_checked_first(folder, watchdogs):
    key = new_key()
    result, failed = present(key, [HOST_KEY + ' root@peer02'], calls=[Call(check_argv(folder))])
    assert not failed, result
    assert result['dir'] == folder and oct(os.stat(folder).st_mode & 0o777) == '0o700'
    assert oct(os.stat(os.path.join(folder, 'id_launcher')).st_mode & 0o777) == '0o600'
    with open(os.path.join(folder, 'known_hosts')) as handle:
        assert handle.read() == '%s %s\n' % (PEER_ADDRESS, HOST_KEY)
    options = ' '.join(result['ssh_options'])
    assert result['mpirun_args'] == ['--mca', 'plm_rsh_args', options]
    for option in ('-i %s/id_launcher' % folder, 'BatchMode=yes', 'StrictHostKeyChecking=yes', 'UserKnownHostsFile=%s/known_hosts' % folder):
        assert option in options
    assert watchdogs == [['dir', watchdogs[0][1], folder]]
    gone, failed = run_module(launcher_trust.main, {'state': 'absent', 'dir': folder})
    assert not failed and gone['removed'] and not os.path.exists(folder)


def test_an_unreachable_peer_is_ours_and_leaves_no_folder(folder, watchdogs):
    result, failed = present(new_key(), [HOST_KEY], calls=[Call(check_argv(folder), rc=255, err='Host key verification failed.\r\n')])
    assert failed and (result['error_class'], result['error_side']) == ('launcher_unreachable', 'ours')
    assert 'Host key verification failed' in result['msg'] and PEER_ADDRESS in result['msg']
    assert not os.path.exists(folder) and watchdogs == []


def test_a_site_with_its_own_trust_is_only_checked(watchdogs):
    argv = ['/usr/bin/timeout', '--kill-after=5', '30', '/usr/bin/ssh', '-o', 'BatchMode=yes', PEER_ADDRESS, 'true']
    result, failed = run_module(launcher_trust.main, {'state': 'present', 'peer_address': PEER_ADDRESS}, calls=[Call(argv)])
    assert not failed and result['dir'] is None and result['mpirun_args'] == [] and watchdogs == []


def test_absent_removes_only_a_folder_of_ours(tmp_path):
    other = tmp_path / 'important'
    other.mkdir()
    result, failed = run_module(launcher_trust.main, {'state': 'absent', 'dir': str(other)})
    assert failed and 'not a folder launcher_trust made' in result['msg'] and other.exists()


def test_present_needs_the_peer_host_keys_with_a_key(watchdogs):
    result, failed = run_module(launcher_trust.main, {'state': 'present', 'private_key': new_key()['private_key'],
                                                      'peer_address': PEER_ADDRESS})
    assert failed and 'peer_host_keys is required' in result['msg'] and result['_ran'] == []


def test_the_watchdog_script_runs_on_the_boxes_own_python(tmp_path):
    """It runs from `python -c` with the standard library only (nothing of ours importable)."""
    folder = tmp_path / 'netval-launcher-x'
    folder.mkdir()
    proc = subprocess.run([sys.executable, '-S', '-c', launcher.WATCHDOG] + launcher.dir_watchdog_args(str(folder), 0),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert not folder.exists()
