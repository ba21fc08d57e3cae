"""nic_info runs ethtool per netdev; every case lists the exact argv."""
import pytest

from ansible_collections.gpufleet.netval.plugins.modules import nic_info
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

T = ['/usr/bin/timeout', '--kill-after=5', '15', '/usr/bin/ethtool']
LINK = fixtures.shared('ethtool/ethtool_link_settings_cx4_100g_dac_terrencemiao.txt')
DRIVER = fixtures.shared('ethtool/ethtool_i_mlx5_core_cx4_ethq8.txt')
RING = fixtures.local('ethtool/ethtool_g_mlx5_ring_1024_of_8192_synthetic.txt')
CHANNELS = fixtures.local('ethtool/ethtool_l_mlx5_combined_24_of_63_synthetic.txt')
PAUSE = fixtures.local('ethtool/ethtool_a_mlx5_pause_rx_tx_on_synthetic.txt')
NOT_SUPPORTED = fixtures.local('ethtool/ethtool_g_veth_stderr_not_supported.txt')


def sysfs(tmp_path, mtus=(('ens3np0', '9000'), ('ens4np0', '9000'))):
    for rdma, netdev in (('mlx5_0', 'ens3np0'), ('mlx5_1', 'ens4np0')):
        (tmp_path / 'class' / 'infiniband' / rdma / 'device' / 'net' / netdev).mkdir(parents=True)
    for netdev, mtu in mtus:
        (tmp_path / 'class' / 'net' / netdev).mkdir(parents=True)
        (tmp_path / 'class' / 'net' / netdev / 'mtu').write_text(mtu + '\n')
    return str(tmp_path)


def base_calls(dev):
    return [Call(T + [dev], out=LINK), Call(T + ['-i', dev], out=DRIVER), Call(T + ['-g', dev], out=RING),
            Call(T + ['-l', dev], out=CHANNELS), Call(T + ['-a', dev], out=PAUSE)]


def test_discovers_rdma_netdevs(tmp_path):
    result, failed = run_module(nic_info.main, {'sysfs_root': sysfs(tmp_path)},
                                calls=base_calls('ens3np0') + base_calls('ens4np0'), any_order=True)
    assert not failed, result
    assert result['netdevs'] == ['ens3np0', 'ens4np0']
    nic = result['nics']['ens3np0']
    assert nic['rdma_device'] == 'mlx5_0'
    assert nic['link']['speed_mbps'] == 100000 and nic['driver']['driver'] == 'mlx5_core'
    assert nic['ring']['current']['rx'] == 1024 and nic['channels']['current']['combined'] == 24
    assert nic['pause']['rx'] is True and nic['errors'] == {}
    assert nic['mtu'] == 9000 and result['nics']['ens4np0']['mtu'] == 9000
    assert 'counters' not in nic and result['changed'] is False


def test_an_unreadable_or_garbage_mtu_is_null_with_the_reason(tmp_path):
    root = sysfs(tmp_path, mtus=(('ens3np0', 'jumbo'),))
    result, failed = run_module(nic_info.main, {'sysfs_root': root}, calls=base_calls('ens3np0') + base_calls('ens4np0'), any_order=True)
    assert not failed, result
    first, second = result['nics']['ens3np0'], result['nics']['ens4np0']
    assert first['mtu'] is None and "holds 'jumbo', not an MTU" in first['errors']['mtu']
    assert second['mtu'] is None and 'ens4np0/mtu is missing or unreadable' in second['errors']['mtu']


def test_counters_features_and_include(tmp_path):
    stats = fixtures.local('ethtool/ethtool_S_veth.txt')
    features = fixtures.local('ethtool/ethtool_k_veth.txt')
    calls = base_calls('bond0') + [Call(T + ['-k', 'bond0'], out=features), Call(T + ['-S', 'bond0'], out=stats)]
    result, failed = run_module(nic_info.main, {'netdevs': [], 'include': ['bond0'], 'counters': True, 'features': True},
                                calls=calls)
    assert not failed, result
    nic = result['nics']['bond0']
    assert nic['counters']['counters']['peer_ifindex'] == 2 and isinstance(nic['timestamp'], float)
    assert nic['features']['features']['highdma']['enabled'] is True
    assert 'rdma_device' not in nic


