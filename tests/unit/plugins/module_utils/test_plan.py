"""The test plan: every run, port, GPU, duration and timeout decided in Python, from the shipped tier profiles."""
import os

import copy

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import nvidia
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, plan
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']

TOPO = 'nvidia-smi-topo/topo_m_dgx_a100_NV12_12NICs_pxb_nccl1505_truncated.txt'


def live_ports(count, prefix='mlx5_', netdev='ibp%ds0', gid=None, host=11, addressed=None, layer='InfiniBand'):
    """rdma_info live_ports as rdma.select_live_ports returns them: rail i in 10.252.i.0/24 (the box's host part ``host``),
    only the rails in ``addressed`` with an address (every rail when None)."""
    ports = []
    for i in range(count):
        ip = '10.252.%d.%d' % (i, host) if addressed is None or i in addressed else None
        ports.append({'device': '%s%d' % (prefix, i), 'port': 1, 'netdev': netdev % i, 'ipv4': ip, 'ipv4_prefixlen': 24 if ip else None,
                      'rate_gbps': 400, 'link_layer': layer, 'gid_index': gid})
    return ports


def peer_ports(count, **kwargs):
    return live_ports(count, host=21, **kwargs)


def gpu_pairs_of(devices):
    """GPU-NIC pairs from a real DGX A100 topology (nvidia-smi topo -m), its NIC columns renamed to ``devices``."""
    pairs = nvidia.pair_gpus_with_nics(nvidia.parse_nvidia_smi_topo(fixtures.shared(TOPO)))
    return [dict(pair, nic=device) for pair, device in zip(pairs, devices)]


def plan_400g(slot=0, node=None, peer=None, **options):
    node = node or live_ports(8)
    options = dict({'slot': slot, 'node_name': 'node01', 'peer_name': 'peer01', 'node_control_address': '10.251.0.11',
                    'peer_control_address': '10.251.0.21'}, **options)
    return plan.tier_test_plan(TIERS['400G'], node, peer or peer_ports(8), gpu_pairs_of([p['device'] for p in node]), options)


def batches_of(made, test):
    return [batch for batch in made['perftest_batches'] if batch['test'] == test]


def perftest_ports(made):
    ports = []
    for name in made['perftest_tests']:
        ports += [run['port'] for run in made['runs'][name]]
    for run in made['runs'].get('all_nics', []):
        ports += [client['port'] for client in run['clients']]
    return ports


def test_400g_plan_runs_every_enabled_test_in_catalogue_order():
    made = plan_400g()
    assert made['tests'] == [t['name'] for t in catalogue.enabled_tests(TIERS['400G'])]
    assert made['tests'] == ['jumbo_ping', 'iperf3', 'ib_send_bw', 'gdr', 'all_nics', 'nccl', 'dcgmi']
    assert [r['device'] for r in made['runs']['ib_send_bw']] == ['mlx5_%d' % i for i in range(8)]
    assert made['runs']['ib_send_bw'][0]['tx_depth'] == 128 and made['runs']['ib_send_bw'][0]['size'] == 65536


def test_perftest_batches_come_in_the_plans_run_order_each_naming_its_test():
    made = plan_400g()
    assert made['perftest_tests'] == ['ib_send_bw', 'gdr']
    tests_in_order = [batch['test'] for batch in made['perftest_batches']]
    assert tests_in_order == sorted(tests_in_order, key=made['perftest_tests'].index) and set(tests_in_order) == {'ib_send_bw', 'gdr'}
    assert [run['id'] for batch in made['perftest_batches'] for run in batch['runs']] == \
        [run['id'] for name in made['perftest_tests'] for run in made['runs'][name]]


def test_no_profile_and_no_peer_ports_plan_nothing_as_tier_tests_plans_a_pass_whose_peer_is_gone():
    gone = plan.tier_test_plan({}, live_ports(8), [], gpu_pairs_of(['mlx5_%d' % i for i in range(8)]),
                               {'slot': 3, 'phase': 'peer'})
    assert gone == {'tests': [], 'runs': {}, 'perftest_batches': [], 'perftest_tests': [], 'expected': [], 'pairs': []}
    assert plan_400g(phase='peer')['tests']   # the same options with the profile plan the peer tests


