"""Drift findings: the lab node's baseline (synthetic lab outputs) against current states with one synthetic edit each,
every red rule with a positive and a near-miss case; real H100 sysfs counters (shared fixtures) for the port counters."""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline, drift
from tests.unit import fixtures
from tests.unit.plugins.module_utils import drift_samples as samples

SYSFS_H100 = 'sysfs/sys-class-infiniband_h100_8xCX7_NDR_plus_bond_gpud'
BASELINE = samples.lab_baseline()


def compare(edit=None, maintenance=None, rules=None, stamp=samples.DAY_LATER, stats=None):
    return drift.compare(copy.deepcopy(BASELINE), samples.current(edit, stamp, stats), rules or samples.rules(), maintenance)


def only(findings, check):
    return [f for f in findings if f['check'] == check]


def red(findings):
    return [f for f in findings if f['severity'] == drift.RED]


def test_the_same_state_a_day_later_has_no_findings():
    assert compare() == []


def test_every_finding_is_a_flat_dict_with_the_documented_keys():
    def edit(facts):
        facts['rdma']['devices']['mlx5_2']['ports']['1']['rate_gbps'] = 200
        facts['host']['cmdline']['tokens'].remove('iommu=pt')
    findings = compare(edit)
    assert findings
    for entry in findings:
        assert set(entry) >= {'check', 'subject', 'severity', 'kind', 'baseline', 'current', 'detail', 'maintenance'}
        assert not [k for k, v in entry.items() if isinstance(v, (dict, list))]
        assert entry['check'] in drift.CHECKS and entry['kind'] in drift.KINDS and entry['severity'] in drift.SEVERITIES


# ----------------------------------------------------------------------------------------------- ports

def _rate(device, value):
    def edit(facts):
        facts['rdma']['devices'][device]['ports']['1']['rate_gbps'] = value
    return edit


def test_port_rate_dropped_is_red():
    findings = compare(_rate('mlx5_2', 200))
    assert red(findings) == only(findings, 'port_rate')
    (entry,) = only(findings, 'port_rate')
    assert (entry['subject'], entry['baseline'], entry['current'], entry['kind']) == ('mlx5_2/1', 400, 200, 'fault')
    assert entry['detail'].startswith('port mlx5_2/1 runs at 200 Gb/s, it ran at 400 Gb/s')


def test_near_miss_port_rate_the_same_or_higher_is_not_red():
    assert compare(_rate('mlx5_2', 400)) == []
    findings = compare(_rate('mlx5_2', 800))
    assert [(f['check'], f['severity']) for f in findings] == [('port_rate', 'info')]


def test_a_port_not_active_any_more_is_red():
    def edit(facts):
        port = facts['rdma']['devices']['mlx5_5']['ports']['1']
        port.update(state='DOWN', state_code=1, phys_state='Polling', phys_state_code=2)
    (entry,) = red(compare(edit))
    assert (entry['check'], entry['subject'], entry['baseline'], entry['current']) == ('port_state', 'mlx5_5/1', 'ACTIVE', 'DOWN')
    assert 'DOWN (Polling)' in entry['detail']


def test_near_miss_port_still_active_with_another_phys_label_is_not_red():
    def edit(facts):
        facts['rdma']['devices']['mlx5_5']['ports']['1']['phys_state'] = 'LinkUp (5)'
    assert red(compare(edit)) == []


# ----------------------------------------------------------------------------------------------- PCIe

def _nic_link(bdf, hop=None, **values):
    def edit(facts):
        device = [d for d in facts['pcie']['devices'] if d['bdf'] == bdf][0]
        target = device['link'] if hop is None else [h for h in device['upstream'] if h['bdf'] == hop][0]
        target.update(values)
    return edit


