# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop the server half of a two-ended test (perftest, iperf3).

The server runs detached in its own session (so its pid is also its process
group and session id) with its output in ``server.log`` inside a private
directory (mode 0700, created with mkdtemp; the log is opened with O_EXCL and
O_NOFOLLOW).  ``server.json`` next to it records who the server is: pid,
start time (field 22 of /proc/PID/stat) and the executable /proc/PID/exe
showed once it was ready.  Only a process with all three is ours; pids
recycle (pid_max may be 32768), so a pid alone never is.

Every server has a hard deadline: a small watchdog process (its own session,
no file descriptors of ours) signals the server's group at the deadline,
SIGTERM then SIGKILL after a grace period, and exits as soon as the group is
gone.  ``stop_server`` never raises: it reports what it found.
No Ansible import: callers pass argv lists and get plain dicts back.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from ansible_collections.gpufleet.netval.plugins.module_utils.runner import C_LOCALE

LOG_NAME = 'server.log'
IDENTITY_NAME = 'server.json'
DIR_PREFIX = 'netval-'
# A server never outlives this, whatever the caller asks (two days).
MAX_DEADLINE = 2 * 86400
GRACE = 3.0

# The watchdog: argv pid start_time deadline grace.  Self-contained (it runs from `python -c`), it signals
# the group only while the leader is still ours (same start time) or, once the leader is gone, members of
# the group remain: Linux does not reuse a pid that is still some process's group id.
WATCHDOG = r'''
import os, signal, sys, time
pid, start, deadline, grace = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
def fields(p):
    try:
        with open('/proc/%d/stat' % p) as h:
            return h.read().rsplit(')', 1)[1].split()
    except (IOError, OSError, IndexError):
        return None
def leader():
    f = fields(pid)
    return bool(f) and f[0] != 'Z' and f[19] == start
def members():
    found = []
    for name in os.listdir('/proc'):
        if name.isdigit():
            f = fields(int(name))
            if f and f[0] != 'Z' and f[2] == str(pid) and f[3] == str(pid):
                found.append(int(name))
    return found
while time.time() < deadline:
    # One stat read while the leader lives; the /proc scan only once it is gone.
    if not leader() and not members():
        sys.exit(0)
    time.sleep(0.5)
for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
    if leader() or members():
        try:
            os.killpg(pid, sig)
        except OSError:
            pass
    end = time.time() + wait
    while time.time() < end and (leader() or members()):
        time.sleep(0.05)
'''


class ServerError(Exception):
    """A server could not be started; ``output`` holds what it printed."""

    def __init__(self, message, output='', port_in_use=False):
        super(ServerError, self).__init__(message)
        self.output = output
        self.port_in_use = port_in_use


