"""Measurements from real module result shapes, and preflight findings from inventory facts."""
import os

import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import kernel_log
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import measurements, plan, preflight, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.pcie import parse_lspci
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.perftest import parse_perftest
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    T400 = yaml.safe_load(handle)['tier_profile_tiers']['400G']

SUPERBENCH = 'perftest/ib_write_bw_loopback_8M_interleaved_server_client_superbench.txt'


def perftest_result(text):
    return {'cmd': '/usr/bin/ib_write_bw -d mlx5_0 -s 8388608 10.0.0.2', 'stdout': text, 'stderr': '', 'rc': 0,
            'perftest': parse_perftest(text)}


def run_of(test, metric=None, **extra):
    """A planned run as plugins/module_utils/policy/plan.py makes it (only the keys the readers use)."""
    run = {'test': test, 'metric': metric, 'subject': extra.pop('subject', 'mlx5_0'), 'peer_device': extra.pop('peer_device', 'mlx5_0')}
    run.update(extra)
    return run


def test_perftest_bandwidth_is_converted_exactly_from_mib():
    entry, = measurements.run_measurements(perftest_result(fixtures.shared(SUPERBENCH)), run_of('ib_send_bw', 'ib_send_bw_gbs'), 'peer01')
    # 24056.72 MiB/s * 2^20 = 25.225299 GB/s (decimal)
    assert abs(entry['value'] - 24056.72 * 1048576 / 1e9) < 1e-9
    assert entry['unit'] == 'GB/s' and '24056.72' in entry['as_printed'] and 'MB/sec' in entry['as_printed']
    assert any('#bytes' in line for line in entry['verbatim']) and any(line.lstrip().startswith('8388608') for line in entry['verbatim'])
    assert entry['error'] is None and entry['raw'].startswith(fixtures.shared(SUPERBENCH)[:40])
    assert entry['test'] == 'ib_send_bw' and entry['id'] == 'ib_send_bw_gbs:mlx5_0'


def test_the_unit_of_a_perftest_figure_is_the_catalogues_not_the_metric_names():
    gbits, = measurements.run_measurements(perftest_result(fixtures.shared(SUPERBENCH)), run_of('ib_write_bw', 'ib_write_bw_gbps'))
    assert gbits['unit'] == 'Gb/s' and abs(gbits['value'] - 24056.72 * 1048576 * 8 / 1e9) < 1e-6


def test_perftest_failure_is_an_error_not_a_number_and_keeps_the_failure_shape():
    failed = {'failed': True, 'msg': "node01: `ib_send_bw ...` failed: connect_failed: Couldn't connect to 10.0.0.2:18515",
              'stdout': " Couldn't connect to 10.0.0.2:18515\n", 'perftest': None, 'error_class': 'connect_failed', 'error_side': 'unknown'}
    entry, = measurements.run_measurements(failed, run_of('ib_send_bw', 'ib_send_bw_gbs'))
    assert entry['value'] is None and 'connect_failed' in entry['error']
    assert entry['error_class'] == 'connect_failed' and entry['error_side'] == 'unknown'


