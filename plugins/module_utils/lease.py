# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exclusive use of known-good peers: one lease file per peer on the controller.

A known-good peer's HCAs carry one node's tests at a time; two nodes measured
against one peer at once each see part of its bandwidth.  A node takes a
lease on a peer before its peer tests and gives it back after, whatever
happened.  A lease is a file created with O_EXCL (atomic on a local file
system) holding who took it: the node, the run, and the controller process
that runs the play (pid plus its start time, so a recycled pid is never taken
for a live holder).  A lease whose holder process is gone, or whose expiry
has passed, is stale and is taken over.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json
import os
import re
import time

_SAFE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,127}')


class LeaseError(Exception):
    """The lease folder or a lease file cannot be used; the message says which and why."""


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
    """(pid, start time) of the outermost ancestor running ``name``, else of our parent: the holder a lease records.

    The outermost one: Ansible's per-task worker processes are forks of the playbook process and carry its command
    line, but they end with their task, while the lease must live as long as the run.  A worker whose playbook process
    was killed has init (pid 1) as its parent: a lease held by init would never go stale, so that is refused.
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


def _path(folder, peer):
    if not isinstance(peer, str) or not _SAFE.fullmatch(peer):
        raise LeaseError('peer name %r cannot name a lease file (letters, digits, ".", "_" and "-" only)' % (peer,))
    return os.path.join(folder, '%s.lease' % peer)


def read(folder, peer):
    """The lease on ``peer`` as a dict, or None when there is none."""
    path = _path(folder, peer)
    try:
        with open(path, 'r') as handle:
            return json.load(handle)
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise LeaseError('cannot read the lease %s: %s' % (path, exc))
    except ValueError:
        # A lease being written, or left half-written by a killed process: treat it as held, it will expire.
        return {'holder': None, 'expires': os.path.getmtime(path) + 60}


def stale(lease, now=None, proc='/proc'):
    """Whether a lease no longer protects anyone: expired, or its holder process is gone (pid and start time)."""
    now = time.time() if now is None else now
    if lease is None:
        return True
    if lease.get('expires') is not None and now > float(lease['expires']):
        return True
    pid, started = lease.get('controller_pid'), lease.get('controller_start')
    if pid is not None and started is not None and process_start_time(pid, proc) != started:
        return True
    return False


def try_acquire(folder, peer, holder, ttl, now=None, proc='/proc'):
    """Take the lease on ``peer`` for ``holder`` ({node, run}) when it is free or stale.  Returns the lease or None."""
    now = time.time() if now is None else now
    path = _path(folder, peer)
    current = read(folder, peer)
    if current is not None:
        if current.get('node') == holder.get('node') and current.get('run') == holder.get('run'):
            return current
        if not stale(current, now, proc):
            return None
        # Take over a stale lease: move it aside atomically, so two takers cannot both remove it.
        aside = '%s.stale.%d.%d' % (path, os.getpid(), int(now * 1000))
        try:
            os.rename(path, aside)
        except OSError:
            return None
        os.unlink(aside)
    pid, started = controller_process(proc)
    lease = dict(holder, peer=peer, acquired=now, expires=now + float(ttl), controller_pid=pid, controller_start=started)
    return lease if _create_once(path, lease, 'create the lease %s' % path) else None


def _suspect_dir(folder, peer, run):
    _path(folder, peer)
    if not isinstance(run, str) or not _SAFE.fullmatch(run):
        raise LeaseError('run %r cannot name a folder (letters, digits, ".", "_" and "-" only)' % (run,))
    return os.path.join(folder, 'suspects', run, peer)


def suspect(folder, peer, run, node, figures):
    """Record that ``node`` failed against ``peer`` and passed against another in ``run`` (once per node; atomic)."""
    target = _suspect_dir(folder, peer, run)
    if not isinstance(node, str) or not _SAFE.fullmatch(node):
        raise LeaseError('node %r cannot name a file' % (node,))
    _create_once(os.path.join(target, '%s.json' % node), {'node': node, 'peer': peer, 'run': run, 'figures': figures},
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
    _path(folder, peer)
    if not isinstance(run, str) or not _SAFE.fullmatch(run):
        raise LeaseError('run %r cannot name a folder (letters, digits, ".", "_" and "-" only)' % (run,))
    return os.path.join(folder, 'lost', run, '%s.json' % peer)


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


def _promoted_dir(folder, run):
    if not isinstance(run, str) or not _SAFE.fullmatch(run):
        raise LeaseError('run %r cannot name a folder (letters, digits, ".", "_" and "-" only)' % (run,))
    return os.path.join(folder, 'promoted', run)


def promote(folder, run, node, validated_by):
    """Record that ``node``, accepted in ``run`` with every test healthy against ``validated_by``, may serve the run's
    later nodes as a peer (netval_promote_accepted).  The first record stands (atomic, O_EXCL); returns it."""
    if not isinstance(node, str) or not _SAFE.fullmatch(node):
        raise LeaseError('node %r cannot name a file' % (node,))
    path = os.path.join(_promoted_dir(folder, run), '%s.json' % node)
    record = {'node': node, 'run': run, 'validated_by': validated_by, 'at': time.time()}
    if _create_once(path, record, 'record that %s may serve as a peer' % node, make_folder=True):
        return record
    return dict((r['node'], r) for r in promoted(folder, run)).get(node, record)


def promoted(folder, run):
    """The nodes promoted to peers in ``run`` (see promote): their records, in the order they were promoted."""
    if not run:
        return []
    try:
        names = sorted(os.listdir(_promoted_dir(folder, run)))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith('.json'):
            continue
        try:
            with open(os.path.join(_promoted_dir(folder, run), name), 'r') as handle:
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


def acquire(folder, peers, holder, ttl, wait, poll=0.5, proc='/proc', clock=time.time, sleep=time.sleep, suspect_limit=0,
            grow=False):
    """The first of ``peers`` (in preference order) whose lease ``holder`` gets, waiting up to ``wait`` seconds.

    A peer one of whose HCAs ``suspect_limit`` or more nodes of the holder's run failed on (left_pool: never the last peer
    there), or that went away mid-run (mark_lost), has left the pool and is never taken.  With ``grow`` the pool also holds
    the nodes the run promotes while the holder waits (pool).  Returns (lease, waited_seconds); lease is None when every peer
    stayed busy for the whole wait, or all left the pool.
    """
    if not os.path.isdir(folder):
        try:
            os.makedirs(folder, 0o755)
        except OSError as exc:
            if not os.path.isdir(folder):
                raise LeaseError('cannot create the lease folder %s: %s' % (folder, exc))
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
            lease = try_acquire(folder, peer, holder, ttl, clock(), proc)
            if lease is not None:
                return lease, clock() - started
        if clock() - started >= wait:
            return None, clock() - started
        sleep(poll)


def release(folder, peer, holder):
    """Give back the lease on ``peer`` if ``holder`` holds it.  Returns True when a lease was removed."""
    current = read(folder, peer)
    if current is None or current.get('node') != holder.get('node') or current.get('run') != holder.get('run'):
        return False
    try:
        os.unlink(_path(folder, peer))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise LeaseError('cannot remove the lease on %s: %s' % (peer, exc))
    return True
