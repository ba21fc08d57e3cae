# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exclusive use of known-good peers: one lease per peer, held by a run and renewed while it tests.

A known-good peer's HCAs carry one node's tests at a time; two nodes measured against one peer at once each see part of
its bandwidth.  A node takes a lease on a peer before its peer tests and gives it back after, whatever happened.

A lease names the peer, the node and the run that holds it (``run``: an id unique to one ansible-playbook run) and a
renewal deadline.  While the run lives, its renewer (lease_renewer.py, one process per run on its controller) moves
the deadline of every lease the run holds; a lease whose deadline has passed has lapsed and is taken over, a live one
never.  Nothing of the holder is a process id, so a lease means the same on one controller, on a volume that AWX job
containers share (each with its own PID namespace) and in a shared Redis.

Where the leases live (one interface: read, take, renew, give_back, held_by):

* ``FolderLeases``, the embedded default: one JSON file per peer in the lease folder, every change made under that
  peer's ``flock`` and written by rename (a reader never sees half a lease); deadlines on this machine's clock;
* ``lease_redis.RedisLeases``: one key per peer in a Redis every controller reaches, set only if absent and expiring
  at the deadline on the server's clock, compared and changed in one server-side script (``backend`` redis://...).

The records of a run (suspects, peers lost mid-run, promoted nodes) stay in the lease folder whatever the backend: a
run lives on one controller.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fcntl
import json
import os
import re
import time

_SAFE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,127}')
# A lease file that cannot be read as JSON is being written or was left half-written by a killed writer (the folder
# backend writes by rename, so only another tool can leave one): it counts as held until this long after its mtime.
_UNREADABLE_HOLD_S = 60.0


class LeaseError(Exception):
    """The lease folder, a lease or the shared backend cannot be used; the message says which and why."""


def check_name(what, name):
    """``name`` (a peer, node or run) as it may name a file or a key, or LeaseError."""
    if not isinstance(name, str) or not _SAFE.fullmatch(name):
        raise LeaseError('%s %r cannot name a lease (letters, digits, ".", "_" and "-" only)' % (what, name))
    return name


def same_holder(lease, holder):
    """Whether ``lease`` is held by ``holder`` ({node, run})."""
    return bool(lease) and lease.get('node') == holder.get('node') and lease.get('run') == holder.get('run')


def lapsed(lease, now=None, proc='/proc'):
    """Whether ``lease`` no longer protects anyone: none, or its renewal deadline has passed (a lease an earlier version
    wrote has its ``expires`` instead, and lapses as that version decided, also when its playbook process - pid and start
    time on this controller - is gone: a killed run's lease would otherwise hold its peer for two hours after an upgrade;
    one with neither was not written by a holder and protects no one)."""
    if lease is None:
        return True
    if 'deadline' not in lease and lease.get('controller_pid') is not None and lease.get('controller_start') is not None:
        if process_start_time(lease['controller_pid'], proc) != lease['controller_start']:
            return True
    deadline = lease.get('deadline', lease.get('expires'))
    return deadline is None or (time.time() if now is None else now) > float(deadline)


def new_lease(peer, holder, ttl, now, acquired=None):
    """The lease record ``holder`` writes on ``peer``: who, since when, and until when without a renewal."""
    return dict(holder, peer=peer, acquired=now if acquired is None else acquired, renewed=now, ttl=float(ttl),
                deadline=now + float(ttl))


def _create_once(path, record, what, make_folder=False):
    """Write ``record`` as JSON to ``path`` only if no file is there (O_EXCL, so one of two writers wins), synced to disk.

    Returns True when this call wrote it, False when the file existed; ``what`` names it in the LeaseError of any other failure.
    """
    try:
        if make_folder:
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return False
        raise LeaseError('cannot %s: %s' % (what, exc))
    with os.fdopen(fd, 'w') as handle:
        json.dump(record, handle)
        handle.flush()
        os.fsync(handle.fileno())
    return True


def make_folder(folder):
    if not os.path.isdir(folder):
        try:
            os.makedirs(folder, 0o755)
        except OSError as exc:
            if not os.path.isdir(folder):
                raise LeaseError('cannot create the lease folder %s: %s' % (folder, exc))