def test_lnksta_speed_dropped_is_red():
    (entry,) = red(compare(_nic_link('0000:1a:00.0', current_speed_gts=16.0)))
    assert (entry['check'], entry['subject'], entry['baseline'], entry['current']) == ('pcie_link', 'mlx5_0', '32GT/s x16', '16GT/s x16')
    assert 'LnkCap 32GT/s x16' in entry['detail']


def test_lnksta_width_of_an_upstream_hop_dropped_is_red():
    (entry,) = red(compare(_nic_link('0000:9b:00.0', hop='0000:9a:03.0', current_width=8)))
    assert (entry['check'], entry['subject'], entry['current']) == ('pcie_link', 'mlx5_4 (upstream 0000:9a:03.0)', '32GT/s x8')


def test_near_miss_a_lnkcap_change_alone_is_info():
    findings = compare(_nic_link('0000:1a:00.0', max_speed_gts=64.0))
    assert [(f['check'], f['severity'], f['current']) for f in findings] == [('pcie_cap', 'info', '64GT/s x16')]


def test_near_miss_a_faster_link_is_info():
    findings = compare(_nic_link('0000:1a:00.0', hop='0000:19:03.0', current_speed_gts=64.0, max_speed_gts=64.0))
    assert [(f['check'], f['severity']) for f in findings] == [('pcie_cap', 'info'), ('pcie_link', 'info')]


# ----------------------------------------------------------------------------------------------- cmdline

def test_a_cmdline_token_lost_is_red():
    def edit(facts):
        facts['host']['cmdline']['tokens'].remove('iommu=pt')
    (entry,) = compare(edit)
    assert (entry['check'], entry['subject'], entry['severity'], entry['kind'], entry['current']) == \
        ('cmdline', 'iommu=pt', 'red', 'spec_mismatch', 'missing')


def test_near_miss_a_cmdline_token_added_is_info():
    def edit(facts):
        facts['host']['cmdline']['tokens'].append('pci=realloc')
    assert [(f['check'], f['subject'], f['severity']) for f in compare(edit)] == [('cmdline', 'pci=realloc', 'info')]


# ----------------------------------------------------------------------------------------------- missing devices

def test_a_gpu_missing_is_red_and_says_why():
    def edit(facts):
        facts['gpu']['gpus'] = [g for g in facts['gpu']['gpus'] if g['bus_id'] != '0000:5e:00.0']
        facts['gpu']['gpu_count'] = 7
    findings = compare(edit)
    (entry,) = red(findings)
    assert (entry['check'], entry['subject'], entry['baseline'], entry['current']) == ('gpu_present', '0000:5e:00.0', 'present', 'missing')
    assert 'index 3' in entry['detail'] and 'on the PCIe bus but not visible to nvidia-smi' in entry['detail']
    # its counters are gone too: not a second red finding
    assert len(findings) == 1


def test_near_miss_gpus_reindexed_are_matched_by_bus_id():
    def edit(facts):
        for gpu in facts['gpu']['gpus']:
            gpu['index'] = 7 - gpu['index']
    assert compare(edit) == []


def test_a_gpu_gone_from_the_bus_is_red_even_with_a_placeholder():
    def edit(facts):
        facts['gpu']['gpus'] = [g for g in facts['gpu']['gpus'] if g['bus_id'] != '0000:dc:00.0']
        facts['pcie']['devices'] = [d for d in facts['pcie']['devices'] if d['bdf'] != '0000:dc:00.0']
    (entry,) = red(compare(edit))
    assert entry['subject'] == '0000:dc:00.0' and 'neither nvidia-smi nor the PCIe bus shows it' in entry['detail']


def test_a_nic_missing_is_red():
    def edit(facts):
        del facts['rdma']['devices']['mlx5_3']
    findings = red(compare(edit))
    assert [(f['check'], f['subject']) for f in findings] == [('nic_present', 'mlx5_3')]
    assert 'on the PCIe bus without an RDMA device' in findings[0]['detail']


