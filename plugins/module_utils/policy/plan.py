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

Rails: ``node_ports`` / ``peer_ports`` are each box's compute rails (policy/rails.py select_rails), paired by rail
identity (rails.rail_pairs), never by list position; the IP tests (ping, iperf3) run over the rail pair rails.ip_path
chooses, bound to its two addresses, never over the management network.  A perftest session's TCP handshake goes to
the server box's control address (its management address, as an operator runs ``ib_write_bw -d mlx5_0 <peer>``): the
handshake only swaps queue pair numbers, GIDs and options, the data moves on the rail of ``-d`` / ``-x``.  A rail's own
address would tie the RDMA tests to IP routing the rails need not have (IB rails not routed to each other, an
unaddressed or misrouted IPoIB rail): the management address is the one that reaches every box.

Nothing is dropped silently: every figure the enabled tests must produce is
listed in ``expected``; one the plan already knows it cannot measure (no
NUMA-local GPU for a NIC, a node rail the peer has no rail for, no fabric address
for the IP tests) carries the reason.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, rails

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
    # The inventory's fabric addresses of the two boxes (netval_fabric_ip(s)): the IP tests' ends when given.
    'peer_address': None,
    'node_address': None,
    # Where a perftest handshake goes (the box's management address: ansible_host); the data path follows -d / -x.
    'peer_control_address': 'peer',
    'node_control_address': 'node',
    'peer_name': 'the peer',
    'node_name': 'the node',
    # {node device: peer device} (inventory netval_rails): the rail pairs the names and subnets cannot tell.
    'rails_map': None,
    'iperf3_ports_per_node': 16,
    # all: every enabled test; peer: only those that need a peer (under its lease); local: only those that do
    # not (while the node waits for a peer, or after it gave it back).
    'phase': 'all',
    # The node's GPUDirect end (policy/gpudirect.perftest_options): use_cuda_dmabuf, cuda_device_order, by_bus_id.
    'gdr': {},
    # nvidia-smi index -> PCI address of the node's GPUs (gpu_info gpus), to name a GPU by --use_cuda_bus_id.
    'gpu_bus_ids': {},
    # {test name: reason} of tests a failed GPU prerequisite rules out (preflight.gpu_test_blockers): expected, not run.
    'blocked': {},
    # The site's RDMA traffic class (netval_roce_tclass): every RoCE perftest run's -T and NCCL_IB_TC; None leaves the defaults.
    'traffic_class': None,
    # The NCCL variables the operator sets himself (netval_nccl_env): the plan leaves those settings to him.
    'nccl_env_names': [],
}
# The error_class of a figure a failed GPU prerequisite kept from running (verdict.GPU_PREREQUISITE).
GPU_PREREQUISITE = 'gpu_prerequisite'
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
    for key in ('slot', 'perftest_port_base', 'iperf3_port_base', 'ports_per_node', 'duration_override', 'timeout_margin',
                'iperf3_ports_per_node'):
        try:
            merged[key] = int(merged[key])
        except (TypeError, ValueError):
            raise PlanError('plan option %s must be an integer, got %r' % (key, merged[key]))
        if merged[key] < 0:
            raise PlanError('plan option %s must not be negative, got %r' % (key, merged[key]))
    if merged['phase'] not in PHASES:
        raise PlanError('plan option phase must be one of %s, got %r' % (', '.join(PHASES), merged['phase']))
    for key in ('gdr', 'gpu_bus_ids', 'blocked'):
        if not isinstance(merged[key], dict):
            raise PlanError('plan option %s must be a mapping, got %r' % (key, merged[key]))
    tclass = merged['traffic_class']
    # An extra var (-e netval_roce_tclass=106) arrives as text.
    if isinstance(tclass, str) and tclass.strip().isdigit():
        tclass = merged['traffic_class'] = int(tclass)
    if tclass is not None and (isinstance(tclass, bool) or not isinstance(tclass, int) or not 0 <= tclass <= 255):
        raise PlanError('plan option traffic_class (netval_roce_tclass) must be a whole number from 0 to 255, got %r' % (tclass,))
    problems = rails.rails_map_errors(merged['rails_map'])
    if problems:
        raise PlanError('; '.join(problems))
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


