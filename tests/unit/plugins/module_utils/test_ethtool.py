"""ethtool parsers and counter_deltas on real outputs (this machine's veth/virtio_net, public mlx4/mlx5/CX4 outputs) and synthetic mlx5 ones."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import ethtool
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures


# --- link settings -------------------------------------------------------------

def test_link_cx4_100g_dac_real():
    result = ethtool.parse_ethtool(fixtures.shared('ethtool/ethtool_link_settings_cx4_100g_dac_terrencemiao.txt'))
    assert result['netdev'] == 'enp1s0np0'
    assert result['speed_mbps'] == 100000 and result['duplex'] == 'Full'
    assert result['port'] == 'Direct Attach Copper'
    assert result['auto_negotiation'] is True and result['link_detected'] is True
    assert result['supported_ports'] == ['Backplane']
    assert len(result['supported_link_modes']) == 16 and '100000baseCR4/Full' in result['advertised_link_modes']
    assert result['supported_fec_modes'] == ['None', 'RS', 'BASER']
    assert result['advertised_fec_modes'] == ['RS']


def test_link_veth_real_not_reported_is_none():
    result = ethtool.parse_ethtool(fixtures.local('ethtool/ethtool_veth_link_up_10000.txt'))
    assert result['speed_mbps'] == 10000 and result['link_detected'] is True
    assert result['supported_link_modes'] is None and result['advertised_fec_modes'] is None
    assert result['supported_ports'] == []


def test_link_veth_peer_down_real():
    result = ethtool.parse_ethtool(fixtures.local('ethtool/ethtool_veth_link_detected_no_peer_down.txt'))
    assert result['link_detected'] is False


def test_link_virtio_unknown_speed_is_none_not_zero():
    result = ethtool.parse_ethtool(fixtures.local('ethtool/ethtool_virtio_net_speed_unknown.txt'))
    assert result['speed_mbps'] is None and result['speed'] == 'Unknown!'
    assert result['duplex'] is None
    assert result['fields']['Duplex'] == 'Unknown! (255)'


@pytest.mark.parametrize('text', ['', 'No data available\n', 'netlink error: Operation not supported\n',
                                  'Settings for eth0:\nthis is not ethtool\n', 'Settings for eth0:\n'])
def test_link_rejects_garbage(text):
    with pytest.raises(ParseError):
        ethtool.parse_ethtool(text)


# --- ethtool -i ------------------------------------------------------------------------

def test_driver_mlx5_real_splits_psid():
    result = ethtool.parse_ethtool_driver(fixtures.shared('ethtool/ethtool_i_mlx5_core_cx4_ethq8.txt'))
    assert result['driver'] == 'mlx5_core' and result['bus_info'] == '0000:af:00.0'
    assert result['firmware_version'] == '14.23.1020 (MT_2420110034)'
    assert result['firmware_version_number'] == '14.23.1020' and result['firmware_psid'] == 'MT_2420110034'
    assert result['expansion_rom_version'] is None and result['supports_priv_flags'] is True


def test_driver_mlx4_real_trailing_spaces():
    result = ethtool.parse_ethtool_driver(fixtures.shared('ethtool/ethtool_i_mlx4_en_cx3_ethq21.txt'))
    assert result['version'] == '4.0-0' and result['firmware_version'] == '2.42.5000'
    assert result['firmware_psid'] is None and result['supports_eeprom_access'] is False


def test_driver_veth_real_empty_values_are_none():
    result = ethtool.parse_ethtool_driver(fixtures.local('ethtool/ethtool_i_veth.txt'))
    assert result['driver'] == 'veth'
    assert result['firmware_version'] is None and result['bus_info'] is None


def test_driver_rejects_other_output():
    with pytest.raises(ParseError):
        ethtool.parse_ethtool_driver(fixtures.local('ethtool/ethtool_g_virtio_net_256.txt'))


# --- -g / -l / -a / -k --------------------------------------------------------------------

def test_ring_virtio_real():
    result = ethtool.parse_ethtool_ring(fixtures.local('ethtool/ethtool_g_virtio_net_256.txt'))
    assert result['maximum'] == {'rx': 256, 'rx_mini': None, 'rx_jumbo': None, 'tx': 256}
    assert result['current']['rx'] == 256 and result['current']['tx_push'] is False
    assert result['netdev'] == 'eth0'


def test_ring_mlx5_synthetic_undersized():
    result = ethtool.parse_ethtool_ring(fixtures.local('ethtool/ethtool_g_mlx5_ring_1024_of_8192_synthetic.txt'))
    assert result['maximum']['rx'] == 8192 and result['current']['rx'] == 1024


def test_ring_unsupported_stderr_is_an_error():
    with pytest.raises(ParseError):
        ethtool.parse_ethtool_ring(fixtures.local('ethtool/ethtool_g_veth_stderr_not_supported.txt'))


def test_channels_veth_and_virtio_real():
    veth = ethtool.parse_ethtool_channels(fixtures.local('ethtool/ethtool_l_veth_rx2_tx2.txt'))
    assert veth['maximum'] == {'rx': 2, 'tx': 2, 'other': None, 'combined': None}
    assert veth['current'] == {'rx': 1, 'tx': 1, 'other': None, 'combined': None}
    virtio = ethtool.parse_ethtool_channels(fixtures.local('ethtool/ethtool_l_virtio_net_combined1.txt'))
    assert virtio['current']['combined'] == 1 and virtio['current']['rx'] is None


def test_channels_mlx5_synthetic():
    result = ethtool.parse_ethtool_channels(fixtures.local('ethtool/ethtool_l_mlx5_combined_24_of_63_synthetic.txt'))
    assert result['maximum']['combined'] == 63 and result['current']['combined'] == 24 and result['current']['other'] == 0


def test_pause_synthetic_and_off():
    result = ethtool.parse_ethtool_pause(fixtures.local('ethtool/ethtool_a_mlx5_pause_rx_tx_on_synthetic.txt'))
    assert result == {'netdev': 'enp65s0f0np0', 'autonegotiate': True, 'rx': True, 'tx': True,
                      'rx_negotiated': True, 'tx_negotiated': True}
    off = ethtool.parse_ethtool_pause('Pause parameters for eth1:\nAutonegotiate:\toff\nRX:\t\toff\nTX:\t\toff\n')
    assert off['rx'] is False and off['tx'] is False and off['autonegotiate'] is False


def test_pause_rejects_error_text():
    with pytest.raises(ParseError):
        ethtool.parse_ethtool_pause('netlink error: Operation not supported\n')


def test_features_veth_real():
    result = ethtool.parse_ethtool_features(fixtures.local('ethtool/ethtool_k_veth.txt'))
    features = result['features']
    assert result['netdev'] == 'h3v0'
    assert features['rx-checksumming'] == {'enabled': True, 'fixed': False}
    assert features['large-receive-offload'] == {'enabled': False, 'fixed': True}
    assert features['generic-receive-offload']['enabled'] is False


# --- ethtool -S ----------------------------------------------------------------------------

def test_stats_veth_real_no_groups():
    result = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_veth.txt'))
    assert result['counters']['peer_ifindex'] == 2
    assert result['counters']['rx_queue_0_xdp_drops'] == 0
    assert result['discards'] == {'rx_queue_0_drops': 0}
    assert 'tx_queue_0_xdp_xmit_errors' in result['errors'] and result['pause'] == {}


def test_stats_virtio_real():
    result = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_virtio_net.txt'))
    assert result['counters']['tx_kicks'] == 1941 and result['discards']['rx_drops'] == 0


def test_stats_mlx5_real_truncated_has_no_phy_groups():
    result = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_mlx5_cx4_ethq8_found_public_truncated.txt'))
    assert result['counters']['rx_packets'] == 845320277 and len(result['counters']) == 23
    assert result['pause'] == {} and result['pfc'] == {} and 'rx_discards_phy' not in result['counters']
    assert 'rx_xdp_drop' not in result['discards']


def test_stats_mlx4_real_without_header_and_elision_line():
    result = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_mlx4_en_cx3_ethq21_found_public_truncated.txt'))
    assert result['counters']['tx_bytes'] == 2318032604142833
    assert result['unparsed'] == ['<etc etc>']


def test_stats_mlx5_synthetic_groups():
    result = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_mlx5_cx6dx_discards_pause_after_synthetic.txt'))
    assert result['discards']['rx_discards_phy'] == 66741 and 'rx_out_of_buffer' in result['discards']
    assert result['pause']['tx_pause_ctrl_phy'] == 41200
    assert result['pfc']['3'] == {'rx_pause': 0, 'rx_pause_duration': 0, 'tx_pause': 41200,
                                  'tx_pause_duration': 263680, 'rx_pause_transition': 0}
    assert 'rx_crc_errors_phy' in result['errors'] and 'rx_symbol_err_phy' in result['errors']
    assert result['link'] == {'link_down_events_phy': 1}


def test_stats_accepts_grep_output():
    result = ethtool.parse_ethtool_stats('     rx_pause_ctrl_phy: 0\n     tx_pause_ctrl_phy: 1266552\n')
    assert result['pause'] == {'rx_pause_ctrl_phy': 0, 'tx_pause_ctrl_phy': 1266552}


@pytest.mark.parametrize('text', ['', 'no stats available\n', 'Settings for eth0:\n\tSpeed: 1000Mb/s\n'])
def test_stats_rejects_garbage(text):
    with pytest.raises(ParseError):
        ethtool.parse_ethtool_stats(text)


@pytest.mark.parametrize('name,groups', [
    ('rx_discards_phy', {'discards'}), ('rx_prio3_pause', {'pause', 'pfc'}), ('rx_crc_errors_phy', {'errors'}),
    ('rx_symbol_err_phy', {'errors'}), ('rx_xdp_drop', set()), ('tx_priority_3_xoff.nic', {'pause', 'pfc'}),
    ('rx_bytes', set()), ('link_down_events_phy', {'link'}),
])
def test_classify_counter(name, groups):
    assert ethtool.classify_counter(name) == groups


# --- counter_deltas -------------------------------------------------------------------------

def _mlx5_pair():
    before = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_mlx5_cx6dx_discards_pause_before_synthetic.txt'))
    after = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_mlx5_cx6dx_discards_pause_after_synthetic.txt'))
    return before, after


def test_deltas_lab_notes_scenario():
    before, after = _mlx5_pair()
    result = ethtool.counter_deltas(before, after, 20, {'pause_per_s': 1000, 'discards_per_s': 100})
    assert result['deltas']['rx_discards_phy'] == 65717
    assert result['rates_per_s']['rx_discards_phy'] == pytest.approx(3285.85)
    assert result['watched']['tx_prio3_pause'] == 41200
    assert 'rx_bytes' not in result['watched']
    assert result['suspicious'] == ['rx_discards_phy', 'rx_out_of_buffer', 'tx_pause_ctrl_phy', 'tx_prio3_pause']
    assert 'tx_prio3_pause_duration' not in result['suspicious']
    assert result['reset'] == []


def test_deltas_reset_is_reported_not_negative():
    result = ethtool.counter_deltas({'rx_discards_phy': 500, 'rx_bytes': 10}, {'rx_discards_phy': 3, 'rx_bytes': 20}, 2)
    assert result['reset'] == ['rx_discards_phy']
    assert result['deltas']['rx_discards_phy'] is None and result['rates_per_s']['rx_discards_phy'] is None
    assert result['deltas']['rx_bytes'] == 10 and result['rates_per_s']['rx_bytes'] == 5.0


def test_deltas_per_counter_threshold_and_timestamps():
    before = {'timestamp': 100.0, 'counters': {'counters': {'rx_crc_errors_phy': 0, 'new': 1}}}
    after = {'timestamp': 110.0, 'counters': {'counters': {'rx_crc_errors_phy': 50}}}
    result = ethtool.counter_deltas(before, after, None, {'rx_crc_errors_phy': 1})
    assert result['seconds'] == 10.0 and result['suspicious'] == ['rx_crc_errors_phy']
    assert result['only_before'] == ['new']


def test_deltas_unchanged_real_virtio_snapshot():
    snap = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_virtio_net.txt'))
    result = ethtool.counter_deltas(snap, snap, 5, {'errors_per_s': 0})
    assert result['watched'] == {} and result['suspicious'] == [] and set(result['deltas'].values()) == {0}


@pytest.mark.parametrize('seconds', [0, -1, 'soon'])
def test_deltas_rejects_bad_interval(seconds):
    with pytest.raises(ValueError):
        ethtool.counter_deltas({'a': 1}, {'a': 2}, seconds)


def test_deltas_without_interval_gives_no_rates():
    result = ethtool.counter_deltas({'a': 1}, {'a': 2})
    assert result['deltas'] == {'a': 1} and result['rates_per_s'] == {'a': None}


def test_connectx7_per_priority_pause_counters_synthetic():
    result = ethtool.parse_ethtool_stats(fixtures.local('ethtool/ethtool_S_mlx5_cx7_roce_pfc_prio3_pause_synthetic.txt'))
    assert result['pfc'] == {'3': {'rx_pause': 148213, 'rx_pause_duration': 3320119, 'tx_pause': 96204,
                                   'tx_pause_duration': 1904772, 'rx_pause_transition': 74106}}
    assert result['discards']['rx_prio3_buf_discard'] == 0 and result['discards']['rx_prio3_cong_discard'] == 0
    assert 'rx_prio3_marked' not in result['discards'] and result['link'] == {'link_down_events_phy': 1}
    assert result['pause']['rx_pause_ctrl_phy'] == 148213 and result['unparsed'] == []