def listening_ports():
    """Set of local TCP ports in LISTEN state, from /proc/net/tcp and tcp6."""
    ports = set()
    for name in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(name, 'r') as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == '0A':
                        ports.add(int(fields[1].rsplit(':', 1)[1], 16))
        except (IOError, OSError):
            continue
    return ports


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (index 0 is field 3, state), or None."""
    try:
        with open('/proc/%d/stat' % pid, 'r') as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    _head, sep, tail = text.rpartition(')')
    fields = tail.split()
    if not sep or len(fields) < 20:
        return None
    return fields


def process_identity(pid):
    """{pid, start_time, exe, pgid, sid} of a live (not zombie) process, or None.

    ``start_time`` is field 22 of /proc/PID/stat (clock ticks after boot); ``exe`` is where
    /proc/PID/exe points (None when it cannot be read, for example another user's process).
    """
    fields = _stat_fields(pid)
    if fields is None or fields[0] == 'Z':
        return None
    try:
        exe = os.readlink('/proc/%d/exe' % pid)
    except (IOError, OSError):
        exe = None
    if exe and exe.endswith(' (deleted)'):
        exe = exe[:-len(' (deleted)')]
    return {'pid': pid, 'start_time': int(fields[19]), 'exe': exe, 'pgid': int(fields[2]), 'sid': int(fields[3])}


def pid_alive(pid):
    """True when ``pid`` is a live process (a zombie is dead for our purposes)."""
    return process_identity(pid) is not None


def is_ours(pid, start_time, exe=None):
    """True when ``pid`` is still the process that started at ``start_time`` (and runs ``exe`` when given)."""
    current = process_identity(pid)
    if current is None or current['start_time'] != int(start_time):
        return False
    return exe is None or current['exe'] == exe


def group_members(pgid):
    """Live processes of session-and-group ``pgid`` (a server we started leads both)."""
    members = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields and fields[0] != 'Z' and fields[2] == str(pgid) and fields[3] == str(pgid):
            members.append(int(name))
    return members


def read_log(path):
    """Text of the log at ``path``, never through a symlink; '' when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except (IOError, OSError):
        return ''
    with os.fdopen(fd, 'rb') as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ''
        return handle.read().decode('utf-8', 'replace')


def private_dir(log_path):
    """The private directory of ``log_path`` when it is one of ours, else None.

    Ours means: the file is named server.log, its directory is a real directory (not a symlink)
    named netval-*, owned by us, mode 0700, holding server.json.
    """
    if not isinstance(log_path, str) or os.path.basename(log_path) != LOG_NAME:
        return None
    folder = os.path.dirname(os.path.abspath(log_path))
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
        return None
    if not os.path.basename(folder).startswith(DIR_PREFIX):
        return None
    return folder


def read_identity(folder):
    """The server.json of a private directory (a dict), or None."""
    text = read_log(os.path.join(folder, IDENTITY_NAME))
    try:
        identity = json.loads(text) if text else None
    except ValueError:
        return None
    return identity if isinstance(identity, dict) else None


def _write_excl(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    with os.fdopen(fd, 'wb') as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _start_watchdog(pid, start_time, deadline, grace):
    argv = [sys.executable or 'python3', '-c', WATCHDOG, str(pid), str(start_time), '%.3f' % deadline, str(grace)]
    try:
        # Not run_command: the watchdog is detached and outlives the module, which returns at once.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                                close_fds=True, start_new_session=True)
    except OSError as exc:
        raise ServerError('cannot start the watchdog that enforces the server deadline: %s' % exc)
    identity = process_identity(proc.pid)
    return {'pid': proc.pid, 'start_time': identity['start_time'] if identity else None}


READY_POLL = 0.02


def start_server(argv, log_dir, port, deadline, ready_timeout=15.0, env=None, ready_text=None, name='server', grace=GRACE):
    """Start ``argv`` detached; wait until it listens on TCP ``port`` (or prints ``ready_text``).

    The server is killed ``deadline`` seconds after it started (capped at MAX_DEADLINE), whatever
    happens to the caller.  Returns {pid, pgid, start_time, exe, log_path, port, argv, deadline_s,
    deadline_at}.  Raises ServerError when the port is taken, the server exits early or never gets
    ready; nothing of it is then left (process or directory).
    """
    outcome = start_servers([dict(argv=argv, log_dir=log_dir, port=port, deadline=deadline, ready_timeout=ready_timeout,
                                  env=env, ready_text=ready_text, name=name, grace=grace)])[0]
    if isinstance(outcome, ServerError):
        raise outcome
    return outcome


def start_servers(specs):
    """Start every server of ``specs`` first, then wait for all of them together.

    Each spec is a dict of start_server's arguments (argv, log_dir, port, deadline; ready_timeout, env,
    ready_text, name, grace optional).  Servers are independent, so a batch costs the slowest one's start,
    not the sum of them.  Returns one entry per spec, in order: start_server's dict for a server that got
    ready, the ServerError of one that did not (nothing of it is then left).  Never raises ServerError; anything
    else that breaks the batch half way (an interrupt, a bug) stops every server it started before it propagates.
    """
    outcomes = {}
    pending = {}
    try:
        claimed = set(listening_ports())
        for index, spec in enumerate(specs):
            port = spec['port']
            if port in claimed:
                outcomes[index] = ServerError('TCP port %d is already in use on this host' % port, port_in_use=True)
                continue
            claimed.add(port)
            try:
                pending[index] = _launch(spec)
            except ServerError as exc:
                outcomes[index] = exc
        while pending:
            listening = listening_ports()
            now = time.time()
            for index, launch in list(pending.items()):
                outcome = _readiness(launch, listening, now)
                if outcome is not None:
                    outcomes[index] = outcome
                    del pending[index]
            if pending:
                time.sleep(READY_POLL)
    except BaseException:
        # Nobody will ever stop what this batch started: stop it now.
        for launch in pending.values():
            _discard(launch['proc'].pid, launch['started']['start_time'], launch['folder'])
        for outcome in outcomes.values():
            if isinstance(outcome, dict):
                _discard(outcome['pid'], outcome['start_time'], os.path.dirname(outcome['log_path']))
        raise
    return [outcomes[index] for index in range(len(specs))]


def _discard(pid, start_time, folder):
    """Stop a server of ours and remove its private folder (its watchdog exits once the group is gone)."""
    stop_group(pid, start_time)
    shutil.rmtree(folder, ignore_errors=True)


def _launch(spec):
    """Start one server of start_servers' ``spec`` and its watchdog; returns what _readiness needs.  Raises ServerError."""
    argv = spec['argv']
    deadline = min(float(spec['deadline']), MAX_DEADLINE)
    try:
        folder = tempfile.mkdtemp(prefix='%s%s-' % (DIR_PREFIX, spec.get('name') or 'server'), dir=spec['log_dir'])
    except OSError as exc:
        raise ServerError('cannot make the server\'s log folder in %s: %s' % (spec['log_dir'], exc))
    log_path = os.path.join(folder, LOG_NAME)
    full_env = dict(os.environ)
    full_env.update(C_LOCALE)
    if spec.get('env'):
        full_env.update(spec['env'])
    try:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
        try:
            # Not run_command: the server is detached and outlives the module, which returns once it listens.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=subprocess.STDOUT,  # pylint: disable=ansible-bad-function
                                    env=full_env, close_fds=True, start_new_session=True)
        finally:
            os.close(log_fd)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ServerError('cannot start %s: %s' % (argv[0], exc))
    started = process_identity(proc.pid)
    if started is None:
        proc.wait()
        output = read_log(log_path)
        shutil.rmtree(folder, ignore_errors=True)
        raise ServerError('server exited with rc=%s at once: %s' % (proc.returncode, output[-500:].strip()), output=output)
    launch = {'proc': proc, 'started': started, 'folder': folder, 'log_path': log_path, 'argv': list(argv),
              'port': spec['port'], 'deadline': deadline, 'deadline_at': time.time() + deadline,
              'ready_text': spec.get('ready_text'), 'ready_timeout': float(spec.get('ready_timeout', 15.0))}
    launch['ready_by'] = time.time() + launch['ready_timeout']
    try:
        launch['watchdog'] = _start_watchdog(proc.pid, started['start_time'], launch['deadline_at'], spec.get('grace', GRACE))
    except ServerError:
        _discard(proc.pid, started['start_time'], folder)
        raise
    return launch


def _readiness(launch, listening, now):
    """start_server's dict once the server of ``launch`` is ready, a ServerError once it cannot be, else None."""
    proc, started, folder, log_path, port = launch['proc'], launch['started'], launch['folder'], launch['log_path'], launch['port']
    ready_text = launch['ready_text']
    if proc.poll() is not None:
        output = read_log(log_path)
        _discard(proc.pid, started['start_time'], folder)
        return ServerError('server exited with rc=%s before it was ready on port %d: %s'
                           % (proc.returncode, port, output[-500:].strip()), output=output)
    if (ready_text in read_log(log_path)) if ready_text else (port in listening):
        # Read after readiness: by now the child has exec'd, so /proc/PID/exe is the server, not our interpreter.
        identity = process_identity(proc.pid) or started
        info = {'pid': proc.pid, 'pgid': proc.pid, 'start_time': identity['start_time'], 'exe': identity['exe'],
                'log_path': log_path, 'port': port, 'argv': launch['argv'], 'deadline_s': int(launch['deadline']),
                'deadline_at': int(launch['deadline_at'])}
        try:
            _write_excl(os.path.join(folder, IDENTITY_NAME), json.dumps(dict(info, watchdog=launch['watchdog']), sort_keys=True).encode('utf-8'))
        except OSError as exc:
            # Without server.json no stop could prove the server is ours: it must not outlive this call.
            _discard(proc.pid, started['start_time'], folder)
            return ServerError('cannot record server pid %d in %s: %s' % (proc.pid, folder, exc))
        return info
    if now >= launch['ready_by']:
        stop_group(proc.pid, started['start_time'])
        output = read_log(log_path)   # after the stop: all it printed
        shutil.rmtree(folder, ignore_errors=True)
        waited_for = ('print %r' % ready_text) if ready_text else ('listen on port %d' % port)
        return ServerError('server did not %s within %.0f s: %s' % (waited_for, launch['ready_timeout'], output[-500:].strip()),
                           output=output)
    return None


def stop_group(pid, start_time, grace=GRACE):
    """Stop our server ``pid`` (started at ``start_time``) and its whole group.  Returns True when all of it is gone.

    The group is signalled only while its leader is still ours, or when the leader is gone but members
    remain (their group id pins the pid, so it cannot belong to anyone else).  A leader that is alive
    after its group vanished is signalled directly; it is never "stopped" until it is gone.
    """
    def remaining():
        return is_ours(pid, start_time) or bool(group_members(pid))

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        if not remaining():
            return True
        try:
            os.killpg(pid, sig)
        except OSError:
            pass
        if is_ours(pid, start_time):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        end = time.time() + wait
        while time.time() < end and remaining():
            time.sleep(0.05)
    return not remaining()


def _remove_private_dir(folder):
    for name in (LOG_NAME, IDENTITY_NAME):
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    try:
        os.rmdir(folder)
        return True
    except OSError:
        return False


def stop_server(pid, start_time=None, exe=None, log_path=None, wait_exit=0.0, grace=GRACE):
    """Stop a server started by start_server; never raises.

    ``start_time`` and ``exe`` identify it (when not given they are read from the server.json next to
    ``log_path``).  Returns {state, stopped, was_running, signalled, output, log_read, log_problem}:
    state is ``exited`` (gone by itself), ``pid_reused`` (the pid is someone else's now: not signalled),
    ``stopped`` (we stopped it), ``still_running`` (alive after SIGKILL) or ``unverified`` (nothing
    tells who it is: not signalled).  ``stopped`` is true unless the state is still_running or unverified.
    The log is returned (and the private directory removed) only when it is this server's.
    """
    folder = private_dir(log_path) if log_path else None
    identity = read_identity(folder) if folder else None
    log_problem = None
    if log_path and folder is None:
        log_problem = 'log_path %s is not a server log this collection created (a server.log in a private netval-* directory)' % log_path
    elif identity is not None and (identity.get('pid') != pid or (start_time is not None and identity.get('start_time') != int(start_time))):
        log_problem = 'log_path %s belongs to another server (pid %s), not to pid %d' % (log_path, identity.get('pid'), pid)
        identity = None
        folder = None
    elif folder is not None and identity is None:
        log_problem = 'log_path %s has no readable server.json' % log_path
        folder = None
    if start_time is None and identity is not None:
        start_time = identity.get('start_time')
    if exe is None and identity is not None:
        exe = identity.get('exe')
    outcome = {'state': None, 'stopped': True, 'was_running': False, 'signalled': False, 'output': '', 'log_read': False,
               'log_problem': log_problem}
    if start_time is None:
        outcome.update(state='unverified' if pid_alive(pid) else 'exited', stopped=not pid_alive(pid))
    else:
        start_time = int(start_time)
        current = process_identity(pid)
        ours = current is not None and current['start_time'] == start_time and (exe is None or current['exe'] == exe)
        outcome['was_running'] = ours
        end = time.time() + wait_exit
        while ours and time.time() < end and is_ours(pid, start_time):
            time.sleep(0.1)
        if current is not None and not ours:
            outcome['state'] = 'pid_reused'
        elif is_ours(pid, start_time) or group_members(pid):
            outcome['signalled'] = True
            gone = stop_group(pid, start_time, grace=grace)
            outcome.update(state='stopped' if gone else 'still_running', stopped=gone)
        else:
            outcome['state'] = 'exited'
    if identity is not None:
        watchdog = identity.get('watchdog') or {}
        if watchdog.get('pid') and watchdog.get('start_time') is not None and is_ours(watchdog['pid'], watchdog['start_time']):
            try:
                os.kill(watchdog['pid'], signal.SIGKILL)
            except OSError:
                pass
    if folder is not None and outcome['stopped']:
        outcome['output'] = read_log(os.path.join(folder, LOG_NAME))
        outcome['log_read'] = True
        _remove_private_dir(folder)
    return outcome
