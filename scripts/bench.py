"""Fleet benchmark on the built-in lab: how close validate.yml gets to the ideal queue, and what it costs per node.

    .venv/bin/python scripts/bench.py --nodes N --peers P [--promote] [--dcgmi-seconds S] [--no-local-while-waiting]
                                      [--json-out FILE] [--project]
    .venv/bin/python scripts/bench.py --matrix [--project] [--promote] [--no-serial] [--json-out FILE]
    .venv/bin/python scripts/bench.py --analyse WORK_DIR/n16-p4 [--project]

Run as root from the repository root (``make bench NODES=16 PEERS=4 [PROMOTE=1]``, ``make bench-matrix``).  For one
(N, P) it brings the lab up (``python -m lab.netval_lab up --profile healthy-400g --nodes N --peers P --unpinned``:
no node is pinned to a peer, each takes the first free one), runs ``ansible-playbook -i inventories/lab
playbooks/validate.yml -l new_nodes`` with the gpufleet.netval.task_timeline callback on, reads the lab's per-HCA
ledgers while it runs, and computes (docs/BENCH.md has the formulas):

    wall_s               the run's wall time (the timeline's playbook_end - playbook_start)
    one_node_test_s      the median over the new nodes of each node's test time (task_timeline.host_costs test_s)
    ideal_s              ceil(N / P) x one_node_test_s
    ratio_to_ideal       wall_s / ideal_s
    overhead_per_node_s  the median over the new nodes of: the node's time inside the plays (per play, its first task
                         start to its last task end, summed over the plays) - its test time - its lease time (every
                         peer_lease task: waiting for a free peer, taking and giving it back)
    controller_peak_mib  the timeline's peak_rss_mib total
    peer_overlap_s       seconds during which any peer HCA carried sessions of two different nodes (the ledgers'
                         intervals through task_timeline.peer_overlap_s; 0 when the leases work)
    local_test_s         the median over the new nodes of the time in the tests that need no peer (dcgmi diag)
    peer_test_s          the median of the rest of each node's test time
    bound_s              max(ceil(N / P) x peer_test_s, local_test_s + peer_test_s): no schedule does better
    ratio_to_bound       wall_s / bound_s (the peer-independent tests run while a node waits for a peer)

The last line of the output is always, for the last (N, P) run:

    ratio_to_ideal=<x> overhead_per_node_s=<y> controller_peak_mib=<z> peer_overlap_s=<w>

--matrix runs N in (1, 4, 16) x P in (1, 2, 4), P <= N, prints a table and, once per N, the naive serial loop
(``ansible-playbook ... -l nodeXX`` for one node after the other) beside the collection's run.  --project prints the
projection to 256 and 1,024 nodes with and without promotion.  Every run keeps its work folder (timeline, ledger
sessions, lab layout, logs, reports, evidence) and prints where; --analyse recomputes a kept folder's figures.
"""
import argparse
import configparser
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _importable():
    """Make this checkout importable as ansible_collections.gpufleet.netval (as conftest.py does)."""
    if os.path.basename(os.path.dirname(os.path.dirname(ROOT))) == 'ansible_collections':
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(ROOT))))
        return
    collections = os.path.join(ROOT, '.cache', 'collections')
    link = os.path.join(collections, 'ansible_collections', 'gpufleet', 'netval')
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    sys.path.insert(0, collections)


_importable()

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline  # noqa: E402  pylint: disable=wrong-import-position
sys.path.insert(0, ROOT)
from lab.netval_lab import inventory as lab_inventory, sim  # noqa: E402  pylint: disable=wrong-import-position

PROFILE = 'healthy-400g'
MATRIX_NODES = (1, 4, 16)
MATRIX_PEERS = (1, 2, 4)
PROJECT_NODES = (256, 1024)
LEDGER_POLL_S = 2.0
# The peer lease's tasks by name (tests/unit/test_bench_script.py checks them): the wait and take and the give-back of
# playbooks/tasks/leased_tier_tests.yml (in lease_peer.yml and give_peer_back.yml; the last take before a give-back is the
# one it gives back).
TAKE_TASK = 'Wait for a free known-good peer and lease it'
# validate.yml's look for a free peer (wait 0); when it finds none the node's local tests run and TAKE_TASK takes
# one later, which pairs with the give-back instead (the later take wins), so a miss is never counted as a hold.
TAKE_AT_ONCE_TASK = 'Take a peer at once if one is free (when none is, the node\'s peer-independent tests fill the wait)'
GIVE_TASK = 'Give the peer back'
FIGURES = ('ratio_to_ideal', 'overhead_per_node_s', 'controller_peak_mib', 'peer_overlap_s', 'ratio_to_bound', 'forks')
# The emulated perftest client's ledger label: '<tool> client to <address>:<port>' (lab/netval_lab/tools_perftest.py).
_CLIENT_LABEL = re.compile(r' client to (?P<address>[0-9.]+):[0-9]+$')
PROMOTE_NOTE = ('note: --promote passed -e netval_promote_accepted=true, but nothing in this run shows an accepted node '
                'serving as a peer (no task of one new node delegated to another, no perftest session between two new '
                'nodes): no node was accepted with every test healthy while others still waited; these are the figures '
                'of a run without promotion')


class BenchError(Exception):
    """Something the benchmark cannot go on without; the message says what."""


# --------------------------------------------------------------------------- pure: arithmetic

def matrix_cells(nodes=MATRIX_NODES, peers=MATRIX_PEERS):
    """The (N, P) cells of --matrix in run order: every N, then every P, a cell with more peers than nodes skipped."""
    return [(n, p) for n in nodes for p in peers if p <= n]


def node_counts(text):
    """The fleet sizes of --matrix-nodes: '1,4' -> (1, 4); each at least 1, none twice."""
    try:
        counts = tuple(int(part) for part in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError('expected fleet sizes such as 1,4,16, got %r' % text)
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts):
        raise argparse.ArgumentTypeError('expected distinct fleet sizes of at least 1, such as 1,4,16, got %r' % text)
    return counts


