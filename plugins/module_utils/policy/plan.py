# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test plan: catalogue + resolved tier profile + node and peer facts -> the concrete runs.

The tier_tests role loops over what ``tier_test_plan`` returns and does no
arithmetic of its own: every HCA pair, the GPU of each GPUDirect run, every
TCP port, every duration and timeout is decided here, where it is unit-tested.

Ports: a node owns the block ``[base + slot * block_size, base + (slot + 1) * block_size)``
on its peer, so nodes sharing a peer never collide; inside the block each run
of each test kind takes the next free port, so kinds never collide either.  A
plan that needs more ports than the block holds is an error, never an overlap.

Nothing is dropped silently: every figure the enabled tests must produce is
listed in ``expected``; one the plan already knows it cannot measure (no
NUMA-local GPU for a NIC, a peer with fewer live ports than the all-NIC test
needs) carries the reason.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue

DEFAULTS = {
    'slot': 0,
    'perftest_port_base': 18515,
    'iperf3_port_base': 5201,
    'ports_per_node': 32,
    'duration_override': 0,
    'timeout_margin': 60,
    'retest_only': False,
    # With retest_only: the tests to re-run (peer_policy.retest_tests); empty means every re-testable one.
    'retest_tests': [],
    'peer_address': 'peer',
    'node_address': 'node',
    # all: every enabled test; peer: only those that need a peer (under its lease); local: only those that do
    # not (while the node waits for a peer, or after it gave it back).
    'phase': 'all',
    # The site's RDMA traffic class (netval_roce_tclass), shared with perftest: NCCL_IB_TC; None leaves NCCL's default.
    'traffic_class': None,
    # The NCCL variables the operator sets himself (netval_nccl_env): the plan leaves those settings to him.
    'nccl_env_names': [],
}
PHASES = ('all', 'peer', 'local')
# The runbook's direction: the node receives (its server, the peer's client), so the node's rings, IRQs and
# rx_discards_phy carry the traffic.  A tier may add the reverse (``directions: [receive, send]`` under a test).
RECEIVE = 'receive'
SEND = 'send'
DIRECTIONS = (RECEIVE, SEND)
# Per-test parameters that reach the test module unchanged when the profile sets them.
PERFTEST_PARAMS = ('size', 'tx_depth', 'qps', 'report_gbits')
# Seconds a test without its own duration may take (perftest's default run, a ping, dcgmi levels).
UNTIMED_SECONDS = {'perftest': 5, 'jumbo_ping': 10, 'nccl_tests': 1800, 'dcgmi_diag': {1: 120, 2: 900, 3: 3600, 4: 14400}}


# The subject of node-scope figures; iperf3 and ping figures are of the link to the peer's address.
NODE_SUBJECTS = {'nccl_tests': 'all_reduce', 'dcgmi_diag': 'gpus'}


class PlanError(ValueError):
    """The plan cannot be made without a collision or a guess; the message says what to change."""


def _options(options):
    merged = dict(DEFAULTS)
    for key, value in (options or {}).items():
        if value is not None:
            merged[key] = value
    for key in ('slot', 'perftest_port_base', 'iperf3_port_base', 'ports_per_node', 'duration_override', 'timeout_margin'):
        try:
            merged[key] = int(merged[key])
        except (TypeError, ValueError):
            raise PlanError('plan option %s must be an integer, got %r' % (key, merged[key]))
        if merged[key] < 0:
            raise PlanError('plan option %s must not be negative, got %r' % (key, merged[key]))
    if merged['phase'] not in PHASES:
        raise PlanError('plan option phase must be one of %s, got %r' % (', '.join(PHASES), merged['phase']))
    tclass = merged['traffic_class']
    if tclass is not None and (isinstance(tclass, bool) or not isinstance(tclass, int) or not 0 <= tclass <= 255):
        raise PlanError('plan option traffic_class (netval_roce_tclass) must be a whole number from 0 to 255, got %r' % (tclass,))
    return merged


def _duration(params, options):
    """The profile's duration, unless the run is shortened for a lab or a smoke run; None keeps the tool's default."""
    if options['duration_override'] > 0:
        return options['duration_override']
    value = params.get('duration')
    return int(value) if value else None


def _timeout(module, duration, params, options):
    if duration:
        return duration + options['timeout_margin']
    untimed = UNTIMED_SECONDS.get(module, 0)
    if isinstance(untimed, dict):
        untimed = untimed.get(int(params.get('level') or 1), max(untimed.values()))
    return untimed + options['timeout_margin']


