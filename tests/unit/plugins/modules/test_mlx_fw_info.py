"""mlx_fw_info runs flint/mlxconfig (or mstflint/mstconfig); every case lists the exact argv."""
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.modules import mlx_fw_info
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

T = ['/usr/bin/timeout', '--kill-after=5', '120']
FLINT = fixtures.shared('flint/flint_query_cx4_fs3_terrencemiao.txt')
MLXCONFIG = fixtures.local('mlx/mlxconfig_e_q_cx7_sriov_pending_cqe_balanced_synthetic.txt')
MSTCONFIG = fixtures.local('mlx/mstconfig_q_cx5_next_boot_only_cqe_aggressive_synthetic.txt')
MLXLINK_HEALTHY = fixtures.local('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt')
MLXLINK_BAD = fixtures.local('mlx/mlxlink_cx5_100g_bad_signal_integrity_c_e_synthetic.txt')


def sysfs(tmp_path):
    """/sys/class/infiniband/<dev>/device -> ../../../devices/pci0000:00/<bdf>, as the kernel links it."""
    for rdma, bdf in (('mlx5_0', '0000:af:00.0'), ('mlx5_1', '0000:af:00.1')):
        target = tmp_path / 'devices' / 'pci0000:00' / bdf
        target.mkdir(parents=True)
        (tmp_path / 'class' / 'infiniband' / rdma).mkdir(parents=True)
        os.symlink(str(target), str(tmp_path / 'class' / 'infiniband' / rdma / 'device'))
    return str(tmp_path)


def test_the_functions_of_one_adapter_are_read_in_turn_with_one_flint_and_one_mlxconfig(tmp_path):
    # 0000:af:00.0 and 0000:af:00.1 are the two ports of one card: one flash, one configuration, one lock.
    calls = [Call(T + ['/usr/bin/flint', '-d', '0000:af:00.0', 'q'], out=FLINT, seconds=0.05),
             Call(T + ['/usr/bin/mlxconfig', '-d', '0000:af:00.0', 'q'], out=MLXCONFIG, seconds=0.05),
             Call(T + ['/usr/bin/mlxlink', '-d', '0000:af:00.0', '-m', '-c', '-e'], out=MLXLINK_HEALTHY, seconds=0.05),
             Call(T + ['/usr/bin/mlxlink', '-d', '0000:af:00.1', '-m', '-c', '-e'], out=MLXLINK_HEALTHY, seconds=0.05)]
    result, failed = run_module(mlx_fw_info.main, {'sysfs_root': sysfs(tmp_path)}, calls=calls)
    assert not failed, result
    assert [argv[3:6] for argv in result['_ran']] == [['/usr/bin/flint', '-d', '0000:af:00.0'], ['/usr/bin/mlxconfig', '-d', '0000:af:00.0'],
                                                      ['/usr/bin/mlxlink', '-d', '0000:af:00.0'], ['/usr/bin/mlxlink', '-d', '0000:af:00.1']]
    dev = result['devices']['0000:af:00.0']
    assert dev['tool'] == 'mft' and dev['tools'] == {'firmware': 'flint', 'config': 'mlxconfig', 'link': 'mlxlink'}
    assert dev['adapter'] == '0000:af:00' and dev['firmware_from'] is None and dev['error'] is None
    link = dev['link']
    assert link['cmd'] == 'mlxlink -d 0000:af:00.0 -m -c -e' and link['error'] is None
    assert link['operational']['fec'] == 'Standard RS-FEC - (544,514)' and link['counters']['effective_physical_ber'] == 1.5e-254
    assert link['module']['vendor_part_number'] == 'MMA1T00-VS' and 'sections' not in link
    assert dev['firmware']['fw_version'] == '12.28.2006' and dev['firmware']['psid'] == 'LNV2180110032'
    assert dev['config']['pending_changes'] == ['NUM_OF_VFS', 'SRIOV_EN']
    assert dev['cqe_compression']['mode'] == 'BALANCED' and dev['cqe_compression']['enabled'] is True
    second = result['devices']['0000:af:00.1']
    assert second['firmware'] == dev['firmware'] and second['firmware_from'] == '0000:af:00.0' and second['link']['error'] is None
    assert result['changed'] is False