def test_ports_are_unique_across_test_kinds_and_across_nodes_sharing_a_peer():
    first, second = plan_400g(slot=0), plan_400g(slot=1)
    ports_first, ports_second = perftest_ports(first), perftest_ports(second)
    assert len(ports_first) == len(set(ports_first)) == 8 + 8 + 8
    assert not set(ports_first) & set(ports_second)
    assert min(ports_second) == 18515 + 32
    iperf_first = [s['port'] for run in first['runs']['iperf3'] for s in run['server_sessions']]
    iperf_second = [s['port'] for run in second['runs']['iperf3'] for s in run['server_sessions']]
    assert iperf_first == list(range(5201, 5209)) and iperf_second == list(range(5201 + 16, 5209 + 16))


def test_a_plan_that_needs_more_ports_than_its_block_is_an_error_not_an_overlap():
    with pytest.raises(plan.PlanError, match='tier_tests_ports_per_node'):
        plan_400g(ports_per_node=16)


def test_durations_and_timeouts_come_from_the_profile_or_the_override():
    made = plan_400g()
    assert made['runs']['iperf3'][0]['duration'] == 60 and made['runs']['iperf3'][0]['timeout'] == 120
    assert made['runs']['all_nics'][0]['duration'] == 60
    # Per-HCA perftest runs last the profile's duration (-D), never perftest's 1,000 iterations (~1.4 ms at 400 Gb/s).
    assert made['runs']['ib_send_bw'][0]['duration'] == 10 and made['runs']['ib_send_bw'][0]['timeout'] == 10 + 60
    assert {r['duration'] for r in made['runs']['gdr']} == {10}
    # ib_write_lat keeps perftest's iteration count: its latency columns come from it.
    pair = plan.tier_test_plan(TIERS['roce-pair-2x100g'], live_ports(1, layer='Ethernet', gid=3), peer_ports(1, layer='Ethernet', gid=3),
                               [], {})
    assert pair['runs']['ib_write_lat'][0]['duration'] is None and pair['runs']['ib_write_bw'][0]['duration'] == 10
    assert made['runs']['dcgmi'][0]['level'] == 3 and made['runs']['dcgmi'][0]['timeout'] == 3600 + 60
    short = plan_400g(duration_override=2, timeout_margin=10)
    assert {r['duration'] for name in ('ib_send_bw', 'gdr') for r in short['runs'][name]} == {2}
    assert short['runs']['iperf3'][0]['timeout'] == 12 and short['runs']['all_nics'][0]['clients'][0]['timeout'] == 12


def test_gdr_runs_each_nic_with_its_numa_local_gpu_and_names_the_one_without():
    node = live_ports(8)
    pairs = gpu_pairs_of([p['device'] for p in node])
    pairs[3] = dict(pairs[3], gpu=None)
    made = plan.tier_test_plan(TIERS['400G'], node, live_ports(8), pairs, {})
    assert [(r['device'], r['use_cuda']) for r in made['runs']['gdr']] == [
        ('mlx5_0', 0), ('mlx5_1', 0), ('mlx5_2', 2), ('mlx5_4', 0), ('mlx5_5', 0), ('mlx5_6', 4), ('mlx5_7', 4)]
    missing = [e for e in made['expected'] if e['metric'] == 'gdr_bw_gbs' and e['reason']]
    assert [e['subject'] for e in missing] == ['mlx5_3'] and 'no GPU paired' in missing[0]['reason']
    assert all(r['use_cuda'] is None for r in made['runs']['ib_send_bw'])


def test_a_peer_with_fewer_rails_is_a_planning_problem_with_our_cause_never_a_silent_reuse():
    made = plan_400g(peer=peer_ports(4))
    # The peer's four rails measure the node's same four; never one peer HCA for two node rails.
    assert [(r['device'], r['peer_device']) for r in made['runs']['ib_send_bw']] == [('mlx5_%d' % i, 'mlx5_%d' % i) for i in range(4)]
    unmeasured = [e for e in made['expected'] if e['metric'] == 'ib_send_bw_gbs' and e['reason']]
    assert [e['subject'] for e in unmeasured] == ['mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7']
    assert 'no rail of peer01 for mlx5_4' in unmeasured[0]['reason'] and 'peer01 has 4 rail(s) for the node\'s 8' in unmeasured[0]['reason']
    assert made['runs']['all_nics'] == []
    reasons = [e['reason'] for e in made['expected'] if e['test'] == 'all_nics']
    # The aggregate and the paired rails' IB counters: none can be the node's with half of its rails idle.
    assert len(reasons) == 1 + 2 * 4 and all('not every rail of the node can run at once' in r for r in reasons)