def queue_rounds(nodes, peers):
    """ceil(N / P): how many nodes in a row one peer serves when P peers share N nodes (integers, no float rounding)."""
    if nodes < 1 or peers < 1:
        raise ValueError('nodes and peers must be at least 1 (got %r, %r)' % (nodes, peers))
    return -(-nodes // peers)


def promotion_rounds(nodes, peers):
    """ceil(log2(N / P)) + 1, the pool doubling each round as accepted nodes become peers; at least 1.

    Exact in integers: the smallest k >= 0 with P x 2^k >= N, plus one.
    """
    queue_rounds(nodes, peers)  # the same argument checks
    k = 0
    while peers * 2 ** k < nodes:
        k += 1
    return k + 1


def ideal_s(nodes, peers, one_node_s):
    """The ideal wall time: ceil(N / P) x one node's test time (every peer busy testing, no overhead)."""
    return queue_rounds(nodes, peers) * float(one_node_s)


def median(values):
    """The median of a list of numbers (the mean of the middle two for an even count); None for an empty list."""
    ordered = sorted(float(value) for value in values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def ratio(numerator, denominator):
    """numerator / denominator, None when the denominator is not positive."""
    if denominator is None or numerator is None or denominator <= 0:
        return None
    return float(numerator) / float(denominator)


def last_line(figures):
    """The benchmark's last line: the figures with two decimals (nan for one that could not be computed), forks whole."""
    parts = []
    for name in FIGURES:
        value = figures.get(name)
        if name == 'forks':
            parts.append('forks=%s' % ('nan' if value is None else int(value)))
        else:
            parts.append('%s=%.2f' % (name, float('nan') if value is None else float(value)))
    return ' '.join(parts)


# --------------------------------------------------------------------------- pure: the timeline

def play_spans(doc, hosts=None):
    """Per host: seconds inside the plays, the sum over plays of (its last task end - its first task start) in that play.

    What it leaves out is the time a host waits between plays for the other hosts (the end of a play is a barrier).
    """
    spans = {}
    for record in task_timeline.check_timeline(doc)['records']:
        host = record['host']
        if hosts is not None and host not in hosts:
            continue
        key = (host, record.get('play'))
        first, last = spans.get(key, (record['start'], record['end']))
        spans[key] = (min(first, record['start']), max(last, record['end']))
    result = {}
    for (host, _play), (first, last) in spans.items():
        result[host] = result.get(host, 0.0) + max(0.0, float(last) - float(first))
    return result


def _lease_kind(record):
    """'take' or 'give' for a peer_lease record of a leased pass (playbooks/tasks/leased_tier_tests.yml, by the name as written), None
    for another (a suspicion, a renamed task)."""
    name = record.get('task_template') or record.get('task') or ''
    return {TAKE_TASK: 'take', TAKE_AT_ONCE_TASK: 'take', GIVE_TASK: 'give'}.get(name)


def _leases(doc, hosts=None):
    """Per host, [(taken, given)] record pairs: each lease taken (TAKE_TASK) with the next lease given back (GIVE_TASK),
    in start order; a take without a give-back (the run broke) is left out, as are skipped records.  Where neither name
    is found (the tasks were renamed), the host's peer_lease records pair in turn: take, give back, take, ..."""
    records = {}
    for record in task_timeline.check_timeline(doc)['records']:
        if task_timeline.is_lease_task(record) and record.get('status') != 'skipped' and (hosts is None or record['host'] in hosts):
            records.setdefault(record['host'], []).append(record)
    pairs = {}
    for host, found in records.items():
        found.sort(key=lambda record: (record['start'], record['end']))
        kinds = [_lease_kind(record) for record in found]
        if not any(kinds):
            pairs[host] = list(zip(found[0::2], found[1::2]))
            continue
        pairs[host] = []
        taken = None
        for record, kind in zip(found, kinds):
            if kind == 'take':
                taken = record
            elif kind == 'give' and taken is not None:
                pairs[host].append((taken, record))
                taken = None
    return pairs


def lease_hold_spans(doc, hosts=None):
    """Per host: [(start, end)] of each time it held a peer for its tests: from the end of the task that took the lease
    to the start of the task that gives it back."""
    return dict((host, [(float(taken['end']), max(float(taken['end']), float(given['start']))) for taken, given in pairs])
                for host, pairs in _leases(doc, hosts).items())


def lease_holds(doc, hosts=None):
    """Per host: seconds it held a peer for its tests, summed over its leases (lease_hold_spans)."""
    return dict((host, sum(end - start for start, end in spans)) for host, spans in lease_hold_spans(doc, hosts).items())


def lease_handovers(doc, hosts=None):
    """Seconds from a peer given back to the next node holding it: for every lease that had to wait (another host
    started giving a lease back while it waited), its take's end minus the latest such give-back's start; sorted."""
    pairs = _leases(doc, hosts)
    gives = [(float(given['start']), host) for host, found in pairs.items() for _taken, given in found]
    gaps = []
    for host, found in pairs.items():
        for taken, _given in found:
            during = [when for when, other in gives if other != host and float(taken['start']) < when <= float(taken['end'])]
            if during:
                gaps.append(float(taken['end']) - max(during))
    return sorted(gaps)


def host_rows(doc, hosts=None):
    """Per new node, sorted by name: task_timeline.host_costs (wall_s, test_s, lease_s, ...) plus in_plays_s,
    between_plays_s (= wall_s - in_plays_s), hold_s (lease_holds) and overhead_s = in_plays_s - test_s - lease_s (>= 0)."""
    wanted = set(hosts) if hosts is not None else None
    spans = play_spans(doc, wanted)
    holds = lease_holds(doc, wanted)
    rows = []
    for row in task_timeline.host_costs(doc):
        if wanted is not None and row['host'] not in wanted:
            continue
        in_plays = spans.get(row['host'], 0.0)
        row = dict(row, in_plays_s=in_plays, between_plays_s=max(0.0, row['wall_s'] - in_plays),
                   hold_s=holds.get(row['host'], 0.0),
                   overhead_s=max(0.0, in_plays - row['test_s'] - row['lease_s']))
        rows.append(row)
    return rows


def local_test_seconds(doc, hosts=None):
    """Per host: seconds in the modules of the tests that need no peer (the catalogue's needs_peer: false, dcgmi diag)."""
    modules = set(entry['module'] for entry in catalogue.TESTS if not entry['needs_peer'])
    actions = modules | set('%s.%s' % (task_timeline.COLLECTION, name) for name in modules)
    found = {}
    for record in task_timeline.check_timeline(doc)['records']:
        if record.get('action') in actions and record.get('status') != 'skipped' and (hosts is None or record['host'] in hosts):
            found[record['host']] = found.get(record['host'], 0.0) + max(0.0, float(record['end']) - float(record['start']))
    return found


def bound_s(nodes_count, peers_count, peer_test, local_test, promote=False):
    """The wall time no schedule beats: max(rounds x peer_test_s, local_test_s + peer_test_s) (issue 15's bound): the
    peers' queue, or one node's own tests end to end.  rounds is ceil(N / P), or with promotion ceil(log2(N / P)) + 1
    (the pool doubling each round, every accepted node serving at once)."""
    if peer_test is None or local_test is None:
        return None
    rounds = promotion_rounds(nodes_count, peers_count) if promote else queue_rounds(nodes_count, peers_count)
    return max(rounds * peer_test, local_test + peer_test)


def play_bounds(doc):
    """Each play's first task start and last task end, in the order the plays ran: [(name, start, end)]."""
    plays = {}
    for record in task_timeline.check_timeline(doc)['records']:
        start, end = plays.get(record.get('play'), (record['start'], record['end']))
        plays[record.get('play')] = (min(start, record['start']), max(end, record['end']))
    return [(play, start, end) for play, (start, end) in plays.items()]


def time_spent(doc, hosts=None):
    """Where a run's wall time goes, from its timeline: each play's span (its first task start to its last task end, in
    the order the plays ran), the median peer hold's seconds beyond the test tasks inside it (the calls, set_facts and
    includes of a pass), the seconds with no lease held by any node between the first take and the last give-back (the
    peers idle: handovers and starts), and after the last give-back.  {plays: [(name, seconds)], hold_extra_s,
    peers_idle_s, after_last_hold_s}."""
    records = task_timeline.check_timeline(doc)['records']
    spans = lease_hold_spans(doc, hosts)
    extras = []
    for host, found in spans.items():
        own = [record for record in records if record['host'] == host and task_timeline.is_test_task(record)]
        for begin, end in found:
            tested = sum(max(0.0, min(end, r['end']) - max(begin, r['start'])) for r in own if r['end'] > begin and r['start'] < end)
            extras.append(max(0.0, (end - begin) - tested))
    holds = sorted(span for found in spans.values() for span in found)
    idle = after = None
    if holds:
        held = task_timeline._union_length(holds)  # pylint: disable=protected-access
        first, last = holds[0][0], max(end for _start, end in holds)
        idle = max(0.0, (last - first) - held)
        after = max(0.0, float(doc['playbook_end']) - last)
    return {'plays': [(play, end - start) for play, start, end in play_bounds(doc)], 'hold_extra_s': median(extras),
            'peers_idle_s': idle, 'after_last_hold_s': after}


def promoted_in_timeline(doc, nodes):
    """[(host, other)] for every record of a new node delegated to another new node (``nodes``: the new nodes' names):
    what a promoted node serving as a peer looks like in the timeline."""
    nodes = set(nodes or ())
    found = set()
    for record in task_timeline.check_timeline(doc)['records']:
        for other in record.get('delegated_to') or []:
            if other in nodes and other != record['host'] and record['host'] in nodes:
                found.add((record['host'], other))
    return sorted(found)


# --------------------------------------------------------------------------- pure: the ledgers

def merge_ledger(store, host, device, book, seen_at):
    """Fold one read of ``nodes/<host>/ledger/<device>.json`` into ``store`` (key 'host/device/id' -> session).

    A session is kept with host, device, id, label, start, end (None while open) and last_seen (when a read last
    showed it open); a later read that shows its end wins.  The lab drops finished sessions from a ledger 120 s after
    they end, so the benchmark reads the ledgers every few seconds while the playbook runs.
    """
    if isinstance(book, list):  # a ledger written before counters were kept
        book = {'sessions': book}
    if not isinstance(book, dict):
        return store
    for entry in book.get('sessions') or []:
        if not isinstance(entry, dict) or not entry.get('id') or not isinstance(entry.get('start'), (int, float)):
            continue
        key = '%s/%s/%s' % (host, device, entry['id'])
        end = entry.get('end') if isinstance(entry.get('end'), (int, float)) else None
        known = store.get(key)
        if known is None:
            known = store[key] = {'host': host, 'device': device, 'id': entry['id'], 'label': entry.get('label') or '',
                                  'start': float(entry['start']), 'end': None, 'last_seen': float(seen_at)}
        if end is not None:
            known['end'] = float(end)
        elif known['end'] is None:
            known['last_seen'] = max(known['last_seen'], float(seen_at))
    return store


def _span(session, window=None):
    """(start, end) of a ledger session: a session still open at the last read ends at that read; with ``window``
    (start, end) None for one that starts outside it, the end clipped to it."""
    start = session['start']
    end = session['end'] if session['end'] is not None else session['last_seen']
    if window is not None:
        if not window[0] <= start <= window[1]:
            return None
        end = min(end, window[1])
    return start, end


def session_intervals(store, nodes, peers, fabric_hosts=None, window=None):
    """The peer HCA sessions as task_timeline.peer_overlap_s takes them, [(peer, hca, node, start, end)], and how many
    peer sessions could not be given a node.

    A session's node is the new node whose own ledger holds the same session id (both ends of a perftest session enter
    it under one id); failing that, the address a peer-side client label names ('... client to <ip>:<port>', looked up
    in ``fabric_hosts``, address -> host).  Rail ledgers (device 'rail-...') are not HCAs and are left out.  A session
    still open at the last read ends at that read.  ``window`` (start, end): only sessions that start inside it, ends
    clipped to it.
    """
    nodes, peers = set(nodes), set(peers)
    owner = {}
    for session in store.values():
        if session['host'] in nodes:
            owner.setdefault(session['id'], session['host'])
    intervals = []
    unattributed = 0
    for session in sorted(store.values(), key=lambda s: (s['host'], s['device'], s['start'], s['id'])):
        if session['host'] not in peers or session['device'].startswith('rail-'):
            continue
        span = _span(session, window)
        if span is None:
            continue
        start, end = span
        node = owner.get(session['id'])
        if node is None:
            match = _CLIENT_LABEL.search(session['label'])
            node = (fabric_hosts or {}).get(match.group('address')) if match else None
            if node not in nodes:
                node = None
        if node is None:
            unattributed += 1
            continue
        intervals.append((session['host'], session['device'], node, start, end))
    return intervals, unattributed


def session_holders(store, nodes):
    """{session id: the new nodes whose HCA ledgers hold it} (rails left out): two holders measured each other."""
    nodes = set(nodes)
    holders = {}
    for session in store.values():
        if session['host'] in nodes and not session['device'].startswith('rail-'):
            holders.setdefault(session['id'], set()).add(session['host'])
    return holders


def promoted_intervals(store, nodes, window=None):
    """The HCA sessions of new nodes that measured each other (netval_promote_accepted), as session_intervals gives a
    peer's: [(host, hca, label, start, end)] for every host with such a session.  ``label`` is what the session belongs
    to: the pair 'nodeA+nodeB' (sorted) for a session whose id another new node's ledger holds too (which end was the
    peer depends on the test's direction, so the pair names it), the host itself for its own tests against a known-good
    peer.  So an HCA that carried two measurements at once - a promoted node's own tests beside another node's, or two
    nodes - shows as overlap in task_timeline.peer_overlap_s.  Rails are left out."""
    nodes = set(nodes)
    holders = session_holders(store, nodes)
    intervals = []
    paired = set()
    for session in sorted(store.values(), key=lambda s: (s['host'], s['device'], s['start'], s['id'])):
        host = session['host']
        if host not in nodes or session['device'].startswith('rail-'):
            continue
        span = _span(session, window)
        if span is None:
            continue
        start, end = span
        pair = sorted(holders.get(session['id'], set()))
        label = '+'.join(pair) if len(pair) > 1 else host
        intervals.append((host, session['device'], label, start, end))
        if len(pair) > 1:
            paired.add(host)
    return [interval for interval in intervals if interval[0] in paired]


def promoted_in_ledgers(store, nodes):
    """[(node, node)] pairs of new nodes whose ledgers share a session id: two new nodes measured each other."""
    pairs = set()
    for hosts in session_holders(store, nodes).values():
        if len(hosts) > 1:
            ordered = sorted(hosts)
            pairs.update((a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:])
    return sorted(pairs)


def promoted_pairs(*found):
    """[[a, b]] of new nodes that measured each other, each pair once (its names sorted: which end served depends on the
    test's direction), from any number of lists of pairs (the timeline's, the ledgers')."""
    return [list(pair) for pair in sorted(set(tuple(sorted(pair)) for pairs in found for pair in pairs))]


# --------------------------------------------------------------------------- pure: the lab layout

def lab_roles(lab):
    """(new nodes, peers, node -> ansible_host, fabric address -> host) of a lab.json."""
    hosts = lab.get('hosts') or {}
    order = lab.get('order') or sorted(hosts)
    nodes = [h for h in order if (hosts.get(h) or {}).get('role') == 'new']
    peers = [h for h in order if (hosts.get(h) or {}).get('role') == 'peer']
    addresses = dict((h, (hosts.get(h) or {}).get('mgmt_ip')) for h in nodes)
    fabric = {}
    for link in lab.get('links') or []:
        fabric[link.get('node_ip')] = link.get('node')
        fabric[link.get('peer_ip')] = link.get('peer')
    # A real site's rails: every host's addressed ports (lab['hosts'][host]['ports']), no node-peer links.
    for host in order:
        for port in (hosts.get(host) or {}).get('ports') or []:
            if port.get('ip'):
                fabric[port['ip']] = host
    return nodes, peers, addresses, fabric


# --------------------------------------------------------------------------- pure: the figures

def figures(doc, nodes_count, peers_count, intervals, hosts=None, promote=False):
    """Every figure of one run from its timeline and its peer HCA intervals (see the module docstring)."""
    rows = host_rows(doc, hosts)
    wall = max(0.0, float(doc['playbook_end']) - float(doc['playbook_start']))
    one_node = median([row['test_s'] for row in rows])
    ideal = ideal_s(nodes_count, peers_count, one_node) if one_node is not None else None
    hold = median([row['hold_s'] for row in rows if row['hold_s'] > 0])
    handovers = lease_handovers(doc, set(hosts) if hosts is not None else None)
    handover = median(handovers) if handovers else 0.0
    peer_time = hold if hold is not None else one_node   # no lease in the timeline: the tests alone
    rss = doc.get('peak_rss_mib') or {}
    peak = rss.get('total')
    local = local_test_seconds(doc, set(hosts) if hosts is not None else None)
    local_test = median([local.get(row['host'], 0.0) for row in rows])
    peer_test = median([max(0.0, row['test_s'] - local.get(row['host'], 0.0)) for row in rows])
    bound = bound_s(nodes_count, peers_count, peer_test, local_test, promote)
    return {
        'nodes': nodes_count, 'peers': peers_count, 'queue_rounds': queue_rounds(nodes_count, peers_count),
        'wall_s': wall,
        'one_node_test_s': one_node,
        'ideal_s': ideal,
        'ratio_to_ideal': ratio(wall, ideal),
        'overhead_per_node_s': median([row['overhead_s'] for row in rows]),
        'overhead_with_barriers_per_node_s': median([max(0.0, row['overhead_s'] + row['between_plays_s']) for row in rows]),
        'lease_per_node_s': median([row['lease_s'] for row in rows]),
        'hold_per_node_s': hold,
        'handover_s': handover,
        'handovers': len(handovers),
        'per_node_peer_s': peer_time + handover if peer_time is not None else None,
        'controller_peak_mib': float(peak) if isinstance(peak, (int, float)) else None,
        'peer_overlap_s': task_timeline.peer_overlap_s(intervals),
        'local_test_s': local_test,
        'peer_test_s': peer_test,
        'bound_s': bound,
        'ratio_to_bound': ratio(wall, bound),
        'bound_rounds': promotion_rounds(nodes_count, peers_count) if promote else queue_rounds(nodes_count, peers_count),
        'time_spent': time_spent(doc, set(hosts) if hosts is not None else None),
        'forks': (doc.get('controller') or {}).get('forks'),
        'hosts': rows,
    }


def fixed_s(figs):
    """What the queue does not explain: wall_s - ceil(N / P) x per_node_peer_s, at least 0 (None without a per-node time)."""
    if figs.get('per_node_peer_s') is None:
        return None
    return max(0.0, figs['wall_s'] - queue_rounds(figs['nodes'], figs['peers']) * figs['per_node_peer_s'])


def projection(per_node_peer, fixed, peers, nodes_list=PROJECT_NODES):
    """Rows nodes, peers, rounds and wall_s without promotion (ceil(N/P)) and with it (promotion_rounds), each
    wall ~ rounds x per_node_peer + fixed."""
    rows = []
    for nodes in nodes_list:
        plain = queue_rounds(nodes, peers)
        doubling = promotion_rounds(nodes, peers)
        rows.append({'nodes': nodes, 'peers': peers, 'per_node_peer_s': per_node_peer, 'fixed_s': fixed,
                     'rounds': plain, 'wall_s': plain * per_node_peer + fixed,
                     'promoted_rounds': doubling, 'promoted_wall_s': doubling * per_node_peer + fixed})
    return rows


def projection_bases(cells):
    """Per P, the measured cell the projection rests on: the one with the most nodes (the last run of them on a tie)."""
    bases = {}
    for cell in cells:
        figs = cell['figures']
        if figs.get('per_node_peer_s') is None:
            continue
        best = bases.get(figs['peers'])
        if best is None or figs['nodes'] >= best['nodes']:
            bases[figs['peers']] = figs
    return [bases[p] for p in sorted(bases)]


# --------------------------------------------------------------------------- pure: output

def number(value, digits=2):
    return '-' if value is None else '%.*f' % (digits, value)


def table(headers, rows):
    """Plain-text table, first column left-aligned, the others right-aligned."""
    cells = [list(headers)] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[index]) for row in cells) for index in range(len(headers))]
    lines = []
    for count, row in enumerate(cells):
        lines.append('  '.join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if count == 0:
            lines.append('  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def cell_lines(figs):
    """The figures of one run, one per line, then its per-node table."""
    lines = [
        'N=%d P=%d: wall_s=%s one_node_test_s=%s ideal_s=%s (= ceil(%d/%d)=%d x %s)' % (
            figs['nodes'], figs['peers'], number(figs['wall_s']), number(figs['one_node_test_s']), number(figs['ideal_s']),
            figs['nodes'], figs['peers'], figs['queue_rounds'], number(figs['one_node_test_s'])),
        '  ratio_to_ideal=%s overhead_per_node_s=%s (with the waits between plays: %s) lease_per_node_s=%s '
        'controller_peak_mib=%s peer_overlap_s=%s' % (
            number(figs['ratio_to_ideal']), number(figs['overhead_per_node_s']), number(figs['overhead_with_barriers_per_node_s']),
            number(figs['lease_per_node_s']), number(figs['controller_peak_mib']), number(figs['peer_overlap_s'])),
        '  bound_s=%s (= max(%d rounds x peer_test_s %s, local_test_s %s + peer_test_s)) ratio_to_bound=%s forks=%s' % (
            number(figs.get('bound_s')), figs.get('bound_rounds') or queue_rounds(figs['nodes'], figs['peers']), number(figs.get('peer_test_s')),
            number(figs.get('local_test_s')), number(figs.get('ratio_to_bound')), figs.get('forks') if figs.get('forks') is not None else '-'),
        '  per_node_peer_s=%s (peer hold %s + handover %s over %d waiting lease(s)); peer sessions %s, %s without a node%s' % (
            number(figs['per_node_peer_s']), number(figs.get('hold_per_node_s')), number(figs.get('handover_s')),
            figs.get('handovers') or 0, figs.get('peer_sessions', '-'), figs.get('peer_sessions_unattributed', '-'),
            '; promoted: %s' % ', '.join('%s<->%s' % tuple(pair) for pair in figs['promoted']) if figs.get('promoted') else ''),
    ]
    spent = figs.get('time_spent')
    if spent:
        lines.append('  time spent: %s; a hold beyond its tests %s s (median); no peer held between the first take and the last '
                     'give-back %s s; after the last give-back %s s' % (
                         ', '.join('%s %s s' % (play, number(seconds)) for play, seconds in spent['plays']),
                         number(spent['hold_extra_s']), number(spent['peers_idle_s']), number(spent['after_last_hold_s'])))
    if figs.get('scale') is not None:
        lines.append('  simulated at scale %g: %s; controller tree PSS peak %s MiB (in: %s)' % (
            figs['scale'], figs.get('reported') or 'no summary', number(figs.get('controller_tree_pss_peak_mib')),
            figs.get('controller_tree_pss_peak_play') or 'no play'))
    rows = [(row['host'], number(row['wall_s']), number(row['in_plays_s']), number(row['test_s']), number(row['lease_s']),
             number(row['hold_s']), number(row['overhead_s'])) for row in figs['hosts']]
    lines.append(table(('host', 'wall s', 'in plays s', 'test s', 'lease s', 'peer held s', 'overhead s'), rows))
    return lines


def matrix_lines(cells):
    """The --matrix table: one row per cell, the serial loop's wall time beside the collection's."""
    rows = []
    for cell in cells:
        figs = cell['figures']
        serial = cell.get('serial_loop_s')
        process = cell.get('process_wall_s')
        rows.append((figs['nodes'], figs['peers'], number(figs['wall_s']), number(figs['one_node_test_s']), number(figs['ideal_s']),
                     number(figs['ratio_to_ideal']), number(figs['overhead_per_node_s']), number(figs['controller_peak_mib']),
                     number(figs['peer_overlap_s']), number(process), number(serial), number(ratio(serial, process))))
    return [table(('N', 'P', 'wall s', 'test s', 'ideal s', 'ratio', 'overhead/node s', 'peak MiB', 'overlap s',
                   'process s', 'serial loop s', 'serial/process'), rows)]


def projection_lines(bases, nodes_list=PROJECT_NODES):
    """The projection, its formulas and the measured numbers it rests on."""
    lines = ['Projection (measured costs; fixed = wall_s - ceil(N/P) x per_node_peer_s of the measured run, at least 0):',
             '  without promotion: wall ~ ceil(N/P) x per_node_peer_s + fixed_s',
             '  with promotion:    rounds = ceil(log2(N/P)) + 1 (the pool doubles each round), wall ~ rounds x per_node_peer_s + fixed_s']
    rows = []
    for figs in bases:
        fixed = fixed_s(figs)
        lines.append('  from N=%d P=%d: per_node_peer_s=%s (median peer hold %s + median handover %s over %d waiting lease(s)), '
                     'wall_s=%s, fixed_s=%s' % (
                         figs['nodes'], figs['peers'], number(figs['per_node_peer_s']), number(figs.get('hold_per_node_s')),
                         number(figs.get('handover_s')), figs.get('handovers') or 0, number(figs['wall_s']), number(fixed)))
        for row in projection(figs['per_node_peer_s'], fixed, figs['peers'], nodes_list):
            rows.append((row['nodes'], row['peers'], row['rounds'], number(row['wall_s']), number(row['wall_s'] / 3600.0),
                         row['promoted_rounds'], number(row['promoted_wall_s']), number(row['promoted_wall_s'] / 3600.0)))
    if not rows:
        return lines + ['  (no measured run with a per-node peer time to project from)']
    return lines + [table(('N', 'P', 'rounds', 'wall s', 'wall h', 'promoted rounds', 'promoted wall s', 'promoted wall h'), rows)]


def analyse(doc, store, lab, promote=False):
    """Figures, peer-session counts and promotion evidence of one run from its timeline, ledger sessions and lab.json."""
    nodes, peers, _addresses, fabric = lab_roles(lab)
    window = (float(doc['playbook_start']), float(doc['playbook_end']))
    intervals, unattributed = session_intervals(store, nodes, peers, fabric, window)
    intervals += promoted_intervals(store, nodes, window)
    figs = figures(doc, int(lab.get('nodes') or len(nodes)), int(lab.get('peers') or len(peers)), intervals, nodes or None, promote)
    figs['peer_sessions'] = len(intervals)
    figs['peer_sessions_unattributed'] = unattributed
    figs['promoted'] = promoted_pairs(promoted_in_timeline(doc, nodes), promoted_in_ledgers(store, nodes))
    return figs


# --------------------------------------------------------------------------- the lab and the runs

def read_ledgers(nodes_root, store, seen_at=None):
    """Fold every ledger under ``nodes_root`` (``<host>/ledger/<device>.json``) into ``store``, each read under a shared lock."""
    seen_at = time.time() if seen_at is None else seen_at
    try:
        hosts = sorted(os.listdir(nodes_root))
    except OSError:
        return store
    for host in hosts:
        folder = os.path.join(nodes_root, host, 'ledger')
        try:
            names = sorted(name for name in os.listdir(folder) if name.endswith('.json'))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(folder, name), encoding='utf-8') as handle:
                    fcntl.flock(handle, fcntl.LOCK_SH)
                    book = json.loads(handle.read() or '{}')
            except (OSError, ValueError):
                continue
            merge_ledger(store, host, name[:-len('.json')], book, seen_at)
    return store


class LedgerPoller(object):
    """Reads the ledgers every LEDGER_POLL_S seconds in a thread while a playbook runs, and once more at the end."""

    def __init__(self, nodes_root, interval=LEDGER_POLL_S):
        self.nodes_root = nodes_root
        self.interval = interval
        self.store = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name='ledger-poller', daemon=True)
        self._lock = threading.Lock()

    def _loop(self):
        while not self._stop.wait(self.interval):
            with self._lock:
                read_ledgers(self.nodes_root, self.store)

    def __enter__(self):
        with self._lock:
            read_ledgers(self.nodes_root, self.store)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        read_ledgers(self.nodes_root, self.store)
        return False


