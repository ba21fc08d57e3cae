# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL launcher's trust, for one run and one node-peer pair.

Open MPI's mpirun on the node starts ``orted`` on the peer over SSH, as the test user.  A new node has no key the
peer trusts and no host key of the peer.  For the length of one NCCL test the collection gives it both and takes
them back:

* a key pair made on the controller for this run and this pair (``new_key``, cryptography: an ansible-core
  dependency, so nothing is written on the controller);
* on the peer, its public half appended to the test user's ``~/.ssh/authorized_keys``, restricted to the node's
  address and to running a command (``authorized_line``); ``add_authorized`` records what it changed (whether it
  added the file, the folder, the newline before its line) so that the removal leaves the file byte-identical;
* on the node, the private half and the peer's host keys in a private temporary folder (``write_credentials``), and
  the ssh options mpirun passes on (``ssh_options``, ``plm_rsh_args``);
* on both boxes a watchdog (``WATCHDOG``, its own session) that removes the trace at a deadline if nothing else did:
  the removal in the always path runs the same script at once, so there is one way to remove, and a run killed before
  its always path still leaves nothing behind once the deadline passes.

No Ansible import; the remover runs under the box's own Python with the standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import os
import pwd
import re
import stat
import subprocess
import sys
import tempfile
import time

from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import capture

KEY_COMMENT_RE = re.compile(r'netval-launcher:[A-Za-z0-9_.:@+-]{1,200}')
PUBLIC_KEY_RE = re.compile(r'(ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) ([A-Za-z0-9+/]{20,8192}={0,3})(?: (\S{1,255}))?')
# What the launcher's key may do on the peer: run a command (orted) from the node's address, nothing else.
RESTRICTIONS = ('no-port-forwarding', 'no-X11-forwarding', 'no-agent-forwarding', 'no-pty')
DIR_PREFIX = 'netval-launcher-'
KEY_NAME = 'id_launcher'
KNOWN_HOSTS_NAME = 'known_hosts'
# A trace never outlives this, whatever the caller asks (a day).
MAX_LIFETIME = 86400

# The remover: argv mode deadline ... ; mode key: path line_b64 added_newline created_file created_dir; mode dir: path.
# It waits (polling) until the deadline or until its trace is gone, then removes what is left of it.  Standard library
# only: it runs from `python -c`, with no module of ours importable.
WATCHDOG = r'''
import base64, os, shutil, sys, time
mode, deadline = sys.argv[1], float(sys.argv[2])
def key_trace():
    path, line = sys.argv[3], base64.b64decode(sys.argv[4]) + b'\n'
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError):
        return None
    return (path, line, data) if line in data else None
def remove_key():
    found = key_trace()
    path, added_newline, created_file, created_dir = sys.argv[3], sys.argv[5] == '1', sys.argv[6] == '1', sys.argv[7] == '1'
    if found:
        path, line, data = found
        at = data.find(line)
        rest = data[:at] + data[at + len(line):]
        if added_newline and at == len(rest) and rest.endswith(b'\n'):
            rest = rest[:-1]
        if created_file and not rest:
            os.unlink(path)
        else:
            with open(path, 'r+b') as handle:
                handle.write(rest)
                handle.truncate()
    if created_dir:
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
def remove_dir():
    shutil.rmtree(sys.argv[3], ignore_errors=True)
trace = key_trace if mode == 'key' else (lambda: os.path.isdir(sys.argv[3]) or None)
remove = remove_key if mode == 'key' else remove_dir
while time.time() < deadline:
    if trace() is None:
        sys.exit(0)
    time.sleep(1.0)
remove()
'''


class LauncherError(Exception):
    """What stopped a trust step, in a sentence naming the file or the option."""


# ------------------------------------------------------------------------------------------------- the key (controller)

def new_key(comment):
    """A new ed25519 key pair: {private_key (OpenSSH PEM), public_key ('ssh-ed25519 AAAA... <comment>'), comment}."""
    # Imported here: the nodes never make keys, and they need not have cryptography.
    from cryptography.hazmat.primitives import serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import ed25519  # pylint: disable=import-outside-toplevel
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return {'private_key': private.decode('ascii'), 'public_key': '%s %s' % (public.decode('ascii'), comment), 'comment': comment}