def test_near_miss_a_renamed_nic_at_the_same_pci_address_is_the_same_nic():
    def edit(facts):
        facts['rdma']['devices']['mlx5_10'] = facts['rdma']['devices'].pop('mlx5_0')
        for nic in facts['nic']['nics'].values():
            if nic.get('rdma_device') == 'mlx5_0':
                nic['rdma_device'] = 'mlx5_10'
    assert red(compare(edit)) == []


def test_a_baseline_with_a_missing_gpu_and_a_current_state_still_missing_it_has_no_finding():
    def edit(facts):
        facts['gpu']['gpus'] = [g for g in facts['gpu']['gpus'] if g['bus_id'] != '0000:dc:00.0']
        facts['pcie']['devices'] = [d for d in facts['pcie']['devices'] if d['bdf'] != '0000:dc:00.0']
    old = samples.facts()
    edit(old)
    seven = baseline.build_baseline(samples.result(), old, samples.profile(), samples.ethtool_stats())
    assert drift.compare(seven, samples.current(edit), samples.rules()) == []
    back = drift.compare(seven, samples.current(), samples.rules())
    assert [(f['check'], f['subject'], f['severity']) for f in back] == [('gpu_present', '0000:dc:00.0', 'info')]


# ----------------------------------------------------------------------------------------------- counters

def _mlxlink(bdf, **counters):
    def edit(facts):
        facts['firmware']['devices'][bdf]['link']['counters'].update(counters)
    return edit


def test_a_port_flap_is_red():
    (entry,) = red(compare(_mlxlink('0000:4c:00.0', link_down_counter=1)))
    assert (entry['check'], entry['subject'], entry['baseline'], entry['current'], entry['kind']) == ('port_flap', 'mlx5_2', 0, 1, 'fault')
    assert (entry['growth'], entry['hours'], entry['limit_per_hour']) == (1, 24.0, 0)
    assert entry['detail'].startswith('mlx5_2 flapped (link down counter grew)')


def test_near_miss_a_flap_within_a_permissive_limit_is_info():
    findings = compare(_mlxlink('0000:4c:00.0', link_down_counter=1), rules=samples.rules(link_downed=1))
    assert [(f['check'], f['severity']) for f in findings] == [('port_flap', 'info')]


def test_symbol_errors_faster_than_their_limit_are_red_and_at_the_limit_info():
    # 241 in 24 h is 10.04/h > 10; 240 is 10/h: not faster than the limit
    over = compare(stats=samples.stats_with('ibp93s0', rx_symbol_err_phy=241))
    assert [(f['check'], f['subject'], f['severity']) for f in over] == [('symbol_error', 'mlx5_3', 'red')]
    assert over[0]['rate_per_hour'] == round(241 / 24.0, 3) and over[0]['limit_per_hour'] == 10
    at = compare(stats=samples.stats_with('ibp93s0', rx_symbol_err_phy=240))
    assert [(f['check'], f['severity']) for f in at] == [('symbol_error', 'info')]


def test_pause_frames_and_discards_against_their_limits():
    storm = compare(stats=samples.stats_with('ibp155s0', rx_prio3_pause=3600000 * 24 + 1))
    assert [(f['check'], f['subject'], f['severity']) for f in storm] == [('pause_frames', 'mlx5_4', 'red')]
    busy = compare(stats=samples.stats_with('ibp155s0', rx_prio3_pause=3600000 * 24, rx_pause_ctrl_phy=1000))
    assert [(f['check'], f['severity']) for f in busy] == [('pause_frames', 'info')]
    assert 'rx_pause_ctrl_phy +1000 in 24 h' in busy[0]['detail'] and 'rx_prio3_pause +86400000 in 24 h' in busy[0]['detail']
    drops = compare(stamp=samples.HOUR_LATER, stats=samples.stats_with('ibp59s0', rx_discards_phy=1001))
    assert [(f['check'], f['subject'], f['severity']) for f in drops] == [('rx_discards_phy', 'mlx5_1', 'red')]
    near = compare(stamp=samples.HOUR_LATER, stats=samples.stats_with('ibp59s0', rx_discards_phy=1000))
    assert [(f['check'], f['severity']) for f in near] == [('rx_discards_phy', 'info')]