def hca_pairs(node_ports, peer_ports, rails_map=None, peer_name='the peer'):
    """The node's rails each with the peer rail on the same rail (rails.rail_pairs); node rails without one are left out
    (tier_test_plan says why in ``expected``)."""
    return rails.rail_pairs(node_ports, peer_ports, rails_map, peer_name)[0]


def _expect(metric, subject, reason=None, direction=RECEIVE, error_class=None):
    expected = {'id': _figure_id(metric, subject, direction) if subject is not None else '%s:*' % metric, 'metric': metric,
                'subject': subject, 'test': catalogue.test_of_metric(metric), 'reason': reason}
    if error_class:
        expected['error_class'] = error_class
    return expected


class _Ports(object):
    """Hands out the ports of one node's block on its peer, in order."""

    def __init__(self, options, kind='perftest'):
        per_node = options['ports_per_node'] if kind == 'perftest' else options['iperf3_ports_per_node']
        self.base = options['%s_port_base' % kind] + options['slot'] * per_node
        self.size = per_node
        self.kind = kind
        self.used = 0

    def take(self):
        if self.used >= self.size:
            raise PlanError('the plan needs more than %d %s ports per node on a shared peer: raise tier_tests_%s'
                            % (self.size, self.kind, 'ports_per_node' if self.kind == 'perftest' else 'iperf3_ports_per_node'))
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
    """The server and client ends of one session: which box, which device, and (GDR) the node's GPU on the node's end, by its
    PCI address where the node's perftest takes one (--use_cuda_bus_id), else by ordinal.

    The client's handshake goes to the server box's control address, whichever rail the session tests.
    """
    bus_id = options['gpu_bus_ids'].get(str(gpu)) if gpu is not None and options['gdr'].get('by_bus_id') else None
    node = {'on': 'node', 'device': pair['device'], 'ib_port': pair['ib_port'], 'gid_index': pair['gid_index'], 'use_cuda': gpu,
            'use_cuda_bus_id': bus_id, 'address': options['node_control_address']}
    peer = {'on': 'peer', 'device': pair['peer_device'], 'ib_port': pair['peer_ib_port'], 'gid_index': pair['peer_gid_index'],
            'use_cuda': None, 'use_cuda_bus_id': None, 'address': options['peer_control_address']}
    server, client = (node, peer) if direction == RECEIVE else (peer, node)
    client = dict(client, connect_to=server['address'])
    return server, client


def _roce(pair):
    return pair.get('link_layer') == 'Ethernet'


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
    # RoCE: several QPs, so ECMP spreads one rail's flows (a profile value), in the site's lossless traffic class.
    if _roce(pair):
        run['qps'] = run['qps'] or params.get('roce_qps')
        run['tclass'] = options['traffic_class']
    else:
        run['tclass'] = None
    gdr = options['gdr'] if gpu is not None else {}
    # A CUDA server initialises its GPU before it listens: the profile's ready timeout (eight of them start at once).
    run['use_cuda_dmabuf'] = bool(gdr.get('use_cuda_dmabuf'))
    run['cuda_device_order'] = gdr.get('cuda_device_order')
    run['ready_timeout'] = params.get('server_ready_timeout') if gpu is not None else None
    return run


def _unplannable(pair, options):
    """Why a rail pair cannot run perftest at all (None when it can): RoCE needs each port's IPv4 GID."""
    if not _roce(pair):
        return None
    for side, gid, device, name in ((('node', pair.get('gid_index'), pair['device'], options['node_name'])),
                                    (('peer', pair.get('peer_gid_index'), pair['peer_device'], options['peer_name']))):
        if gid is None:
            return 'no fabric address for %s on %s: a RoCE rail needs the port\'s IPv4 (its RoCE v2 GID)' % (name, device)
    return None


def _plan_perftest(entry, params, pairs, gpu_pairs, options, ports, expected):
    metric = entry['metrics'][0]
    runs = []
    ways = directions(params, entry['name'])
    if entry['scope'] == catalogue.SCOPE_FIRST_HCA:
        pairs = pairs[:1]
    for pair in pairs:
        gpu = None
        why = _unplannable(pair, options)
        if why:
            for direction in ways:
                expected.append(_expect(metric, pair['device'], why, direction))
            continue
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


