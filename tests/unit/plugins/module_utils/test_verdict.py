"""Verdict engine: thresholds from the shipped tier data, buckets and likely causes."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils import verdict
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
    assert TIERS['100G']['thresholds']['iperf3_gbps'] == {'healthy': [90, None], 'reject_below': 80, 'unit': 'Gb/s', 'direction': 'one-way'}
    assert TIERS['200G']['thresholds']['ib_send_bw_gbs']['healthy'] == [22, 24]
    assert TIERS['400G']['tests']['iperf3'] == {'enabled': True, 'parallel': 32, 'duration': 60, 'interval': 10}
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


def test_nccl_socket_fallback_named():
    measurements = [{'id': 'nccl', 'metric': 'nccl_busbw_gbs', 'subject': 'all_reduce', 'value': 2.1, 'unit': 'GB/s', 'kind': 'nccl'}]
    result = verdict.node_verdict(measurements, [], P400, {'nccl_transport': 'Socket'})
    assert result['bucket'] == 'C'
    fallback = [c for c in result['causes'] if c['cause'] == 'nccl_socket_fallback']
    assert fallback and 'NET/Socket' in fallback[0]['detail'] and 'NET/IB' in fallback[0]['detail']
    assert [c['cause'] for c in result['causes']] == ['nccl_socket_fallback']


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