def test_the_minimum_window_keeps_one_error_in_ten_minutes_from_reading_as_six_an_hour():
    findings = compare(stamp='20261201T101556Z', stats=samples.stats_with('ibp93s0', rx_crc_errors_phy=6),
                       rules=samples.rules(port_rcv_errors=10))
    assert [(f['check'], f['severity'], f['rate_per_hour']) for f in findings] == [('port_rcv_errors', 'info', 6.0)]
    short = samples.rules(port_rcv_errors=10)
    short['min_window_hours'] = 0.1
    findings = compare(stamp='20261201T101556Z', stats=samples.stats_with('ibp93s0', rx_crc_errors_phy=6), rules=short)
    assert [(f['check'], f['severity']) for f in findings] == [('port_rcv_errors', 'red')]


def test_a_counter_that_went_back_counts_from_zero():
    base = copy.deepcopy(BASELINE)
    for counter in base['facts']['counters']:
        if counter['source'] == 'ethtool' and counter['subject'] == 'mlx5_3' and counter['counter'] == 'rx_discards_phy':
            counter['value'] = 5000
    findings = drift.compare(base, samples.current(stamp=samples.HOUR_LATER, stats=samples.stats_with('ibp93s0', rx_discards_phy=1200)),
                             samples.rules())
    (entry,) = findings
    assert (entry['check'], entry['severity'], entry['growth']) == ('rx_discards_phy', 'red', 1200)
    assert 'the counter went back (5000 -> 1200' in entry['detail']


def _xid(code, time):
    def edit(facts):
        facts['gpu']['xid_events'] = [{'code': code, 'bus_id': '0000:4d:00.0', 'time': time, 'pid': None, 'process': None, 'message': '',
                                       'line': '%s node01 kernel: NVRM: Xid (PCI:0000:4d:00): %d, ...' % (time, code)}]
    return edit


def test_a_fatal_xid_after_the_baseline_is_red():
    (entry,) = red(compare(_xid(79, '2026-12-02T03:00:00+0000')))
    assert (entry['check'], entry['subject'], entry['current'], entry['growth']) == ('xid', '0000:4d:00.0', 1, 1)


def test_near_miss_a_fatal_xid_from_before_the_baseline_is_not_counted():
    assert compare(_xid(79, '2026-12-01T09:00:00+0000')) == []


def test_near_miss_an_application_xid_within_its_limit_is_info():
    findings = compare(_xid(13, '2026-12-02T03:00:00+0000'))
    assert [(f['check'], f['severity']) for f in findings] == [('xid_other', 'info')]


def test_xids_without_times_are_all_counted_as_the_captures_window():
    findings = compare(_xid(48, None))
    assert [(f['check'], f['severity']) for f in findings] == [('xid', 'red')]
    assert "events in the capture's kernel log" in findings[0]['detail']


def test_uncorrectable_ecc_growing_is_red_and_correctable_counts_are_info():
    def edit(facts):
        gpu = facts['gpu']['gpus'][2]
        gpu['ecc_errors']['aggregate']['uncorrectable_total'] = 1
        gpu['ecc_errors']['volatile']['correctable_total'] = 3
    findings = compare(edit)
    assert [(f['check'], f['subject'], f['severity']) for f in findings] == [
        ('ecc_uncorrectable', '0000:4d:00.0', 'red'), ('gpu_ecc', '0000:4d:00.0 volatile_correctable', 'info')]


def _gpud_state(tmp_path, stamp, edit=None):
    tree = tmp_path / str(stamp)
    (tree / 'class').mkdir(parents=True)
    os.symlink(fixtures.shared_path(SYSFS_H100), str(tree / 'class' / 'infiniband'))
    devices = rdma.read_infiniband_sysfs(str(tree), counters=True)['devices']
    if edit:
        edit(devices)
    return devices