def test_no_peer_port_means_every_rdma_figure_is_expected_with_the_reason():
    made = plan.tier_test_plan(TIERS['400G'], live_ports(8), [], [], {'peer_name': 'peer01'})
    rdma = [e for e in made['expected'] if e['test'] in ('ib_send_bw', 'gdr', 'all_nics')]
    assert rdma and all('no rail pair between the node and its peer' in e['reason'] for e in rdma)
    # Without a rail pair there is no rail for the IP tests either: their figures carry the reason, nothing runs.
    ip = [e for e in made['expected'] if e['test'] in ('jumbo_ping', 'iperf3')]
    assert len(ip) == 3 and all('no rail pair' in e['reason'] for e in ip)
    assert 'ib_send_bw' not in made['runs'] and made['runs']['iperf3'] == []


def test_expected_lists_one_figure_per_hca_and_per_node_test():
    ids = [e['id'] for e in plan_400g()['expected']]
    assert len(ids) == len(set(ids))
    assert 'iperf3_gbps:10.252.0.21' in ids and 'jumbo_ping_rtt_ms:10.252.0.21' in ids and 'all_nics_gbs:all NICs' in ids
    assert sum(1 for i in ids if i.startswith('ib_send_bw_gbs:')) == 8
    # InfiniBand rails have no pause frames: their port error counters and PortXmitWait instead.
    assert not [i for i in ids if i.startswith('pause_per_s:')]
    assert sum(1 for i in ids if i.startswith('ib_port_errors:')) == 8 and sum(1 for i in ids if i.startswith('ib_xmit_wait_per_s:')) == 8
    assert 'nccl_wrong:all_reduce' in ids and 'dcgmi_diag:*' in ids


def test_retest_plan_has_only_what_a_second_peer_re_measures():
    made = plan_400g(retest_only=True)
    assert made['tests'] == ['jumbo_ping', 'iperf3', 'ib_send_bw', 'gdr', 'all_nics']
    assert 'nccl_busbw_gbs' not in {e['metric'] for e in made['expected']} and 'dcgmi_diag' not in {e['metric'] for e in made['expected']}


def test_roce_pair_keeps_each_boxs_device_latency_on_the_first_hca_and_gbits():
    node = [{'device': 'rocep1s0f0', 'port': 1, 'netdev': 'enp1s0f0np0', 'gid_index': 3, 'ipv4': '192.168.100.1', 'ipv4_prefixlen': 30,
             'link_layer': 'Ethernet', 'rate_gbps': 100}]
    peer = [{'device': 'rocep1s0f1', 'port': 1, 'netdev': 'enp1s0f1np1', 'gid_index': 5, 'ipv4': '192.168.100.2', 'ipv4_prefixlen': 30,
             'link_layer': 'Ethernet', 'rate_gbps': 100}]
    made = plan.tier_test_plan(TIERS['roce-pair-2x100g'], node, peer, [], {})
    # Named differently on each box: the one cable's two ends share a /30.
    assert made['pairs'][0]['paired_by'] == 'subnet 192.168.100.0/30'
    write, = made['runs']['ib_write_bw']
    assert (write['device'], write['peer_device'], write['gid_index'], write['peer_gid_index']) == ('rocep1s0f0', 'rocep1s0f1', 3, 5)
    assert write['report_gbits'] is True and write['metric'] == 'ib_write_bw_gbps'
    assert [r['metric'] for r in made['runs']['ib_write_lat']] == ['ib_write_lat_us']
    nccl, = made['runs']['nccl']
    # Each box's own device with its port, in NCCL's exact items; the two ports report different GID indexes (3 and 5).
    assert nccl['ib_hca'] == ['rocep1s0f0:1', 'rocep1s0f1:1'] and nccl['rails'] == 1
    assert nccl['gid_index'] is None and 'rocep1s0f0 3 / rocep1s0f1 5' in nccl['gid_note']
    assert nccl['rail_netdevs'] == ['enp1s0f0np0', 'enp1s0f1np1'] and 'socket_ifname' not in nccl
    assert nccl['at_bytes'] == 16384 and nccl['net_plugin'] == 'none'