def _plan_all_nics(entry, params, pairs, unpaired, options, ports, expected):
    """Every rail at once: one aggregate figure, and per node rail its congestion figures - pause frames per Ethernet
    (RoCE) netdev, the port error counters and PortXmitWait per InfiniBand port (IB has no pause frames) - read on both
    boxes before and after."""
    aggregate, pause, ib_errors, ib_wait = entry['metrics']
    ethernet = [p for p in pairs if _roce(p)]
    infiniband = [p for p in pairs if not _roce(p)]

    def counters(reason=None):
        for pair in ethernet:
            if pair.get('netdev'):
                expected.append(_expect(pause, pair['netdev'], reason))
        for pair in infiniband:
            expected.append(_expect(ib_errors, pair['device'], reason))
            expected.append(_expect(ib_wait, pair['device'], reason))

    usable = [p for p in pairs if not _unplannable(p, options)]
    if len(usable) + len(unpaired) < 2:
        expected.append(_expect(aggregate, 'all NICs', 'the node has %d rail(s): nothing to run at once' % (len(usable) + len(unpaired))))
        return []
    if unpaired or len(usable) < len(pairs):
        reason = ('not every rail of the node can run at once (%s): the aggregate would not be the node\'s'
                  % '; '.join([u['reason'] for u in unpaired] + [_unplannable(p, options) for p in pairs if p not in usable]))
        expected.append(_expect(aggregate, 'all NICs', reason))
        counters(reason)
        return []
    expected.append(_expect(aggregate, 'all NICs'))
    counters()
    duration = _duration(params, options)
    runs = []
    for pair in pairs:
        run = _perftest_run(entry, pair, params, options, ports, aggregate, RECEIVE)
        run['id'] = '%s:%s' % (aggregate, pair['device'])
        runs.append(run)
    return [{'test': entry['name'], 'tool': entry['tool'], 'metric': aggregate, 'pause_metric': pause, 'ib_error_metric': ib_errors,
             'ib_wait_metric': ib_wait, 'id': '%s:all NICs' % aggregate, 'subject': 'all NICs', 'duration': duration,
             'timeout': _timeout('perftest', duration, params, options), 'clients': runs,
             # What the counter snapshots read on each box: RoCE netdevs (ethtool -S), InfiniBand ports (sysfs counters).
             'counters': {'node_netdevs': [p['netdev'] for p in ethernet if p.get('netdev')],
                          'peer_netdevs': [p['peer_netdev'] for p in ethernet if p.get('peer_netdev')],
                          'node_devices': [p['device'] for p in infiniband], 'peer_devices': [p['peer_device'] for p in infiniband],
                          'peer_of': dict((p['device'], p['peer_device']) for p in pairs)}}]


def _ip_expected(entry, subject, reason, expected):
    for metric in entry['metrics']:
        expected.append(_expect(metric, subject, reason))
    return []


def _plan_iperf3(entry, params, run, path, options, expected):
    """Several iperf3 server/client pairs per direction (``processes``, each ``-P parallel``), summed; every server bound
    to its box's address on the tested rail, every client too, and one set of servers per direction (a ``-1`` server
    serves one test).  The node receives: its servers, the peer's clients; ``send`` puts the servers on the peer.  On
    IPoIB the figure is recorded, not graded, unless the contract says ``grade_ipoib``: TCP over IPoIB says little
    about the rail.  Pinned to the cores of the NIC's NUMA node with ``pin`` and known cores."""
    ports = _Ports(options, 'iperf3')
    processes = max(1, int(params.get('processes') or 1))
    cores = (path['pair'].get('local_cpus') or []) if params.get('pin') else []
    ungraded = None
    if path['link_layer'] == 'InfiniBand' and not params.get('grade_ipoib'):
        ungraded = 'TCP over IPoIB (%s) is recorded, not graded (tests.iperf3.grade_ipoib)' % path['netdev']
    ways = []
    for direction in directions(params, entry['name']):
        expected.append(_expect('iperf3_gbps', run['subject'], direction=direction))
        receive = direction == RECEIVE
        figure_id = _figure_id('iperf3_gbps', run['subject'], direction)
        server_bind, client_bind = (path['node_ip'], path['peer_ip']) if receive else (path['peer_ip'], path['node_ip'])
        server_sessions, client_sessions = [], []
        for index in range(processes):
            name, port = '%s#%d' % (figure_id, index + 1), ports.take()
            # The node's cores are known (its NIC's NUMA node); the peer's end runs where its scheduler puts it.
            affinity = cores[index % len(cores)] if cores else None
            server_sessions.append({'id': name, 'port': port, 'bind': server_bind, 'affinity': affinity if receive else None})
            client_sessions.append({'id': name, 'port': port, 'bind': client_bind, 'affinity': None if receive else affinity})
        ways.append(dict(run, direction=direction, id=figure_id, port=server_sessions[0]['port'], server_sessions=server_sessions,
                         client_sessions=client_sessions, server_on='node' if receive else 'peer',
                         client_on='peer' if receive else 'node', connect_to=server_bind, reverse=False, ungraded=ungraded,
                         cpu_bound_percent=params.get('cpu_bound_percent')))
    return ways


