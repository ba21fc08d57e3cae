"""Verdict engine: thresholds from the shipped tier data, buckets and likely causes."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils import runner
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi, nccl
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, measurements, preflight, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.perftest import parse_perftest
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']
P400 = TIERS['400G']
T400 = P400['thresholds']
PAIR = TIERS['roce-pair-2x100g']


def bw(subject, value, metric='ib_send_bw_gbs', kind='perftest_bw'):
    return {'id': '%s:%s' % (metric, subject), 'metric': metric, 'subject': subject, 'value': value, 'unit': 'GB/s', 'kind': kind}


def test_every_shipped_threshold_is_well_formed_and_has_a_direction():
    for tier, profile in TIERS.items():
        for metric, threshold in profile['thresholds'].items():
            assert threshold['direction'] in ('one-way', 'bidirectional', 'round-trip'), (tier, metric)
            assert verdict.classify(metric, None, threshold) == verdict.UNKNOWN
            verdict.describe_threshold(metric, threshold)


@pytest.mark.parametrize('value,status', [(47.0, 'healthy'), (46.0, 'healthy'), (49.5, 'healthy'),
                                          (44.0, 'marginal'), (42.0, 'marginal'), (41.99, 'reject'), (38.0, 'reject')])
def test_400g_ib_send_bw_grading(value, status):
    assert verdict.classify('ib_send_bw_gbs', value, T400['ib_send_bw_gbs']) == status


def test_runbook_tiers_match_the_runbook_numbers():
    assert TIERS['100G']['thresholds']['iperf3_gbps'] == {'healthy': [90, None], 'reject_below': 80, 'unit': 'Gb/s', 'direction': 'one-way',
                                                          'source': 'runbook'}
    assert TIERS['200G']['thresholds']['ib_send_bw_gbs']['healthy'] == [22, 24]
    # The runbook's -P 32, as 8 processes of 4 streams each (one iperf3 process is one thread before 3.16).
    iperf = TIERS['400G']['tests']['iperf3']
    assert (iperf['processes'] * iperf['parallel'], iperf['duration'], iperf['interval']) == (32, 60, 10)
    assert TIERS['800G']['thresholds']['ib_send_bw_gbs']['reject_below'] == 80
    assert TIERS['800G']['pcie']['nic'] == [{'speed_gts': 64, 'width': 16}, {'speed_gts': 32, 'width': 32}]
    pair = TIERS['roce-pair-2x100g']['thresholds']
    assert verdict.classify('ib_write_bw_gbps', 109.0, pair['ib_write_bw_gbps']) == 'healthy'
    assert verdict.classify('ib_write_bw_gbps', 50.0, pair['ib_write_bw_gbps']) == 'marginal'
    assert verdict.classify('ib_write_bw_gbps', 14.0, pair['ib_write_bw_gbps']) == 'reject'
    assert verdict.classify('ib_write_lat_us', 1.45, pair['ib_write_lat_us']) == 'healthy'
    assert verdict.classify('ib_write_lat_us', 12, pair['ib_write_lat_us']) == 'reject'


def test_malformed_thresholds_are_named():
    with pytest.raises(verdict.ThresholdError, match='x needs exactly one'):
        verdict.classify('x', 1, {'healthy': [1, None]})
    with pytest.raises(verdict.ThresholdError, match=r'x.reject_below must be a number'):
        verdict.classify('x', 1, {'healthy': [1, None], 'reject_below': 'fast'})


def test_healthy_node_is_bucket_a():
    result = verdict.node_verdict([bw('mlx5_%d' % i, 47.1) for i in range(8)], [], P400)
    assert result['bucket'] == 'A' and result['causes'] == []
    assert result['counts']['healthy'] == 8


def test_one_slow_nic_with_degraded_pcie_is_c_with_pcie_cause():
    measurements = [bw('mlx5_%d' % i, 47.0) for i in range(8)]
    measurements[0]['value'] = 38.0
    measurements[3]['value'] = 41.0
    findings = [{'check': 'pcie_link', 'subject': 'mlx5_0', 'status': 'reject', 'actual': 'LnkSta 16GT/s x16, LnkCap 32GT/s x16',
                 'detail': 'NIC mlx5_0 at 0000:1b:00.0: LnkSta 16GT/s x16, LnkCap 32GT/s x16'}]
    result = verdict.node_verdict(measurements, findings, P400)
    assert result['bucket'] == 'C'
    causes = dict((c['subjects'][0], c) for c in result['causes'] if c['cause'] == 'single_nic_slow')
    assert set(causes) == {'mlx5_0', 'mlx5_3'}
    assert 'LnkSta 16GT/s' in causes['mlx5_0']['detail'] and 'PCIe link is below' in causes['mlx5_0']['detail']
    assert 'PCIe link is below' not in causes['mlx5_3']['detail']
    assert any(c['cause'] == 'pcie_link' for c in result['causes'])


def test_all_nics_ten_percent_slow_is_platform_tuning():
    findings = [{'check': 'governor', 'subject': 'cpu', 'status': 'marginal', 'detail': 'CPU governor powersave, expected performance'},
                {'check': 'hugepages', 'subject': 'hugepages', 'status': 'marginal', 'detail': 'HugePages_Total 0, expected 128'}]
    result = verdict.node_verdict([bw('mlx5_%d' % i, 42.0 + i * 0.1) for i in range(8)], findings, P400)
    assert result['bucket'] in ('B', 'C')
    platform = [c for c in result['causes'] if c['cause'] == 'platform_tuning']
    assert platform and 'powersave' in platform[0]['detail'] and 'HugePages_Total 0' in platform[0]['detail']
    assert not [c for c in result['causes'] if c['cause'] == 'single_nic_slow']


def test_iperf_fine_but_rdma_slow_points_at_memlock_gid_pfc():
    measurements = [bw('mlx5_%d' % i, 30.0) for i in range(2)] + [
        {'id': 'iperf3', 'metric': 'iperf3_gbps', 'subject': 'peer', 'value': 360.0, 'unit': 'Gb/s', 'kind': 'iperf3'}]
    result = verdict.node_verdict(measurements, [], P400)
    assert result['bucket'] == 'C'
    assert any(c['cause'] == 'rdma_specific' and 'memlock' in c['detail'] for c in result['causes'])


def nccl_run(busbw, hcas=8, rails=8, gdr=True):
    """The nccl figures measurements.py makes of a two-node 400G run over ``rails`` tested HCAs."""
    return [dict(bw('all_reduce', busbw, metric='nccl_busbw_gbs', kind='nccl'), rails=rails, gdr=gdr),
            dict(bw('all_reduce', hcas, metric='nccl_hcas_used', kind='nccl'), rails=rails, unit='HCAs'),
            dict(bw('all_reduce', 0, metric='nccl_wrong', kind='nccl'), unit='errors')]


def every_hca_healthy():
    return [bw('mlx5_%d' % i, 47.0) for i in range(8)] + [bw('mlx5_%d' % i, 46.0, metric='gdr_bw_gbs') for i in range(8)]


def test_nccl_socket_fallback_is_a_reject_only_where_ib_is_proven():
    socket = nccl_run(2.1, hcas=0)
    result = verdict.node_verdict(every_hca_healthy() + socket, [], P400, {'nccl_transport': 'Socket'})
    assert result['bucket'] == 'C'
    fallback = [c for c in result['causes'] if c['cause'] == 'nccl_socket_fallback']
    assert fallback and 'NET/Socket' in fallback[0]['detail'] and 'NET/IB' in fallback[0]['detail']
    assert 'every HCA of the node passed' in fallback[0]['detail']
    # 2.1 GB/s is also past the busbw reject line this project chose: investigated (project_line), the transport returns the node.
    assert [c['cause'] for c in result['causes']] == ['nccl_socket_fallback', 'project_line']
    # Without per-HCA figures that prove IB usable (none ran, or one failed), the fallback may be ours: unknown, B.
    for rdma in ([], [bw('mlx5_%d' % i, 47.0) for i in range(7)] + [bw('mlx5_7', 41.0)]):
        result = verdict.node_verdict(rdma + socket, [], P400, {'nccl_transport': 'Socket'})
        transport = [t for t in result['tests'] if t['metric'] == verdict.NCCL_TRANSPORT][0]
        assert (transport['status'], transport['error_class'], transport['error_side']) == ('unknown', 'nccl_socket_unproven', 'ours')
        busbw = [t for t in result['tests'] if t['metric'] == 'nccl_busbw_gbs'][0]
        assert busbw['status'] == 'unknown' and busbw['error_class'] == 'nccl_socket_unproven'
        assert 'nccl_socket_fallback' not in [c['cause'] for c in result['causes']]
        assert not [t for t in result['tests'] if t['metric'].startswith('nccl') and t['status'] == 'reject']
    assert verdict.node_verdict(socket, [], P400, {'nccl_transport': 'Socket'})['bucket'] == 'B'


def test_nccl_busbw_line_is_per_node_from_the_rails_it_must_use():
    threshold = T400['nccl_busbw_gbs']
    assert threshold['healthy'] == [45, 47] and threshold['per_rail'] == 0.85  # the runbook's per-NIC figure, as it is
    node = verdict.node_threshold('nccl_busbw_gbs', threshold, 8)
    assert node['healthy'] == [306.0, 319.6] and node['reject_below'] == 272.0 and node['derived']['rails'] == 8
    assert 'per_rail' not in node and not verdict.threshold_errors({'nccl_busbw_gbs': node})  # the report checks it again
    assert verdict.node_threshold('nccl_busbw_gbs', threshold, 4)['healthy'][0] == 153.0
    assert verdict.node_threshold('nccl_busbw_gbs', threshold, None) is None
    assert verdict.node_threshold('ib_send_bw_gbs', T400['ib_send_bw_gbs'], 8) is T400['ib_send_bw_gbs']
    healthy = verdict.node_verdict(every_hca_healthy() + nccl_run(368.0), [], P400, {'nccl_transport': 'IB'})
    assert healthy['bucket'] == 'A', healthy['causes']
    graded = [t for t in healthy['tests'] if t['metric'] == 'nccl_busbw_gbs'][0]
    assert graded['expected'] == ('healthy >= 306 GB/s (306-319.6), reject < 272 GB/s, bidirectional '
                                  '(0.85 x 8 rails x the per-rail 45-47, reject 40)')
    # An all_reduce riding one rail at the runbook's healthy per-NIC figure is not a healthy node figure; both lines past are the
    # project's (the runbook gives the per-NIC healthy busbw only): investigated, B, until a contract adopts them.
    one_rail = verdict.node_verdict(every_hca_healthy() + nccl_run(46.0, hcas=1), [], P400, {'nccl_transport': 'IB'})
    statuses = dict((t['metric'], (t['status'], t.get('reject_line'))) for t in one_rail['tests'] if t['metric'].startswith('nccl'))
    assert statuses['nccl_busbw_gbs'] == statuses['nccl_hcas_used'] == ('marginal', 'project') and one_rail['bucket'] == 'B'
    rails = [c for c in one_rail['causes'] if c['cause'] == 'nccl_rails']
    assert rails and 'NCCL used 1 of the 8 HCAs' in rails[0]['detail'] and 'unexplained' not in [c['cause'] for c in one_rail['causes']]
    # Without the rails the run tested, the node's line cannot be derived: unknown and ours, never graded on a guess.
    blind = verdict.node_verdict(every_hca_healthy() + [dict(nccl_run(368.0)[0], rails=None)], [], P400, {'nccl_transport': 'IB'})
    entry = [t for t in blind['tests'] if t['metric'] == 'nccl_busbw_gbs'][0]
    assert (entry['status'], entry['error_side']) == ('unknown', 'ours') and blind['bucket'] == 'B'


def test_per_rail_factor_must_be_a_fraction():
    broken = dict(T400['nccl_busbw_gbs'], per_rail=8)
    assert any('per_rail' in e for e in verdict.threshold_errors({'nccl_busbw_gbs': broken}))
    assert not verdict.threshold_errors({'nccl_busbw_gbs': T400['nccl_busbw_gbs'], 'nccl_hcas_used': T400['nccl_hcas_used']})


def test_nccl_short_while_every_hca_is_healthy_names_the_node_inside_not_unexplained():
    result = verdict.node_verdict(every_hca_healthy() + nccl_run(250.0), [], P400, {'nccl_transport': 'IB'})
    # The shortfall is past the project's busbw line only: the node's inside is named, investigated (B), not returned.
    assert [c['cause'] for c in result['causes']] == ['nccl_topology', 'project_line'] and result['bucket'] == 'B'
    detail = result['causes'][0]['detail']
    for words in ('NVLink', 'NVSwitch', 'topo -m', 'NCCL_DEBUG_SUBSYS=GRAPH', 'all_reduce 250 GB/s'):
        assert words in detail, (words, detail)
    # One HCA slow on its own explains the shortfall instead (single_nic_slow), not the node's inside.
    slow = [bw('mlx5_%d' % i, 47.0 if i else 38.0) for i in range(8)]
    causes = [c['cause'] for c in verdict.node_verdict(slow + nccl_run(250.0), [], P400, {'nccl_transport': 'IB'})['causes']]
    assert 'nccl_topology' not in causes and 'single_nic_slow' in causes and 'unexplained' not in causes


def test_nccl_gdr_is_graded_at_200g_and_above():
    assert [name for name, tier in TIERS.items() if tier['tests']['nccl'].get('require_gdr')] == ['200G', '400G', '800G']
    without = verdict.node_verdict(every_hca_healthy() + nccl_run(368.0, gdr=False), [], P400, {'nccl_transport': 'IB'})
    entry = [t for t in without['tests'] if t['metric'] == verdict.NCCL_GDR][0]
    assert entry['status'] == 'marginal' and without['bucket'] == 'B'
    assert [c['cause'] for c in without['causes']] == ['nccl_gdr'] and 'nvidia_peermem' in without['causes'][0]['detail']
    unsaid = verdict.node_verdict(every_hca_healthy() + nccl_run(368.0, gdr=None), [], P400, {'nccl_transport': 'IB'})
    entry = [t for t in unsaid['tests'] if t['metric'] == verdict.NCCL_GDR][0]
    assert (entry['status'], entry['error_class'], entry['error_side']) == ('unknown', 'gdr_unknown', 'ours')
    # The two-box pair (GB10) has no GDR to grade.
    pair = verdict.node_verdict([figure('nccl_small_allreduce_us', 'all_reduce', 40.0)], [], PAIR, {'nccl_transport': 'IB'})
    assert not [t for t in pair['tests'] if t['metric'] == verdict.NCCL_GDR]


def test_firmware_throttle_on_roce_pair():
    measurements = [bw('rocep1s0f1', 14.2, metric='ib_write_bw_gbps')]
    measurements[0]['unit'] = 'Gb/s'
    result = verdict.node_verdict(measurements, [], PAIR)
    assert result['bucket'] == 'C'
    assert any(c['cause'] == 'firmware_throttle' and 'rocep1s0f1' in c['detail'] for c in result['causes'])


def test_gpu_missing_is_c_with_hardware_cause():
    findings = [{'check': 'gpu_count', 'subject': 'gpus', 'status': 'reject', 'detail': '7 of 8 GPUs visible to nvidia-smi'},
                {'check': 'gpu_xid', 'subject': '0000:3b:00.0', 'status': 'reject', 'detail': 'kernel log: NVRM: Xid 79'}]
    result = verdict.node_verdict([], findings, P400)
    assert result['bucket'] == 'C' and result['causes'][0]['cause'] == 'gpu_hardware'


def test_info_measurements_do_not_change_the_bucket_and_untestable_is_b():
    info = {'id': 'x', 'metric': 'not_in_profile', 'subject': 's', 'value': 1.0}
    assert verdict.node_verdict([info, bw('mlx5_0', 47.0)], [], P400)['bucket'] == 'A'
    broken = dict(bw('mlx5_0', None), error="Couldn't connect to 10.0.0.2:18515")
    result = verdict.node_verdict([broken], [], P400)
    assert result['bucket'] == 'B' and result['tests'][0]['status'] == 'unknown'
    assert [c['cause'] for c in result['causes']] == ['measurement_incomplete']
    unknown = [{'check': 'tool', 'subject': 'firmware', 'status': 'unknown', 'detail': 'flint missing'}]
    assert verdict.node_verdict([bw('mlx5_0', 47.0)], unknown, P400)['bucket'] == 'B'


# --- Policy: statuses, completeness, could-not-measure, NCCL transport, every bad result named --------------------

SUPERBENCH = 'perftest/ib_write_bw_loopback_8M_interleaved_server_client_superbench.txt'


def figure(metric, subject, value, **extra):
    entry = {'id': '%s:%s' % (metric, subject), 'kind': None, 'metric': metric, 'subject': subject, 'peer': 'peer01',
             'peer_device': subject, 'value': value, 'unit': catalogue.unit(metric), 'as_printed': None, 'verbatim': [],
             'cmd': None, 'error': None, 'error_class': None, 'error_side': None, 'raw': ''}
    entry.update(extra)
    return entry


def healthy_400g_node():
    return ([figure('ib_send_bw_gbs', 'mlx5_%d' % i, 47.0) for i in range(8)]
            + [figure('iperf3_gbps', '10.0.10.2', 362.0), figure('all_nics_gbs', 'all NICs', 371.0)])


def with_failure_shape(entry, error_class, error_side):
    """What the modules' one failure shape adds to a measurement (error_class, error_side)."""
    return dict(entry, error_class=error_class, error_side=error_side)