def test_nccl_selects_exactly_the_tested_rails_of_a_dgx_with_storage_ports():
    # A DGX H100: mlx5_0..7 the compute rails, mlx5_10 and mlx5_11 the storage ports; the node's and peer's pairs
    # name the compute rails only (issue 29's rail selector gives these pairs; here: the first eight live ports).
    node = live_ports(8)
    made = plan.tier_test_plan(TIERS['400G'], node, live_ports(8), gpu_pairs_of([p['device'] for p in node]), {})
    nccl, = made['runs']['nccl']
    assert nccl['ib_hca'] == ['mlx5_%d:1' % i for i in range(8)] and nccl['rails'] == 8
    # Exact items: no item is a prefix of a storage port's name once written as NCCL_IB_HCA==... (nccl_tests).
    assert not any(item.split(':')[0] in ('mlx5_10', 'mlx5_11') for item in nccl['ib_hca'])
    assert all(':' in item for item in nccl['ib_hca'])
    # InfiniBand: no GID index; no tier constant either (the 400G tier named 3 and 106 before).
    assert nccl['gid_index'] is None and nccl['gid_note'] is None and nccl['ib_tc'] is None
    assert 'gid_index' not in TIERS['400G']['tests']['nccl'] and 'ib_tc' not in TIERS['400G']['tests']['nccl']


def test_nccl_gid_index_comes_from_the_ports_and_the_traffic_class_from_the_site():
    node, peer = live_ports(2, netdev='ens%dnp0', gid=3), live_ports(2, netdev='ens%dnp0', gid=3)
    nccl, = plan.tier_test_plan(TIERS['400G'], node, peer, [], {'traffic_class': 106})['runs']['nccl']
    assert (nccl['gid_index'], nccl['gid_note'], nccl['ib_tc']) == (3, None, 106)
    # One port with IPv6 enabled (another index): NCCL_IB_GID_INDEX cannot be one number, NCCL picks per port.
    peer[1]['gid_index'] = 5
    nccl, = plan.tier_test_plan(TIERS['400G'], node, peer, [], {})['runs']['nccl']
    assert nccl['gid_index'] is None and 'mlx5_1 3 / mlx5_1 5' in nccl['gid_note'] and 'NCCL (2.21 or later)' in nccl['gid_note']
    # A RoCE port without a RoCE v2 IPv4 GID beside one with: not one index either.
    peer[1]['gid_index'] = None
    assert plan.tier_test_plan(TIERS['400G'], node, peer, [], {})['runs']['nccl'][0]['gid_index'] is None
    with pytest.raises(plan.PlanError, match='netval_roce_tclass'):
        plan.tier_test_plan(TIERS['400G'], node, peer, [], {'traffic_class': 300})


def test_nccl_settings_the_operator_sets_himself_are_left_to_him():
    node, peer = live_ports(2, gid=3), live_ports(2, gid=3)
    options = {'traffic_class': 106, 'nccl_env_names': ['NCCL_IB_GID_INDEX', 'NCCL_IB_TC', 'UCX_TLS']}
    nccl, = plan.tier_test_plan(TIERS['400G'], node, peer, [], options)['runs']['nccl']
    assert nccl['gid_index'] is None and nccl['ib_tc'] is None and nccl['ib_hca'] == ['mlx5_0:1', 'mlx5_1:1']
    assert nccl['operator_env'] == ['NCCL_IB_GID_INDEX', 'NCCL_IB_TC']
    # A contract that still names a GID index or traffic class is not followed: the ports and the site decide.
    contract = copy.deepcopy(TIERS['400G'])
    contract['tests']['nccl'].update(gid_index=7, ib_tc=96)
    nccl, = plan.tier_test_plan(contract, node, peer, [], {})['runs']['nccl']
    assert (nccl['gid_index'], nccl['ib_tc']) == (3, None)


def test_bad_options_are_refused_with_the_option_named():
    with pytest.raises(plan.PlanError, match='slot'):
        plan_400g(slot='first')
    with pytest.raises(plan.PlanError, match='timeout_margin'):
        plan_400g(timeout_margin=-1)


def test_every_server_has_a_deadline_that_covers_the_sessions_before_it():
    made = plan_400g(duration_override=2, timeout_margin=10)
    sends = made['runs']['ib_send_bw']
    assert [r['server_timeout'] for r in sends] == [12 * (i + 1) + 10 for i in range(8)]
    clients = made['runs']['all_nics'][0]['clients']
    assert {c['server_timeout'] for c in clients} == {12 + 10}
    assert made['runs']['iperf3'][0]['server_timeout'] == 12 + 10