def test_iperf3_and_ping_and_nccl_and_dcgmi():
    iperf, = measurements.run_measurements({'received_bps': 361.5e9, 'retransmits': 12, 'stdout': '{}', 'cmd': 'iperf3 -c x'},
                                           run_of('iperf3', 'iperf3_gbps', subject='10.0.0.2'))
    assert iperf['value'] == 361.5 and iperf['unit'] == 'Gb/s' and iperf['id'] == 'iperf3_gbps:10.0.0.2'
    ping = {'loss_percent': 100.0, 'received': 0, 'transmitted': 5, 'rtt_avg_ms': None, 'frag_needed': True,
            'reason': 'fragmentation needed: path MTU 1500 < 9000 (size 8972)', 'stdout': ''}
    loss, rtt = measurements.run_measurements(ping, run_of('jumbo_ping', 'jumbo_ping_loss_pct', subject='10.0.0.2'))
    assert loss['value'] == 100.0 and 'fragmentation needed' in loss['as_printed']
    assert rtt['value'] is None and 'path MTU 1500' in rtt['error']
    held = {'loss_percent': 0.0, 'received': 5, 'transmitted': 5, 'rtt_min_ms': 0.25, 'rtt_avg_ms': 11.925, 'rtt_max_ms': 57.789,
            'rtt_replies_ms': [57.8, 0.364, 0.25, 0.528, 0.696], 'stdout': fixtures.local('ping/iputils_ping_jumbo_8972_one_reply_delayed_tbf_netns_veth.txt')}
    rtt = measurements.run_measurements(held, run_of('jumbo_ping', 'jumbo_ping_loss_pct', subject='10.0.0.2'))[1]
    assert rtt['value'] == 0.528 and rtt['as_printed'] == 'rtt median 0.528 ms (min 0.25, avg 11.925, max 57.789)'
    assert len(rtt['verbatim']) == 7 and 'time=57.8 ms' in rtt['verbatim'][0] and rtt['verbatim'][-1].startswith('rtt min/avg')
    rtt = measurements.run_measurements(dict(held, rtt_replies_ms=[0.1, 1023.0, 0.3, 0.2]), run_of('jumbo_ping', 'jumbo_ping_loss_pct', subject='10.0.0.2'))[1]
    assert rtt['value'] == 0.25  # an even count: the mean of the middle two
    rtt = measurements.run_measurements(dict(held, rtt_replies_ms=[]), run_of('jumbo_ping', 'jumbo_ping_loss_pct', subject='10.0.0.2'))[1]
    assert rtt['value'] == 11.925 and rtt['as_printed'].startswith('rtt avg 11.925 ms')  # a result without replies (ping -q)
    nccl = {'transport': 'Socket', 'stdout': '#  size count\n 1073741824  268435456 float sum -1 1.0 2.0 2.1 0 1.0 2.0 2.0 0\n',
            'rows': [{'size_bytes': 1073741824, 'oop_busbw_gbs': 2.1, 'ip_busbw_gbs': 2.0, 'oop_time_us': 9.0, 'ip_time_us': 9.5, 'wrong': 0}]}
    found = measurements.run_measurements(nccl, run_of('nccl', 'nccl_busbw_gbs', subject='all_reduce', at_bytes=17179869184, rails=8))
    assert [m['metric'] for m in found] == ['nccl_busbw_gbs', 'nccl_small_allreduce_us', 'nccl_wrong', 'nccl_hcas_used']
    assert found[0]['value'] == 2.1 and 'NET/Socket' in found[0]['as_printed'] and found[2]['value'] == 0
    # Over NET/Socket NCCL used no HCA (the transport is graded on its own); the rails go with the per-rail figures.
    assert found[3]['value'] == 0 and 'NET/Socket' in found[3]['as_printed'] and (found[0]['rails'], found[3]['rails']) == (8, 8)
    dcgmi = {'tests': [{'name': 'Memory', 'overall': 'fail', 'per_gpu': {'3': {'status': 'fail'}}},
                       {'name': 'PCIe', 'overall': 'pass', 'per_gpu': {}}, {'name': 'Inforom', 'overall': 'skip'}]}
    graded = measurements.run_measurements(dcgmi, run_of('dcgmi', 'dcgmi_diag', subject='gpus'))
    assert [(m['subject'], m['preset_status']) for m in graded] == [('Memory', 'reject'), ('PCIe', 'healthy')]
    assert 'GPU 3' in graded[0]['as_printed']


def mlx5_counters(pause, prio_bytes, prio_packets, duration):
    """The ethtool -S names a real mlx5 prints for priority 3 (see ../shared/fixtures/ethtool)."""
    return {'rx_prio3_pause': pause, 'tx_prio3_pause': 0, 'rx_pause_ctrl_phy': 0, 'rx_prio3_bytes': prio_bytes,
            'rx_prio3_packets': prio_packets, 'rx_prio3_pause_duration': duration, 'rx_prio3_pause_transition': pause // 2,
            'rx_prio3_discards': 7}