def test_a_counters_only_snapshot_runs_one_ethtool_per_netdev(tmp_path):
    stats = fixtures.local('ethtool/ethtool_S_veth.txt')
    calls = [Call(T + ['-S', 'ens3np0'], out=stats), Call(T + ['-S', 'ens4np0'], out=stats)]
    # In order: the counters are read one netdev after the other (rates are deltas over the snapshots' timestamps).
    result, failed = run_module(nic_info.main, {'sysfs_root': sysfs(tmp_path), 'settings': False, 'counters': True}, calls=calls)
    assert not failed, result
    assert sorted(result['nics']['ens3np0']) == ['counters', 'errors', 'rdma_device', 'timestamp']


def test_reading_nothing_is_refused():
    result, failed = run_module(nic_info.main, {'netdevs': ['ens3np0'], 'settings': False})
    assert failed and result['_ran'] == [] and 'nothing to read' in result['msg'], result['msg']


def test_unsupported_sections_are_null_with_error(tmp_path):
    calls = [Call(T + ['h3v0'], out=fixtures.local('ethtool/ethtool_veth_link_up_10000.txt')),
             Call(T + ['-i', 'h3v0'], out=fixtures.local('ethtool/ethtool_i_veth.txt')),
             Call(T + ['-g', 'h3v0'], rc=1, err=NOT_SUPPORTED),
             Call(T + ['-l', 'h3v0'], out=fixtures.local('ethtool/ethtool_l_veth_rx2_tx2.txt')),
             Call(T + ['-a', 'h3v0'], rc=1, err=NOT_SUPPORTED)]
    root = sysfs(tmp_path, mtus=(('h3v0', '1500'),))
    result, failed = run_module(nic_info.main, {'netdevs': ['h3v0'], 'sysfs_root': root}, calls=calls)
    assert not failed, result
    nic = result['nics']['h3v0']
    assert nic['mtu'] == 1500
    assert nic['ring'] is None and nic['pause'] is None
    assert nic['errors'] == {'ring': 'netlink error: Operation not supported', 'pause': 'netlink error: Operation not supported'}
    assert nic['channels']['maximum']['rx'] == 2


def test_missing_ethtool_names_package():
    result, failed = run_module(nic_info.main, {'netdevs': ['ens3np0']}, missing=('ethtool',))
    assert failed and "'ethtool'" in result['msg'] and 'install package ethtool' in result['msg']


def test_tool_failure_names_host_command_rc():
    calls = [Call(T + ['ens9'], rc=1, err='netlink error: no device matches name (offset 24)\nnetlink error: No such device\n')]
    result, failed = run_module(nic_info.main, {'netdevs': ['ens9']}, calls=calls)
    assert failed
    assert '/usr/bin/ethtool ens9' in result['msg'] and 'rc=1' in result['msg'] and 'No such device' in result['msg']
    assert result['msg'].split(':')[0]  # host name first


def test_timeout_fails():
    result, failed = run_module(nic_info.main, {'netdevs': ['ens3np0']}, calls=[Call(T + ['ens3np0'], rc=124)])
    assert failed and 'timed out' in result['msg']


def test_garbage_output_fails_cleanly():
    calls = [Call(T + ['ens3np0'], out='<html>proxy error</html>\n')]
    result, failed = run_module(nic_info.main, {'netdevs': ['ens3np0']}, calls=calls)
    assert failed and 'could not be parsed' in result['msg'] and 'ethtool output' in result['msg']


@pytest.mark.parametrize('name', ['eth0; reboot', '', 'a' * 16, '../etc'])
def test_bad_netdev_names_are_refused(name):
    result, failed = run_module(nic_info.main, {'netdevs': [name]})
    assert failed and 'must be a network interface name' in result['msg'] and result['_ran'] == []