def _gpu_of(nic, gpu_pairs):
    for pair in gpu_pairs or []:
        if pair.get('nic') == nic:
            return pair
    return None


def hca_pairs(node_ports, peer_ports):
    """Each of the node's live ports with a peer port: in order, re-using the peer's ports round-robin when it has fewer.

    Tests that run one HCA at a time can share a peer port; every node HCA is tested, none is dropped
    because the peer has fewer live ports.
    """
    pairs = []
    if not peer_ports:
        return pairs
    for index, node in enumerate(node_ports or []):
        peer = peer_ports[index % len(peer_ports)]
        pairs.append({
            'device': node.get('device'), 'ib_port': node.get('port') or 1, 'netdev': node.get('netdev'),
            'gid_index': node.get('gid_index'),
            'peer_device': peer.get('device'), 'peer_ib_port': peer.get('port') or 1, 'peer_netdev': peer.get('netdev'),
            'peer_gid_index': peer.get('gid_index'),
        })
    return pairs


def _expect(metric, subject, reason=None, direction=RECEIVE):
    return {'id': _figure_id(metric, subject, direction) if subject is not None else '%s:*' % metric, 'metric': metric,
            'subject': subject, 'test': catalogue.test_of_metric(metric), 'reason': reason}


class _Ports(object):
    """Hands out the ports of one node's block on its peer, in order."""

    def __init__(self, options):
        self.base = options['perftest_port_base'] + options['slot'] * options['ports_per_node']
        self.size = options['ports_per_node']
        self.used = 0

    def take(self):
        if self.used >= self.size:
            raise PlanError('the plan needs more than %d perftest ports per node on a shared peer: raise tier_tests_ports_per_node'
                            % self.size)
        self.used += 1
        return self.base + self.used - 1


def directions(params, name):
    """The directions a test runs in, the node receiving first."""
    wanted = params.get('directions') or [RECEIVE]
    if not isinstance(wanted, list) or not wanted or any(d not in DIRECTIONS for d in wanted):
        raise PlanError('tests.%s.directions must be a list of %s, got %r' % (name, ' / '.join(DIRECTIONS), wanted))
    return [d for d in DIRECTIONS if d in wanted]


def _figure_id(metric, subject, direction):
    """The id of one figure: the node-receives figure plainly, the reverse one marked."""
    return '%s:%s' % (metric, subject) if direction == RECEIVE else '%s:%s:%s' % (metric, subject, direction)


def _ends(pair, direction, gpu, options):
    """The server and client ends of one session: which box, which device, and (GDR) the node's GPU on the node's end."""
    node = {'on': 'node', 'device': pair['device'], 'ib_port': pair['ib_port'], 'gid_index': pair['gid_index'], 'use_cuda': gpu,
            'address': options['node_address']}
    peer = {'on': 'peer', 'device': pair['peer_device'], 'ib_port': pair['peer_ib_port'], 'gid_index': pair['peer_gid_index'],
            'use_cuda': None, 'address': options['peer_address']}
    server, client = (node, peer) if direction == RECEIVE else (peer, node)
    client = dict(client, connect_to=server['address'])
    return server, client


def _perftest_run(entry, pair, params, options, ports, metric, direction, gpu=None):
    duration = _duration(params, options)
    server, client = _ends(pair, direction, gpu, options)
    run = dict(pair)
    run.update({
        'test': entry['name'], 'tool': entry['tool'], 'metric': metric, 'id': _figure_id(metric, pair['device'], direction),
        'subject': pair['device'], 'direction': direction, 'server': server, 'client': client, 'port': ports.take(),
        'duration': duration, 'timeout': _timeout('perftest', duration, params, options), 'use_cuda': gpu,
    })
    for key in PERFTEST_PARAMS:
        run[key] = params.get(key)
    run['report_gbits'] = bool(run['report_gbits'])
    return run


def _plan_perftest(entry, params, pairs, gpu_pairs, options, ports, expected):
    metric = entry['metrics'][0]
    runs = []
    ways = directions(params, entry['name'])
    if entry['scope'] == catalogue.SCOPE_FIRST_HCA:
        pairs = pairs[:1]
    for pair in pairs:
        gpu = None
        if entry['scope'] == catalogue.SCOPE_GPU_NIC:
            found = _gpu_of(pair['device'], gpu_pairs)
            if found is None or found.get('gpu') is None:
                for direction in ways:
                    expected.append(_expect(metric, pair['device'], 'no GPU paired with %s in nvidia-smi topo -m: GPUDirect RDMA '
                                            'could not be run for it' % pair['device'], direction))
                continue
            gpu = int(found['gpu'])
        for direction in ways:
            expected.append(_expect(metric, pair['device'], direction=direction))
            runs.append(_perftest_run(entry, pair, params, options, ports, metric, direction, gpu=gpu))
    return runs