def test_pause_rate_counts_pause_frames_only_per_netdev_with_its_own_timestamps():
    # nic_info stamps each netdev's snapshot (there is no top-level timestamp).
    before = {'nics': {'ens1np0': {'timestamp': 100.0, 'counters': {'counters': mlx5_counters(1000, 10 ** 12, 10 ** 9, 50)}}}}
    grown = mlx5_counters(1001000, 10 ** 12 + 2 * 10 ** 11, 10 ** 9 + 4 * 10 ** 7, 10 ** 8)
    after = {'nics': {'ens1np0': {'timestamp': 120.0, 'counters': {'counters': grown}}}}
    run = {'test': 'all_nics', 'metric': 'all_nics_gbs', 'pause_metric': 'pause_per_s', 'subject': 'all NICs',
           'clients': [{'device': 'mlx5_0', 'netdev': 'ens1np0'}]}
    found = measurements.run_measurements({'clients': [], 'before': before, 'after': after}, run)
    pause = [m for m in found if m['metric'] == 'pause_per_s']
    # 1,000,000 pause frames in 20 s; the bytes (1e10/s), packets, duration (us) and discards counters are not frames.
    assert [(m['subject'], m['value']) for m in pause] == [('ens1np0', 50000.0)]
    assert measurements.is_pause_frame_counter('rx_pause_ctrl_phy') and not measurements.is_pause_frame_counter('rx_prio3_bytes')


def test_pause_rate_without_snapshots_is_an_error_on_our_side_not_a_silent_gap():
    run = {'test': 'all_nics', 'metric': 'all_nics_gbs', 'pause_metric': 'pause_per_s', 'subject': 'all NICs',
           'clients': [{'device': 'mlx5_0', 'netdev': 'ens1np0'}]}
    found = measurements.run_measurements({'clients': [], 'before': {'failed': True}, 'after': {}}, run)
    pause = [m for m in found if m['metric'] == 'pause_per_s']
    assert len(pause) == 1 and pause[0]['value'] is None and pause[0]['error_side'] == 'ours'


def test_aggregate_and_loop_measurements_keep_each_boxs_device_name():
    text = fixtures.shared(SUPERBENCH)
    planned = run_of('ib_write_bw', 'ib_write_bw_gbps', subject='rocep1s0f0', device='rocep1s0f0', peer_device='rocep1s0f1',
                     paired_by='subnet 192.168.100.0/30')
    client = dict(perftest_result(text), item={'pid': 1, 'item': planned})
    found = measurements.loop_measurements([client], 'peer01')
    assert found[0]['subject'] == 'rocep1s0f0' and found[0]['peer_device'] == 'rocep1s0f1'
    assert found[0]['paired_by'] == 'subnet 192.168.100.0/30'
    assert abs(found[0]['value'] - 24056.72 * 1048576 * 8 / 1e9) < 1e-6
    run = {'test': 'all_nics', 'metric': 'all_nics_gbs', 'pause_metric': 'pause_per_s', 'subject': 'all NICs', 'clients': []}
    total = measurements.run_measurements({'clients': [client, client]}, run)[0]
    assert abs(total['value'] - 2 * 24056.72 * 1048576 / 1e9) < 1e-9


def test_a_looped_result_without_its_run_is_refused():
    try:
        measurements.loop_measurements([{'rc': 0, 'item': {'device': 'mlx5_0'}}])
    except ValueError as exc:
        assert 'planned run' in str(exc)
    else:
        raise AssertionError('expected a ValueError')


def test_link_flap_and_aer_findings():
    kernel = {'kernel_log': {'link_events': [{'device': 'mlx5_core 0000:1b:00.0', 'event': 'down', 'line': 'mlx5_core 0000:1b:00.0 ens1np0: Link down'},
                                             {'device': 'mlx5_core 0000:1b:00.0', 'event': 'up', 'line': 'Link up'}],
                             'aer': [{'bdf': '0000:1b:00.0', 'severity': 'Corrected', 'line': 'AER: Corrected error received'}]}}
    found = measurements.link_flap_findings(kernel)
    assert [(f['check'], f['status']) for f in found] == [('link_flap', 'reject'), ('pcie_aer', 'marginal')]
    assert measurements.link_flap_findings({}) == []