def test_the_node_receives_by_default_and_the_reverse_is_an_option():
    made = plan_400g()
    first = made['runs']['ib_send_bw'][0]
    # The handshake goes to the node's management address (ansible_host), never to an address on the tested rail.
    assert (first['server']['on'], first['client']['on'], first['client']['connect_to']) == ('node', 'peer', '10.251.0.11')
    gdr = made['runs']['gdr'][0]
    assert (gdr['server']['on'], gdr['server']['use_cuda'], gdr['client']['use_cuda']) == ('node', 0, None)
    send_too = dict(TIERS['400G']['tests']['ib_send_bw'], directions=['send', 'receive'])
    both = dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], ib_send_bw=send_too))
    # Addressed rail or not, each server's handshake goes to its box's management address: the rail's address may not be
    # reachable from the other box (rails not routed to each other, an IPoIB rail misrouted or unaddressed).
    made = plan.tier_test_plan(both, live_ports(2, addressed=[0]), peer_ports(2), [],
                               {'node_control_address': '10.251.0.11', 'peer_control_address': '10.251.0.21'})
    runs = made['runs']['ib_send_bw']
    assert [(r['id'], r['server']['on'], r['client']['connect_to'], r['client']['device']) for r in runs] == [
        ('ib_send_bw_gbs:mlx5_0', 'node', '10.251.0.11', 'mlx5_0'), ('ib_send_bw_gbs:mlx5_0:send', 'peer', '10.251.0.21', 'mlx5_0'),
        ('ib_send_bw_gbs:mlx5_1', 'node', '10.251.0.11', 'mlx5_1'), ('ib_send_bw_gbs:mlx5_1:send', 'peer', '10.251.0.21', 'mlx5_1')]
    assert len([e for e in made['expected'] if e['metric'] == 'ib_send_bw_gbs']) == 4
    with pytest.raises(plan.PlanError, match='directions'):
        plan.tier_test_plan(dict(both, tests=dict(both['tests'], iperf3={'enabled': True, 'directions': ['sideways']})),
                            live_ports(2), live_ports(2), [], {})


def test_a_retest_plan_can_be_narrowed_to_the_rejected_tests():
    made = plan_400g(retest_only=True, retest_tests=['gdr'])
    assert made['tests'] == ['gdr'] and {e['metric'] for e in made['expected']} == {'gdr_bw_gbs'}


def test_one_hca_at_a_time_runs_are_batched_per_box_pair_with_the_perftest_session_keys():
    made = plan_400g()
    batch, = batches_of(made, 'ib_send_bw')
    assert (batch['server_on'], batch['client_on'], batch['tool'], batch['tx_depth']) == ('node', 'peer', 'ib_send_bw', 128)
    assert [s['id'] for s in batch['servers']] == [r['id'] for r in made['runs']['ib_send_bw']]
    assert set(batch['servers'][0]) == {'id', 'device', 'ib_port', 'port', 'gid_index', 'use_cuda', 'use_cuda_bus_id', 'timeout'}
    assert set(batch['clients'][0]) == {'id', 'server', 'device', 'ib_port', 'port', 'gid_index', 'use_cuda', 'use_cuda_bus_id', 'timeout'}
    assert batch['clients'][0]['server'] == '10.251.0.11' and batch['servers'][0]['timeout'] == made['runs']['ib_send_bw'][0]['server_timeout']
    assert batch['tclass'] is None and batch['qps'] is None  # InfiniBand: no traffic class, one QP
    gdr, = batches_of(made, 'gdr')
    assert [s['use_cuda'] for s in gdr['servers']] == [r['use_cuda'] for r in made['runs']['gdr']]
    send_too = dict(TIERS['400G']['tests']['ib_send_bw'], directions=['send', 'receive'])
    both = plan.tier_test_plan(dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], ib_send_bw=send_too)),
                               live_ports(2), live_ports(2), [], {})
    assert [(b['server_on'], len(b['runs'])) for b in batches_of(both, 'ib_send_bw')] == [('node', 1), ('peer', 1), ('node', 1), ('peer', 1)]


def test_the_all_nics_run_is_one_batch_whose_sessions_are_its_clients():
    run = plan_400g()['runs']['all_nics'][0]
    batch = run['batch']
    assert [s['id'] for s in batch['servers']] == [s['id'] for s in batch['clients']] == [c['id'] for c in run['clients']]
    assert [s['port'] for s in batch['servers']] == [c['port'] for c in run['clients']]
    assert batch['server_on'] == 'node' and batch['client_on'] == 'peer'  # the node receives on every HCA
    # One concurrent session: every server lives until the slowest client is done, plus the margin.
    assert len(set(s['timeout'] for s in batch['servers'])) == 1 and batch['servers'][0]['timeout'] > batch['clients'][0]['timeout']