class FolderLeases(object):
    """The leases as one file per peer in ``folder`` (``<peer>.lease``), each change under ``<peer>.lock``'s flock.

    The folder may be shared by controllers (a volume AWX job containers mount) when its file system honours flock
    between them (local, NFSv4, CephFS) and their clocks agree to well within a lease's ttl.
    """

    kind = 'folder'

    def __init__(self, folder):
        self.folder = folder

    def describe(self):
        return 'the lease folder %s' % self.folder

    def _path(self, peer, suffix='.lease'):
        return os.path.join(self.folder, '%s%s' % (check_name('peer name', peer), suffix))

    def _locked(self, peer):
        """An open lock file of ``peer``, flock'ed exclusively; close it to unlock."""
        make_folder(self.folder)
        path = self._path(peer, '.lock')
        try:
            handle = open(path, 'a')
            fcntl.flock(handle, fcntl.LOCK_EX)
        except (IOError, OSError) as exc:
            raise LeaseError('cannot lock %s: %s' % (path, exc))
        return handle

    def read(self, peer, now=None):
        """The lease on ``peer`` as a dict, or None when there is none."""
        path = self._path(peer)
        try:
            with open(path, 'r') as handle:
                return json.load(handle)
        except (IOError, OSError) as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise LeaseError('cannot read the lease %s: %s' % (path, exc))
        except ValueError:
            try:
                return {'holder': None, 'deadline': os.path.getmtime(path) + _UNREADABLE_HOLD_S}
            except OSError:
                return None

    def _write(self, peer, record):
        path = self._path(peer)
        temporary = '%s.%d.tmp' % (path, os.getpid())
        try:
            with open(temporary, 'w') as handle:
                json.dump(record, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(temporary, path)
        except (IOError, OSError) as exc:
            raise LeaseError('cannot write the lease %s: %s' % (path, exc))

    def take(self, peer, holder, ttl, now=None):
        """The lease on ``peer`` for ``holder`` when it is free, lapsed or already ``holder``'s (then renewed); else None."""
        now = time.time() if now is None else now
        lock = self._locked(peer)
        try:
            current = self.read(peer, now)
            mine = same_holder(current, holder)
            if current is not None and not mine and not lapsed(current, now):
                return None
            lease = new_lease(peer, holder, ttl, now, current.get('acquired') if mine else None)
            self._write(peer, lease)
            return lease
        finally:
            lock.close()

    def renew(self, peer, holder, ttl, now=None):
        """Move the deadline of ``holder``'s lease on ``peer`` to ``ttl`` seconds from now; False when it is not (or no
        longer) ``holder``'s."""
        now = time.time() if now is None else now
        lock = self._locked(peer)
        try:
            current = self.read(peer, now)
            if not same_holder(current, holder):
                return False
            self._write(peer, dict(current, renewed=now, ttl=float(ttl), deadline=now + float(ttl)))
            return True
        finally:
            lock.close()

    def give_back(self, peer, holder):
        """Remove ``holder``'s lease on ``peer``; False when it is not ``holder``'s."""
        lock = self._locked(peer)
        try:
            if not same_holder(self.read(peer), holder):
                return False
            try:
                os.unlink(self._path(peer))
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    return False
                raise LeaseError('cannot remove the lease on %s: %s' % (peer, exc))
            return True
        finally:
            lock.close()

    def held_by(self, run):
        """The leases ``run`` holds now."""
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return []
        found = []
        for name in names:
            if name.endswith('.lease') and _SAFE.fullmatch(name[:-len('.lease')]):
                lease = self.read(name[:-len('.lease')])
                if lease and lease.get('run') == run:
                    found.append(lease)
        return found

    def close(self):
        """Nothing to close (the Redis backend keeps a connection)."""


def leases_for(folder, backend=''):
    """Where the leases live: ``backend`` '' for the lease folder, ``redis://...`` or ``rediss://...`` for a shared Redis."""
    if not backend:
        return FolderLeases(folder)
    from ansible_collections.gpufleet.netval.plugins.module_utils import lease_redis
    return lease_redis.RedisLeases(backend)


def process_start_time(pid, proc='/proc'):
    """Field 22 of /proc/PID/stat (clock ticks since boot), or None when the process does not exist."""
    try:
        with open(os.path.join(proc, str(pid), 'stat'), 'r') as handle:
            stat = handle.read()
    except (IOError, OSError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    rest = stat[stat.rfind(')') + 2:].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def _runs(proc, pid, name):
    """Whether process ``pid``'s command line names ``name`` (in its first two words)."""
    try:
        with open(os.path.join(proc, str(pid), 'cmdline'), 'rb') as handle:
            return any(name.encode() in part for part in handle.read().split(b'\0')[:2])
    except (IOError, OSError):
        return False


def controller_process(proc='/proc', name='ansible-playbook'):
    """(pid, start time) of the outermost ancestor running ``name``, else of our parent: the process whose life the
    run's renewer follows (it stops renewing when the run's ansible-playbook is gone, and the leases lapse).

    The outermost one: Ansible's per-task worker processes are forks of the playbook process and carry its command
    line, but they end with their task, while the renewals must go on as long as the run.  A worker whose playbook process
    was killed has init (pid 1) as its parent: a renewer that followed init would renew for ever, so that is refused.
    """
    pid = os.getppid()
    if pid == 1 and not _runs(proc, 1, name):
        raise LeaseError('the playbook process that started this task is gone (this process now belongs to pid 1): '
                         'no lease is taken for a run that has ended')
    found = (pid, process_start_time(pid, proc))
    for _depth in range(64):
        try:
            with open(os.path.join(proc, str(pid), 'cmdline'), 'rb') as handle:
                argv = handle.read().split(b'\0')
            with open(os.path.join(proc, str(pid), 'stat'), 'r') as handle:
                stat = handle.read()
        except (IOError, OSError):
            break
        if any(name.encode() in part for part in argv[:2]):
            found = (pid, process_start_time(pid, proc))
        parent = stat[stat.rfind(')') + 2:].split()[1]
        if not parent.isdigit() or int(parent) <= 1:
            break
        pid = int(parent)
    return found


def _run_dir(folder, kind, run):
    if not isinstance(run, str) or not _SAFE.fullmatch(run):
        raise LeaseError('run %r cannot name a folder (letters, digits, ".", "_" and "-" only)' % (run,))
    return os.path.join(folder, kind, run)


def _suspect_dir(folder, peer, run):
    return os.path.join(_run_dir(folder, 'suspects', run), check_name('peer name', peer))


def suspect(folder, peer, run, node, figures):
    """Record that ``node`` failed against ``peer`` and passed against another in ``run`` (once per node; atomic)."""
    target = _suspect_dir(folder, peer, run)
    _create_once(os.path.join(target, '%s.json' % check_name('node', node)), {'node': node, 'peer': peer, 'run': run, 'figures': figures},
                 'record the suspicion of %s' % peer, make_folder=True)
    return suspicions(folder, peer, run)


def suspicions(folder, peer, run):
    """The nodes that suspect ``peer`` in ``run``, sorted."""
    try:
        names = os.listdir(_suspect_dir(folder, peer, run))
    except OSError:
        return []
    return sorted(name[:-5] for name in names if name.endswith('.json'))


# The key of a suspicion's figures that name no peer HCA (iperf3, ping, every NIC at once): the peer's path as a whole.
WHOLE_PEER = 'the peer\'s link'


def suspected_hcas(folder, peer, run):
    """{peer HCA: [nodes that failed on it and passed on another peer]} from the suspicion records of ``peer`` in ``run``."""
    found = {}
    for node in suspicions(folder, peer, run):
        try:
            with open(os.path.join(_suspect_dir(folder, peer, run), '%s.json' % node), encoding='utf-8') as handle:
                record = json.load(handle)
        except (IOError, OSError, ValueError):
            record = {}
        figures = record.get('figures') if isinstance(record, dict) and isinstance(record.get('figures'), list) else []
        for hca in sorted(set(str(f.get('peer_device') or WHOLE_PEER) for f in figures if isinstance(f, dict))) or [WHOLE_PEER]:
            found.setdefault(hca, [])
            if node not in found[hca]:
                found[hca].append(node)
    return found


def excluded(folder, peers, run, limit):
    """{peer: [nodes]} for the peers one of whose HCAs ``limit`` or more different nodes of ``run`` failed on and passed
    elsewhere (none when limit is 0).  Nodes that failed on different HCAs of a peer point at those nodes, not the peer."""
    if not limit or not run:
        return {}
    out = {}
    for peer in peers:
        for hca, nodes in sorted(suspected_hcas(folder, peer, run).items()):
            if len(nodes) >= limit:
                out[peer] = sorted(set(out.get(peer, [])) | set(nodes))
    return out


def left_pool(folder, peers, run, limit):
    """(suspected out, lost) of ``peers`` in ``run``: suspicion never takes the last peer still there (one that did not go
    away): with every such peer suspected, the least suspected of them (first in preference order) stays."""
    out = excluded(folder, peers, run, limit)
    gone = lost(folder, peers, run)
    standing = [peer for peer in peers if peer not in gone]
    if standing and all(peer in out for peer in standing):
        keep = min(standing, key=lambda peer: (len(out[peer]), standing.index(peer)))
        out = dict((peer, nodes) for peer, nodes in out.items() if peer != keep)
    return out, gone


def _lost_path(folder, peer, run):
    return os.path.join(_run_dir(folder, 'lost', run), '%s.json' % check_name('peer name', peer))


def mark_lost(folder, peer, run, node, step, detail):
    """Record that ``peer`` went away while ``node`` was tested on it in ``run``: it leaves the pool for the rest of the run.

    The first record stands (atomic, O_EXCL); returns the record that stands.
    """
    path = _lost_path(folder, peer, run)
    record = {'peer': peer, 'run': run, 'node': node, 'step': step, 'detail': detail, 'at': time.time()}
    if _create_once(path, record, 'record that %s went away' % peer, make_folder=True):
        return record
    return lost(folder, [peer], run).get(peer, record)


def lost(folder, peers, run):
    """{peer: record} for the ``peers`` that went away mid-run in ``run`` (see mark_lost)."""
    if not run:
        return {}
    found = {}
    for peer in peers:
        path = _lost_path(folder, peer, run)
        try:
            with open(path, 'r') as handle:
                found[peer] = json.load(handle)
        except (IOError, OSError, ValueError):
            continue
    return found


def promote(folder, run, node, validated_by):
    """Record that ``node``, accepted in ``run`` with every test healthy against ``validated_by``, may serve the run's
    later nodes as a peer (netval_promote_accepted).  The first record stands (atomic, O_EXCL); returns it."""
    path = os.path.join(_run_dir(folder, 'promoted', run), '%s.json' % check_name('node', node))
    record = {'node': node, 'run': run, 'validated_by': validated_by, 'at': time.time()}
    if _create_once(path, record, 'record that %s may serve as a peer' % node, make_folder=True):
        return record
    return dict((r['node'], r) for r in promoted(folder, run)).get(node, record)


def promoted(folder, run):
    """The nodes promoted to peers in ``run`` (see promote): their records, in the order they were promoted."""
    if not run:
        return []
    folder = _run_dir(folder, 'promoted', run)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith('.json'):
            continue
        try:
            with open(os.path.join(folder, name), 'r') as handle:
                record = json.load(handle)
        except (IOError, OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get('node') == name[:-5]:
            found.append(record)
    return sorted(found, key=lambda record: (record.get('at') or 0, record['node']))


def pool(folder, peers, holder, grow=False):
    """The peers ``holder`` may try, in preference order: ``peers``, then (``grow``) the nodes its run has promoted so
    far, never the holder itself."""
    found = list(peers)
    if grow:
        found += [r['node'] for r in promoted(folder, holder.get('run')) if r['node'] not in found and r['node'] != holder.get('node')]
    return found


def acquire(leases, folder, peers, holder, ttl, wait, poll=0.2, clock=time.time, sleep=time.sleep, suspect_limit=0, grow=False):
    """The first of ``peers`` (in preference order) whose lease ``holder`` takes in ``leases``, trying for up to ``wait``
    seconds; ``folder`` holds the run's records.

    A peer one of whose HCAs ``suspect_limit`` or more nodes of the holder's run failed on (left_pool: never the last peer
    there), or that went away mid-run (mark_lost), has left the pool and is never taken.  With ``grow`` the pool also holds
    the nodes the run promotes while the holder waits (pool).  Returns (lease, waited_seconds); lease is None when every peer
    stayed busy for the whole wait, or all left the pool.
    """
    make_folder(folder)
    started = clock()
    while True:
        candidates = pool(folder, peers, holder, grow)
        suspected, gone = left_pool(folder, candidates, holder.get('run'), suspect_limit)
        out = set(suspected) | set(gone)
        if len(out) == len(set(candidates)):
            return None, clock() - started
        for peer in candidates:
            if peer in out:
                continue
            lease = leases.take(peer, holder, ttl, clock())
            if lease is not None:
                return lease, clock() - started
        if clock() - started >= wait:
            return None, clock() - started
        sleep(max(0.01, min(poll, wait - (clock() - started))))