def key_comment(run, node, peer, nonce):
    """The comment that marks the launcher's key line: netval-launcher:<run>:<node>:<peer>:<nonce>."""
    return 'netval-launcher:%s:%s:%s:%s' % (run, node, peer, nonce)


# ------------------------------------------------------------------------------------------------- the peer's side

def authorized_line(public_key, from_addresses, deadline=None):
    """The authorized_keys line: the node's addresses only, no forwarding, no terminal; the key's comment marks it ours.

    With ``deadline`` (epoch seconds) sshd itself refuses the key after it (``expiry-time``, in this box's local time, the
    next whole minute): should the watchdog die with its box before the deadline, the line left behind opens nothing."""
    match = PUBLIC_KEY_RE.fullmatch(public_key or '')
    if not match or not match.group(3) or not KEY_COMMENT_RE.fullmatch(match.group(3)):
        raise LauncherError('public_key must be an OpenSSH public key line whose comment is netval-launcher:...')
    if not from_addresses:
        raise LauncherError('the key must be restricted to the node\'s address: from_addresses is empty')
    for address in from_addresses:
        if not re.match(r'^[A-Za-z0-9.:*?-]{1,253}$', address or ''):
            raise LauncherError('%r is not an address or host pattern for from=' % (address,))
    options = ['from="%s"' % ','.join(from_addresses)] + list(RESTRICTIONS)
    if deadline is not None:
        options.append('expiry-time="%s"' % time.strftime('%Y%m%d%H%M', time.localtime(int(deadline) // 60 * 60 + 60)))
    return '%s %s' % (','.join(options), public_key)


def user_home(user):
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise LauncherError('user %s does not exist on this host' % user)
    return entry


def add_authorized(user, line):
    """Append ``line`` to the user's ~/.ssh/authorized_keys (in place: the file keeps its inode, owner and mode).

    Returns what the removal needs to restore the file byte for byte: {path, line, added_newline, created_file,
    created_dir}.  A line already there (a retried task) is not added twice.
    """
    entry = user_home(user)
    folder = os.path.join(entry.pw_dir, '.ssh')
    path = os.path.join(folder, 'authorized_keys')
    record = {'path': path, 'line': line, 'added_newline': False, 'created_file': False, 'created_dir': False}
    if not os.path.isdir(folder):
        os.mkdir(folder, 0o700)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        record['created_dir'] = True
    if os.path.islink(path):
        raise LauncherError('%s is a symbolic link: not changed' % path)
    if not os.path.exists(path):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
        os.close(descriptor)
        os.chown(path, entry.pw_uid, entry.pw_gid)
        record['created_file'] = True
    with open(path, 'rb') as handle:
        data = handle.read()
    encoded = line.encode('utf-8')
    if encoded + b'\n' in data:
        return record
    prefix = b''
    if data and not data.endswith(b'\n'):
        prefix = b'\n'
        record['added_newline'] = True
    with open(path, 'ab') as handle:
        handle.write(prefix + encoded + b'\n')
    return record


def key_watchdog_args(record, deadline):
    """The WATCHDOG's arguments for a key line (see add_authorized)."""
    return ['key', '%.3f' % deadline, record['path'], base64.b64encode(record['line'].encode('utf-8')).decode('ascii'),
            '1' if record['added_newline'] else '0', '1' if record['created_file'] else '0', '1' if record['created_dir'] else '0']


# ------------------------------------------------------------------------------------------------- the node's side

def write_credentials(private_key, peer_address, host_keys, base=None):
    """A private folder (0700, mkdtemp) with the key (0600) and a known_hosts naming the peer's address with its host keys."""
    keys = []
    for index, text in enumerate(host_keys or []):
        match = PUBLIC_KEY_RE.fullmatch(' '.join((text or '').split()[:2]))
        if not match:
            raise LauncherError('peer_host_keys[%d] is not an OpenSSH public host key (type and base64)' % index)
        keys.append('%s %s' % (match.group(1), match.group(2)))
    if not keys:
        raise LauncherError('peer_host_keys is empty: without the peer\'s host key ssh cannot verify it (StrictHostKeyChecking=yes)')
    if '-----BEGIN OPENSSH PRIVATE KEY-----' not in (private_key or ''):
        raise LauncherError('private_key is not an OpenSSH private key')
    folder = tempfile.mkdtemp(prefix=DIR_PREFIX, dir=base)
    os.chmod(folder, 0o700)
    key_path = os.path.join(folder, KEY_NAME)
    _write_private(key_path, private_key if private_key.endswith('\n') else private_key + '\n')
    _write_private(os.path.join(folder, KNOWN_HOSTS_NAME), ''.join('%s %s\n' % (peer_address, key) for key in keys))
    return folder


def _write_private(path, text):
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    with os.fdopen(descriptor, 'w') as handle:
        handle.write(text)


def ssh_options(folder=None):
    """The ssh options of the launcher: its own key and known_hosts, host keys checked, never a prompt.  Without a folder
    (a site's own trust) only BatchMode: ssh never waits for a password or a host-key question."""
    if folder is None:
        return ['-o', 'BatchMode=yes']
    return ['-i', os.path.join(folder, KEY_NAME), '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes',
            '-o', 'StrictHostKeyChecking=yes', '-o', 'UserKnownHostsFile=%s' % os.path.join(folder, KNOWN_HOSTS_NAME),
            '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'UpdateHostKeys=no', '-o', 'ConnectTimeout=20']


def mpirun_args(options):
    """mpirun's arguments that hand the ssh options to Open MPI's launcher (plm rsh): one --mca value, space-separated."""
    if not options:
        return []
    return ['--mca', 'plm_rsh_args', ' '.join(options)]


def is_credentials_dir(path):
    """Whether ``path`` is a folder write_credentials made: our prefix, a real folder (no link), owned by this user."""
    if not isinstance(path, str) or not os.path.isabs(path) or not os.path.basename(path).startswith(DIR_PREFIX):
        return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


# ------------------------------------------------------------------------------------------------- the watchdog

def start_watchdog(args):
    """The WATCHDOG in its own session, detached from the module (it outlives the task).  Returns its pid."""
    # Detached in its own session so that it outlives the module (run_command would wait for it).
    with open(os.devnull, 'r+b') as null:
        proc = subprocess.Popen([sys.executable, '-c', WATCHDOG] + list(args), stdin=null, stdout=null, stderr=null,  # pylint: disable=ansible-bad-function
                                close_fds=True, start_new_session=True)
    return proc.pid


def remove_now(args):
    """Run the WATCHDOG's removal at once (deadline 0): the one way a trace is removed.  Returns (rc, stderr)."""
    args = list(args)
    args[1] = '0'
    rc, _out, err = capture([sys.executable, '-c', WATCHDOG] + args)
    return rc, err.strip()


def dir_watchdog_args(folder, deadline):
    """The WATCHDOG's arguments for a credentials folder (see write_credentials)."""
    return ['dir', '%.3f' % deadline, folder]


# ------------------------------------------------------------------------------------------------- launcher_key's task

KEY_ARGUMENT_SPEC = dict(
    run=dict(type='str', required=True),
    node=dict(type='str', required=True),
    peer=dict(type='str', required=True),
)
NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.@+-]{0,63}')


def key_result(params, check_mode):  # pylint: disable=unused-argument
    """launcher_key's result: a new key pair for this run and pair, or the failure shape naming the bad option."""
    bad = [name for name in ('run', 'node', 'peer') if not NAME_RE.fullmatch(params.get(name) or '')]
    if bad:
        return dict(failed=True, msg='launcher_key: %s must be a name (letters, digits, _ . @ + -), got %r'
                    % (bad[0], params.get(bad[0])), **failure('invalid_options'))
    comment = key_comment(params['run'], params['node'], params['peer'], base64.b32encode(os.urandom(5)).decode('ascii').lower())
    try:
        key = new_key(comment)
    except ImportError as exc:
        return dict(failed=True, msg='launcher_key: the controller\'s Python cannot make an ed25519 key (cryptography, an '
                    'ansible-core dependency, is missing: %s)' % exc, **failure('tool_missing', 'install cryptography into the Python '
                                                                                'that runs ansible'))
    # Nothing changes on any host: the key lives in the task's result until launcher_trust hands it on.
    return dict(key, changed=False, **SUCCESS)