def test_real_h100_port_counters_flap_and_receive_errors(tmp_path):
    """Real hardware counters (gpud's H100 tree: mlx5_1 link_downed=255, port_rcv_errors=14 everywhere) as the current state;
    the baseline is the same tree an hour earlier with synthetic edits: mlx5_1 link_downed 254, mlx5_4 port_rcv_errors 3."""
    def earlier(devices):
        devices['mlx5_1']['ports'][1]['counters']['link_downed'] = 254
        devices['mlx5_4']['ports'][1]['counters']['port_rcv_errors'] = 3
    old = baseline.current_state({'rdma': {'devices': _gpud_state(tmp_path, 1, earlier)}}, 'h100', '20251201T090000Z')
    old['kind'] = 'baseline'
    now = baseline.current_state({'rdma': {'devices': _gpud_state(tmp_path, 2)}}, 'h100', '20251201T100000Z')
    findings = drift.compare(old, now, samples.rules())
    assert [(f['check'], f['subject'], f['severity'], f['growth']) for f in findings] == [
        ('port_flap', 'mlx5_1/1', 'red', 1), ('port_rcv_errors', 'mlx5_4/1', 'red', 11)]
    near = drift.compare(old, now, samples.rules(link_downed=1, port_rcv_errors=11))
    assert [(f['check'], f['severity']) for f in near] == [('port_flap', 'info'), ('port_rcv_errors', 'info')]


def test_counters_the_baseline_never_had_are_said_once_not_judged():
    old = baseline.build_baseline(samples.result(), samples.facts(), samples.profile())  # no ethtool -S in the baseline
    findings = drift.compare(old, samples.current(stats=samples.stats_with('ibp93s0', rx_discards_phy=10 ** 6)), samples.rules())
    assert [(f['check'], f['subject'], f['severity'], f['kind']) for f in findings] == [('capture', 'counters:ethtool', 'info', 'not_captured')]
    gone = drift.compare(copy.deepcopy(BASELINE), baseline.current_state(samples.facts(), 'node01', samples.DAY_LATER, samples.profile()),
                         samples.rules())
    assert [(f['check'], f['subject'], f['baseline'], f['current']) for f in gone] == [('capture', 'counters:ethtool', 'captured', None)]


# ----------------------------------------------------------------------------------------------- maintenance, info

def _firmware(version, *bdfs):
    def edit(facts):
        for bdf, device in facts['firmware']['devices'].items():
            if not bdfs or bdf in bdfs:
                device['firmware']['fw_version'] = version
    return edit


FIRMWARE_UPDATE = {'reason': 'NIC firmware update', 'changes': [{'check': 'firmware', 'subject': 'mlx5_0', 'to': '28.40.1000'}]}


def test_a_change_listed_in_a_maintenance_record_is_expected():
    (entry,) = compare(_firmware('28.40.1000', '0000:1a:00.0'), FIRMWARE_UPDATE)
    assert (entry['check'], entry['subject'], entry['severity'], entry['kind']) == ('firmware', 'mlx5_0', 'expected', 'spec_mismatch')
    assert (entry['baseline'], entry['current'], entry['maintenance']) == ('28.39.2048', '28.40.1000', 'NIC firmware update')
    assert entry['detail'].endswith('(expected: NIC firmware update)')


def test_a_maintenance_pattern_covers_every_nic_and_from_must_match():
    record = {'reason': 'fleet firmware roll-out', 'changes': [{'check': 'firmware', 'subject': 'mlx5_*', 'from': '28.39.2048', 'to': '28.40.1000'}]}
    findings = compare(_firmware('28.40.1000'), record)
    assert len(findings) == 8 and all(f['severity'] == 'expected' for f in findings)
    record['changes'][0]['from'] = '28.38.1000'
    assert all(f['severity'] == 'info' for f in compare(_firmware('28.40.1000'), record))


