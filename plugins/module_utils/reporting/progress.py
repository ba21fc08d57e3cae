# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where each node of a validation run is, and how long it and the run have left: behind the progress callback.

A node's stage follows the task it runs (its role and module); the time left is the run's prediction
(prediction.run_prediction, made when the tests start) against the clock.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import prediction as predictions

PREFLIGHT, WAITING, LOCAL, PEER, VERDICT, EVIDENCE, REPORT = 'preflight', 'waiting', 'local', 'peer', 'verdict', 'evidence', 'report'
MEASURED = (VERDICT, EVIDENCE, REPORT)
ROLE_STAGES = {'tier_profile': PREFLIGHT, 'preflight': PREFLIGHT, 'verdict': VERDICT, 'evidence': EVIDENCE, 'report': REPORT}
# The tier_tests modules that measure against the peer, and the peer-independent one (the catalogue's local phase).
PEER_MODULES = ('jumbo_ping', 'iperf3', 'perftest', 'nccl_tests')
LOCAL_MODULES = ('dcgmi_diag',)
LEASE_MODULE = 'peer_lease'


def _short(name):
    return (name or '').rsplit('.', 1)[-1]


class Tracker(object):
    """Each host's stage from the run's task events: a task starting (which may still be skipped) and a task's result.

    A stage changes only on what has surely happened: a measuring module starting, a lease taken or refused, the GPU
    diagnostic ending.  ``start`` and ``result`` return the host's new stage, or None when it stays.
    """

    def __init__(self, clock=None):
        self.clock = clock or time.time
        self.stages = {}
        self.since = {}
        self.local_done = set()
        self.peers = {}
        self._holding = set()
        self.done_with_peer = set()

    def _set(self, host, stage):
        if stage is None or self.stages.get(host) == stage:
            return None
        self.stages[host] = stage
        self.since[host] = self.clock()
        if stage == LOCAL:
            self.local_done.add(host)
        return stage

    def start(self, host, role, action, run_once=False):
        module, role = _short(action), _short(role)
        if role == 'tier_tests':
            if module in LOCAL_MODULES:
                return self._set(host, LOCAL)
            if module in PEER_MODULES:
                return self._set(host, PEER)
            return None
        stage = ROLE_STAGES.get(role)
        if stage == REPORT and run_once:
            # The report is written once, on one host, for every node of the run: each of them is in it.
            moved = [other for other in list(self.stages) if self._set(other, REPORT)]
            return self._set(host, stage) or (stage if moved else None)
        return self._set(host, stage)

    def result(self, host, action, args, result):
        module, args, result = _short(action), args or {}, result or {}
        if module == LEASE_MODULE and not result.get('skipped'):
            state = args.get('state', 'acquired')
            if state == 'acquired' and result.get('peer'):
                self.peers[host] = result['peer']
                self._holding.add(host)
                self.done_with_peer.discard(host)
                return self._set(host, PEER)
            if state == 'acquired':
                # Every peer busy: the node's peer-independent tests fill the wait, then it waits.
                return self._set(host, WAITING)
            if state == 'released':
                self._holding.discard(host)
                self.done_with_peer.add(host)
            return None
        if module in LOCAL_MODULES and not result.get('skipped') and host not in self._holding and host not in self.done_with_peer:
            return self._set(host, WAITING)
        return None


def describe(stage, peer=None):
    """The stage in words."""
    return {PREFLIGHT: 'preflight', WAITING: 'waiting for a free known-good peer', LOCAL: 'peer-independent tests (dcgmi diag)',
            PEER: 'tests against %s' % (peer or 'its peer'), VERDICT: 'verdict', EVIDENCE: 'evidence', REPORT: 'report'}.get(stage, stage)


def seconds_left(prediction, tracker, node, now):
    """(node's seconds left, run's seconds left for its tests): the run's queue played forward again from where the nodes are.

    Nodes on a peer keep it for what is left of their predicted peer time; the others queue, in the prediction's order,
    for the peers they may take; local tests already run count no more.  (None, None) without a prediction.
    """
    if not isinstance(prediction, dict) or not isinstance(prediction.get('nodes'), dict) or 'costs' not in prediction:
        return None, None
    on_peer, queued, peers, after = [], [], set(), {}
    for name, entry in sorted(prediction['nodes'].items(), key=lambda item: (item[1].get('start_s') is None, item[1].get('start_s') or 0, item[0])):
        peers.update(entry.get('peers') or [])
        stage = tracker.stages.get(name)
        if stage in MEASURED or entry.get('start_s') is None:
            continue
        local = 0.0 if name in tracker.local_done else float(entry.get('local_s') or 0.0)
        if name in tracker.done_with_peer:
            # Its peer given back: only its local tests, if any, are left (running now, or still to come).
            spent = now - tracker.since.get(name, now) if stage == LOCAL else 0.0
            after[name] = max(0.0, float(entry.get('local_s') or 0.0) - spent) if stage == LOCAL else local
        elif stage == PEER and tracker.peers.get(name):
            spent = now - tracker.since.get(name, now)
            on_peer.append({'node': name, 'peer_s': max(0.0, float(entry['peer_s']) - spent), 'local_s': local, 'peers': [tracker.peers[name]]})
        else:
            queued.append({'node': name, 'peer_s': float(entry['peer_s']), 'local_s': local, 'peers': entry.get('peers') or []})
    peers.update(tracker.peers.values())
    try:
        # Local tests of a node already on its peer follow its peer tests (nothing to fill); queued nodes fill the wait.
        again = predictions.predict_run(on_peer + queued, sorted(peers), prediction['costs'], prediction.get('local_while_waiting', True))
    except predictions.PredictionError:
        return None, None
    ends = dict((name, entry['end_s']) for name, entry in again['nodes'].items())
    ends.update(after)
    node_left = ends.get(node, 0.0 if tracker.stages.get(node) in MEASURED else None)
    return node_left, max([again['tests_s']] + list(after.values()))


def _seconds(value):
    if value is None:
        return '?'
    value = int(round(value))
    return '%d s' % value if value < 120 else '%dm%02ds' % (value // 60, value % 60)


def line(node, stage, peer, since_start, node_left, run_left, measured, total):
    """One progress line: '+95 s node03: tests against peer01 | ~38 s left for it, ~3m30s for the run | 4 of 10 measured'."""
    parts = ['netval progress %s %s: %s' % ('+' + _seconds(since_start), node, describe(stage, peer))]
    if stage not in MEASURED and node_left is not None:
        parts.append('~%s left for it, ~%s for the run\'s tests' % (_seconds(node_left), _seconds(run_left)))
    elif run_left is not None:
        parts.append('~%s left for the run\'s tests' % _seconds(run_left))
    parts.append('%d of %d nodes measured' % (measured, total))
    return ' | '.join(parts)