def test_repeats_run_the_whole_round_again_with_the_same_runs_and_their_own_batch_ids():
    profile = dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], ib_send_bw=dict(TIERS['400G']['tests']['ib_send_bw'], repeats=3)))
    node = live_ports(8)
    made = plan.tier_test_plan(profile, node, peer_ports(8), gpu_pairs_of([p['device'] for p in node]),
                               {'slot': 0, 'node_name': 'node01', 'peer_name': 'peer01', 'node_control_address': '10.251.0.11',
                                'peer_control_address': '10.251.0.21'})
    once = plan_400g()
    batches = batches_of(made, 'ib_send_bw')
    assert len(batches) == 3 * len(batches_of(once, 'ib_send_bw'))
    assert [b['repeat'] for b in batches] == sorted([1, 2, 3] * len(batches_of(once, 'ib_send_bw')))
    assert len(set(b['id'] for b in batches)) == len(batches)
    # The same runs (ids, ports) each time: their measurements are one figure's samples.
    assert [r['id'] for r in batches[0]['runs']] == [r['id'] for r in batches[-1]['runs']]
    assert batches_of(made, 'gdr') == batches_of(once, 'gdr') and [b['repeat'] for b in batches_of(once, 'ib_send_bw')] == [1]
    assert len([e for e in made['expected'] if e['metric'] == 'ib_send_bw_gbs']) == 8


@pytest.mark.parametrize('test, repeats, message', [
    ('ib_send_bw', 0, 'must be a whole number from 1 to 10, got 0'),
    ('ib_send_bw', 11, 'must be a whole number from 1 to 10, got 11'),
    ('ib_send_bw', True, 'must be a whole number from 1 to 10, got True'),
    ('ib_send_bw', '3', "must be a whole number from 1 to 10, got '3'"),
    ('iperf3', 3, 'tests.iperf3.repeats applies to the one-HCA-at-a-time perftest tests only'),
    ('all_nics', 3, 'tests.all_nics.repeats applies to the one-HCA-at-a-time perftest tests only'),
])
def test_repeats_are_checked_where_the_profile_is(test, repeats, message):
    profile = dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], **{test: dict(TIERS['400G']['tests'][test], repeats=repeats)}))
    errors = catalogue.profile_errors(profile, '400G')
    assert [e for e in errors if message in e], errors
    good = dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], gdr=dict(TIERS['400G']['tests']['gdr'], repeats=10)))
    assert catalogue.profile_errors(good, '400G') == []


def test_the_local_phase_plans_only_what_needs_no_peer_and_the_peer_phase_the_rest():
    node = live_ports(8)
    gpus = gpu_pairs_of([p['device'] for p in node])
    local = plan.tier_test_plan(TIERS['400G'], node, [], gpus, {'slot': 0, 'phase': 'local'})
    peer = plan.tier_test_plan(TIERS['400G'], node, peer_ports(8), gpus, {'slot': 0, 'phase': 'peer', 'node_name': 'node01',
                                                                          'peer_name': 'peer01', 'node_control_address': '10.251.0.11',
                                                                          'peer_control_address': '10.251.0.21'})
    whole = plan_400g()
    assert local['tests'] == ['dcgmi'] and [e['metric'] for e in local['expected']] == ['dcgmi_diag']
    assert peer['tests'] == [name for name in whole['tests'] if name != 'dcgmi']
    # Together the two phases plan every figure the single pass does, each once.
    assert sorted(e['id'] for e in local['expected'] + peer['expected']) == sorted(e['id'] for e in whole['expected'])
    assert all(catalogue.needs_peer(name) for name in peer['tests']) and not catalogue.needs_peer('dcgmi')
    # dcgmi shares the node's PCIe complexes with its NICs: never beside the node's own network tests.
    assert not catalogue.test('dcgmi')['beside_network']
    with pytest.raises(plan.PlanError, match='phase must be one of all, peer, local'):
        plan.tier_test_plan(TIERS['400G'], node, [], gpus, {'phase': 'later'})


def test_the_jumbo_ping_run_carries_the_profiles_packet_count_as_packets():
    (run,) = plan_400g()['runs']['jumbo_ping']
    assert run['packets'] == TIERS['400G']['tests']['jumbo_ping'].get('count', 5) and 'count' not in run
    # No MTU of its own: the ping sends at the tested rail's interface MTU (IPoIB 2044/4092, a RoCE netdev's 9000).
    assert 'mtu' not in run and (run['interface'], run['peer_address']) == ('ibp0s0', '10.252.0.21')


