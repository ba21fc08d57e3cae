"""rdma_info reads a sysfs tree (shared real trees, synthetic two-box trees built here) and runs ip / ibstat."""
import os

from ansible_collections.gpufleet.netval.plugins.modules import rdma_info
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module
from tests.unit.plugins.module_utils.test_rdma import SYSFS_PROCFS, gpud_tree, make_roce_device

# ip runs under the module's timeout (30 s by default), like every other tool.
IP = ['/usr/bin/timeout', '--kill-after=5', '30', '/usr/bin/ip', '-4', '-o', 'addr', 'show']
IBSTAT = ['/usr/bin/timeout', '--kill-after=5', '30', '/usr/bin/ibstat']


def ip_line(index, netdev, address, prefix=30):
    return '%d: %s    inet %s/%d scope global %s\\       valid_lft forever preferred_lft forever\n' % (
        index, netdev, address, prefix, netdev)


def spark_box(root, live_suffix, address):
    """One box of a two-box RoCE pair: four RoCE devices, the cabled f0/f1 port of each PCI path ACTIVE."""
    other = 'f1' if live_suffix == 'f0' else 'f0'
    live_gid = address if address else None
    make_roce_device(root, 'rocep1s0' + live_suffix, '0000:01:00.%s' % live_suffix[1], 'enp1s0%snp%s' % (live_suffix, live_suffix[1]),
                     'ACTIVE', ipv4_gid=live_gid)
    make_roce_device(root, 'rocep1s0' + other, '0000:01:00.%s' % other[1], 'enp1s0%snp%s' % (other, other[1]), 'DOWN')
    make_roce_device(root, 'roceP2p1s0' + live_suffix, '0002:01:00.%s' % live_suffix[1], 'enP2p1s0%snp%s' % (live_suffix, live_suffix[1]),
                     'ACTIVE')
    make_roce_device(root, 'roceP2p1s0' + other, '0002:01:00.%s' % other[1], 'enP2p1s0%snp%s' % (other, other[1]), 'DOWN')
    return str(root)


def test_two_box_pair_live_device_named_differently(tmp_path):
    box_a = spark_box(tmp_path / 'a', 'f0', '10.0.0.1')
    box_b = spark_box(tmp_path / 'b', 'f1', '10.0.0.2')
    ip_a = ip_line(1, 'lo', '127.0.0.1', 8) + ip_line(5, 'enp1s0f0np0', '10.0.0.1')
    ip_b = ip_line(1, 'lo', '127.0.0.1', 8) + ip_line(6, 'enp1s0f1np1', '10.0.0.2')
    result_a, failed_a = run_module(rdma_info.main, {'sysfs_root': box_a}, calls=[Call(IP, out=ip_a)])
    result_b, failed_b = run_module(rdma_info.main, {'sysfs_root': box_b}, calls=[Call(IP, out=ip_b)])
    assert not failed_a and not failed_b, (result_a, result_b)
    assert result_a['changed'] is False and len(result_a['devices']) == 4
    assert result_a['live_ports'][0] == {'device': 'rocep1s0f0', 'port': 1, 'netdev': 'enp1s0f0np0', 'ipv4': '10.0.0.1',
                                         'ipv4_prefixlen': 30, 'rate_gbps': 200, 'link_layer': 'Ethernet', 'gid_index': 3}
    assert result_a['live_ports'][1]['ipv4'] is None and result_a['live_ports'][1]['ipv4_prefixlen'] is None
    assert result_b['live_ports'][0]['device'] == 'rocep1s0f1' and result_b['live_ports'][0]['ipv4'] == '10.0.0.2'
    # the second rail is ACTIVE too, without an address: listed after the addressed one
    assert [p['device'] for p in result_a['live_ports']] == ['rocep1s0f0', 'roceP2p1s0f0']
    assert result_a['live_ports'][1]['ipv4'] is None and result_a['live_ports'][1]['gid_index'] is None
    assert result_a['roce_v2_gid_index'] == {'rocep1s0f0': 3, 'rocep1s0f1': None, 'roceP2p1s0f0': None, 'roceP2p1s0f1': None}
    device = result_a['devices']['rocep1s0f0']
    assert device['ipv4'] == ['10.0.0.1'] and device['pci_address'] == '0000:01:00.0' and device['numa_node'] == 0
    assert device['fw_ver'] == '28.45.1200' and device['hca_type'] == 'MT4129' and device['netdevs'] == ['enp1s0f0np0']
    assert device['roce_v2_gid'] == {'port': 1, 'index': 3, 'ipv4': '10.0.0.1', 'netdev': 'enp1s0f0np0'}
    assert device['ports']['1']['state'] == 'ACTIVE'  # port numbers are JSON keys
    assert {'port': 1, 'index': 3} == dict((k, device['gids'][3][k]) for k in ('port', 'index'))
    assert result_a['devices']['rocep1s0f1']['ipv4'] == []
    assert result_a['missing_devices'] == [] and 'ibstat' not in result_a