def test_link_flap_counts_the_runbook_cable_module_lines():
    log = kernel_log.parse_kernel_log(fixtures.local('kernel_log/journalctl_k_mlx5_port_module_unplugged_plugged_cable_error_runbook_synthetic.txt'))
    found = measurements.link_flap_findings({'kernel_log': log})
    assert [(f['check'], f['subject'], f['status']) for f in found] == [
        ('link_flap', '0000:1b:00.0', 'reject'), ('link_flap', '0000:1c:00.0', 'reject')]
    assert found[0]['actual'] == '1 link down, 1 link up, 1 cable error, 1 module unplugged, 1 module plugged'
    assert found[1]['actual'] == '1 module unplugged'
    assert any('Port module event[plugged_enabled]' in line for line in found[0]['verbatim'])


def test_a_lone_plugged_enabled_line_is_instability():
    log = kernel_log.parse_kernel_log('mlx5_core 0000:1b:00.0: Port module event[plugged_enabled]: module 0\n')
    assert [f['actual'] for f in measurements.link_flap_findings({'kernel_log': log})] == ['1 module plugged']


def facts(gpu_count=8, governor='performance', lnksta=32):
    ports = dict(('mlx5_%d' % i, {'pci_address': '0000:%02x:00.0' % (0x1a + i), 'ports': {'1': {
        'state': 'ACTIVE', 'state_code': 4, 'phys_state': 'LinkUp', 'rate_gbps': 400, 'link_layer': 'InfiniBand'}}}) for i in range(8))
    pcie = {'devices': [{'bdf': '0000:1a:00.0', 'kind': 'nic',
                         'link': {'current_speed_gts': lnksta, 'current_width': 16, 'max_speed_gts': 32, 'max_width': 16},
                         'assessment': {'status': 'ok' if lnksta == 32 else 'degraded', 'reason': 'below capability'},
                         'lspci': {'cmd': 'lspci -vvv -s 1a:00.0', 'link_lines': ['LnkCap: Port #0, Speed 32GT/s, Width x16',
                                                                                  'LnkSta: Speed 16GT/s (downgraded), Width x16']}}]}
    # The runbook's cmdline (iommu=pt, default_hugepagesz=1G, hugepages=N) and the 1G pool it reserves.
    host = {'cmdline': {'tokens': ['ro', 'iommu=pt', 'default_hugepagesz=1G', 'hugepagesz=1G', 'hugepages=128']},
            'hugepages': {'total': 128, 'page_size_bytes': 1073741824, 'pools_kib': {'1048576': 128}},
            'modules': dict((m, {}) for m in T400['host']['modules']), 'cpu_governor': {'uniform': governor, 'counts': {governor: 64}},
            'no_turbo': False, 'memlock': {'soft': 'unlimited', 'hard': 'unlimited'},
            'memlock_login': {'user': 'root', 'soft_kib': 'unlimited', 'source': 'login_shell', 'errors': []}}
    return {'rdma': {'devices': ports}, 'pcie': pcie, 'host': host, 'gpu': {'gpu_count': gpu_count, 'gpus': [], 'xid_events': []},
            'nic': {'msg': 'ethtool missing', 'failed': False}, 'firmware': None}


def test_preflight_healthy_node_has_no_problem_but_a_missing_tool_is_unknown():
    found = preflight.preflight_findings(facts(), T400)
    bad = [f for f in found if f['status'] != 'healthy']
    assert [(f['check'], f['status']) for f in bad] == [('tool', 'unknown')] and 'ethtool missing' in bad[0]['detail']
    assert preflight.blocking(found) == []


def test_preflight_names_the_degraded_nic_by_rdma_name_with_lspci_lines():
    found = preflight.preflight_findings(facts(lnksta=16), T400)
    pcie = [f for f in found if f['check'] == 'pcie_link' and f['status'] == 'reject']
    assert pcie[0]['subject'] == 'mlx5_0' and '0000:1a:00.0' in pcie[0]['detail'] and 'LnkSta 16GT/s x16' in pcie[0]['detail']
    assert pcie[0]['verbatim'] == ['$ lspci -vvv -s 1a:00.0', 'LnkCap: Port #0, Speed 32GT/s, Width x16',
                                   'LnkSta: Speed 16GT/s (downgraded), Width x16']
    assert not pcie[0]['blocking']