def test_near_miss_a_maintenance_record_with_another_value_leaves_the_finding_as_it_was():
    (entry,) = compare(_firmware('28.41.0001', '0000:1a:00.0'), FIRMWARE_UPDATE)
    assert entry['severity'] == 'info' and entry['maintenance'] is None
    assert 'the maintenance record (NIC firmware update) expected 28.40.1000' in entry['detail']


def test_a_maintenance_record_can_explain_a_red_change():
    record = [{'reason': 'rail 2 moved to a 200G switch', 'changes': [{'check': 'port_rate', 'subject': 'mlx5_2/1', 'to': 200}]}]
    (entry,) = compare(_rate('mlx5_2', 200), record)
    assert (entry['check'], entry['severity']) == ('port_rate', 'expected')


def test_a_listed_change_that_did_not_happen_is_said():
    (entry,) = compare(None, FIRMWARE_UPDATE)
    assert (entry['check'], entry['subject'], entry['severity'], entry['current']) == ('maintenance', 'mlx5_0', 'info', '28.40.1000')
    assert 'does not differ from the baseline' in entry['detail']


def test_anything_else_that_differs_is_info():
    def edit(facts):
        facts['firmware']['devices']['0000:3b:00.0']['config']['parameters']['SRIOV_EN'] = 'True(1)'
        facts['nic']['nics']['ibp76s0']['ring']['current']['rx'] = 1024
        del facts['host']['modules']['nvidia_peermem']
        facts['host']['cpu_governor'] = {'uniform': None, 'counts': {'performance': 60, 'powersave': 4}}
    findings = compare(edit)
    assert [(f['check'], f['subject'], f['severity'], f['kind'], f['baseline'], f['current']) for f in findings] == [
        ('governor', 'cpu', 'info', 'spec_mismatch', 'performance', 'performance x60, powersave x4'),
        ('mlxconfig', 'mlx5_1:SRIOV_EN', 'info', 'spec_mismatch', 'False(0)', 'True(1)'),
        ('modules', 'nvidia_peermem', 'info', 'spec_mismatch', 'loaded', 'missing'),
        ('rx_ring', 'ibp76s0', 'info', 'spec_mismatch', 16384, 1024)]


def _mtus(facts, mtu):
    for entry in facts['nic']['nics'].values():
        entry['mtu'] = mtu


def test_an_mtu_that_dropped_is_red_and_one_that_rose_is_info():
    facts = samples.facts()
    _mtus(facts, 9000)
    with_mtu = baseline.build_baseline(samples.result(), facts, samples.profile(), samples.ethtool_stats())
    assert {i['mtu'] for n in with_mtu['facts']['nics'] for i in n['interfaces']} == {9000}

    def dropped(data):
        _mtus(data, 9000)
        data['nic']['nics']['ibp76s0']['mtu'] = 1500
    findings = drift.compare(copy.deepcopy(with_mtu), samples.current(dropped), samples.rules())
    assert [(f['check'], f['subject'], f['severity'], f['kind'], f['baseline'], f['current']) for f in findings] == [
        ('mtu', 'ibp76s0', 'red', 'fault', 9000, 1500)]
    assert 'frames above 1500 bytes no longer fit' in findings[0]['detail']

    def rose(data):
        _mtus(data, 9000)
        data['nic']['nics']['ibp76s0']['mtu'] = 9216
    assert [(f['check'], f['severity']) for f in drift.compare(copy.deepcopy(with_mtu), samples.current(rose), samples.rules())] == [
        ('mtu', 'info')]


def test_near_miss_a_baseline_without_mtus_compares_none():
    def dropped(data):
        _mtus(data, 1500)
    assert only(compare(dropped), 'mtu') == []


def test_escalated_checks_are_red():
    def edit(facts):
        del facts['host']['modules']['nvidia_peermem']
    rules = samples.rules()
    rules['escalate_checks'] = ['modules']
    (entry,) = compare(edit, rules=rules)
    assert entry['severity'] == 'red' and 'escalate_checks lists modules' in entry['detail']