def test_shared_procfs_tree_without_ipv4(tmp_path):
    result, failed = run_module(rdma_info.main, {'sysfs_root': fixtures.shared_path(SYSFS_PROCFS), 'ipv4': False})
    assert not failed, result
    assert result['_ran'] == []
    assert sorted(result['devices']) == ['hfi1_0', 'mlx4_0', 'mlx5_0']
    assert result['devices']['mlx4_0']['ipv4'] is None and result['devices']['mlx4_0']['pci_address'] is None
    # mlx5_0 reads phys_state "4: ACTIVE" (hand-edited fixture): flagged and not live
    assert result['devices']['mlx5_0']['ports']['1']['warnings']
    assert [(p['device'], p['port']) for p in result['live_ports']] == [('hfi1_0', 1), ('mlx4_0', 1), ('mlx4_0', 2)]
    assert result['roce_v2_gid_index'] == {'hfi1_0': None, 'mlx4_0': None, 'mlx5_0': None}


def test_shared_gpud_tree_with_ip_and_ibstat(tmp_path):
    ibstat = fixtures.shared('ibstat/ibstat_h100_12x_roce_2down_polling_disabled_gpud.txt')
    result, failed = run_module(rdma_info.main, {'sysfs_root': gpud_tree(tmp_path), 'tool_outputs': True, 'counters': True},
                                calls=[Call(IP, out=ip_line(1, 'lo', '127.0.0.1', 8)), Call(IBSTAT, out=ibstat)])
    assert not failed, result
    assert len(result['devices']) == 9 and len(result['live_ports']) == 9
    assert result['devices']['mlx5_1']['ports']['1']['counters']['link_downed'] == 255
    assert result['devices']['mlx5_0']['ipv4'] == [] and result['devices']['mlx5_0']['netdevs'] is None
    assert result['ibstat']['devices']['mlx5_11']['ports']['1']['physical_state'] == 'Polling'


def test_device_filter_and_missing_devices(tmp_path):
    box = spark_box(tmp_path, 'f0', '10.0.0.1')
    result, failed = run_module(rdma_info.main, {'sysfs_root': box, 'devices': ['rocep1s0f0', 'mlx5_9']},
                                calls=[Call(IP, out=ip_line(5, 'enp1s0f0np0', '10.0.0.1'))])
    assert not failed, result
    assert list(result['devices']) == ['rocep1s0f0'] and result['missing_devices'] == ['mlx5_9']


def test_no_rdma_hardware_is_empty_and_runs_nothing(tmp_path):
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path)})
    assert not failed, result
    assert result['devices'] == {} and result['live_ports'] == [] and result['roce_v2_gid_index'] == {}
    assert result['changed'] is False and result['_ran'] == []


def test_check_mode_still_reads(tmp_path):
    box = spark_box(tmp_path, 'f1', '10.0.0.2')
    result, failed = run_module(rdma_info.main, {'sysfs_root': box}, check_mode=True,
                                calls=[Call(IP, out=ip_line(6, 'enp1s0f1np1', '10.0.0.2'))])
    assert not failed and result['changed'] is False
    assert result['live_ports'][0]['device'] == 'rocep1s0f1'


def test_missing_ibstat_names_the_package(tmp_path):
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path), 'tool_outputs': True}, missing=('ibstat',))
    assert failed
    assert 'ibstat' in result['msg'] and 'infiniband-diags' in result['msg'] and result['missing_tool'] is True


def test_missing_ip_names_the_package(tmp_path):
    box = spark_box(tmp_path, 'f0', '10.0.0.1')
    result, failed = run_module(rdma_info.main, {'sysfs_root': box}, missing=('ip',))
    assert failed and "'ip'" in result['msg'] and 'iproute2' in result['msg']


def test_ibstat_failure_names_host_command_and_rc(tmp_path):
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path), 'tool_outputs': True},
                                calls=[Call(IBSTAT, rc=255, err="ibpanic: [4242] main: can't init UMAD library: No such file or directory\n")])
    assert failed
    assert os.uname()[1] in result['msg'] and '/usr/bin/ibstat' in result['msg'] and 'rc=255' in result['msg']
    assert 'UMAD' in result['msg']


def test_garbage_ip_output_fails_cleanly(tmp_path):
    box = spark_box(tmp_path, 'f0', '10.0.0.1')
    result, failed = run_module(rdma_info.main, {'sysfs_root': box},
                                calls=[Call(IP, out='2: eth0: <BROADCAST,MULTICAST,UP> mtu 1500\n')])
    assert failed
    assert '/usr/bin/ip -4 -o addr show' in result['msg'] and 'could not be parsed' in result['msg']
    assert os.uname()[1] in result['msg']


def test_garbage_ibstat_output_fails_cleanly(tmp_path):
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path), 'tool_outputs': True},
                                calls=[Call(IBSTAT, out='Segmentation fault\n')])
    assert failed and 'ibstat output' in result['msg'] and 'could not be parsed' in result['msg']


def test_bad_input_is_rejected(tmp_path):
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path), 'devices': ['mlx5_0; reboot']})
    assert failed and 'must be an RDMA device name' in result['msg'] and result['_ran'] == []
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path / 'nope')})
    assert failed and 'does not exist' in result['msg'] and os.uname()[1] in result['msg']
    result, failed = run_module(rdma_info.main, {'sysfs_root': str(tmp_path), 'timeout': 0})
    assert failed and 'timeout' in result['msg']
