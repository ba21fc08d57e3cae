# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop the server half of a two-ended test (perftest, iperf3).

The server runs detached in its own session so the module can return while
it listens; its output goes to a log file that ``stop_server`` reads back.
``stop_server`` kills the whole process group and confirms it is gone, so
nothing is left running after success, failure or timeout.  No Ansible
import: callers pass argv lists and get plain dicts back.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import os
import signal
import socket
import subprocess
import time

from ansible_collections.gpufleet.netval.plugins.module_utils.runner import C_LOCALE


class ServerError(Exception):
    """A server could not be started or stopped; the message says why."""


def port_in_use(port, host='0.0.0.0'):
    """True when something already listens on TCP ``port`` (the bind test is what the server will hit)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind((host, port))
    except socket.error as exc:
        return exc.errno == errno.EADDRINUSE
    finally:
        probe.close()
    return False


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


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    # A zombie is dead for our purposes.
    try:
        with open('/proc/%d/stat' % pid, 'r') as handle:
            return handle.read().split(')')[-1].split()[0] != 'Z'
    except (IOError, OSError):
        return False


def start_server(argv, log_path, port, ready_timeout=15.0, env=None, ready_text=None):
    """Start ``argv`` detached, wait until it listens on TCP ``port``.

    A server that listens elsewhere (perftest with rdma_cm uses the RDMA CM
    port space) is ready when its log shows ``ready_text`` instead.
    Returns {pid, pgid, log_path, port, argv}.  Raises ServerError when the
    port is already taken, the process exits early, or it never gets ready.
    """
    if port in listening_ports():
        raise ServerError('TCP port %d is already in use on this host' % port)
    full_env = dict(os.environ)
    full_env.update(C_LOCALE)
    if env:
        full_env.update(env)
    log = open(log_path, 'ab')
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=full_env, close_fds=True, start_new_session=True)
    except OSError as exc:
        raise ServerError('cannot start %s: %s' % (argv[0], exc))
    finally:
        log.close()
    deadline = time.time() + ready_timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise ServerError('server exited with rc=%s before listening on port %d: %s'
                              % (proc.returncode, port, read_log(log_path)[-500:].strip()))
        ready = (ready_text in read_log(log_path)) if ready_text else (port in listening_ports())
        if ready:
            return {'pid': proc.pid, 'pgid': proc.pid, 'log_path': log_path, 'port': port, 'argv': list(argv)}
        time.sleep(0.1)
    stop_group(proc.pid)
    waited_for = ('print %r' % ready_text) if ready_text else ('listen on port %d' % port)
    raise ServerError('server did not %s within %.0f s: %s' % (waited_for, ready_timeout, read_log(log_path)[-500:].strip()))


def read_log(log_path):
    try:
        with open(log_path, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return ''


def stop_group(pgid, grace=3.0):
    """SIGTERM the process group, SIGKILL what is left after ``grace`` seconds.  Returns True when it is gone."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pgid, sig)
        except OSError as exc:
            if exc.errno == errno.ESRCH:
                return True
            raise ServerError('cannot signal process group %d: %s' % (pgid, exc))
        deadline = time.time() + wait
        while time.time() < deadline:
            if not pid_alive(pgid) and not _group_members(pgid):
                return True
            time.sleep(0.05)
    return not _group_members(pgid)


def _group_members(pgid):
    members = []
    for name in os.listdir('/proc'):
        if not name.isdecimal():
            continue
        try:
            with open('/proc/%s/stat' % name, 'r') as handle:
                fields = handle.read().split(')')[-1].split()
        except (IOError, OSError):
            continue
        # fields[0] is state, fields[2] is pgrp
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != 'Z':
            members.append(int(name))
    return members


def stop_server(pid, log_path=None, wait_exit=0.0):
    """Stop a server started by start_server.  Returns {stopped, was_running, output}.

    ``wait_exit`` gives a server that exits by itself after one test (``iperf3 -1``,
    perftest servers) that long to finish writing its report before it is killed.
    """
    was_running = pid_alive(pid)
    deadline = time.time() + wait_exit
    while was_running and time.time() < deadline and pid_alive(pid):
        time.sleep(0.1)
    stopped = stop_group(pid)
    output = read_log(log_path) if log_path else ''
    return {'stopped': stopped, 'was_running': was_running, 'output': output}