def _plan_node_test(entry, params, pairs, path, options, expected):
    module = entry['module']
    duration = _duration(params, options)
    run = {'test': entry['name'], 'module': module, 'metrics': list(entry['metrics']), 'metric': entry['metrics'][0],
           'duration': duration, 'timeout': _timeout(module, duration, params, options),
           'subject': NODE_SUBJECTS.get(module)}
    run.update(dict((k, v) for k, v in params.items()
                    if k not in ('enabled', 'ungraded', 'duration', 'directions') and k not in NCCL_PLANNED))
    if module in ('iperf3', 'jumbo_ping'):
        if path.get('problem'):
            return _ip_expected(entry, None, path['problem'], expected)
        run.update(subject=path['peer_ip'], peer_address=path['peer_ip'], node_address=path['node_ip'], interface=path['netdev'],
                   link_layer=path['link_layer'], device=path['device'], peer_device=path['peer_device'],
                   route={'dest': path['peer_ip'], 'source': path['node_ip'], 'interface': path['netdev']})
    if entry['ports'] == catalogue.PORTS_IPERF3:
        return _plan_iperf3(entry, params, run, path, options, expected)
    elif module == 'jumbo_ping':
        # The profile's count, as the run's packets: a template reading run.count would find str.count on a mock.
        # The size comes from the interface's own MTU (IPoIB 2044/4092, a RoCE netdev's 9000): a path that carries
        # less than the interface is the fault; whether a RoCE rail's MTU meets the contract is preflight's rail_mtu.
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