def test_preflight_never_grades_an_sriov_vf_as_a_link_found_public():
    """pcie_info's view of a RoCE node with VFs enabled: the VF reads LnkSta "Speed unknown (downgraded), Width x0"."""
    parsed = dict((d['bdf'], d) for d in parse_lspci(
        fixtures.local('lspci/lspci_vvv_cx7_pf_downgraded_and_mlx5gen_vf_speed_unknown_x0_kvm_list_2025.txt'))['devices'])
    node = facts()
    pf = node['pcie']['devices'][0]
    vf_link = {'current_speed_gts': None, 'current_width': None, 'max_speed_gts': 32.0, 'max_width': 16}
    by_sysfs = {'bdf': '0000:1a:00.2', 'kind': 'nic', 'link': dict(vf_link, physfn='0000:1a:00.0', virtual_function=True),
                'assessment': {'status': 'virtual_function', 'reason': 'SR-IOV virtual function of 0000:1a:00.0'}}
    # A pcie_info result from before VFs were recognised in sysfs: only its lspci block says VF.
    by_lspci = {'bdf': '0000:1a:00.3', 'kind': 'nic', 'link': dict(vf_link), 'lspci': dict(parsed['b1:00.2'], link_lines=[]),
                'assessment': {'status': 'unknown', 'reason': 'current link speed unknown'}}
    node['pcie']['devices'] = [pf, by_sysfs, by_lspci]
    found = [f for f in preflight.preflight_findings(node, T400) if f['check'] == 'pcie_link']
    assert [(f['subject'], f['status']) for f in found] == [('mlx5_0', 'healthy')]
    assert preflight.is_virtual_function(by_sysfs) and preflight.is_virtual_function(by_lspci) and not preflight.is_virtual_function(pf)


def test_preflight_missing_gpu_blocks_and_governor_is_marginal():
    found = preflight.preflight_findings(facts(gpu_count=7, governor='powersave'), T400)
    gpu = [f for f in found if f['check'] == 'gpu_count'][0]
    assert gpu['status'] == 'reject' and gpu['blocking'] and '7 of 8' in gpu['detail']
    governor = [f for f in found if f['check'] == 'governor'][0]
    assert governor['status'] == 'marginal' and 'powersave' in governor['detail']


def test_preflight_port_down_blocks():
    node = facts()
    node['rdma']['devices']['mlx5_5']['ports']['1'].update(state='DOWN', state_code=1, phys_state='Polling')
    found = preflight.preflight_findings(node, T400)
    down = [f for f in found if f['check'] == 'port_state' and f['status'] == 'reject']
    assert down[0]['subject'] == 'mlx5_5' and down[0]['blocking'] and 'Polling' in down[0]['detail']
    assert [f for f in found if f['check'] == 'nic_count'][0]['actual'] == 7


def test_a_failure_the_module_pins_on_its_host_is_the_nodes_only_on_the_node():
    failed = {'failed': True, 'msg': 'no RDMA device', 'error_class': 'no_rdma_device', 'error_side': 'host', 'stdout': ''}
    run = run_of('ib_send_bw', 'ib_send_bw_gbs', server={'on': 'node'}, client={'on': 'peer'})
    on_peer, = measurements.run_measurements(failed, run, end='client')
    on_node, = measurements.run_measurements(failed, run, end='server')
    assert (on_peer['error_side'], on_node['error_side']) == ('ours', 'node')
    assert measurements.run_measurements(failed, run_of('iperf3', 'iperf3_gbps'), end='peer')[0]['error_side'] == 'ours'


