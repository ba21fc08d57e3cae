"""parse_kernel_log on real dmesg / journalctl / syslog excerpts (healthy and faulty) and on this machine's own log."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import kernel_log
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures


def parse(name):
    return kernel_log.parse_kernel_log(fixtures.local('kernel_log/' + name))


def test_this_vm_dmesg_has_no_events():
    result = parse('dmesg_firecracker_vm_dev_boot_no_events.txt')
    assert result['line_count'] == 339
    for key in ('xid', 'sxid', 'fallen_off_bus', 'thermal', 'link_events', 'aer', 'pcie_link_changes'):
        assert result[key] == [], key  # 'thermal_sys: Registered thermal governor' is not a thermal event


def test_this_vm_journalctl_without_journal_is_just_empty():
    result = parse('journalctl_k_short_iso_firecracker_vm_dev_no_journal.txt')
    assert result['line_count'] == 1 and result['xid'] == []


def test_xid_119_ctime_h100():
    result = parse('dmesg_ctime_xid119_gsp_rpc_timeout_h100_xe9680_gpud.txt')
    assert [(e['code'], e['bus_id'], e['pid']) for e in result['xid']] == [
        (119, '0000:9b:00.0', 2024380)] * 3 + [(119, '0000:9b:00.0', 1263500), (119, '0000:9b:00.0', 1240590)]
    assert result['xid'][0]['time'] == 'Sun Feb 23 16:24:18 2025' and result['xid'][0]['process'] == 'nvidia-smi'
    assert result['xid'][0]['message'].startswith('Timeout after 6s')
    assert result['fallen_off_bus'] == [] and result['thermal'] == []


def test_xid_79_fallen_off_bus_with_unknown_pid_and_sxid():
    result = parse('dmesg_xid79_fallen_off_bus_and_nvswitch_sxid_gpud_readme.txt')
    assert len(result['xid']) == 1
    xid = result['xid'][0]
    assert (xid['code'], xid['bus_id'], xid['pid'], xid['time']) == (79, '0000:91:00.0', None, '6781741.548779')
    assert xid['message'] == 'GPU has fallen off the bus.'
    assert [e['bus_id'] for e in result['fallen_off_bus']] == ['0000:91:00.0']
    assert len(result['sxid']) == 8 and {e['code'] for e in result['sxid']} == {20034}
    assert result['sxid'][0]['switch'] == 'nvidia-nvswitch1' and result['sxid'][0]['bus_id'] == '0000:06:00.0'


def test_xid_13_and_109():
    result = parse('dmesg_ctime_xid13_xid109_peermem_gpud_readme.txt')
    assert [(e['code'], e['pid']) for e in result['xid']] == [(13, None), (13, None), (13, None), (109, 1797828)]
    assert result['xid'][3]['process'] == 'pt_main_thread'


def test_fallen_off_bus_multiline_without_xid():
    result = parse('dmesg_nvrm_fallen_off_bus_multiline_no_xid_nvsentinel155.txt')
    assert result['xid'] == [] and [e['bus_id'] for e in result['fallen_off_bus']] == ['0000:b3:00.0']


def test_fallen_off_bus_start_without_continuation_is_not_reported():
    result = kernel_log.parse_kernel_log('[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n')
    assert result['fallen_off_bus'] == []


def test_mlx5_ib_port_state_journalctl():
    events = parse('journalctl_k_mlx5_ib_port_link_init_active_gpud_pr1209_truncated.txt')['link_events']
    assert [(e['device'], e['ibdev'], e['port'], e['event']) for e in events] == [
        ('0000:ab:00.0', 'mlx5_5', 1, 'init'), ('0000:ab:00.0', 'mlx5_5', 1, 'up')]
    assert events[0]['time'] == 'Feb 14 05:03:41'


def test_mlx5_module_event_and_pcie_bandwidth():
    result = parse('dmesg_mlx5_cx5_port_module_cable_plugged_armnas16_truncated.txt')
    assert [(e['device'], e['event'], e['module']) for e in result['link_events']] == [('0004:01:00.0', 'module_plugged', 0)]
    assert [(e['device'], e['available_gbps'], e['link']) for e in result['pcie_link_changes']] == [
        ('0004:01:00.0', 63.008, '8.0 GT/s PCIe x8'), ('0004:01:00.1', 63.008, '8.0 GT/s PCIe x8')]


def test_nic_link_flaps_logread():
    events = parse('logread_kernel_igc_nic_link_down_up_lede11302_truncated.txt')['link_events']
    assert [(e['device'], e['netdev'], e['event']) for e in events] == [('0000:05:00.0', 'eth5', ev) for ev in ('down', 'up', 'down', 'up')]
    assert events[0]['time'] == 'Sun Jun 11 23:02:41 2023'


def test_aer_old_wording_dmesg():
    aer = parse('dmesg_aer_corrected_data_link_layer_timeout_archfan_coreboot2.txt')['aer']
    received = [e for e in aer if e['kind'] == 'received']
    details = [e for e in aer if e['kind'] == 'detail']
    assert len(received) == 4 and received[0]['multiple'] is True and received[0]['bdf'] == '0000:00:1c.1'
    assert len(details) == 4 and {(e['severity'], e['type'], e['agent']) for e in details} == {('Corrected', 'Data Link Layer', 'Transmitter ID')}
    assert details[0]['errors'] == ['Timeout'] and details[3]['errors'] == []


def test_aer_new_wording_syslog():
    aer = parse('syslog_kernel_aer_correctable_data_link_layer_popos3363_truncated.txt')['aer']
    received = [e for e in aer if e['kind'] == 'received']
    assert len(received) == 3 and received[0]['reported_by'] == '0000:00:03.1' and received[0]['bdf'] == '0000:00:00.0'
    assert [e['errors'] for e in aer if e['kind'] == 'detail'] == [['Timeout'], ['BadTLP'], []]
    assert {e['severity'] for e in aer} == {'Corrected'}


@pytest.mark.parametrize('line,severity', [
    ('pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0', 'Uncorrected'),
    ('pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0', 'Fatal'),
    ('pcieport 0000:00:1c.0: AER: Corrected error received: id=00e0', 'Corrected'),
])
def test_aer_severities(line, severity):
    entry = kernel_log.parse_kernel_log(line)['aer'][0]
    assert entry['severity'] == severity


def test_documented_formats_short_iso_link_down_module_error_and_thermal():
    text = ('2024-05-01T10:00:00+0000 gpu-node-07 kernel: mlx5_core 0000:1b:00.0 ens1np0: Link down\n'
            '2024-05-01T10:00:01+0000 gpu-node-07 kernel: mlx5_core 0000:1b:00.0: Port module event[error]: module 0, '
            'Cable error, Bad or shorted cable/module\n'
            '2024-05-01T10:00:02+0000 gpu-node-07 kernel: CPU12: Package temperature above threshold, cpu clock throttled (total events = 1)\n'
            '2024-05-01T10:00:03+0000 gpu-node-07 kernel: mlx5_core 0000:1b:00.0: 126.024 Gb/s available PCIe bandwidth, limited by '
            '8.0 GT/s PCIe x16 link at 0000:00:01.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n')
    result = kernel_log.parse_kernel_log(text)
    assert [(e['device'], e['netdev'], e['event']) for e in result['link_events']] == [
        ('0000:1b:00.0', 'ens1np0', 'down'), ('0000:1b:00.0', None, 'cable_error')]
    assert result['link_events'][0]['time'] == '2024-05-01T10:00:00+0000'
    assert len(result['thermal']) == 1
    change = result['pcie_link_changes'][0]
    assert change['event'] == 'limited' and change['capable_gbps'] == 252.048 and change['limited_at'] == '0000:00:01.0'


def test_summarize_xid():
    events = parse('dmesg_ctime_xid13_xid109_peermem_gpud_readme.txt')['xid']
    assert kernel_log.summarize_xid(events) == {'0000:cb:00.0': {'13': 3, '109': 1}}


def test_non_text_is_a_parse_error():
    with pytest.raises(ParseError):
        kernel_log.parse_kernel_log(None)


def test_a_megabyte_of_dotted_digits_is_read_as_plain_lines():
    """Issue 13's slowest kernel-log case (1,000 lines of 1 KB of '1.1.1...', 30 s before): now plain lines, no event."""
    result = kernel_log.parse_kernel_log(('1.' * 512 + '\n') * 1000)
    assert result['line_count'] == 1000
    assert not any(result[key] for key in ('xid', 'sxid', 'fallen_off_bus', 'thermal', 'link_events', 'aer',
                                           'pcie_link_changes'))