def test_our_own_failures_never_give_bucket_c():
    missing_dcgmi = measurements.run_measurements(
        {'failed': True, 'missing_tool': True, 'tool': 'dcgmi',
         'msg': "node01: required tool 'dcgmi' was not found on PATH; %s" % runner.package_hint('dcgmi')},
        {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})
    busy = figure('iperf3_gbps', '10.0.10.2', None,
                  error=fixtures.local('iperf3/iperf3_3.12_error_busy_text_netns_veth.txt').strip())
    timeout = figure('ib_send_bw_gbs', 'mlx5_7', None, error='node01: `ib_send_bw -d mlx5_7 10.0.10.2` timed out after 120 s')
    cut = '\n'.join(fixtures.shared(SUPERBENCH).splitlines()[:16])  # the capture cut before its result rows
    unreadable, = measurements.run_measurements({'stdout': cut, 'rc': 0, 'perftest': parse_perftest(cut), 'cmd': 'ib_send_bw -d mlx5_6'},
                                                {'test': 'ib_send_bw', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_6'})
    ours = ([with_failure_shape(m, 'tool_missing', 'ours') for m in missing_dcgmi] + [with_failure_shape(busy, 'port_in_use', 'ours'),
            with_failure_shape(timeout, 'timeout', 'unknown'), with_failure_shape(unreadable, 'parse_error', 'ours')])
    node = [m for m in healthy_400g_node() if m['subject'] not in ('mlx5_6', 'mlx5_7') and m['metric'] != 'iperf3_gbps']
    result = verdict.node_verdict(node + ours, [], P400, {'nccl_transport': None})
    assert result['bucket'] == 'B'
    assert [c['cause'] for c in result['causes']] == ['measurement_incomplete']
    detail = result['causes'][0]['detail']
    for words in ('not held against the node', 'install the missing tool', 'datacenter-gpu-manager', 'free the port', 'server is busy',
                  'our time limit ran out', 'could not be read', 'no result rows'):
        assert words in detail, (words, detail)
    statuses = dict((m['id'], (m['status'], m['error_class'], m['error_side'])) for m in result['tests'] if m['value'] is None)
    assert statuses == {'dcgmi_diag:gpus': ('unknown', 'tool_missing', 'ours'), 'iperf3_gbps:10.0.10.2': ('unknown', 'port_in_use', 'ours'),
                        'ib_send_bw_gbs:mlx5_7': ('unknown', 'timeout', 'unknown'), 'ib_send_bw_gbs:mlx5_6': ('unknown', 'parse_error', 'ours')}
    assert result['counts']['unknown'] == 4 and result['counts']['reject'] == 0


def test_a_node_side_failure_is_unknown_not_a_reject():
    failed = figure('gdr_bw_gbs', 'mlx5_0', None, error='CUDA/GPUDirect unavailable', error_class='cuda_unavailable', error_side='node')
    result = verdict.node_verdict(healthy_400g_node() + [failed], [], P400)
    assert result['bucket'] == 'B' and result['tests'][-1]['status'] == 'unknown'
    assert [c['cause'] for c in result['causes']] == ['node_side_failure']


def test_unknown_findings_are_b_on_our_side():
    findings = [{'check': 'peer_health', 'subject': 'peer01', 'status': 'unknown', 'blocking': True, 'expected': 'a healthy known-good peer',
                 'actual': 'none reachable with an Active RDMA port',
                 'detail': "no healthy known-good peer: the node could not be measured (not the node's fault)"}]
    facts = {'pcie': None, 'host': None, 'gpu': None, 'firmware': None,
             'rdma': {'failed': True, 'msg': "node01: required tool 'ibstat' was not found on PATH; install package infiniband-diags"},
             'nic': {'failed': True, 'msg': "node01: required tool 'ethtool' was not found on PATH; install package ethtool"}}
    findings += preflight.preflight_findings(facts, P400)
    result = verdict.node_verdict([], findings, P400)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['measurement_incomplete']
    detail = result['causes'][0]['detail']
    assert 'peer_health (peer01)' in detail and "'ethtool' was not found" in detail and "'ibstat' was not found" in detail
    assert not [f for f in result['findings'] if f['status'] == 'reject']  # no '0 of 8 ports Active' for a tool we lack


def expected(metric, subject, reason=None):
    return {'id': '%s:%s' % (metric, subject), 'metric': metric, 'subject': subject, 'test': catalogue.test_of_metric(metric), 'reason': reason}


def test_a_node_is_a_only_when_every_expected_figure_exists_and_is_healthy():
    dcgmi_figures = measurements.run_measurements(
        dcgmi.parse_dcgmi_diag(fixtures.shared('dcgmi/dcgmi_diag_r3_dcgm3.0.4_deployment_pass_dcgm55_truncated.txt')),
        {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})
    plan = ([expected('ib_send_bw_gbs', 'mlx5_%d' % i) for i in range(8)] + [expected('iperf3_gbps', '10.0.10.2'),
            expected('all_nics_gbs', 'all NICs'), expected('dcgmi_diag', None)])
    node = healthy_400g_node() + dcgmi_figures
    assert verdict.node_verdict(node, [], P400, {'expected': plan})['bucket'] == 'A'
    gdr_plan = plan + [expected('gdr_bw_gbs', 'mlx5_3', reason='no NUMA-local GPU for mlx5_3')]
    result = verdict.node_verdict(node, [], P400, {'expected': gdr_plan})
    missing = [t for t in result['tests'] if t['status'] == 'unknown']
    assert result['bucket'] == 'B' and [(t['metric'], t['subject'], t['error'], t['test']) for t in missing] == [
        ('gdr_bw_gbs', 'mlx5_3', 'no NUMA-local GPU for mlx5_3', 'gdr')]
    assert missing[0]['expected'].startswith('healthy >= 45 GB/s')
    assert 'no NUMA-local GPU for mlx5_3' in result['causes'][0]['detail']
    without_dcgmi = verdict.node_verdict(healthy_400g_node(), [], P400, {'expected': plan})
    assert without_dcgmi['bucket'] == 'B' and [t['error'] for t in without_dcgmi['tests'] if t['status'] == 'unknown'] == ['not measured']


def test_a_dcgmi_level_whose_hardware_tests_were_all_skipped_is_unknown_and_ours_found_public():
    text = fixtures.local('dcgmi/dcgmi_diag_r3_dcgm3.3.9_blackwell_software_pass_hardware_all_skipped_slurm_on_aws.txt')
    parsed = dcgmi.parse_dcgmi_diag(text)
    # What the dcgmi_diag module registers: the parse, the level asked for, its own word on the level and the output.
    result = dict(parsed, level=3, level_not_run=dcgmi.level_not_run(parsed, 3), stdout=text, rc=0)
    figures = measurements.run_measurements(result, {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})
    plan = ([expected('ib_send_bw_gbs', 'mlx5_%d' % i) for i in range(8)]
            + [expected('iperf3_gbps', '10.0.10.2'), expected('all_nics_gbs', 'all NICs'), expected('dcgmi_diag', None)])
    outcome = verdict.node_verdict(healthy_400g_node() + figures, [], P400, {'expected': plan})
    level = [t for t in outcome['tests'] if t['id'] == 'dcgmi_diag:level']
    assert [(t['status'], t['error_class'], t['error_side'], t['subject']) for t in level] == [
        ('unknown', 'diag_level_not_run', 'ours', 'level 3')]
    assert level[0]['as_printed'].startswith('level 3: skipped: PCIe, GPU Memory, Targeted Stress')
    assert '| GPU Memory                | Skip - All                                     |' in level[0]['verbatim']
    assert outcome['bucket'] == 'B' and [c['cause'] for c in outcome['causes']] == ['measurement_incomplete']
    assert verdict.OUR_SIDE_FIXES['diag_level_not_run'] in outcome['causes'][0]['detail']
    assert 'did not run its level' in outcome['causes'][0]['detail']
    assert not [t for t in outcome['tests'] if t['status'] in ('marginal', 'reject')]
    # Read without the module's word (an older registered result): the parse and the level say the same.
    again = measurements.run_measurements(dict(parsed, level=3), {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})
    assert [t['error_class'] for t in again if t['id'] == 'dcgmi_diag:level'] == ['diag_level_not_run']
    # A level whose hardware tests ran stays graded by its own statuses, with no "not run" entry.
    ran = dcgmi.parse_dcgmi_diag(fixtures.local('dcgmi/dcgmi_diag_r4_dcgm3_memtest_pass_others_skipped_persistence_fail_gpu_memtest_page.txt'))
    graded = measurements.run_measurements(dict(ran, level=4), {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})
    assert not [t for t in graded if t['id'] == 'dcgmi_diag:level']
    assert [t['preset_status'] for t in graded if t['subject'] == 'Memtest'] == ['healthy']


def test_nccl_transport_is_graded_where_the_tier_requires_ib():
    text = fixtures.local('nccl/all_reduce_perf_h100_ring_512M_8G_healthy_avg95_nccltests252.txt')
    parsed = nccl.parse_nccl_tests(text)
    assert parsed['transport'] is None  # this capture has no NCCL_DEBUG=INFO lines
    run = {'test': 'nccl', 'metric': 'nccl_busbw_gbs', 'subject': 'all_reduce', 'at_bytes': 8589934592, 'rails': 4}
    # Its four NICs (~24 GB/s each at 200G): the HCAs are the module's reading of its host's NET/IB line, GDR its log's.
    figures = measurements.run_measurements(dict(parsed, stdout=text, local_ib_hcas=['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'], gdr=True),
                                            run)
    hcas = [bw('mlx5_%d' % i, 24.0) for i in range(4)]
    unknown = verdict.node_verdict(hcas + figures, [], TIERS['200G'], {'nccl_transport': parsed['transport']})
    entry = [t for t in unknown['tests'] if t['metric'] == verdict.NCCL_TRANSPORT][0]
    assert (entry['status'], entry['error_class'], entry['expected']) == ('unknown', 'transport_unknown', 'NET/IB')
    assert unknown['bucket'] == 'B' and 'NCCL_DEBUG=INFO' in unknown['causes'][0]['detail']
    ib = verdict.node_verdict(hcas + figures, [], TIERS['200G'], {'nccl_transport': 'IB'})
    assert ib['bucket'] == 'A', ib['causes']
    assert [t['status'] for t in ib['tests'] if t['metric'] == verdict.NCCL_TRANSPORT] == ['healthy']
    socket = verdict.node_verdict(hcas + figures, [], TIERS['200G'], {'nccl_transport': 'Socket'})
    assert socket['bucket'] == 'C' and [c['cause'] for c in socket['causes']] == ['nccl_socket_fallback']
    tolerant = copy.deepcopy(TIERS['200G'])
    tolerant['tests']['nccl'].update(require_transport=None, require_gdr=False)
    assert verdict.node_verdict(hcas + figures, [], tolerant, {'nccl_transport': 'Socket'})['bucket'] == 'A'
    # No NCCL at this tier: nothing to grade.
    assert TIERS['100G']['tests']['nccl']['enabled'] is False
    assert not [t for t in verdict.node_verdict(figures, [], TIERS['100G'], {'nccl_transport': 'Socket'})['tests']
                if t['metric'] == verdict.NCCL_TRANSPORT]


def test_nccl_wrong_is_a_reject_at_every_tier_that_runs_nccl():
    tiers = [name for name, profile in TIERS.items() if profile['tests']['nccl']['enabled']]
    assert tiers == ['200G', '400G', '800G', 'roce-pair-2x100g']
    for name in tiers:
        result = verdict.node_verdict([figure('nccl_wrong', 'all_reduce', 1)], [], TIERS[name], {'nccl_transport': 'IB'})
        assert result['bucket'] == 'C' and [c['cause'] for c in result['causes']] == ['nccl_wrong_results'], name


def test_impossible_or_incomplete_figures_are_unknown_not_graded():
    infinite = figure('nccl_busbw_gbs', 'all_reduce', float('inf'))
    result = verdict.node_verdict([infinite], [], P400)
    assert result['tests'][0]['status'] == 'unknown' and 'not a finite number' in result['tests'][0]['error']
    partial = figure('all_nics_gbs', 'all NICs', 282.0, error='mlx5_7: port_in_use')  # 7 of 8 NICs ran
    assert verdict.node_verdict([partial], [], P400)['tests'][0]['status'] == 'unknown'
    enough = figure('all_nics_gbs', 'all NICs', 365.0, error='mlx5_7: port_in_use')  # short one NIC and still above the line
    assert verdict.node_verdict([enough], [], P400)['tests'][0]['status'] == 'healthy'


def _outside(threshold):
    """(a marginal value or None, a reject value) for a threshold."""
    low, high = threshold['healthy']
    if 'reject_below' in threshold:
        line = threshold['reject_below']
        return ((low + line) / 2.0 if line < low else None), line / 2.0
    line = threshold['reject_above']
    return ((high + line) / 2.0 if line > high else None), line * 2.0 + 1


@pytest.mark.parametrize('tier', sorted(TIERS))
def test_every_marginal_or_reject_figure_has_a_named_cause(tier):
    for metric, threshold in sorted(TIERS[tier]['thresholds'].items()):
        for value in _outside(threshold):
            if value is None:
                continue
            result = verdict.node_verdict([figure(metric, 'subject0', value)], [], TIERS[tier])
            assert result['bucket'] in ('B', 'C') and result['causes'], (tier, metric, value)
            assert all(c['detail'] and c['cause'] for c in result['causes'])


def test_an_unlisted_check_is_named_by_the_catch_all():
    finding = {'check': 'irq_placement', 'subject': 'ens1np0', 'status': 'marginal', 'expected': 'NUMA node 0', 'actual': 'NUMA node 1',
               'detail': 'ens1np0 IRQs on NUMA node 1', 'blocking': False, 'verbatim': []}
    result = verdict.node_verdict([], [finding], P400)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['unexplained']
    assert 'irq_placement on ens1np0 is marginal: measured NUMA node 1, expected NUMA node 0' in result['causes'][0]['detail']


def test_shipped_profiles_are_usable_and_malformed_ones_are_named():
    for name, profile in TIERS.items():
        assert verdict.profile_errors(profile) == [], name
    assert verdict.threshold_errors({'x': {'healthy': [1, None]}, 'y': {'healthy': [1, None], 'reject_below': 'fast'},
                                     'z': {'healthy': [None, None], 'reject_above': 3}}) == [
        'threshold x needs exactly one of reject_below / reject_above', 'threshold y.reject_below must be a number or null, got \'fast\'',
        'threshold z: a lower-is-better metric needs healthy[1]']
    assert verdict.threshold_errors(None) == ['thresholds must be a mapping of metric name to threshold, got None']
    rules = dict(P400['cause_rules'], platform_min_ratio=1.5, spread=0.1)
    del rules['platform_max_spread']
    assert verdict.cause_rule_errors(rules) == [
        'cause_rules.spread is not a cause-rule setting (known: firmware_throttle_max_ratio, platform_aggregate_shortfall, '
        'platform_max_spread, platform_min_ratio)',
        'cause_rules.platform_max_spread is missing; it must be a fraction above 0 and below 1',
        'cause_rules.platform_min_ratio must be a fraction above 0 and below 1, got 1.5']
    assert verdict.cause_rule_errors(dict(P400['cause_rules'], platform_aggregate_shortfall=None)) == [
        'cause_rules.platform_aggregate_shortfall must be a fraction above 0 and below 1, got None']
    without = dict(P400)
    del without['cause_rules']
    with pytest.raises(verdict.ThresholdError, match='cause_rules must be a mapping'):
        verdict.node_verdict([], [], without)


def test_preflight_and_verdict_share_one_status_vocabulary():
    facts = {'rdma': {'devices': {'mlx5_0': {'ports': {'1': {'state': 'DOWN', 'state_code': 1, 'phys_state': 'Polling'}}},
                                  'mlx5_1': {'ports': {'1': {'state': 'ACTIVE', 'state_code': 4, 'rate_gbps': 400}}}}},
             'host': {'cmdline': {'tokens': []}, 'hugepages': {'total': 0}, 'modules': {'mlx5_core': {}},
                      'cpu_governor': {'uniform': 'powersave', 'counts': {'powersave': 8}}, 'memlock': {'soft': '64'}},
             'gpu': {'gpu_count': 8, 'gpus': [], 'xid_events': []}, 'nic': {'msg': 'ethtool missing'}, 'pcie': None, 'firmware': None}
    statuses = set(f['status'] for f in preflight.preflight_findings(facts, P400))
    assert statuses == {'healthy', 'marginal', 'reject', 'unknown'} and statuses <= set(verdict.STATUSES)


def test_a_status_outside_the_vocabulary_is_named_not_silently_b():
    stale = {'check': 'port_state', 'subject': 'mlx5_0/1', 'status': 'ok', 'expected': 'Active', 'actual': 'ACTIVE',
             'detail': 'mlx5_0/1 Active at 400 Gb/s', 'blocking': False, 'verbatim': []}
    result = verdict.node_verdict([], [stale], P400)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['unexplained']
    assert 'port_state on mlx5_0/1 is ok' in result['causes'][0]['detail']


def _repeats_of(entry, values, errors=None):
    """One measurement's repeats (synthetic edits of its figure); ``errors`` maps a repeat's index to its error."""
    errors = errors or {}
    out = []
    for index, value in enumerate(values):
        repeat = dict(entry, value=value, as_printed='%s GB/s (repeat %d)' % (value, index + 1))
        if index in errors:
            repeat.update(value=None, error=errors[index])
        out.append(repeat)
    return out


def test_repeated_runs_are_graded_once_on_the_median_with_every_sample_kept():
    cut, = measurements.run_measurements({'stdout': fixtures.shared(SUPERBENCH), 'rc': 0,
                                          'perftest': parse_perftest(fixtures.shared(SUPERBENCH)), 'cmd': 'ib_send_bw -d mlx5_0'},
                                         {'test': 'ib_send_bw', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0'})
    node = [m for m in healthy_400g_node() if m['subject'] != 'mlx5_0'] + _repeats_of(cut, [47.1, 30.0, 46.9])
    result = verdict.node_verdict(node, [], P400, {'nccl_transport': None})
    graded = [t for t in result['tests'] if t['subject'] == 'mlx5_0']
    assert len(graded) == 1
    (entry,) = graded
    assert (entry['value'], entry['samples'], entry['repeats'], entry['status']) == (46.9, [47.1, 30.0, 46.9], 3, 'healthy')
    assert entry['as_printed'] == '46.9 GB/s (repeat 3)'  # the median repeat's own output goes on with it
    # Every repeat's raw output is kept for the evidence, the graded one marked.
    assert [line for line in entry['raw'].splitlines() if line.startswith('# repeat')] == [
        '# repeat 1 of 3', '# repeat 2 of 3', '# repeat 3 of 3 (graded)']
    assert entry['raw'].count('BW average') == 3 * cut['raw'].count('BW average') > 0
    assert result['bucket'] == 'A'


def test_an_even_count_takes_the_conservative_middle_and_latency_the_higher_one():
    bandwidth = measurements.combine_repeats(_repeats_of(bw('mlx5_0', 0), [40.0, 47.0, 46.0, 45.0]))
    assert [(e['value'], e['samples']) for e in bandwidth] == [(45.0, [40.0, 47.0, 46.0, 45.0])]
    latency = measurements.combine_repeats(_repeats_of(bw('mlx5_0', 0, 'ib_send_lat_us', 'perftest_lat'), [2.0, 2.4, 2.1, 2.2]))
    assert [e['value'] for e in latency] == [2.2]


def test_a_failed_repeat_is_named_and_the_others_still_give_the_figure():
    combined, = measurements.combine_repeats(_repeats_of(bw('mlx5_0', 0), [47.0, 0, 46.0], {1: 'ib_send_bw timed out after 60 s'}))
    assert (combined['value'], combined['samples'], combined.get('error')) == (46.0, [47.0, 46.0], None)
    assert combined['repeat_errors'] == ['repeat 2 of 3: ib_send_bw timed out after 60 s']
    failed, = measurements.combine_repeats(_repeats_of(bw('mlx5_0', 0), [0, 0], {0: 'refused', 1: 'refused again'}))
    assert (failed['value'], failed['error'], failed['samples']) == (None, 'refused', [])


def test_near_miss_measurements_that_ran_once_pass_through_unchanged_in_order():
    once = [bw('mlx5_1', 47.0), bw('mlx5_0', 46.0), figure('iperf3_gbps', '10.0.10.2', 362.0)]
    assert measurements.combine_repeats(once) == once
    same, = measurements.combine_repeats([bw('mlx5_0', 46.0), bw('mlx5_0', 46.0)])  # equal repeats are still two samples
    assert same['samples'] == [46.0, 46.0] and 'repeat_errors' not in same


def test_an_incomplete_run_is_bucket_b_with_our_cause_naming_where_and_why():
    result = verdict.incomplete_verdict('node03', 'connect', 'Failed to connect to the host via ssh:\n timed out', tier='400G')
    assert result['bucket'] == 'B' and result['node'] == 'node03' and result['tier'] == '400G'
    assert [c['cause'] for c in result['causes']] == ['run_incomplete']
    assert 'connect' in result['causes'][0]['detail'] and 'timed out' in result['causes'][0]['detail']
    assert '\n' not in result['causes'][0]['detail']
    assert result['counts']['unknown'] == 1 and result['findings'][0]['status'] == 'unknown'
    assert result['run_incomplete'] == {'where': 'connect', 'why': 'Failed to connect to the host via ssh: timed out'}
    assert not any(f['status'] == 'reject' for f in result['findings'])


def test_a_break_after_the_verdict_keeps_what_was_measured_and_names_the_break_first():
    accepted = verdict.node_verdict([bw('mlx5_%d' % i, 47.1) for i in range(8)], [], P400)
    broke = verdict.with_run_break(dict(accepted, node='node01'), 'evidence: Capture the evidence set on the node', 'rc=255')
    assert accepted['bucket'] == 'A' and broke['bucket'] == 'B'
    assert broke['tests'] == accepted['tests'] and broke['counts']['healthy'] == 8 and broke['counts']['unknown'] == 1
    assert [c['cause'] for c in broke['causes']] == ['run_incomplete']
    assert 'evidence: Capture the evidence set on the node' in broke['causes'][0]['detail']
    # A reject that was measured stays a reject: the break does not excuse it, nor does it add a second run_incomplete cause.
    slow = verdict.node_verdict([bw('mlx5_0', 30.0)] + [bw('mlx5_%d' % i, 47.1) for i in range(1, 8)], [], P400)
    twice = verdict.with_run_break(verdict.with_run_break(slow, 'a', 'x'), 'b', 'y')
    assert twice['bucket'] == 'C'
    assert [c['cause'] for c in twice['causes']].count('run_incomplete') == 1 and twice['causes'][0]['cause'] == 'run_incomplete'
    assert 'the run broke at a (x)' in twice['causes'][0]['detail'] and 'the run broke at b (y)' in twice['causes'][0]['detail']


def test_a_run_incomplete_finding_in_the_verdict_is_named_first_and_is_never_a_return():
    findings = [verdict.run_incomplete_finding("peer tests: Run the clients", "the peer's ssh went away")]
    result = verdict.node_verdict([bw('mlx5_%d' % i, 47.1) for i in range(8)], findings, P400)
    assert result['bucket'] == 'B' and result['causes'][0]['cause'] == 'run_incomplete'
    # Near miss: the same words under another check are not a broken run.
    other = dict(findings[0], check='peer_health')
    assert 'run_incomplete' not in [c['cause'] for c in verdict.node_verdict([], [other], P400)['causes']]


def test_a_crash_is_named_by_its_exception_and_a_long_message_is_cut():
    crashed = {'msg': 'MODULE FAILURE: No start of json char found\nSee stdout/stderr for the exact error', 'rc': 1,
               'module_stderr': 'Traceback (most recent call last):\n  File "x", line 1\nRuntimeError: netval-lab: module-crash fault\n'}
    result = verdict.incomplete_verdict('node04', 'preflight: Read', crashed)
    assert result['run_incomplete']['why'] == ('MODULE FAILURE: No start of json char found See stdout/stderr for the exact error: '
                                               'RuntimeError: netval-lab: module-crash fault')
    long = verdict.incomplete_verdict('node04', 'x', 'y' * 5000)['run_incomplete']['why']
    assert len(long) == verdict.WHY_MAX_CHARS and long.endswith('...')


def test_a_launcher_that_failed_before_nccl_ran_is_ours_never_the_nodes():
    launched = [{'changed': False, 'error_class': None, 'prefix': '/usr', 'daemon': 'orted'},
                {'failed': False, 'msg': 'peer01: the NCCL launcher cannot run: /usr/bin/orted is not on peer01',
                 'error_class': 'launcher_missing', 'error_side': 'ours', 'error_hint': 'install Open MPI'},
                {'skipped': True}, {'skipped': True}, {'skipped': True}, {'skipped': True}]
    outcome = measurements.nccl_outcome(launched)
    assert outcome is launched[1]
    figures = measurements.run_measurements(outcome, {'test': 'nccl', 'metric': 'nccl_busbw_gbs', 'subject': 'all_reduce', 'rails': 8})
    assert [(f['metric'], f['error_class'], f['error_side']) for f in figures] == [
        ('nccl_busbw_gbs', 'launcher_missing', 'ours'), ('nccl_hcas_used', 'launcher_missing', 'ours')]
    result = verdict.node_verdict(every_hca_healthy() + figures, [], P400, {'nccl_transport': None})
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['measurement_incomplete']
    assert 'orted is not on peer01' in result['causes'][0]['detail'] and 'netval_mpirun' in result['causes'][0]['detail']
    # Every step succeeded: the figures are nccl-tests' own.
    assert measurements.nccl_outcome([{'error_class': None}, {'skipped': True}, {'rows': [], 'error_class': None, 'x': 1}]) == {
        'rows': [], 'error_class': None, 'x': 1}