def test_a_tool_missing_from_the_capture_is_not_captured_not_missing():
    def edit(facts):
        facts['gpu'] = {'failed': True, 'msg': 'nvidia-smi: command not found'}
    findings = compare(edit)
    assert red(findings) == []
    assert [(f['check'], f['subject'], f['kind']) for f in findings] == [
        ('capture', 'counters:kernel_log', 'not_captured'), ('capture', 'counters:nvidia_smi', 'not_captured'), ('capture', 'gpu', 'not_captured')]


def test_a_changed_tier_profile_is_info():
    changed = samples.profile()
    changed['thresholds']['ib_send_bw_gbs']['reject_below'] = 41
    now = baseline.current_state(samples.facts(), 'node01', samples.DAY_LATER, changed, samples.ethtool_stats())
    (entry,) = drift.compare(copy.deepcopy(BASELINE), now, samples.rules())
    assert (entry['check'], entry['subject'], entry['severity']) == ('profile', 'digest', 'info')


# ----------------------------------------------------------------------------------------------- no or bad baseline

@pytest.mark.parametrize('missing', [None, {}])
def test_a_node_without_a_baseline_gets_one_red_baseline_missing_finding(missing):
    (entry,) = drift.compare(missing, samples.current(), samples.rules())
    assert (entry['check'], entry['subject'], entry['severity'], entry['kind']) == ('baseline', 'node01', 'red', 'baseline_missing')
    assert entry['current'] == samples.DAY_LATER and 'has no baseline' in entry['detail']


@pytest.mark.parametrize('bad, message', [
    ('baseline.json', 'baseline must be a dict (a gpufleet.netval/baseline document, schema_version 1), got str'),
    ([{'node': 'node01'}], 'baseline must be a dict'),
    (dict(BASELINE, schema_version=2), 'baseline.schema_version must be 1 (this collection reads version 1 only), got 2'),
    (dict(BASELINE, schema='gpufleet.netval/report'), "baseline.schema must be 'gpufleet.netval/baseline'"),
    (dict(BASELINE, facts=None), 'baseline.facts must be a dict, got null'),
    (dict(BASELINE, node='node02'), "baseline is of node 'node02', the current state of node 'node01'"),
])
def test_a_malformed_baseline_is_a_clear_error(bad, message):
    with pytest.raises(drift.DriftError) as caught:
        drift.compare(bad, samples.current(), samples.rules())
    assert message in str(caught.value)


def test_a_malformed_current_state_is_a_clear_error():
    with pytest.raises(drift.DriftError, match='current must be a dict'):
        drift.compare(BASELINE, 'now', samples.rules())


@pytest.mark.parametrize('change, message', [
    (lambda r: r.pop('min_window_hours'), 'drift_rules.min_window_hours must be a number of hours above 0, got None'),
    (lambda r: r['counter_limits_per_hour'].update(symbol_error=-1), 'counter_limits_per_hour.symbol_error must be a number >= 0'),
    (lambda r: r['counter_limits_per_hour'].pop('xid'), 'counter_limits_per_hour.xid must be a number >= 0 (counts per hour), got None'),
    (lambda r: r['counter_limits_per_hour'].update(crc=1), 'counter_limits_per_hour.crc is not a counter class'),
    (lambda r: r.update(escalate_checks=['firmwar']), 'escalate_checks names firmwar, which is not a drift check'),
    (lambda r: r.update(limits={}), 'drift_rules.limits is not a drift rule'),
    (lambda r: r['figure_tolerances'].update(default_pct='5%'), 'figure_tolerances.default_pct must be a percentage >= 0'),
])
def test_malformed_rules_name_the_key(change, message):
    rules = samples.rules()
    change(rules)
    with pytest.raises(drift.DriftError) as caught:
        drift.compare(BASELINE, samples.current(), rules)
    assert message in str(caught.value)
    assert drift.rules_errors(['a']) == ['drift_rules must be a mapping (tier_profile_resolved.drift_rules), got list']
    assert 'not the whole profile' in drift.rules_errors(dict(samples.profile(), drift_rules=samples.rules()))[0]