def test_runbook_port_module_lines_bracketed_and_mainline():
    events = parse('journalctl_k_mlx5_port_module_unplugged_plugged_cable_error_runbook_synthetic.txt')['link_events']
    assert [(e['device'], e['event'], e.get('module')) for e in events] == [
        ('0000:1b:00.0', 'cable_error', 0), ('0000:1b:00.0', 'down', None), ('0000:1b:00.0', 'module_unplugged', 0),
        ('0000:1b:00.0', 'module_plugged', 0), ('0000:1b:00.0', 'up', None), ('0000:1c:00.0', 'module_unplugged', 1)]
    assert events[3]['state'] == 'plugged_enabled' and events[5]['state'] == 'Cable unplugged'
    assert events[0]['state'] == 'Cable error, Bus stuck(I2C or data shorted)'


def test_mainline_cable_plugged_at_boot_is_a_plug_event():
    events = parse('dmesg_mlx5_cx5_port_module_cable_plugged_armnas16_truncated.txt')['link_events']
    assert [(e['device'], e['event'], e['module']) for e in events] == [('0004:01:00.0', 'module_plugged', 0)]


def test_journalctl_short_iso_precise_xids_mig_and_link_flaps_synthetic():
    result = parse('journalctl_k_short_iso_precise_xid94_mig_xid48_xid79_mlx5_link_flaps_synthetic.txt')
    assert [(x['code'], x['bus_id'], x['gpu_instance']) for x in result['xid']] == [
        (94, '0000:9b:00.0', None), (94, '0000:9b:00.0', 5), (48, '0000:bb:00.0', None), (79, '0000:db:00.0', None)]
    assert result['xid'][1]['time'] == '2026-03-10T09:14:02.118391+00:00' and result['xid'][1]['pid'] == 48302
    assert result['xid'][1]['message'] == 'Contained: CE User Channel (0x9). RST: No, D-RST: No'
    assert result['xid'][2]['pid'] is None and 'double bit error (DBE)' in result['xid'][2]['message']
    assert [(e['event'], e['netdev'], e['device']) for e in result['link_events']] == [
        ('down', 'enp59s0f0np0', '0000:3b:00.0'), ('up', 'enp59s0f0np0', '0000:3b:00.0')] * 2
    assert [f['bus_id'] for f in result['fallen_off_bus']] == ['0000:db:00.0']
    assert kernel_log.summarize_xid(result['xid']) == {'0000:9b:00.0': {'94': 2}, '0000:bb:00.0': {'48': 1}, '0000:db:00.0': {'79': 1}}


@pytest.mark.parametrize('when, epoch', [
    ('2025-01-17T17:10:43+0000', 1737133843), ('2025-01-18T01:10:43+0800', 1737133843), ('2025-01-17T12:10:43-05:00', 1737133843),
    ('2025-01-17T17:10:43.250000+0000', 1737133843.25), ('2025-01-17T17:10:43Z', 1737133843),
])
def test_time_epoch_places_zoned_journal_times_on_one_clock(when, epoch):
    assert kernel_log.time_epoch(when) == epoch


@pytest.mark.parametrize('when', [None, '1843.308145', 'Sun Feb 23 16:24:18 2025', 'Feb 14 05:03:41', '2025-01-17T17:10:43'])
def test_time_epoch_of_a_time_without_zone_is_unknown(when):
    assert kernel_log.time_epoch(when) is None


def test_journal_lines_carry_times_time_epoch_can_read():
    parsed = kernel_log.parse_kernel_log(fixtures.local('kernel_log/journalctl_k_short_iso_precise_xid94_mig_xid48_xid79_mlx5_link_flaps_synthetic.txt'))
    assert parsed['link_events'] and all(kernel_log.time_epoch(event['time']) is not None for event in parsed['link_events'])