def say(line=''):
    sys.stdout.write(line + '\n')
    sys.stdout.flush()


def run_logged(argv, log_path, env=None):
    """Run ``argv`` (a list, no shell) from the repository root, its output into ``log_path``; (rc, seconds)."""
    started = time.monotonic()
    with open(log_path, 'a', encoding='utf-8') as log:
        log.write('$ %s\n' % ' '.join(argv))
        log.flush()
        proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
    return proc.returncode, time.monotonic() - started


def tail(path, count=25):
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return handle.read().splitlines()[-count:]
    except OSError:
        return []


def lab_up_argv(python, nodes, peers, dcgmi_seconds=None, mesh=False):
    """The lab for a cell: unpinned nodes; ``mesh`` (--promote) links the nodes to each other, so a promoted one can serve."""
    argv = [python, '-m', 'lab.netval_lab', 'up', '--profile', PROFILE, '--nodes', str(nodes), '--peers', str(peers), '--unpinned']
    if mesh:
        argv.append('--mesh')
    if dcgmi_seconds is not None:
        argv += ['--dcgmi-seconds', '%g' % dcgmi_seconds]
    return argv


def playbook_argv(ansible_playbook, limit, report_root, evidence_dir, promote, local_while_waiting=True, inventory='inventories/lab',
                  profile_durations=False):
    """``profile_durations``: the tests run for the tier profile's own durations, not the lab's shortened ones."""
    argv = [ansible_playbook, '-i', inventory, 'playbooks/validate.yml', '-l', limit,
            '-e', 'report_root=%s' % report_root, '-e', 'evidence_controller_dir=%s' % evidence_dir]
    if promote:
        argv += ['-e', 'netval_promote_accepted=true']
    if not local_while_waiting:
        argv += ['-e', 'netval_local_tests_while_waiting=false']
    if profile_durations:
        argv += ['-e', 'tier_tests_duration_override=0']
    return argv