def _plan_all_nics(entry, params, pairs, peer_ports, options, ports, expected):
    """Every HCA at once: one aggregate figure and a pause rate per node netdev."""
    aggregate, pause = entry['metrics']
    distinct_peers = len(set((p['peer_device'], p['peer_ib_port']) for p in pairs))
    netdevs = sorted(set(p['netdev'] for p in pairs if p.get('netdev')))
    if len(pairs) < 2:
        expected.append(_expect(aggregate, 'all NICs', 'the node has %d live RDMA port(s): nothing to run at once' % len(pairs)))
        return []
    if distinct_peers < len(pairs):
        reason = ('the peer has %d live RDMA port(s) for the node\'s %d: running every NIC at once would share peer HCAs '
                  'and measure the peer, not the node' % (distinct_peers, len(pairs)))
        expected.append(_expect(aggregate, 'all NICs', reason))
        for netdev in netdevs:
            expected.append(_expect(pause, netdev, reason))
        return []
    expected.append(_expect(aggregate, 'all NICs'))
    for netdev in netdevs:
        expected.append(_expect(pause, netdev))
    duration = _duration(params, options)
    runs = []
    for pair in pairs:
        run = _perftest_run(entry, pair, params, options, ports, aggregate, RECEIVE)
        run['id'] = '%s:%s' % (aggregate, pair['device'])
        runs.append(run)
    return [{'test': entry['name'], 'tool': entry['tool'], 'metric': aggregate, 'pause_metric': pause, 'id': '%s:all NICs' % aggregate,
             'subject': 'all NICs', 'duration': duration, 'timeout': _timeout('perftest', duration, params, options),
             'clients': runs}]


def _plan_node_test(entry, params, pairs, options, iperf3_port, expected):
    module = entry['module']
    duration = _duration(params, options)
    run = {'test': entry['name'], 'module': module, 'metrics': list(entry['metrics']), 'metric': entry['metrics'][0],
           'duration': duration, 'timeout': _timeout(module, duration, params, options), 'peer_address': options['peer_address'],
           'subject': NODE_SUBJECTS.get(module, options['peer_address'])}
    run.update(dict((k, v) for k, v in params.items()
                    if k not in ('enabled', 'ungraded', 'duration', 'directions') and k not in NCCL_PLANNED))
    if entry['ports'] == catalogue.PORTS_IPERF3:
        # One server on the node; the peer's client runs once per direction (-R makes the node send).
        ways = []
        for direction in directions(params, entry['name']):
            expected.append(_expect('iperf3_gbps', run['subject'], direction=direction))
            ways.append(dict(run, port=iperf3_port, direction=direction, reverse=direction == SEND,
                             id=_figure_id('iperf3_gbps', run['subject'], direction), connect_to=options['node_address']))
        return ways
    elif module == 'jumbo_ping':
        # The profile's count, as the run's packets: a template reading run.count would find str.count on a mock.
        run['packets'] = run.pop('count', 5)
        for metric in entry['metrics']:
            expected.append(_expect(metric, run['subject']))
    elif module == 'nccl_tests':
        run.update(nccl_settings(pairs, options))
        for metric in entry['metrics']:
            expected.append(_expect(metric, run['subject']))
    elif module == 'dcgmi_diag':
        expected.append(_expect('dcgmi_diag', None))
    return [run]


# NCCL settings the plan decides from the tested rails; a profile that names them (an older contract's gid_index: 3) is
# not followed: they come from the ports themselves, or from the operator's netval_nccl_env.
NCCL_PLANNED = {'ib_hca': 'NCCL_IB_HCA', 'gid_index': 'NCCL_IB_GID_INDEX', 'ib_tc': 'NCCL_IB_TC'}


