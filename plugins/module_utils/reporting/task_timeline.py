# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The task timeline: what every task cost on every host, and the summaries read from it.

The ``gpufleet.netval.task_timeline`` callback writes one JSON document per
``ansible-playbook`` run (``FORMAT``):

    format              "gpufleet.netval.task_timeline/1"
    playbooks           the playbook files of the run, in order
    playbook_start      epoch seconds (float) when the first playbook started
    playbook_end        epoch seconds when the run's stats were reported
    controller          pid, ansible_version, python, forks (the run's worker limit)
    peak_rss_mib        self, children, total (see the callback's documentation for what they measure)
    loop_timing         "per task": a loop task is one record, from its start to its last item's result
    records             one per (host, task) that a worker ran, in start order:
                        host, play, task (as templated for the host), task_template (as written), task_uuid,
                        role, action, start, end, duration_s, status
                        (ok / changed / failed / skipped / unreachable), ignored, loop, items, retries,
                        delegated_to (the delegated hosts' inventory names), handler

The summaries below are pure functions of that document (no Ansible import):
``task_costs`` (per task: count, total, mean), ``host_costs`` (per host: wall
time, time in test modules, overhead), ``compare_task_costs`` (before/after),
``peer_overlap_s`` (seconds a peer HCA carried two nodes' sessions at once).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import os
import tempfile

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import TESTS

FORMAT = 'gpufleet.netval.task_timeline/1'
STATUSES = ('ok', 'changed', 'failed', 'skipped', 'unreachable')
COLLECTION = 'gpufleet.netval'

# Tasks of the tier_tests role that belong to a test although their module is not a test module: the wait for
# clients a test module started in the background (async), the rails' counter snapshots that bracket the sustained
# all-NICs test (pause frames, IB port counters: preflight_info's nic and rdma reads, or nic_info), and the route
# check before the IP tests.  Outside that role nic_info and preflight_info are preflight and async_status anything.
TEST_ROLE = 'tier_tests'
TEST_ROLE_ACTIONS = ('ansible.builtin.async_status', 'async_status', COLLECTION + '.nic_info', 'nic_info', COLLECTION + '.preflight_info',
                     'preflight_info', COLLECTION + '.fabric_route', 'fabric_route')
# The peer lease: its time is queueing for a free known-good peer, reported apart from the rest of the overhead.
LEASE_ACTIONS = (COLLECTION + '.peer_lease', 'peer_lease')


class TimelineError(ValueError):
    """A document that is not a task timeline; the message says what is wrong."""


def modules_that_test():
    """The collection modules that run tier tests: the catalogue's ``module`` field, in FQCN and short form."""
    names = sorted(set(entry['module'] for entry in TESTS))
    return tuple(['%s.%s' % (COLLECTION, name) for name in names] + names)


def _role_name(role):
    return (role or '').rsplit('.', 1)[-1]


def is_test_task(record, modules=None):
    """Whether a record's time is test time: a test module, or a test's async wait / counter snapshot in tier_tests."""
    action = record.get('action') or ''
    if action in (modules if modules is not None else modules_that_test()):
        return True
    return _role_name(record.get('role')) == TEST_ROLE and action in TEST_ROLE_ACTIONS


def is_lease_task(record):
    return (record.get('action') or '') in LEASE_ACTIONS


def task_label(record):
    """How a task is named in the tables: ``role : name`` (the task alone outside a role), with the name as the playbook
    writes it (``task_template``), so that a templated name (``Start the servers of {{ batch.id }}``) is one task."""
    role = record.get('role')
    name = record.get('task_template') or record.get('task') or record.get('action') or '?'
    return '%s : %s' % (role, name) if role else name


def duration(record):
    """Seconds a record took (0 when its end is missing or before its start)."""
    start, end = record.get('start'), record.get('end')
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)):
        return 0.0
    return max(0.0, float(end) - float(start))


def check_timeline(doc):
    """Raise TimelineError unless ``doc`` is a task timeline whose records carry the fields the summaries read."""
    if not isinstance(doc, dict) or doc.get('format') != FORMAT:
        raise TimelineError('not a task timeline (format %r, expected %r)' % (doc.get('format') if isinstance(doc, dict) else None, FORMAT))
    records = doc.get('records')
    if not isinstance(records, list):
        raise TimelineError('a task timeline needs a list of records')
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise TimelineError('record %d is not a mapping' % index)
        for key in ('host', 'task', 'start', 'end', 'status'):
            if key not in record:
                raise TimelineError('record %d has no %s' % (index, key))
        for key in ('start', 'end'):
            value = record[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
                raise TimelineError('record %d: %s is not a number of seconds' % (index, key))
    return doc


def read_timeline(path):
    """The document at ``path``, checked (TimelineError for a file that is not a task timeline)."""
    with open(path, 'r') as handle:
        try:
            doc = json.load(handle)
        except ValueError as exc:
            raise TimelineError('%s is not JSON: %s' % (path, exc))
    try:
        return check_timeline(doc)
    except TimelineError as exc:
        raise TimelineError('%s: %s' % (path, exc))


def task_costs(doc):
    """Per task label: count (host-task records), total_s, mean_s, max_s; sorted by total, largest first."""
    rows = {}
    for record in check_timeline(doc)['records']:
        label = task_label(record)
        row = rows.setdefault(label, {'task': label, 'count': 0, 'total_s': 0.0, 'max_s': 0.0})
        seconds = duration(record)
        row['count'] += 1
        row['total_s'] += seconds
        row['max_s'] = max(row['max_s'], seconds)
    result = []
    for row in rows.values():
        row['mean_s'] = row['total_s'] / row['count']
        result.append(row)
    return sorted(result, key=lambda row: (-row['total_s'], row['task']))


def host_costs(doc, modules=None):
    """Per host, sorted by name: wall_s, tasks_s, test_s, lease_s, other_s, overhead_s, tasks.

    wall_s: the host's first task start to its last task end.  test_s: seconds in test tasks (``is_test_task``).
    tasks_s: seconds in all its tasks; other_s = tasks_s - test_s.  overhead_s = wall_s - test_s: everything that
    is not a test, including the time between tasks (the controller's own work, queueing for a free worker).
    lease_s: seconds in peer_lease tasks (queueing for a known-good peer), part of other_s and overhead_s.
    """
    hosts = {}
    for record in check_timeline(doc)['records']:
        row = hosts.setdefault(record['host'], {'host': record['host'], 'first': None, 'last': None, 'tasks': 0,
                                                'tasks_s': 0.0, 'test_s': 0.0, 'lease_s': 0.0})
        seconds = duration(record)
        row['tasks'] += 1
        row['tasks_s'] += seconds
        if is_test_task(record, modules):
            row['test_s'] += seconds
        elif is_lease_task(record):
            row['lease_s'] += seconds
        row['first'] = record['start'] if row['first'] is None else min(row['first'], record['start'])
        row['last'] = record['end'] if row['last'] is None else max(row['last'], record['end'])
    result = []
    for name in sorted(hosts):
        row = hosts[name]
        wall = max(0.0, float(row.pop('last')) - float(row.pop('first')))
        row['wall_s'] = wall
        row['other_s'] = row['tasks_s'] - row['test_s']
        row['overhead_s'] = wall - row['test_s']
        result.append(row)
    return result


def compare_task_costs(before, after):
    """Rows task, before_s, after_s, delta_s (after - before; a side without the task counts 0), largest change first."""
    old = dict((row['task'], row) for row in task_costs(before))
    new = dict((row['task'], row) for row in task_costs(after))
    rows = []
    for name in set(old) | set(new):
        before_s = old[name]['total_s'] if name in old else 0.0
        after_s = new[name]['total_s'] if name in new else 0.0
        rows.append({'task': name, 'before_s': before_s, 'after_s': after_s, 'delta_s': after_s - before_s,
                     'before_count': old[name]['count'] if name in old else 0,
                     'after_count': new[name]['count'] if name in new else 0})
    return sorted(rows, key=lambda row: (-abs(row['delta_s']), row['task']))


def _union_length(spans):
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(spans):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def peer_overlap_spans(intervals):
    """Per (peer, hca), the spans [(start, end)] during which it carried sessions of two or more different nodes.

    ``intervals`` is [(peer, hca, node, start, end)].  Sessions of one node that overlap each other do not count;
    sessions that only touch (one ends as the next starts) do not overlap.
    """
    by_pair = {}
    for peer, hca, node, start, end in intervals:
        if end > start:
            by_pair.setdefault((peer, hca), []).append((float(start), float(end), node))
    spans = {}
    for pair, sessions in by_pair.items():
        # Sweep the session edges in time order, ends before starts at the same instant.
        events = sorted([(start, 1, node) for start, _end, node in sessions] + [(end, 0, node) for _start, end, node in sessions],
                        key=lambda event: (event[0], event[1]))
        active = {}
        shared_since = None
        found = []
        for when, is_start, node in events:
            if is_start:
                active[node] = active.get(node, 0) + 1
            else:
                active[node] -= 1
                if not active[node]:
                    del active[node]
            if len(active) >= 2 and shared_since is None:
                shared_since = when
            elif len(active) < 2 and shared_since is not None:
                if when > shared_since:
                    found.append((shared_since, when))
                shared_since = None
        if found:
            spans[pair] = found
    return spans


def peer_overlap_s(intervals):
    """Seconds during which any (peer, hca) carried sessions of two different nodes (the union over all pairs)."""
    return _union_length([span for found in peer_overlap_spans(intervals).values() for span in found])


def hosts_in_play_peak(doc, play):
    """The most hosts that were in ``play`` at one instant: a host is in it from its first task's start there to its last
    task's end (validate.yml's tests play holds no more than forks under ansible.builtin.host_pinned).  Spans that only
    touch do not overlap."""
    spans = {}
    for record in doc['records']:
        if record.get('play') == play and record.get('end') is not None:
            first, last = spans.get(record['host'], (record['start'], record['end']))
            spans[record['host']] = (min(first, record['start']), max(last, record['end']))
    peak = inside = 0
    for _when, step in sorted([(start, 1) for start, _end in spans.values()] + [(end, -1) for _start, end in spans.values()]):
        inside += step
        peak = max(peak, inside)
    return peak


def document_candidates(path, limit=1000):
    """Where a document for ``path`` may go, in order: the path itself, then ``stem.1.ext``, ``stem.2.ext``, ..."""
    stem, ext = os.path.splitext(path)
    yield path
    for index in range(1, limit):
        yield '%s.%d%s' % (stem, index, ext)


def write_document(path, doc):
    """Write ``doc`` as JSON to ``path`` or, if that exists, to the first free ``document_candidates`` name.

    Atomic and never over an existing file: the JSON goes to a temporary file in the same folder, fsynced, then is
    hard-linked to its name (which fails if the name exists); where the file system has no hard links it is renamed
    (os.replace) onto a name that did not exist a moment before.  Returns the path written.
    """
    path = os.path.abspath(os.path.expanduser(path))
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder)
    data = json.dumps(doc, indent=1, sort_keys=False, allow_nan=False).encode('utf-8') + b'\n'
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.tmp', dir=folder)
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        for candidate in document_candidates(path):
            if os.path.lexists(candidate):
                continue
            try:
                os.link(tmp, candidate)
            except OSError:
                if os.path.lexists(candidate):
                    continue  # taken by someone else meanwhile
                os.replace(tmp, candidate)  # no hard links here
            return candidate
        raise OSError('no free name for %s (tried %s and .1 to .999 before the extension)' % (path, path))
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
