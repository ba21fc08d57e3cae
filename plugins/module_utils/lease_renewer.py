# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The renewer of a run's peer leases: the run holds its leases for as long as it lives, and not a moment longer.

One process per run on its controller, started by the first lease the run takes (``ensure``, from the peer_lease
action) and detached from it.  Every ``ttl / 4`` seconds it moves the deadline of every lease the run holds, in the lease
folder or the shared backend, ``ttl`` seconds on; it stops when the run's ansible-playbook process is gone (a crash, a
kill, the end of an AWX job's container), after which the run's leases lapse within ``ttl`` seconds and other runs take
them over.  Only one renewer per run and lease folder runs at a time: it holds ``<lease folder>/renewers/<run>.lock``.

    python3 -m ansible_collections.gpufleet.netval.plugins.module_utils.lease_renewer \
        --folder F --backend B --run RUN --ttl S --controller-pid PID --controller-start TICKS

No Ansible import; ``main`` is what the detached process runs (the collection's parent folder on its PYTHONPATH).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import fcntl
import os
import subprocess
import sys
import time

from ansible_collections.gpufleet.netval.plugins.module_utils import lease

# The renewals a lease gets within its ttl: three may be missed (a controller under load) before it lapses.
RENEWALS_PER_TTL = 4


def lock_path(folder, run):
    return os.path.join(folder, 'renewers', '%s.lock' % lease.check_name('run', run))


def _try_lock(path):
    """An open file flock'ed exclusively without waiting, or None when another process holds it."""
    os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
    handle = open(path, 'a')
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (IOError, OSError):
        handle.close()
        return None
    return handle


def running(folder, run):
    """Whether a renewer holds the run's lock now."""
    handle = _try_lock(lock_path(folder, run))
    if handle is None:
        return True
    handle.close()
    return False


def collections_parent():
    """The folder that holds ``ansible_collections``, as this file was imported from it (an installed collection or
    a checkout linked into a collections path), for the renewer's PYTHONPATH."""
    here = os.path.abspath(__file__)
    for _level in range(6):
        here = os.path.dirname(here)
    return here


def ensure(folder, backend, run, ttl, controller=None):
    """Start the run's renewer unless one runs; returns its pid, or None when one was running already.

    ``controller``: (pid, start time) of the run's ansible-playbook (lease.controller_process by default).
    """
    if running(folder, run):
        return None
    pid, started = controller or lease.controller_process()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([collections_parent()] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    argv = [sys.executable, '-m', __name__, '--folder', folder, '--backend', backend or '', '--run', run,
            '--ttl', str(float(ttl)), '--controller-pid', str(pid), '--controller-start', str(-1 if started is None else started)]
    # A detached process of our own with an argument list (no shell): it must outlive the worker that starts it.
    with open(os.devnull, 'r+b') as null:
        child = subprocess.Popen(  # pylint: disable=consider-using-with,ansible-bad-function
            argv, stdin=null, stdout=null, stderr=null, close_fds=True, cwd='/', env=env, start_new_session=True)
    return child.pid


def renew_all(leases, run, ttl):
    """Renew every lease ``run`` holds in ``leases``; the peers renewed."""
    renewed = []
    for held in leases.held_by(run):
        holder = {'node': held.get('node'), 'run': run}
        if leases.renew(held['peer'], holder, ttl):
            renewed.append(held['peer'])
    return renewed


def renew_while(leases, run, ttl, alive, clock=time.time, sleep=time.sleep, look_s=1.0):
    """Renew the run's leases every ttl / RENEWALS_PER_TTL seconds while ``alive()``, looked at every ``look_s`` seconds
    (the renewer ends soon after its run); a backend that fails once is tried again next time (the leases lapse only when
    it keeps failing for their ttl)."""
    period = float(ttl) / RENEWALS_PER_TTL
    due = clock()
    while alive():
        if clock() >= due:
            due = clock() + period
            try:
                renew_all(leases, run, ttl)
            except lease.LeaseError as exc:
                sys.stderr.write('lease renewer of %s: %s\n' % (run, exc))
        sleep(max(0.05, min(look_s, due - clock())))


def controller_alive(pid, started, proc='/proc'):
    """Whether the run's ansible-playbook (pid and start time; -1: any start time) still runs."""
    now = lease.process_start_time(pid, proc)
    return now is not None and (started < 0 or now == started)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Renew a netval run's peer leases while its ansible-playbook lives.")
    parser.add_argument('--folder', required=True)
    parser.add_argument('--backend', default='')
    parser.add_argument('--run', required=True)
    parser.add_argument('--ttl', type=float, required=True)
    parser.add_argument('--controller-pid', type=int, required=True)
    parser.add_argument('--controller-start', type=int, default=-1, help='its start time in clock ticks; -1: any')
    args = parser.parse_args(argv)
    handle = _try_lock(lock_path(args.folder, args.run))
    if handle is None:
        return 0
    leases = lease.leases_for(args.folder, args.backend)
    try:
        renew_while(leases, args.run, args.ttl, lambda: controller_alive(args.controller_pid, args.controller_start))
    finally:
        leases.close()
        handle.close()
    return 0


if __name__ == '__main__':
    # The renewer is a process of its own on the controller, not a module: it has no exit_json.
    sys.exit(main())  # pylint: disable=ansible-bad-function