def test_a_batch_reads_each_run_from_its_client_its_failed_server_or_the_failed_call():
    text = fixtures.shared(SUPERBENCH)
    runs = [run_of('ib_send_bw', 'ib_send_bw_gbs', id='ib_send_bw_gbs:mlx5_%d' % i, subject='mlx5_%d' % i,
                   server={'on': 'node'}, client={'on': 'peer'}) for i in range(3)]
    batch = {'runs': runs}
    busy = {'id': runs[1]['id'], 'pid': None, 'failed': True, 'msg': 'port busy', 'error_class': 'port_in_use', 'error_side': 'ours'}
    gpu_server = '/usr/bin/ib_send_bw -d mlx5_0 --use_cuda_bus_id=0000:1b:00.0 --use_cuda_dmabuf -p 18515 -F'
    servers = {'servers': [{'id': runs[0]['id'], 'pid': 10, 'cmd': gpu_server}, busy, {'id': runs[2]['id'], 'pid': 12}]}
    clients = {'clients': [dict(perftest_result(text), id=runs[0]['id']),
                           {'id': runs[2]['id'], 'failed': True, 'msg': 'no RDMA device', 'error_class': 'no_rdma_device',
                            'error_side': 'host', 'stdout': ''}]}
    found = measurements.batch_measurements(batch, servers, clients, 'peer01')
    assert [m['id'] for m in found] == [r['id'] for r in runs]
    assert found[0]['value'] > 25 and found[1]['error_class'] == 'port_in_use' and found[1]['value'] is None
    # The node's end of the session (its GPU options) is kept beside the client's command.
    assert found[0]['server_cmd'] == gpu_server and 'server_cmd' not in found[2]
    assert found[2]['error_side'] == 'ours'  # the client ran on the peer: its host's fault is ours, not the node's
    whole = measurements.batch_measurements(batch, {'failed': True, 'msg': "tool 'ib_send_bw' not found", 'error_class': 'tool_missing',
                                                    'error_side': 'ours'}, {}, 'peer01')
    assert len(whole) == 3 and all(m['error_class'] == 'tool_missing' for m in whole)


def test_all_nics_figures_from_its_three_calls_name_a_server_that_did_not_start():
    text = fixtures.shared(SUPERBENCH)
    ports = [{'device': 'mlx5_%d' % i, 'port': 1, 'netdev': 'ens%dnp0' % i, 'ipv4': '10.252.%d.1' % i, 'ipv4_prefixlen': 24,
              'rate_gbps': 400, 'link_layer': 'Ethernet', 'gid_index': 3} for i in range(2)]
    made = plan.tier_test_plan(T400, ports, ports, None, {'slot': 0})
    run = made['runs']['all_nics'][0]
    first, second = [s['id'] for s in run['batch']['servers']]
    servers = {'servers': [{'id': first, 'pid': 10}, {'id': second, 'pid': None, 'failed': True, 'msg': 'port 18530 in use',
                                                      'error_class': 'port_in_use', 'error_side': 'ours'}]}
    clients = {'clients': [dict(perftest_result(text), id=first, failed=False)]}
    before = {'nics': {'ens0np0': {'timestamp': 100.0, 'counters': {'counters': mlx5_counters(0, 0, 0, 0)}}}}
    after = {'nics': {'ens0np0': {'timestamp': 110.0, 'counters': {'counters': mlx5_counters(5000, 10 ** 9, 10 ** 6, 0)}}}}
    found = measurements.all_nics_measurements(run, servers, clients, before, after, 'peer01')
    aggregate = found[0]
    assert aggregate['metric'] == 'all_nics_gbs' and abs(aggregate['value'] - 24056.72 * 1048576 / 1e9) < 1e-9
    assert aggregate['error'] == 'mlx5_1: port 18530 in use' and aggregate['as_printed'] == '25.225299 GB/s aggregate (mlx5_0 25.225299)'
    pause = dict((m['subject'], m['value']) for m in found if m['metric'] == 'pause_per_s')
    assert pause['ens0np0'] == 500.0 and pause['ens1np0'] is None