def nccl_hca_list(pairs):
    """NCCL_IB_HCA's items for the tested rails: every node and peer HCA of the pairs with its port (``mlx5_0:1``),
    each once, sorted.  The nccl_tests module writes them in NCCL's exact form (``=mlx5_0:1,...``): a bare ``mlx5_1``
    would also select mlx5_10 and mlx5_11 (NCCL matches prefixes)."""
    items = set()
    for pair in pairs:
        for device, port in ((pair.get('device'), pair.get('ib_port')), (pair.get('peer_device'), pair.get('peer_ib_port'))):
            if device:
                items.add('%s:%s' % (device, port or 1))
    return sorted(items)


def nccl_gid_index(pairs):
    """(NCCL_IB_GID_INDEX, why it is left unset) from the GID index each box reports for each tested port.

    NCCL takes one index for every port of a rank: set it when every tested RoCE port of both boxes reports the same
    RoCE v2 IPv4 GID index; InfiniBand ports have none (unset); ports that differ leave it unset, and NCCL 2.21 and
    later then pick each port's RoCE v2 IPv4 GID themselves."""
    indexes = [index for pair in pairs for index in (pair.get('gid_index'), pair.get('peer_gid_index'))]
    reported = sorted(set(index for index in indexes if index is not None))
    if not reported:
        return None, None
    if len(reported) == 1 and None not in indexes:
        return reported[0], None
    shown = ', '.join('%s %s / %s %s' % (p.get('device'), p.get('gid_index'), p.get('peer_device'), p.get('peer_gid_index'))
                      for p in pairs)
    return None, ('the tested RoCE ports report different RoCE v2 GID indexes (node / peer: %s): NCCL_IB_GID_INDEX is left '
                  'unset, so NCCL (2.21 or later) picks each port\'s RoCE v2 IPv4 GID' % shown)


def nccl_settings(pairs, options):
    """The NCCL run's settings from the tested rails (the pairs the per-HCA tests use): ``ib_hca`` (exact items),
    ``rails`` (the node's HCAs NCCL must use), ``gid_index`` and ``gid_note``, ``ib_tc`` (the site's traffic class),
    ``rail_netdevs`` (both ends' netdevs, whose addresses pin Open MPI's own traffic) and ``operator_env`` (the
    settings left to the operator's netval_nccl_env)."""
    gid_index, gid_note = nccl_gid_index(pairs)
    settings = {'ib_hca': nccl_hca_list(pairs), 'gid_index': gid_index, 'gid_note': gid_note, 'ib_tc': options['traffic_class'],
                'rails': len(set((p.get('device'), p.get('ib_port') or 1) for p in pairs)),
                'rail_netdevs': sorted(set(n for p in pairs for n in (p.get('netdev'), p.get('peer_netdev')) if n))}
    names = set(options.get('nccl_env_names') or [])
    settings['operator_env'] = sorted(variable for key, variable in NCCL_PLANNED.items() if variable in names)
    for key, variable in NCCL_PLANNED.items():
        if variable in names:
            settings[key] = None
    return settings


def tier_test_plan(profile, node_ports, peer_ports, gpu_pairs=None, options=None):
    """The runs of one node against one peer.

    ``profile``: the resolved tier profile; ``node_ports`` / ``peer_ports``: rdma_info's ``live_ports`` of each box;
    ``gpu_pairs``: gpu_info's ``gpu_nic_pairs``; ``options``: slot, perftest_port_base, iperf3_port_base,
    ports_per_node, duration_override, timeout_margin, retest_only, retest_tests, peer_address (the peer's address on the node's link,
    the subject of peer-link figures), node_address (the node's address on that link, where the peer's clients connect),
    phase (all, peer: the tests that need a peer, local: those that do not).

    Returns {tests: [names in run order], runs: {test name: [run, ...]}, perftest_tests: [names of one-HCA-at-a-time
    perftest tests], batches: {perftest test name: [perftest_batches(...)]}, expected: [{id, metric, subject, test,
    reason}], pairs: [...]}.  Subjects of node-scope figures are the peer's address (iperf3, ping), 'all_reduce' (nccl) and
    'all NICs', as the measurements name them.
    """
    options = _options(options)
    tests_params = (profile or {}).get('tests') or {}
    pairs = hca_pairs(node_ports, peer_ports)
    ports = _Ports(options)
    iperf3_port = options['iperf3_port_base'] + options['slot']
    plan = {'tests': [], 'runs': {}, 'batches': {}, 'perftest_tests': [], 'expected': [], 'pairs': pairs}
    for entry in catalogue.enabled_tests(profile):
        if options['retest_only'] and (not entry['retest'] or (options['retest_tests'] and entry['name'] not in options['retest_tests'])):
            continue
        if options['phase'] != 'all' and entry['needs_peer'] != (options['phase'] == 'peer'):
            continue
        params = tests_params.get(entry['name']) or {}
        if entry['needs_peer'] and entry['module'] == 'perftest' and not pairs:
            for metric in entry['metrics']:
                plan['expected'].append(_expect(metric, None, 'no live RDMA port pair between the node and its peer'))
            continue
        if entry['scope'] == catalogue.SCOPE_ALL_HCAS:
            runs = _plan_all_nics(entry, params, pairs, peer_ports, options, ports, plan['expected'])
        elif entry['module'] == 'perftest':
            runs = _plan_perftest(entry, params, pairs, gpu_pairs, options, ports, plan['expected'])
            if runs:
                plan['perftest_tests'].append(entry['name'])
        else:
            runs = _plan_node_test(entry, params, pairs, options, iperf3_port, plan['expected'])
        plan['tests'].append(entry['name'])
        plan['runs'][entry['name']] = _with_server_deadlines(runs, options)
        if entry['name'] in plan['perftest_tests']:
            plan['batches'][entry['name']] = repeated_batches(perftest_batches(plan['runs'][entry['name']]), params.get('repeats'))
        elif entry['scope'] == catalogue.SCOPE_ALL_HCAS and runs:
            # Every server started in one call, every client at once in one call, every server stopped in one call.
            runs[0]['batch'] = perftest_batches(runs[0]['clients'])[0]
    return plan