def test_iperf3_runs_several_processes_bound_to_the_tested_rails_addresses_with_a_server_set_per_direction():
    node = live_ports(8, addressed=[1, 3])
    for port in node:
        port['local_cpus'] = [0, 1, 2, 3]
    both = dict(TIERS['400G']['tests']['iperf3'], directions=['receive', 'send'])
    profile = dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], iperf3=both))
    made = plan.tier_test_plan(profile, node, peer_ports(8), [], {'node_name': 'node01', 'peer_name': 'peer01'})
    receive, send = made['runs']['iperf3']
    # The node is addressed on mlx5_1 and mlx5_3: the first of them carries the IP tests, never the management network.
    assert (made['ip_path']['device'], made['ip_path']['node_ip'], made['ip_path']['peer_ip']) == ('mlx5_1', '10.252.1.11', '10.252.1.21')
    assert (receive['server_on'], receive['connect_to'], send['server_on'], send['connect_to']) == ('node', '10.252.1.11', 'peer', '10.252.1.21')
    assert [s['bind'] for s in receive['server_sessions']] == ['10.252.1.11'] * 8 and {s['bind'] for s in receive['client_sessions']} == {
        '10.252.1.21'}
    # Eight processes of -P 4 each on their own ports, pinned to the NIC's cores on the node's end; a new set for the reverse.
    assert [s['port'] for s in receive['server_sessions']] == list(range(5201, 5209))
    assert [s['port'] for s in send['server_sessions']] == list(range(5209, 5217)) and receive['parallel'] == 4
    assert [s['affinity'] for s in receive['server_sessions']] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [s['affinity'] for s in send['client_sessions']][:2] == [0, 1] and send['server_sessions'][0]['affinity'] is None
    # Over IPoIB the TCP figure is recorded, not graded, unless the contract says so.
    assert receive['ungraded'] == 'TCP over IPoIB (ibp1s0) is recorded, not graded (tests.iperf3.grade_ipoib)'
    graded = dict(profile, tests=dict(profile['tests'], iperf3=dict(both, grade_ipoib=True)))
    assert plan.tier_test_plan(graded, node, peer_ports(8), [], {})['runs']['iperf3'][0]['ungraded'] is None
    assert receive['route'] == {'dest': '10.252.1.21', 'source': '10.252.1.11', 'interface': 'ibp1s0'}
    with pytest.raises(plan.PlanError, match='tier_tests_iperf3_ports_per_node'):
        plan.tier_test_plan(profile, node, peer_ports(8), [], {'iperf3_ports_per_node': 12})


def test_a_node_without_a_fabric_address_gets_our_cause_for_its_ip_tests_never_the_management_address():
    made = plan_400g(node=live_ports(8, addressed=[]))
    ip = [e for e in made['expected'] if e['test'] in ('jumbo_ping', 'iperf3')]
    assert [e['metric'] for e in ip] == ['jumbo_ping_loss_pct', 'jumbo_ping_rtt_ms', 'iperf3_gbps']
    assert all(e['reason'] == 'no fabric address for node01 on %s' % ', '.join('mlx5_%d' % i for i in range(8)) for e in ip)
    assert made['runs']['jumbo_ping'] == [] and made['runs']['iperf3'] == []
    # The per-HCA RDMA tests still run: their handshake goes to the node's management address, their data path follows -d.
    assert len(made['runs']['ib_send_bw']) == 8 and made['runs']['ib_send_bw'][0]['client']['connect_to'] == '10.251.0.11'