def test_auto_falls_back_to_mstflint():
    calls = [Call(T + ['/usr/bin/mstflint', '-d', 'mlx5_0', 'q'], out=FLINT),
             Call(T + ['/usr/bin/mstconfig', '-d', 'mlx5_0', 'q'], out=MSTCONFIG),
             Call(T + ['/usr/bin/mstlink', '-d', 'mlx5_0', '-m', '-c', '-e'], out=MLXLINK_BAD)]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['mlx5_0']}, calls=calls, missing=('flint', 'mlxconfig', 'mlxlink'))
    assert not failed, result
    dev = result['devices']['mlx5_0']
    assert dev['tool'] == 'mstflint' and dev['cqe_compression']['mode'] == 'AGGRESSIVE'
    assert dev['link']['counters']['effective_physical_ber'] == 1e-12 and dev['link']['troubleshooting']['status_opcode'] == 15


def test_explicit_mstflint_without_config():
    calls = [Call(T + ['/usr/bin/mstflint', '-d', '/dev/mst/mt4129_pciconf0', 'q'], out=FLINT)]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['/dev/mst/mt4129_pciconf0'], 'tool': 'mstflint',
                                                   'query_config': False}, calls=calls, missing=('mstlink',))
    assert not failed, result
    dev = result['devices']['/dev/mst/mt4129_pciconf0']
    assert dev['config'] is None and dev['cqe_compression'] is None
    # no link tool: recorded as our gap, the firmware facts still returned
    assert dev['link']['operational'] is None and 'mstlink (install package mstflint' in dev['link']['error'] and 'not installed' in dev['link']['error']


def test_a_failed_or_unreadable_link_query_is_recorded_not_fatal():
    calls = [Call(T + ['/usr/bin/flint', '-d', 'mlx5_0', 'q'], out=FLINT),
             Call(T + ['/usr/bin/mlxlink', '-d', 'mlx5_0', '-m', '-c', '-e'], rc=1, err='-E- Failed to open device: "mlx5_0"'),
             Call(T + ['/usr/bin/flint', '-d', 'mlx5_1', 'q'], out=FLINT),
             Call(T + ['/usr/bin/mlxlink', '-d', 'mlx5_1', '-m', '-c', '-e'], out='Segmentation fault\n')]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['mlx5_0', 'mlx5_1'], 'query_config': False}, calls=calls, any_order=True)
    assert not failed, result
    assert 'exited 1: -E- Failed to open device' in result['devices']['mlx5_0']['link']['error']
    assert 'mlxlink -d mlx5_1 -m -c -e' in result['devices']['mlx5_1']['link']['error']
    assert result['devices']['mlx5_1']['firmware']['fw_version'] == '12.28.2006'


def test_neither_tool_names_both_packages():
    result, failed = run_module(mlx_fw_info.main, {'devices': ['af:00.0']}, missing=('flint', 'mstflint', 'mlxconfig', 'mstconfig'))
    assert failed and 'flint' in result['msg'] and 'mstflint' in result['msg']
    assert 'mft (NVIDIA Firmware Tools)' in result['msg'] and 'package mstflint' in result['msg']


def test_explicit_mft_missing_names_mft():
    result, failed = run_module(mlx_fw_info.main, {'devices': ['af:00.0'], 'tool': 'mft'}, missing=('flint',))
    assert failed and "'flint'" in result['msg'] and 'mft (NVIDIA Firmware Tools)' in result['msg']


def test_no_devices_gives_empty_without_tools(tmp_path):
    result, failed = run_module(mlx_fw_info.main, {'sysfs_root': str(tmp_path)}, missing=('flint', 'mstflint'))
    assert not failed and result['devices'] == {} and result['_ran'] == []