def repeated_batches(batches, repeats):
    """The batches ``repeats`` times over (the whole round again, so repeats are spread in time), each with its own id
    and ``repeat`` (1..repeats); the runs keep their ids, so the measurements of one run are its samples."""
    repeats = repeats if isinstance(repeats, int) and not isinstance(repeats, bool) and repeats > 1 else 1
    out = []
    for number in range(1, repeats + 1):
        for batch in batches:
            out.append(dict(batch, id=batch['id'] if repeats == 1 else '%s#%d' % (batch['id'], number), repeat=number))
    return out


SHARED_PERFTEST = ('tool', 'size', 'tx_depth', 'qps', 'duration', 'report_gbits')


def perftest_batches(runs):
    """One-HCA-at-a-time runs grouped so one module call starts every server on a box, one runs the clients in turn,
    one stops the servers: {id, server_on, client_on, tool, size, tx_depth, qps, duration, report_gbits, runs,
    servers: [perftest server sessions], clients: [perftest client sessions]} in run order."""
    batches = []
    for run in runs:
        key = (run['server']['on'], run['client']['on']) + tuple(run.get(k) for k in SHARED_PERFTEST)
        if not batches or batches[-1]['key'] != key:
            batch = dict((k, run.get(k)) for k in SHARED_PERFTEST)
            batch.update({'key': key, 'id': '%s:%d' % (run['test'], len(batches)), 'server_on': run['server']['on'],
                          'client_on': run['client']['on'], 'runs': [], 'servers': [], 'clients': []})
            batches.append(batch)
        batch = batches[-1]
        batch['runs'].append(run)
        server, client = run['server'], run['client']
        batch['servers'].append({'id': run['id'], 'device': server['device'], 'ib_port': server['ib_port'], 'port': run['port'],
                                 'gid_index': server['gid_index'], 'use_cuda': server['use_cuda'], 'timeout': run['server_timeout']})
        batch['clients'].append({'id': run['id'], 'server': client['connect_to'], 'device': client['device'],
                                 'ib_port': client['ib_port'], 'port': run['port'], 'gid_index': client['gid_index'],
                                 'use_cuda': client['use_cuda'], 'timeout': run['timeout']})
    for batch in batches:
        del batch['key']
    return batches


def _with_server_deadlines(runs, options):
    """Each server's hard deadline: it waits while the runs before it go one at a time, then serves its own."""
    sessions = []
    for run in runs:
        sessions.extend(run.get('clients') or [run])
    if len(sessions) > 1 and runs and runs[0].get('clients'):
        # All at once: every server is needed for the one concurrent session.
        deadline = max(s['timeout'] for s in sessions) + options['timeout_margin']
        for session in sessions:
            session['server_timeout'] = deadline
        return runs
    elapsed = 0
    for session in sessions:
        elapsed += session['timeout']
        session['server_timeout'] = elapsed + options['timeout_margin']
    return runs