def playbook_env(timeline=None, base=None):
    """The playbook's environment: this checkout as the collection, the repository's ansible.cfg, the timeline callback."""
    env = dict(os.environ if base is None else base)
    env['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, '.cache', 'collections')
    env['ANSIBLE_CONFIG'] = os.path.join(ROOT, 'ansible.cfg')
    if timeline:
        env['ANSIBLE_CALLBACKS_ENABLED'] = 'gpufleet.netval.task_timeline'
        env['NETVAL_TASK_TIMELINE'] = timeline
    else:
        env.pop('NETVAL_TASK_TIMELINE', None)
    return env


def default_ansible_playbook():
    sibling = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    return sibling if os.path.exists(sibling) else (shutil.which('ansible-playbook') or 'ansible-playbook')


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def write_json(path, data):
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write('\n')
    os.replace(tmp, path)


def analyse_dir(folder, promote=None):
    """Figures of a kept work folder: a lab cell (timeline.json, ledgers.json, lab.json) or a simulated one (timeline.json,
    sim/hosts.json, sim/ledger.jsonl); ``promote`` None reads it from the folder's cell.json."""
    if promote is None:
        promote = bool(read_json(os.path.join(folder, 'cell.json')).get('promote')) if os.path.exists(os.path.join(folder, 'cell.json')) else False
    doc = task_timeline.read_timeline(os.path.join(folder, 'timeline.json'))
    if os.path.exists(os.path.join(folder, 'sim', 'hosts.json')):
        return analyse_sim(doc, os.path.join(folder, 'sim'), promote)
    store = read_json(os.path.join(folder, 'ledgers.json'))
    lab = read_json(os.path.join(folder, 'lab.json'))
    return analyse(doc, store, lab, promote)


def analyse_sim(doc, sim_folder, promote=False):
    """Figures of a simulated run: its timeline and the simulated hosts' ledger (every session a node ran against another
    host, so the overlap counts promoted nodes too)."""
    hosts = read_json(os.path.join(sim_folder, 'hosts.json'))['hosts']
    nodes = sorted(host for host, info in hosts.items() if info['role'] == 'new')
    peers = sorted(host for host, info in hosts.items() if info['role'] == 'peer')
    window = (float(doc['playbook_start']), float(doc['playbook_end']))
    intervals = sim.ledger_intervals(sim_folder, window)
    figs = figures(doc, len(nodes), len(peers), intervals, nodes, promote)
    figs['peer_sessions'] = len(intervals) // 2
    figs['peer_sessions_unattributed'] = 0
    figs['promoted'] = promoted_pairs([(node, on) for _host, _d, node, _s, _e in intervals for on in [_host] if on in hosts and on != node
                                       and hosts[on]['role'] == 'new'])
    return figs


def run_cell(args, nodes, peers, work):
    """Bring the lab up as N x P unpinned, run validate.yml on every new node under the callback; the cell's results."""
    folder = os.path.join(work, 'n%d-p%d%s' % (nodes, peers, '-profile-durations' if args.profile_durations else ''))
    os.makedirs(folder, exist_ok=True)
    say('== N=%d P=%d: lab up (log %s)' % (nodes, peers, os.path.join(folder, 'lab-up.log')))
    rc, _seconds = run_logged(lab_up_argv(args.python, nodes, peers, args.dcgmi_seconds, args.promote), os.path.join(folder, 'lab-up.log'))
    if rc != 0:
        raise BenchError('lab up --nodes %d --peers %d failed (rc %d):\n%s' % (nodes, peers, rc, '\n'.join(tail(os.path.join(folder, 'lab-up.log')))))
    shutil.copyfile(os.path.join(args.lab_root, 'lab.json'), os.path.join(folder, 'lab.json'))
    timeline = os.path.join(folder, 'timeline.json')
    argv = playbook_argv(args.ansible_playbook, 'new_nodes', os.path.join(folder, 'reports'), os.path.join(folder, 'evidence'), args.promote,
                         not args.no_local_while_waiting, profile_durations=args.profile_durations)
    log = os.path.join(folder, 'playbook.log')
    say('== N=%d P=%d: %s (log %s)' % (nodes, peers, ' '.join(argv), log))
    with LedgerPoller(os.path.join(args.lab_root, 'nodes'), args.poll_s) as poller:
        rc, process_wall = run_logged(argv, log, playbook_env(timeline))
    write_json(os.path.join(folder, 'ledgers.json'), poller.store)
    if not os.path.exists(timeline):
        raise BenchError('ansible-playbook (rc %d) wrote no task timeline at %s:\n%s' % (rc, timeline, '\n'.join(tail(log))))
    if rc != 0:
        say('warning: ansible-playbook exited %d (see %s); the figures below are of that run' % (rc, log))
    figs = analyse_dir(folder)
    cell = {'figures': figs, 'rc': rc, 'process_wall_s': process_wall, 'folder': folder, 'promote': bool(args.promote)}
    write_json(os.path.join(folder, 'cell.json'), cell)
    return cell


class TreeMemory(object):
    """Samples the proportional set size (PSS: shared pages divided among their sharers) of a process and all its
    descendants while a playbook runs: the controller's memory with every worker it forked. ``peak_mib`` is the largest
    sum seen, ``peak_at`` when (epoch seconds), ``samples`` every [epoch, MiB].

    A sample walks the page tables of every process of the tree (the kernel's smaps_rollup), and on 1,024 simulated
    nodes, 65 processes of about 1 GiB each, one every 2 s took an eighth of the 2-core machine from the run it
    measured (perf: smaps_account 11 % of all samples). So the wait after a sample is ``interval`` seconds or
    ``1 / max_share`` times the CPU the sample took, whichever is longer: the sampler never takes more than
    ``max_share`` of one core."""

    def __init__(self, interval=2.0, max_share=0.02):
        self.interval = interval
        self.max_share = max_share
        self.sample_cpu_s = 0.0
        self.root = None
        self.peak_mib = 0.0
        self.peak_at = None
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name='tree-memory', daemon=True)

    @staticmethod
    def _children():
        found = {}
        for name in os.listdir('/proc'):
            if not name.isdigit():
                continue
            try:
                with open('/proc/%s/stat' % name, encoding='utf-8', errors='replace') as handle:
                    stat = handle.read()
            except OSError:
                continue
            found.setdefault(int(stat[stat.rfind(')') + 2:].split()[1]), []).append(int(name))
        return found

    @staticmethod
    def _pss_kib(pid):
        try:
            with open('/proc/%d/smaps_rollup' % pid, encoding='utf-8') as handle:
                for line in handle:
                    if line.startswith('Pss:'):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def sample(self):
        if self.root is None:
            return
        started = time.thread_time()
        children, total, todo = self._children(), 0, [self.root]
        while todo:
            pid = todo.pop()
            total += self._pss_kib(pid)
            todo.extend(children.get(pid, []))
        now, mib = time.time(), total / 1024.0
        self.samples.append([round(now, 1), round(mib, 1)])
        if mib > self.peak_mib:
            self.peak_mib, self.peak_at = mib, now
        self.sample_cpu_s = time.thread_time() - started

    def wait_s(self):
        """Seconds to wait before the next sample: ``interval``, longer when the last sample took more than
        ``max_share`` of that time in CPU."""
        return max(self.interval, self.sample_cpu_s / self.max_share)

    def _loop(self):
        while not self._stop.wait(self.wait_s()):
            self.sample()

    def start(self, pid):
        self.root = pid
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def sim_env(timeline, sim_folder, forks, base=None):
    """The environment of a simulated run: playbook_env plus the lab's simulated hosts, their loader and the forks."""
    env = playbook_env(timeline, base)
    plugins = os.path.join(ROOT, 'lab', 'ansible_plugins')
    env['ANSIBLE_CONNECTION_PLUGINS'] = os.path.join(plugins, 'connection')
    env['ANSIBLE_CALLBACK_PLUGINS'] = os.path.join(plugins, 'callback')
    env['ANSIBLE_CALLBACKS_ENABLED'] = 'gpufleet.netval.task_timeline,netval_sim'
    env['ANSIBLE_FORKS'] = str(forks)
    env['NETVAL_SIM_DIR'] = sim_folder
    return env