def test_roce_rails_carry_the_sites_traffic_class_several_qps_and_need_their_ipv4_gid():
    node = live_ports(4, netdev='enp%ds0f0np0', gid=3, layer='Ethernet')
    node[2]['gid_index'] = None  # its port lost its IPv4 (no RoCE v2 GID)
    made = plan.tier_test_plan(TIERS['400G'], node, peer_ports(4, netdev='enp%ds0f0np0', gid=3, layer='Ethernet'), [],
                               {'traffic_class': 106, 'node_name': 'node01'})
    sends = made['runs']['ib_send_bw']
    assert [r['device'] for r in sends] == ['mlx5_0', 'mlx5_1', 'mlx5_3']
    assert {(r['tclass'], r['qps']) for r in sends} == {(106, TIERS['400G']['tests']['ib_send_bw']['roce_qps'])}
    batch, = batches_of(made, 'ib_send_bw')
    assert (batch['tclass'], batch['qps']) == (106, 4)
    missing = [e for e in made['expected'] if e['metric'] == 'ib_send_bw_gbs' and e['reason']]
    assert [e['subject'] for e in missing] == ['mlx5_2'] and 'no fabric address for node01 on mlx5_2' in missing[0]['reason']
    # RoCE rails: pause frames per netdev, no IB counters; NCCL gets the same traffic class.
    assert made['runs']['all_nics'] == [] and made['runs']['nccl'][0]['ib_tc'] == 106
    with pytest.raises(plan.PlanError, match='netval_roce_tclass'):
        plan.tier_test_plan(TIERS['400G'], node, node, [], {'traffic_class': 300})
    # An extra var (-e netval_roce_tclass=106) is text: a whole number in it is taken, anything else refused.
    assert plan.tier_test_plan(TIERS['400G'], node, peer_ports(4, netdev='enp%ds0f0np0', gid=3, layer='Ethernet'), [],
                               {'traffic_class': '106'})['runs']['nccl'][0]['ib_tc'] == 106
    with pytest.raises(plan.PlanError, match='netval_roce_tclass'):
        plan.tier_test_plan(TIERS['400G'], node, node, [], {'traffic_class': 'af41'})
    every = plan.tier_test_plan(TIERS['400G'], live_ports(4, netdev='enp%ds0f0np0', gid=3, layer='Ethernet'),
                                peer_ports(4, netdev='enp%ds0f0np0', gid=3, layer='Ethernet'), [], {})
    assert every['runs']['all_nics'][0]['counters']['node_netdevs'] == ['enp%ds0f0np0' % i for i in range(4)]
    assert len([e for e in every['expected'] if e['metric'] == 'pause_per_s']) == 4


BUS_IDS = dict((str(i), '0000:%02x:00.0' % (0x18 + 0x10 * i)) for i in range(8))


def test_gdr_names_the_gpu_by_bus_id_with_dmabuf_and_a_ready_timeout_from_the_profile():
    gdr = {'use_cuda_dmabuf': True, 'cuda_device_order': None, 'by_bus_id': True}
    made = plan_400g(gdr=gdr, gpu_bus_ids=BUS_IDS)
    batch = batches_of(made, 'gdr')[0]
    assert batch['use_cuda_dmabuf'] is True and batch['ready_timeout'] == TIERS['400G']['tests']['gdr']['server_ready_timeout'] == 60
    assert [(s['use_cuda'], s['use_cuda_bus_id']) for s in batch['servers']][:3] == [(0, BUS_IDS['0']), (0, BUS_IDS['0']), (2, BUS_IDS['2'])]
    # The peer's end (the clients) runs in host memory: no GPU, no bus id.
    assert all(c['use_cuda'] is None and c['use_cuda_bus_id'] is None for c in batch['clients'])
    # Host-memory RDMA is never given GPU options.
    send = batches_of(made, 'ib_send_bw')[0]
    assert send['use_cuda_dmabuf'] is False and send['ready_timeout'] is None and send['cuda_device_order'] is None


def test_gdr_by_ordinal_sets_pci_bus_order():
    made = plan_400g(gdr={'use_cuda_dmabuf': False, 'cuda_device_order': 'PCI_BUS_ID', 'by_bus_id': False}, gpu_bus_ids=BUS_IDS)
    batch = batches_of(made, 'gdr')[0]
    assert batch['cuda_device_order'] == 'PCI_BUS_ID' and all(s['use_cuda_bus_id'] is None for s in batch['servers'])


def test_a_test_a_gpu_prerequisite_rules_out_is_expected_with_its_reason_and_not_run():
    reason = 'fabric_manager: NVSwitch fabric not ready on 8 of 8 GPUs'
    made = plan_400g(blocked={'gdr': reason, 'nccl': reason, 'dcgmi': reason})
    assert 'gdr' not in made['runs'] and 'nccl' not in made['runs'] and 'dcgmi' not in made['runs']
    blocked = [e for e in made['expected'] if e.get('error_class') == plan.GPU_PREREQUISITE]
    assert sorted(set(e['test'] for e in blocked)) == ['dcgmi', 'gdr', 'nccl'] and all(e['reason'] == reason for e in blocked)
    assert [e['subject'] for e in blocked if e['metric'] == 'gdr_bw_gbs'] == ['mlx5_%d' % i for i in range(8)]
    assert 'ib_send_bw' in made['runs']
    with pytest.raises(plan.PlanError, match='plan option blocked must be a mapping'):
        plan_400g(blocked=['gdr'])