def test_check_mode_still_reads(tmp_path):
    result, failed = run_module(nic_info.main, {'sysfs_root': sysfs(tmp_path), 'include': []},
                                calls=base_calls('ens3np0') + base_calls('ens4np0'), check_mode=True, any_order=True)
    assert not failed and len(result['_ran']) == 10


def test_no_rdma_devices_gives_empty(tmp_path):
    result, failed = run_module(nic_info.main, {'sysfs_root': str(tmp_path)})
    assert not failed and result['nics'] == {} and result['_ran'] == []


def test_the_netdevs_are_read_side_by_side_each_netdevs_calls_in_turn(tmp_path):
    calls = [Call(c.argv, out=c.out, seconds=0.2) for c in base_calls('ens3np0') + base_calls('ens4np0')]
    result, failed = run_module(nic_info.main, {'sysfs_root': sysfs(tmp_path)}, calls=calls, any_order=True)
    assert not failed and sorted(result['nics']) == ['ens3np0', 'ens4np0']
    spans = result['_spans']
    for dev in ('ens3np0', 'ens4np0'):
        own = [(start, end) for argv, start, end in spans if argv[-1] == dev]
        assert [argv[4:] for argv, _s, _e in spans if argv[-1] == dev][0] == [dev]   # link settings first
        assert all(later[0] >= earlier[1] for earlier, later in zip(own, own[1:])), own  # one call after the other
    first = dict((dev, min(start for argv, start, _e in spans if argv[-1] == dev)) for dev in ('ens3np0', 'ens4np0'))
    last = dict((dev, max(end for argv, _s, end in spans if argv[-1] == dev)) for dev in ('ens3np0', 'ens4np0'))
    assert first['ens4np0'] < last['ens3np0'] and first['ens3np0'] < last['ens4np0'], spans   # at the same time


def test_the_first_failure_in_the_netdevs_order_is_reported_and_a_failed_netdev_stops_its_own_calls(tmp_path):
    calls = [Call(T + ['ens3np0'], rc=1, err='netlink error: No such device\n', seconds=0.3)] + base_calls('ens4np0')
    result, failed = run_module(nic_info.main, {'sysfs_root': sysfs(tmp_path)}, calls=calls, any_order=True)
    assert failed and '/usr/bin/ethtool ens3np0' in result['msg'] and 'No such device' in result['msg']
    assert [argv for argv in result['_ran'] if argv[-1] == 'ens3np0'] == [T + ['ens3np0']]


def test_the_counters_are_read_one_netdev_after_the_other_in_order_after_the_settings(tmp_path):
    stats = 'NIC statistics:\n     rx_pause_ctrl_phy: 10\n'   # synthetic
    calls = [Call(c.argv, out=c.out, seconds=0.1) for c in base_calls('ens3np0') + base_calls('ens4np0')]
    calls += [Call(T + ['-S', dev], out=stats, seconds=0.1) for dev in ('ens3np0', 'ens4np0')]
    result, failed = run_module(nic_info.main, {'sysfs_root': sysfs(tmp_path), 'counters': True}, calls=calls, any_order=True)
    assert not failed, result
    reads = [(argv[-1], start, end) for argv, start, end in result['_spans'] if '-S' in argv]
    # Rates come from two snapshots' timestamps: each netdev's counters read on its own, in the same order every time.
    assert [dev for dev, _s, _e in sorted(reads, key=lambda r: r[1])] == ['ens3np0', 'ens4np0']
    assert reads[1][1] >= reads[0][2] if reads[0][0] == 'ens3np0' else reads[0][1] >= reads[1][2]
    settings_end = max(end for argv, _s, end in result['_spans'] if '-S' not in argv)
    assert min(start for _d, start, _e in reads) >= settings_end
    for dev in ('ens3np0', 'ens4np0'):
        entry = result['nics'][dev]
        assert entry['counters']['counters']['rx_pause_ctrl_phy'] == 10 and entry['timestamp'] <= min(s for d, s, _e in reads if d == dev) + 0.05