def configured_forks():
    """The forks of the repository's ansible.cfg ([defaults] forks), 5 (Ansible's default) without one."""
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, 'ansible.cfg'))
    return parser.getint('defaults', 'forks', fallback=5)


def reported(reports):
    """The first line of the run's summary.txt ('N of N nodes reported: ...'), or None."""
    lines = tail(os.path.join(reports, 'latest', 'summary.txt'), count=100000)
    return lines[0] if lines else None


def run_sim_cell(args, nodes, peers, work):
    """validate.yml on a simulated fleet of N nodes and P peers (lab/netval_lab/sim.py) under the callback, with
    args.forks forks; the cell's results."""
    folder = os.path.join(work, 'sim-n%d-p%d%s' % (nodes, peers, '-promote' if args.promote else ''))
    sim_folder = os.path.join(folder, 'sim')
    inventory = sim.write_inventory(sim_folder, nodes, peers, args.recording, args.scale, args.forks, sim_contract())
    timeline = os.path.join(folder, 'timeline.json')
    argv = playbook_argv(args.ansible_playbook, 'new_nodes', os.path.join(folder, 'reports'), os.path.join(folder, 'evidence'), args.promote,
                         not args.no_local_while_waiting, inventory=inventory) + ['-e', 'netval_lease_dir=%s' % os.path.join(folder, 'leases')]
    log = os.path.join(folder, 'playbook.log')
    say('== simulated N=%d P=%d forks=%d scale=%g: %s (log %s)' % (nodes, peers, args.forks, args.scale, ' '.join(argv), log))
    memory = TreeMemory()
    started = time.monotonic()
    with open(log, 'a', encoding='utf-8') as handle:
        proc = subprocess.Popen(argv, cwd=ROOT, env=sim_env(timeline, sim_folder, args.forks), stdout=handle,  # pylint: disable=consider-using-with
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        memory.start(proc.pid)
        rc = proc.wait()
    memory.stop()
    process_wall = time.monotonic() - started
    if not os.path.exists(timeline):
        raise BenchError('ansible-playbook (rc %d) wrote no task timeline at %s:\n%s' % (rc, timeline, '\n'.join(tail(log))))
    if rc != 0:
        say('warning: ansible-playbook exited %d (see %s); the figures below are of that run' % (rc, log))
    figs = analyse_dir(folder, args.promote)
    figs['controller_tree_pss_peak_mib'] = memory.peak_mib
    figs['controller_tree_pss_peak_play'] = play_at(task_timeline.read_timeline(timeline), memory.peak_at)
    figs['reported'] = reported(os.path.join(folder, 'reports'))
    figs['scale'] = args.scale
    cell = {'figures': figs, 'rc': rc, 'process_wall_s': process_wall, 'folder': folder, 'promote': bool(args.promote), 'simulated': True,
            'controller_tree_pss_samples': memory.samples}
    write_json(os.path.join(folder, 'cell.json'), cell)
    return cell


def play_at(doc, moment):
    """The play whose tasks were running at ``moment`` (epoch seconds), from a run's task timeline, or None."""
    for play, start, end in play_bounds(doc) if moment is not None else []:
        if start <= moment <= end:
            return play
    return None


def sim_contract():
    """The lab's contract (its iperf3 line is what the recording's veth delivered), without the lab's short durations:
    a simulated run's plans keep the tier's own durations, which the scale shortens."""
    return lab_inventory.SHORT_TESTS['netval_contract']


def run_serial_loop(args, nodes, work, peers):
    """The naive operator loop on the lab as it is: validate.yml -l nodeXX for one node after the other; (total seconds,
    the runs that failed)."""
    folder = os.path.join(work, 'serial-n%d' % nodes)
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(folder, 'playbook.log')
    say('== serial loop over N=%d nodes (P=%d), one ansible-playbook -l nodeXX at a time (log %s)' % (nodes, peers, log))
    started = time.monotonic()
    failed = []
    for index in range(1, nodes + 1):
        host = 'node%02d' % index
        argv = playbook_argv(args.ansible_playbook, host, os.path.join(folder, host, 'reports'), os.path.join(folder, host, 'evidence'),
                             args.promote, not args.no_local_while_waiting, profile_durations=args.profile_durations)
        rc, _seconds = run_logged(argv, log, playbook_env(None))
        if rc != 0:
            failed.append('%s rc %d' % (host, rc))
    total = time.monotonic() - started
    if failed:
        say('warning: serial loop runs failed: %s (see %s)' % (', '.join(failed), log))
    return total, failed


def main(argv=None):
    parser = argparse.ArgumentParser(description='Fleet benchmark of validate.yml on the lab (docs/BENCH.md).')
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--matrix', action='store_true', help='N in 1,4,16 x P in 1,2,4 (P <= N), with the serial loop per N')
    mode.add_argument('--analyse', metavar='FOLDER', help='recompute the figures of a kept cell folder; runs nothing')
    parser.add_argument('--nodes', type=int, default=2, help='new nodes N (default 2)')
    parser.add_argument('--peers', type=int, default=1, help='known-good peers P (default 1)')
    parser.add_argument('--promote', action='store_true', help='pass -e netval_promote_accepted=true to the playbook')
    parser.add_argument('--dcgmi-seconds', type=float, default=None,
                        help="lab up --dcgmi-seconds: every host's emulated dcgmi diag takes this long (default: the profile's)")
    parser.add_argument('--profile-durations', action='store_true',
                        help="the lab's tests run for the tier profile's own durations (-e tier_tests_duration_override=0), not the lab's "
                        "shortened ones: the orchestration's fixed costs weighed against tests as long as on a real site")
    parser.add_argument('--no-local-while-waiting', action='store_true',
                        help='pass -e netval_local_tests_while_waiting=false: the peer-independent tests run under the lease, as before')
    parser.add_argument('--project', action='store_true', help='project the wall time to 256 and 1,024 nodes')
    parser.add_argument('--no-serial', action='store_true', help='--matrix without the serial loop')
    parser.add_argument('--matrix-nodes', type=node_counts, default=MATRIX_NODES, metavar='N,N,...',
                        help='--matrix for these fleet sizes only (default 1,4,16), to run the matrix in parts')
    parser.add_argument('--simulate', action='store_true',
                        help='a simulated fleet (lab/netval_lab/sim.py) instead of the lab: any N and P, no root, no lab; '
                        'with --matrix, N in --matrix-nodes at P peers')
    parser.add_argument('--forks', type=int, default=None, help='--simulate: ansible forks (default: ansible.cfg\'s)')
    parser.add_argument('--scale', type=float, default=sim.DEFAULT_SCALE,
                        help='--simulate: simulated time per second of planned time (default %g)' % sim.DEFAULT_SCALE)
    parser.add_argument('--recording', default=os.path.join(sim.RECORDINGS, PROFILE + '.json'),
                        help='--simulate: the recording the simulated hosts answer from (default lab/sim/%s.json)' % PROFILE)
    parser.add_argument('--json-out', metavar='FILE', help='also write the results as JSON to FILE')
    parser.add_argument('--work-dir', metavar='DIR', help='where the runs keep their files (default: a new /tmp/netval-bench-*)')
    parser.add_argument('--lab-root', default=os.environ.get('NETVAL_LAB_ROOT', '/run/netval-lab'), help=argparse.SUPPRESS)
    parser.add_argument('--python', default=sys.executable, help=argparse.SUPPRESS)
    parser.add_argument('--ansible-playbook', default=None, help=argparse.SUPPRESS)
    parser.add_argument('--poll-s', type=float, default=LEDGER_POLL_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.ansible_playbook = args.ansible_playbook or default_ansible_playbook()
    if args.simulate and args.forks is None:
        args.forks = configured_forks()
    if args.simulate and args.profile_durations:
        parser.error("--profile-durations is the lab's: a simulated run's plans keep the profile's durations, which --scale shortens")
    try:
        if args.analyse:
            results = {'mode': 'analyse', 'cells': [{'figures': analyse_dir(args.analyse), 'folder': args.analyse}]}
        else:
            if not args.matrix and (args.nodes < 1 or args.peers < 1):
                raise BenchError('--nodes and --peers must be at least 1 (got N=%d P=%d)' % (args.nodes, args.peers))
            work = args.work_dir or tempfile.mkdtemp(prefix='netval-bench-')
            os.makedirs(work, exist_ok=True)
            say('bench: work folder %s' % work)
            results = {'mode': 'matrix' if args.matrix else 'single', 'promote': bool(args.promote), 'work_dir': work, 'cells': []}
            if args.simulate:
                cells = [(n, args.peers) for n in args.matrix_nodes] if args.matrix else [(args.nodes, args.peers)]
            else:
                cells = matrix_cells(nodes=args.matrix_nodes) if args.matrix else [(args.nodes, args.peers)]
            serial = {}
            for nodes, peers in cells:
                cell = run_sim_cell(args, nodes, peers, work) if args.simulate else run_cell(args, nodes, peers, work)
                if args.matrix and not args.simulate and not args.no_serial and nodes not in serial:
                    serial[nodes] = run_serial_loop(args, nodes, work, peers)
                cell['serial_loop_s'], cell['serial_loop_failed'] = serial.get(nodes, (None, []))
                results['cells'].append(cell)
                say('\n'.join(cell_lines(cell['figures'])))
    except (BenchError, OSError, ValueError) as exc:
        sys.stderr.write('bench: error: %s\n' % exc)
        return 1
    out = []
    if results['mode'] == 'analyse':
        out += cell_lines(results['cells'][0]['figures'])
    if results['mode'] == 'matrix':
        out += ['', 'Matrix (process s: the collection\'s ansible-playbook; serial loop s: one ansible-playbook -l nodeXX '
                'per node in turn, once per N, beside each P)'] + matrix_lines(results['cells'])
    if args.project:
        bases = projection_bases(results['cells'])
        results['projection'] = [dict(row, measured_nodes=figs['nodes']) for figs in bases
                                 for row in projection(figs['per_node_peer_s'], fixed_s(figs), figs['peers'])]
        out += [''] + projection_lines(bases)
    if args.promote and not any(cell['figures']['promoted'] for cell in results['cells']):
        out += ['', PROMOTE_NOTE]
    if results.get('work_dir'):
        out += ['', 'bench: kept %s (timeline.json, ledgers.json, playbook.log per cell; --analyse FOLDER recomputes); '
                'the lab stays up (make lab-down)' % results['work_dir']]
    if args.json_out:
        write_json(args.json_out, results)
        out += ['bench: wrote %s' % args.json_out]
    if results.get('work_dir'):
        write_json(os.path.join(results['work_dir'], 'bench.json'), results)
    out += [last_line(results['cells'][-1]['figures'])]
    say('\n'.join(out))
    return 0 if all(cell.get('rc', 0) == 0 and not cell.get('serial_loop_failed') for cell in results['cells']) else 1


if __name__ == '__main__':
    sys.exit(main())