def test_pause_frames_of_both_ends_the_node_graded_and_the_peer_said():
    """RoCE rails: the node's pause rate is the figure; the peer's paired netdev, read over the same run, is printed beside it."""
    run = {'test': 'all_nics', 'metric': 'all_nics_gbs', 'pause_metric': 'pause_per_s', 'ib_error_metric': 'ib_port_errors',
           'ib_wait_metric': 'ib_xmit_wait_per_s', 'subject': 'all NICs',
           'clients': [{'device': 'mlx5_0', 'netdev': 'ens1np0', 'peer_device': 'mlx5_0', 'peer_netdev': 'ens7np0'}],
           'counters': {'node_netdevs': ['ens1np0'], 'peer_netdevs': ['ens7np0'], 'node_devices': [], 'peer_devices': [],
                        'peer_of': {'mlx5_0': 'mlx5_0'}}}

    def snapshot(netdev, stamp, pause):
        return {'reads': {'nic': {'nics': {netdev: {'timestamp': stamp, 'counters': {'counters': mlx5_counters(pause, 0, 0, 0)}}}}}}
    before = {'node': snapshot('ens1np0', 100.0, 0), 'peer': snapshot('ens7np0', 101.0, 0)}
    after = {'node': snapshot('ens1np0', 110.0, 5000), 'peer': snapshot('ens7np0', 111.0, 2000000)}
    pause, = [m for m in measurements.run_measurements({'clients': [], 'before': before, 'after': after}, run, 'peer01')
              if m['metric'] == 'pause_per_s']
    assert pause['value'] == 500.0 and pause['peer_value'] == 200000.0
    assert pause['as_printed'].startswith('500 pause frames/s over 10 s (rx_prio3_pause +5000, ')
    assert '; peer01 ens7np0: 200000 pause frames/s (rx_prio3_pause +2000000, ' in pause['as_printed']


def test_iperf3_processes_are_summed_cpu_bound_runs_prove_nothing_and_ipoib_is_recorded_not_graded():
    """The iperf3 module's result with several processes (the real iperf3 3.12 -P 4 capture per process, CPU 98 %)."""
    from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.iperf3 import parse_iperf3
    parsed = parse_iperf3(fixtures.local('iperf3/iperf3_3.12_tcp_p4_client_json_netns_veth.txt'))
    client = {'cmd': 'iperf3 -c 10.252.1.11 -p 5201', 'received_bps': parsed['received_bps'], 'retransmits': parsed['retransmits'],
              'cpu': parsed['cpu'], 'stdout': ''}
    result = {'clients': [client, dict(client, cmd='iperf3 -c 10.252.1.11 -p 5202')], 'received_bps': 2 * parsed['received_bps'],
              'cmd': 'iperf3 ...; iperf3 ...'}
    run = run_of('iperf3', 'iperf3_gbps', subject='10.252.1.21', id='iperf3_gbps:10.252.1.21', cpu_bound_percent=90)
    figure, = measurements.run_measurements(result, run)
    assert abs(figure['value'] - 2 * 16.741964463923893) < 1e-9 and 'over 2 process(es)' in figure['as_printed']
    assert figure['error_class'] == 'cpu_bound' and figure['error_side'] == 'ours' and 'process 1 client at' in figure['error']
    graded = verdict.grade_measurements([figure], T400['thresholds'])[0]
    assert graded['status'] == 'unknown'  # 33 Gb/s against the 350 Gb/s line: the CPU ran out, not the link
    assert 'iperf3 processes ran out of CPU' in verdict.node_verdict([figure], [], T400)['causes'][0]['detail']
    over_ipoib, = measurements.run_measurements(result, dict(run, cpu_bound_percent=None, ungraded='TCP over IPoIB (ibp59s0) is recorded'))
    graded = verdict.grade_measurements([over_ipoib], T400['thresholds'])[0]
    assert (graded['status'], graded['expected']) == ('info', 'TCP over IPoIB (ibp59s0) is recorded')
    # A process the module could not pin is said next to the figure.
    note = 'core 48 is not one this host lets the process run on (allowed 0-1); it ran unpinned'
    unpinned = dict(result, clients=[client, dict(client, affinity_note=note)])
    figure, = measurements.run_measurements(unpinned, dict(run, cpu_bound_percent=None))
    assert figure['as_printed'].endswith('; 1 process(es) unpinned: ' + note)