def test_a_failed_adapter_is_recorded_on_its_functions_only():
    calls = [Call(T + ['/usr/bin/flint', '-d', '0000:af:00.0', 'q'], rc=3,
                  err='-E- Cannot open Device: 0000:af:00.0. No such file or directory. MFE_CR_ERROR\n'),
             Call(T + ['/usr/bin/flint', '-d', '0000:b0:00.0', 'q'], out=FLINT)]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['0000:af:00.0', '0000:af:00.1', '0000:b0:00.0'], 'query_config': False,
                                                   'link_info': False}, calls=calls, any_order=True)
    assert not failed, result
    for bdf in ('0000:af:00.0', '0000:af:00.1'):
        error = result['devices'][bdf]['error']
        assert '/usr/bin/flint -d 0000:af:00.0 q' in error and 'rc=3' in error and 'Cannot open' in error, error
        assert result['devices'][bdf]['firmware'] is None
    assert result['devices']['0000:b0:00.0']['error'] is None and result['devices']['0000:b0:00.0']['firmware']['fw_version'] == '12.28.2006'


def test_garbage_output_is_that_adapters_error():
    calls = [Call(T + ['/usr/bin/flint', '-d', '0000:af:00.0', 'q'], out='Segmentation fault\n')]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['0000:af:00.0'], 'link_info': False}, calls=calls)
    assert not failed
    error = result['devices']['0000:af:00.0']['error']
    assert 'could not be parsed' in error and 'flint output' in error and result['devices']['0000:af:00.0']['config'] is None


@pytest.mark.parametrize('device', ['/dev/sda', 'af:00.0; rm -rf /', '0000:zz:00.0', '-d'])
def test_bad_devices_are_refused(device):
    result, failed = run_module(mlx_fw_info.main, {'devices': [device]})
    assert failed and 'invalid device' in result['msg'] and result['_ran'] == []


def test_check_mode_still_queries():
    calls = [Call(T + ['/usr/bin/flint', '-d', 'mlx5_0', 'q'], out=FLINT),
             Call(T + ['/usr/bin/mlxconfig', '-d', 'mlx5_0', 'q'], out=MLXCONFIG)]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['mlx5_0'], 'link_info': False}, calls=calls, check_mode=True)
    assert not failed and len(result['_ran']) == 2


def test_adapters_are_read_side_by_side_and_a_slow_failure_costs_no_other_adapter(tmp_path):
    slow = [Call(T + ['/usr/bin/flint', '-d', '0000:af:00.0', 'q'], rc=3, err='-E- Cannot open device\n', seconds=0.3)]
    fine = [Call(T + ['/usr/bin/flint', '-d', '0000:b0:00.0', 'q'], out=FLINT, seconds=0.1),
            Call(T + ['/usr/bin/mlxconfig', '-d', '0000:b0:00.0', 'q'], out=MLXCONFIG, seconds=0.1),
            Call(T + ['/usr/bin/mlxlink', '-d', '0000:b0:00.0', '-m', '-c', '-e'], out=MLXLINK_HEALTHY)]
    # The failed adapter's ports still get their own link read (mlxlink does not need flint).
    links = [Call(T + ['/usr/bin/mlxlink', '-d', bdf, '-m', '-c', '-e'], out=MLXLINK_HEALTHY) for bdf in ('0000:af:00.0', '0000:af:00.1')]
    result, failed = run_module(mlx_fw_info.main, {'devices': ['0000:af:00.0', '0000:af:00.1', '0000:b0:00.0']}, calls=slow + fine + links,
                                any_order=True)
    assert not failed, result
    assert 'Cannot open device' in result['devices']['0000:af:00.1']['error']
    spans = dict((argv[3] + ' ' + argv[5], (start, end)) for argv, start, end in result['_spans'])
    # The other adapter ran while the first was still in flint; the first adapter's own calls never overlapped.
    assert spans['/usr/bin/flint 0000:b0:00.0'][0] < spans['/usr/bin/flint 0000:af:00.0'][1]
    assert spans['/usr/bin/flint 0000:af:00.0'][1] <= spans['/usr/bin/mlxlink 0000:af:00.0'][0] <= spans['/usr/bin/mlxlink 0000:af:00.0'][1]
    assert spans['/usr/bin/mlxlink 0000:af:00.0'][1] <= spans['/usr/bin/mlxlink 0000:af:00.1'][0]