@pytest.mark.parametrize('record, message', [
    ('firmware update', 'maintenance must be a dict with reason and changes, got str'),
    ({'changes': [{'check': 'firmware', 'subject': 'mlx5_0', 'to': '1'}]}, 'maintenance.reason must be non-empty text'),
    ({'reason': 'x', 'changes': []}, 'maintenance.changes must be a non-empty list'),
    ({'reason': 'x', 'changes': [{'check': 'fw', 'subject': 'mlx5_0', 'to': '1'}]}, 'maintenance.changes[0].check must be a drift check'),
    ({'reason': 'x', 'changes': [{'check': 'firmware', 'to': '1'}]}, 'maintenance.changes[0].subject must be text'),
    ([{'reason': 'x', 'changes': [{'check': 'firmware', 'subject': 'mlx5_0'}]}], 'maintenance[0].changes[0].to is missing'),
])
def test_malformed_maintenance_records_name_the_field(record, message):
    with pytest.raises(drift.DriftError) as caught:
        drift.compare(BASELINE, samples.current(), samples.rules(), record)
    assert message in str(caught.value)


# ----------------------------------------------------------------------------------------------- hostile documents

JUNK = ('x', -3, 2.5, None, True, [], {}, [None], {'a': [1]}, float('inf'))


def _paths(value, path=()):
    """Every path into ``value``, lists sampled at their first and last entry."""
    yield path
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _paths(value[key], path + (key,))
    elif isinstance(value, list) and value:
        for index in sorted(set((0, len(value) - 1))):
            yield from _paths(value[index], path + (index,))


def _set(doc, path, junk):
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = junk


def _slim(doc):
    """The lab baseline with two NICs, two GPUs and a few counters and figures, to keep the walk short."""
    doc = copy.deepcopy(doc)
    doc['facts']['nics'] = doc['facts']['nics'][:2]
    doc['facts']['gpus'] = doc['facts']['gpus'][:2]
    kept = {}
    for counter in doc['facts']['counters']:
        kept.setdefault((counter['source'], counter['class']), counter)
    doc['facts']['counters'] = list(kept.values())
    doc['figures'] = doc['figures'][:3]
    return doc


def test_junk_anywhere_in_a_baseline_or_current_state_is_a_drift_error_or_compared():
    """Every field of a (slimmed) baseline and current state replaced by junk of every type: compare either works or says
    what is wrong (DriftError); it never fails with another exception, and it never changes its input."""
    old = _slim(BASELINE)
    now = _slim(samples.current(_rate('mlx5_0', 200)))
    before = json.dumps([old, now], sort_keys=True)
    rules = samples.rules()
    tried = 0
    for doc in (old, now):
        for path in list(_paths(doc))[1:]:
            target = doc
            for key in path[:-1]:
                target = target[key]
            original = target[path[-1]]
            for junk in JUNK:
                target[path[-1]] = junk
                try:
                    drift.compare(old, now, rules)
                    drift.compare_figures(old, now['figures'] or old, rules['figure_tolerances'])
                except drift.DriftError:
                    pass
                tried += 1
            target[path[-1]] = original
    assert json.dumps([old, now], sort_keys=True) == before
    assert tried > 1000


def test_a_window_of_minutes_is_written_with_its_digits_not_as_zero_hours():
    findings = compare(stamp='20261201T101556Z', stats=samples.stats_with('ibp93s0', rx_crc_errors_phy=6),
                       rules=samples.rules(port_rcv_errors=10))
    assert 'rx_crc_errors_phy +6 in 0.167 h' in findings[0]['detail'], findings[0]['detail']