def _blocked(entry, pairs, reason, expected):
    """The figures of a test a failed GPU prerequisite rules out: expected with the prerequisite's words, nothing run."""
    for metric in entry['metrics']:
        if entry['scope'] == catalogue.SCOPE_GPU_NIC:
            for pair in pairs:
                expected.append(_expect(metric, pair['device'], reason, error_class=GPU_PREREQUISITE))
        else:
            expected.append(_expect(metric, NODE_SUBJECTS.get(entry['module']), reason, error_class=GPU_PREREQUISITE))


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

    ``profile``: the resolved tier profile; ``node_ports`` / ``peer_ports``: each box's compute rails (compute_rails'
    ``rails``: rdma_info ``live_ports`` entries); ``gpu_pairs``: gpu_info's ``gpu_nic_pairs``; ``options``: slot,
    perftest_port_base, iperf3_port_base, ports_per_node, iperf3_ports_per_node, duration_override, timeout_margin,
    retest_only, retest_tests, node_address / peer_address (the inventory's fabric addresses of the boxes, else the
    rails' own), node_control_address / peer_control_address (where a perftest handshake goes: the box's management
    address), node_name / peer_name (for the reasons), rails_map (netval_rails), traffic_class
    (netval_roce_tclass), nccl_env_names, phase (all, peer: the tests that need a peer, local: those that do not),
    gdr (the node's GPUDirect end), gpu_bus_ids and blocked ({test: reason}: tests a failed GPU prerequisite rules out,
    their figures expected with the reason).

    Returns {tests: [names in run order], runs: {test name: [run, ...]}, perftest_tests: [names of one-HCA-at-a-time
    perftest tests], perftest_batches: [perftest_batches(...) of those tests, each with its test, in run order], expected: [{id, metric, subject, test,
    reason}], pairs: [rail pairs, each with paired_by], unpaired: [{device, reason}], ip_path: {pair, node_ip, peer_ip,
    netdev, link_layer} or {problem}}.  Subjects of node-scope figures are the peer's address on the IP rail (iperf3,
    ping), 'all_reduce' (nccl) and 'all NICs', as the measurements name them.
    """
    options = _options(options)
    tests_params = (profile or {}).get('tests') or {}
    pairs, unpaired = rails.rail_pairs(node_ports, peer_ports, options['rails_map'], options['peer_name'])
    path = rails.ip_path(pairs, options['node_name'], options['peer_name'], options['node_address'], options['peer_address'])
    ports = _Ports(options)
    plan = {'tests': [], 'runs': {}, 'perftest_batches': [], 'perftest_tests': [], 'expected': [], 'pairs': pairs}
    if profile:
        plan.update(unpaired=unpaired, ip_path=path)
    for entry in catalogue.enabled_tests(profile):
        if options['retest_only'] and (not entry['retest'] or (options['retest_tests'] and entry['name'] not in options['retest_tests'])):
            continue
        if options['phase'] != 'all' and entry['needs_peer'] != (options['phase'] == 'peer'):
            continue
        params = tests_params.get(entry['name']) or {}
        if entry['name'] in options['blocked']:
            _blocked(entry, pairs, options['blocked'][entry['name']], plan['expected'])
            continue
        if entry['needs_peer'] and entry['module'] == 'perftest' and not pairs:
            for metric in entry['metrics']:
                plan['expected'].append(_expect(metric, None, 'no rail pair between the node and its peer: %s'
                                                % ('; '.join(u['reason'] for u in unpaired) or 'the peer has no live rail')))
            continue
        if entry['scope'] in (catalogue.SCOPE_HCA, catalogue.SCOPE_GPU_NIC, catalogue.SCOPE_FIRST_HCA):
            for left in unpaired if entry['scope'] != catalogue.SCOPE_FIRST_HCA or not pairs else []:
                for direction in directions(params, entry['name']):
                    plan['expected'].append(_expect(entry['metrics'][0], left['device'], left['reason'], direction))
        if entry['scope'] == catalogue.SCOPE_ALL_HCAS:
            runs = _plan_all_nics(entry, params, pairs, unpaired, options, ports, plan['expected'])
        elif entry['module'] == 'perftest':
            runs = _plan_perftest(entry, params, pairs, gpu_pairs, options, ports, plan['expected'])
            if runs:
                plan['perftest_tests'].append(entry['name'])
        else:
            runs = _plan_node_test(entry, params, pairs, path, options, plan['expected'])
        plan['tests'].append(entry['name'])
        plan['runs'][entry['name']] = _with_server_deadlines(runs, options)
        if entry['name'] in plan['perftest_tests']:
            plan['perftest_batches'].extend(dict(batch, test=entry['name']) for batch in
                                            repeated_batches(perftest_batches(plan['runs'][entry['name']]), params.get('repeats')))
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


SHARED_PERFTEST = ('tool', 'size', 'tx_depth', 'qps', 'duration', 'report_gbits', 'tclass', 'use_cuda_dmabuf', 'cuda_device_order',
                   'ready_timeout')


def perftest_batches(runs):
    """One-HCA-at-a-time runs grouped so one module call starts every server on a box, one runs the clients in turn,
    one stops the servers: {id, server_on, client_on, tool, size, tx_depth, qps, duration, report_gbits, tclass, runs,
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
                                 'gid_index': server['gid_index'], 'use_cuda': server['use_cuda'],
                                 'use_cuda_bus_id': server.get('use_cuda_bus_id'), 'timeout': run['server_timeout']})
        batch['clients'].append({'id': run['id'], 'server': client['connect_to'], 'device': client['device'],
                                 'ib_port': client['ib_port'], 'port': run['port'], 'gid_index': client['gid_index'],
                                 'use_cuda': client['use_cuda'], 'use_cuda_bus_id': client.get('use_cuda_bus_id'), 'timeout': run['timeout']})
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
