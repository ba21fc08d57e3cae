# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a validation run will take, predicted from its plan before the tests start.

A node's peer time is what its tier plan runs against a peer: every session's
duration plus the cost of the module calls that start, run and stop it; its
local time is what runs without a peer (dcgmi diag).  The run is a work queue:
each node takes the first peer that frees, in the order the nodes ask, and its
local tests fill the wait (or follow the peer tests when it got one at once).
The costs (seconds per module call, per session, typical seconds of a test the
profile gives no duration) are data measured on the site: playbooks/vars/prediction.yml,
overridden by the inventory's netval_prediction_costs.  No Ansible import.

The controller carries a bounded number of nodes' orchestration at full speed
(``parallel_nodes``, never more than ansible's forks): the fixed work of N nodes
(preflight, verdict, evidence, reports), all of them at once, takes
N / parallel_nodes times one node's, and while k nodes hold peers at once each
call and session set-up takes k / parallel_nodes times its cost (neither below
once).  The test durations themselves never stretch.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import heapq
import math
from collections.abc import Mapping

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, peer_policy, plan

COST_KEYS = ('call_s', 'session_s', 'node_fixed_s', 'run_fixed_s', 'untimed_s')
# Optional: without it (and without ansible's forks, which also bound it) the controller is taken to carry every node
# at full speed (no load term).
LOAD_KEY = 'parallel_nodes'


class PredictionError(ValueError):
    """Costs or plans the prediction cannot use; the message says which."""


def _number(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value) or value < 0:
        raise PredictionError('prediction cost %s must be a finite number of seconds >= 0, got %r' % (name, value))
    return float(value)


def check_costs(costs):
    """The costs with every key present and every figure a finite number; raises PredictionError naming what is wrong."""
    if not isinstance(costs, dict):
        raise PredictionError('prediction costs must be a mapping, got %s' % type(costs).__name__)
    missing = [key for key in COST_KEYS if key not in costs]
    if missing:
        raise PredictionError('prediction costs lack %s' % ', '.join(missing))
    checked = dict((key, _number(costs[key], key)) for key in COST_KEYS if key != 'untimed_s')
    if costs.get(LOAD_KEY) is not None:
        checked[LOAD_KEY] = _number(costs[LOAD_KEY], LOAD_KEY)
        if checked[LOAD_KEY] < 1:
            raise PredictionError('prediction cost %s must be at least 1 node, got %r' % (LOAD_KEY, costs[LOAD_KEY]))
    untimed = costs['untimed_s']
    if not isinstance(untimed, dict):
        raise PredictionError('prediction cost untimed_s must map a module to seconds, got %r' % (untimed,))
    checked['untimed_s'] = {}
    for module, value in untimed.items():
        if isinstance(value, dict):
            checked['untimed_s'][module] = dict((int(level), _number(v, 'untimed_s.%s.%s' % (module, level))) for level, v in value.items())
        else:
            checked['untimed_s'][module] = _number(value, 'untimed_s.%s' % module)
    return checked


# Module calls a test makes beside its runs: iperf3 starts and stops the node's server; nccl-tests checks the launcher on
# both boxes, trusts its key on the peer, gives the node the key and checks the session, and removes both (the key itself
# is made in the controller's worker: no module).
LAUNCH_CALLS = {'iperf3': 2, 'nccl_tests': 6}
# The modules whose sessions last the planned duration; the others (ping by count, nccl-tests by iterations, dcgmi by level)
# take their typical time from the costs.
TIMED_MODULES = ('perftest', 'iperf3')


def _session_s(run, module, costs):
    """What one session takes: its duration, else the typical time of an untimed one (dcgmi by level)."""
    if module in TIMED_MODULES and run.get('duration'):
        return float(run['duration']) + costs['session_s']
    typical = costs['untimed_s'].get(module, 0.0)
    if isinstance(typical, dict):
        level = int(run.get('level') or 1)
        typical = typical.get(level, max(typical.values()) if typical else 0.0)
    return typical + costs['session_s']


def plan_seconds(plan, costs):
    """{peer_s, local_s, calls, sessions, peer_overhead_s} of one node's tier plan (plan.tier_test_plan's result);
    peer_overhead_s is the part of peer_s that is calls and session set-up, what load stretches."""
    costs = check_costs(costs)
    if not isinstance(plan, dict) or not isinstance(plan.get('runs'), dict):
        raise PredictionError('a test plan (test_plan filter) is needed, got %r' % (type(plan).__name__,))
    out = {'peer_s': 0.0, 'local_s': 0.0, 'calls': 0, 'sessions': 0, 'peer_overhead_s': 0.0}
    for name, runs in plan['runs'].items():
        try:
            entry = catalogue.test(name)
        except catalogue.CatalogueError as exc:
            raise PredictionError(str(exc))
        module = entry['module']
        key = 'peer_s' if entry['needs_peer'] else 'local_s'
        batches = [batch for batch in plan.get('perftest_batches') or [] if batch.get('test') == name]
        if batches:
            calls = 3 * len(batches)  # start every server, run the clients in turn, stop the servers
            sessions = [run for batch in batches for run in batch['runs']]
            seconds = sum(_session_s(run, module, costs) for run in sessions)
        elif runs and runs[0].get('clients'):
            calls = 5  # servers, counters before, every client at once, counters after, stop
            sessions = runs
            seconds = max(_session_s(client, module, costs) for client in runs[0]['clients'])
        else:
            calls = len(runs) + LAUNCH_CALLS.get(module, 0)
            sessions = runs
            seconds = sum(_session_s(run, module, costs) for run in runs)
        out[key] += seconds + calls * costs['call_s']
        out['calls'] += calls
        out['sessions'] += len(sessions)
        if key == 'peer_s':
            out['peer_overhead_s'] += calls * costs['call_s'] + len(sessions) * costs['session_s']
    return out


def node_plan_seconds(profile, live_ports, gpu_pairs, options, costs):
    """plan_seconds of the plan the node will run against a peer like itself (its own live ports at both ends).

    Never raises: a plan or costs the prediction cannot use give {peer_s: 0, local_s: 0, error}, since a prediction must
    never cost a node its run (the tier tests report a bad plan themselves).
    """
    try:
        made = plan.tier_test_plan(profile, live_ports, live_ports, gpu_pairs, dict(options or {}, phase='all'))
        return plan_seconds(made, costs)
    except (PredictionError, plan.PlanError, catalogue.CatalogueError, TypeError, ValueError, KeyError) as exc:
        return {'peer_s': 0.0, 'local_s': 0.0, 'calls': 0, 'sessions': 0, 'peer_overhead_s': 0.0, 'error': str(exc)}


def load_factors(costs, node_count, holding, forks=None):
    """{parallel_nodes, fixed_factor, queue_factor}: how much the fixed work of ``node_count`` nodes at once and the calls
    of ``holding`` nodes holding peers at once stretch on a controller that carries ``parallel_nodes`` at full speed
    (capped at ``forks``); 1.0 each with neither."""
    parallel = costs.get(LOAD_KEY)
    if forks:
        parallel = min(parallel, float(forks)) if parallel else float(forks)
    if not parallel:
        return {'parallel_nodes': None, 'fixed_factor': 1.0, 'queue_factor': 1.0}
    return {'parallel_nodes': parallel, 'fixed_factor': round(max(1.0, node_count / parallel), 3),
            'queue_factor': round(max(1.0, holding / parallel), 3)}


def predict_run(nodes, peers, costs, local_while_waiting=True, forks=None):
    """The run's predicted wall time from every node's plan seconds.

    ``nodes``: [{node, peer_s, local_s, takes_peer, peers, grow, peer_overhead_s}] in the order they ask for a peer; ``peers`` (optional per
    node) are the peers it may take, default all; a node that takes no peer (blocked in preflight) costs only its fixed
    time; ``grow`` (netval_promote_accepted): it may also take a node measured before it, from when that one's tests end
    (the prediction takes every node as accepted: a reject only makes the pool grow slower).  ``peers``: the healthy
    peers' names.  Each node takes, of its peers, the one that frees first.  Returns {predicted_s, tests_s, peers,
    rounds, waiting_nodes, nodes: {name: {peer, peer_s, local_s, start_s, end_s, round}}}: start_s when its peer tests
    start, end_s when its last test ends, both from the start of the tests, round how many nodes were measured one
    after the other before it on its chain of peers, plus one; predicted_s adds the fixed costs.  ``load`` gives
    load_factors: each node's peer_overhead_s (its calls and set-ups) stretches by queue_factor, the fixed costs per node
    by fixed_factor (``forks``: ansible's, which caps parallel_nodes and how many nodes are in the tests play at once).
    """
    costs = check_costs(costs)
    if not isinstance(peers, (list, tuple)) or not all(isinstance(p, str) and p for p in peers):
        raise PredictionError('peers must be a list of peer names, got %r' % (peers,))
    entries = list(nodes or [])
    takers = sum(1 for entry in entries if isinstance(entry, dict) and entry.get('takes_peer', True))
    load = load_factors(costs, len(entries), min(takers, len(peers)), forks)
    free = dict((peer, 0.0) for peer in peers)
    # A peer's last round: how many nodes were measured one after the other on its chain before it frees.
    last_round = dict((peer, 0) for peer in peers)
    promoted = []
    out = {}
    waiting = 0
    # The ends of the nodes in the tests play, while ``forks`` caps how many it holds.
    in_play = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get('node'):
            raise PredictionError('each node of a prediction needs its name, got %r' % (entry,))
        name = entry['node']
        peer_s, local_s = _number(entry.get('peer_s', 0.0), '%s.peer_s' % name), _number(entry.get('local_s', 0.0), '%s.local_s' % name)
        peer_s += _number(entry.get('peer_overhead_s', 0.0), '%s.peer_overhead_s' % name) * (load['queue_factor'] - 1.0)
        candidates = [p for p in (entry.get('peers') or peers) if p in free]
        if entry.get('grow') and candidates:
            candidates += [p for p in promoted if p not in candidates]
        if not entry.get('takes_peer', True) or not candidates:
            out[name] = {'peer': None, 'peers': [], 'peer_s': 0.0, 'local_s': 0.0, 'start_s': None, 'end_s': 0.0}
            continue
        peer = min(candidates, key=lambda p: (free[p], candidates.index(p)))
        # validate.yml's tests play (strategy host_pinned) holds at most ``forks`` nodes: a node enters when one leaves.
        admitted = heapq.heappop(in_play) if forks and len(in_play) >= forks else 0.0
        start = max(free[peer], admitted)
        waits = start > admitted
        waiting += 1 if waits else 0
        # Waiting, the local tests fill the wait and the peer tests start when both are done; a node that got its peer at
        # once runs them after giving it back; without local_while_waiting they run under the lease, after the peer tests.
        fill = local_while_waiting and waits
        begin = max(start, admitted + local_s) if fill else start
        free[peer] = begin + peer_s + (0.0 if local_while_waiting else local_s)
        end = begin + peer_s + (0.0 if fill else local_s)
        heapq.heappush(in_play, end)
        last_round[peer] += 1
        out[name] = {'peer': peer, 'peers': candidates, 'peer_s': round(peer_s, 1), 'local_s': round(local_s, 1), 'start_s': round(begin, 1),
                     'end_s': round(end, 1), 'round': last_round[peer]}
        if entry.get('grow') and name not in free:
            # Promoted, it serves from when its own tests end.
            free[name], last_round[name] = end, last_round[peer]
            promoted.append(name)
    tests_end = max([entry['end_s'] for entry in out.values()] or [0.0])
    fixed = costs['run_fixed_s'] + costs['node_fixed_s'] * load['fixed_factor']
    return {'predicted_s': round(fixed + tests_end, 1), 'tests_s': round(tests_end, 1),
            'peers': len(peers), 'rounds': max([entry.get('round', 0) for entry in out.values()] or [0]), 'waiting_nodes': waiting,
            'local_while_waiting': bool(local_while_waiting), 'costs': costs, 'load': load, 'nodes': out}


def run_prediction(hosts, costs, local_while_waiting=True, forks=None):
    """predict_run over the hosts of a play (their hostvars, in the order they ask for a peer: sorted names); ``forks``
    is ansible's (ansible_forks), which caps the costs' parallel_nodes.

    Each host's run record (``netval_run``: node_run's) says what it will run and where (its ``plan_seconds``, the
    plan_seconds of its plan, and its ``healthy_peers``) and whether its tests run at all (``tests_skipped``); a host
    without one (its run broke) takes no peer; ``netval_peer`` pins it; ``netval_promote_accepted`` lets one that is not
    pinned to a healthy peer take nodes measured before it.  Never raises: {error} says why there is no prediction.
    """
    nodes, peers = [], []
    # Ansible passes hostvars as mappings that are not dicts.
    for host in sorted((h for h in hosts or [] if isinstance(h, Mapping)), key=lambda h: str(h.get('inventory_hostname'))):
        record = host.get('netval_run') if isinstance(host.get('netval_run'), Mapping) else {}
        seconds = record.get('plan_seconds') or {}
        healthy = [p for p in record.get('healthy_peers') or [] if isinstance(p, str)]
        peers.extend(p for p in healthy if p not in peers)
        nodes.append({'node': host.get('inventory_hostname'), 'peer_s': seconds.get('peer_s', 0.0), 'local_s': seconds.get('local_s', 0.0),
                      'peer_overhead_s': seconds.get('peer_overhead_s', 0.0),
                      'takes_peer': not record.get('tests_skipped') and bool(seconds),
                      'peers': peer_policy.first_peers(healthy, host.get('netval_peer') or None),
                      'grow': _true(host.get('netval_promote_accepted')) and (host.get('netval_peer') or '') not in healthy})
    try:
        return predict_run(nodes, sorted(peers), costs, local_while_waiting, _forks(forks))
    except PredictionError as exc:
        return {'error': str(exc)}


def _forks(value):
    """Ansible's forks as a count, or None when it is not one (never a reason for no prediction)."""
    try:
        forks = int(value)
    except (TypeError, ValueError):
        return None
    return forks if forks >= 1 else None


def _true(value):
    """An Ansible boolean as an inventory or -e writes it (true, 'true', 'yes', '1', 'on')."""
    return value is True or str(value).strip().lower() in ('true', 'yes', '1', 'on', 'y')


def compare(prediction, actual_s):
    """{predicted_s, actual_s, error_pct} for the report: how far the run was from its prediction."""
    if not isinstance(prediction, dict):
        return None
    try:
        predicted = _number(prediction.get('predicted_s'), 'predicted_s')
        actual = round(_number(actual_s, 'actual_s'), 1)
    except PredictionError:
        return None
    error = round(100.0 * (actual - predicted) / predicted, 1) if predicted > 0 else None
    return {'predicted_s': predicted, 'actual_s': actual, 'error_pct': error}
