"""The ethtool filters wrap their parsers; counter_deltas accepts text, parsed dicts and nic_info entries."""
import importlib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.counter_deltas import FilterModule as DeltaFilters
from tests.unit import fixtures

NAMES = ['parse_ethtool', 'parse_ethtool_driver', 'parse_ethtool_ring', 'parse_ethtool_channels',
         'parse_ethtool_pause', 'parse_ethtool_features', 'parse_ethtool_stats']


def get(name):
    module = importlib.import_module('ansible_collections.gpufleet.netval.plugins.filter.%s' % name)
    return module.FilterModule().filters()[name]


def test_filters_parse_real_outputs():
    assert get('parse_ethtool')(fixtures.local('ethtool/ethtool_veth_link_up_10000.txt'))['speed_mbps'] == 10000
    assert get('parse_ethtool_driver')(fixtures.local('ethtool/ethtool_i_veth.txt'))['driver'] == 'veth'
    assert get('parse_ethtool_ring')(fixtures.local('ethtool/ethtool_g_virtio_net_256.txt'))['current']['rx'] == 256
    assert get('parse_ethtool_channels')(fixtures.local('ethtool/ethtool_l_veth_rx2_tx2.txt'))['maximum']['tx'] == 2
    assert get('parse_ethtool_pause')('Pause parameters for e:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\toff\n')['rx'] is True
    assert get('parse_ethtool_features')(fixtures.local('ethtool/ethtool_k_veth.txt'))['features']['highdma']['enabled']
    assert get('parse_ethtool_stats')(fixtures.local('ethtool/ethtool_S_veth.txt'))['counters']['peer_ifindex'] == 2


@pytest.mark.parametrize('name', NAMES)
def test_filter_errors_name_the_filter(name):
    with pytest.raises(AnsibleFilterError, match=name):
        get(name)('')
    with pytest.raises(AnsibleFilterError, match=name):
        get(name)(None)


def test_counter_deltas_from_text():
    deltas = DeltaFilters().filters()['counter_deltas']
    result = deltas(fixtures.local('ethtool/ethtool_S_mlx5_cx6dx_discards_pause_before_synthetic.txt'),
                    fixtures.local('ethtool/ethtool_S_mlx5_cx6dx_discards_pause_after_synthetic.txt'), 20, {'pause_per_s': 1000})
    assert result['deltas']['rx_discards_phy'] == 65717
    assert result['suspicious'] == ['tx_pause_ctrl_phy', 'tx_prio3_pause']


def test_counter_deltas_from_nic_info_entries():
    deltas = DeltaFilters().filters()['counter_deltas']
    before = {'timestamp': 10.0, 'counters': {'counters': {'rx_discards_phy': 1}}, 'link': {}}
    after = {'timestamp': 12.0, 'counters': {'counters': {'rx_discards_phy': 5}}, 'link': {}}
    result = deltas(before, after)
    assert result['rates_per_s'] == {'rx_discards_phy': 2.0} and result['watched'] == {'rx_discards_phy': 4}


@pytest.mark.parametrize('before,after,seconds,thresholds', [
    ('garbage', 'garbage', 1, None), (None, {}, 1, None), ({'a': 1}, {'a': 2}, 0, None),
    ({'a': 1}, {'a': 2}, 1, ['pause_per_s']), (42, {'a': 2}, 1, None), ({'a': 1}, {'a': 2}, 1, {'pause_per_s': 'lots'}),
])
def test_counter_deltas_errors_are_filter_errors(before, after, seconds, thresholds):
    deltas = DeltaFilters().filters()['counter_deltas']
    with pytest.raises(AnsibleFilterError, match='counter_deltas'):
        deltas(before, after, seconds, thresholds)
