"""pcie_info reads sysfs trees (built here, shared real ones, this host's /sys) and optionally runs lspci."""
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.modules import pcie_info
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname
from tests.unit import fixtures
from tests.unit.plugins.module_utils.test_pcie import CX7, GEN1, GEN4, GEN5, H100, link, make_pci_tree, sriov_tree
from tests.unit.plugins.modules.utils import Call, run_module

LSPCI = ['/usr/bin/timeout', '--kill-after=5', '60', '/usr/bin/lspci', '-vvv', '-s']
CX7_LSPCI = fixtures.local('lspci/lspci_vvv_h100_cx7_gen5_x16_ok_cx6dx_switch_port_gpud.txt')


def node_tree(tmp_path):
    """A node: Gen5 CX7 behind a Gen4 root port, a Gen5 CX7 trained at Gen4, an idle H100, an Intel NIC."""
    make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN4, 16, GEN4, 16)), ('0000:01:00.0', link(GEN4, 16, GEN5, 16, **CX7))])
    make_pci_tree(tmp_path, [('0000:20:01.0', link(GEN4, 16, GEN5, 16)), ('0000:21:00.0', link(GEN4, 16, GEN5, 16, **CX7))],
                  root_bus='0000:20')
    make_pci_tree(tmp_path, [('0000:40:01.0', link(GEN1, 16, GEN5, 16)), ('0000:41:00.0', link(GEN1, 16, GEN5, 16, **H100))],
                  root_bus='0000:40')
    make_pci_tree(tmp_path, [('0000:60:00.0', link(GEN4, 8, GEN4, 8, **{'class': '0x020000', 'vendor': '0x8086'}))],
                  root_bus='0000:60')
    return str(tmp_path)


def test_discovers_nvidia_nics_and_gpus_and_judges_them(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root})
    assert not failed, result
    assert result['changed'] is False and result['_ran'] == []
    by_bdf = dict((d['bdf'], d) for d in result['devices'])
    assert list(by_bdf) == ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0']
    assert by_bdf['0000:01:00.0']['assessment']['status'] == 'slot_limited'
    assert by_bdf['0000:01:00.0']['upstream'][0]['bdf'] == '0000:00:01.0'
    assert by_bdf['0000:21:00.0']['assessment']['bottleneck'] == 'device'
    assert by_bdf['0000:41:00.0']['kind'] == 'gpu' and by_bdf['0000:41:00.0']['assessment']['status'] == 'idle_downtrained'
    assert result['degraded'] == ['0000:21:00.0'] and result['slot_limited'] == ['0000:01:00.0'] and result['unknown'] == []


def test_all_network_devices_includes_other_vendors(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'all_network_devices': True})
    assert not failed
    assert [d['bdf'] for d in result['devices']] == ['0000:01:00.0', '0000:21:00.0', '0000:41:00.0', '0000:60:00.0']


def test_explicit_devices_are_normalized(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['21:00.0', '0000:21:00.0']})
    assert not failed and [d['bdf'] for d in result['devices']] == ['0000:21:00.0']


def test_lspci_is_run_per_device_and_parsed(tmp_path):
    root = node_tree(tmp_path)
    out = [block for block in CX7_LSPCI.split('\n\n') if block.startswith('1a:00.0 ')][0] + '\n'
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['0000:01:00.0'], 'lspci': True},
                                calls=[Call(LSPCI + ['0000:01:00.0'], 0, out, 'lspci: Unable to load libkmod resources: error -2\n')])
    assert not failed, result
    parsed = result['devices'][0]['lspci']
    assert parsed['bdf'] == '1a:00.0' and parsed['lnksta_speed_gts'] == 32.0 and parsed['downgraded'] is False


def test_lspci_also_runs_in_check_mode_because_it_only_reads(tmp_path):
    root = node_tree(tmp_path)
    out = fixtures.local('lspci/lspci_vvv_s_firecracker_vm_virtio_net.txt')
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['41:00.0'], 'lspci': True},
                                calls=[Call(LSPCI + ['0000:41:00.0'], 0, out)], check_mode=True)
    assert not failed and result['devices'][0]['lspci']['kernel_driver'] == 'virtio-pci'


def test_lspci_missing_names_tool_and_package(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'lspci': True}, missing=('lspci',))
    assert failed
    assert hostname() in result['msg'] and "'lspci'" in result['msg'] and 'pciutils' in result['msg']


def test_lspci_failure_names_host_command_and_rc(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['01:00.0'], 'lspci': True},
                                calls=[Call(LSPCI + ['0000:01:00.0'], 1, '', 'lspci: Cannot open /sys/bus/pci/devices\n')])
    assert failed
    assert hostname() in result['msg'] and '/usr/bin/lspci -vvv -s 0000:01:00.0' in result['msg'] and 'rc=1' in result['msg']
    assert 'Cannot open' in result['msg']


def test_lspci_garbage_fails_cleanly(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['01:00.0'], 'lspci': True},
                                calls=[Call(LSPCI + ['0000:01:00.0'], 0, 'Segmentation fault?\n\x1b[0m garbage\n')])
    assert failed
    assert hostname() in result['msg'] and 'could not be parsed' in result['msg'] and 'lspci output' in result['msg']


def test_lspci_empty_output_warns_and_returns_none(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['01:00.0'], 'lspci': True},
                                calls=[Call(LSPCI + ['0000:01:00.0'], 0, '')])
    assert not failed and result['devices'][0]['lspci'] is None


@pytest.mark.parametrize('bad', ['eth0', '1b:00', '0000:1b:00.9', '1b:00.0; reboot'])
def test_bad_device_names_fail_with_message(tmp_path, bad):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': [bad]})
    assert failed and hostname() in result['msg'] and 'not a PCI address' in result['msg'] and result['_ran'] == []


def test_absent_device_fails_naming_it(tmp_path):
    root = node_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['0000:99:00.0']})
    assert failed and '0000:99:00.0' in result['msg'] and root in result['msg'] and hostname() in result['msg']


def test_host_without_hardware_returns_empty_lists(tmp_path):
    result, failed = run_module(pcie_info.main, {'sysfs_root': str(tmp_path)})
    assert not failed
    assert (result['devices'], result['degraded'], result['slot_limited'], result['unknown']) == ([], [], [], [])


def test_shared_real_tree_e810_only_with_all_network_devices():
    root = fixtures.shared_path('sysfs/procfs_fixtures_ib_mlx4_mlx5_hfi1_and_pci_e810_nvme/sys')
    result, failed = run_module(pcie_info.main, {'sysfs_root': root})
    assert not failed and result['devices'] == []
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'all_network_devices': True})
    assert not failed
    (e810,) = result['devices']
    assert e810['bdf'] == '0000:a2:00.0' and e810['kind'] == 'nic' and e810['link']['driver'] == 'ice'
    assert e810['assessment']['status'] == 'ok' and e810['assessment']['expected_width'] == 8


@pytest.mark.skipif(not os.path.isdir('/sys/bus/pci/devices'), reason='this host has no PCI bus in sysfs')
def test_this_machines_sys():
    result, failed = run_module(pcie_info.main, {'all_network_devices': True})
    assert not failed, result
    for device in result['devices']:
        assert device['kind'] == 'nic' or device['kind'] == 'gpu'
        assert device['assessment']['status'] in ('ok', 'degraded', 'slot_limited', 'idle_downtrained', 'unknown')


def test_sriov_vfs_are_listed_not_inspected_and_never_judged(tmp_path):
    root = sriov_tree(tmp_path)
    result, failed = run_module(pcie_info.main, {'sysfs_root': root})
    assert not failed, result
    assert [d['bdf'] for d in result['devices']] == ['0000:01:00.0'] and result['devices'][0]['link']['sriov_numvfs'] == 2
    assert result['virtual_functions'] == ['0000:01:00.1', '0000:01:00.2']
    assert result['degraded'] == [] and result['unknown'] == []
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['01:00.2']})
    assert not failed and result['devices'][0]['assessment']['status'] == 'virtual_function'
    assert result['virtual_functions'] == ['0000:01:00.2'] and result['unknown'] == []


def test_a_vf_only_lspci_names_is_not_judged_as_a_link(tmp_path):
    unnamed = dict(CX7)
    unnamed['device'] = '0x9999'  # an ID the VF table does not know: only lspci can tell
    make_pci_tree(tmp_path, [('0000:b0:04.0', link(GEN5, 16, GEN5, 16)), ('0000:b1:00.2', link('Unknown', 0, GEN5, 16, **unnamed))],
                  root_bus='0000:b0')
    text = fixtures.local('lspci/lspci_vvv_cx7_pf_downgraded_and_mlx5gen_vf_speed_unknown_x0_kvm_list_2025.txt')
    out = text[text.index('b1:00.2 '):]
    result, failed = run_module(pcie_info.main, {'sysfs_root': str(tmp_path), 'devices': ['0000:b1:00.2'], 'lspci': True},
                                calls=[Call(LSPCI + ['0000:b1:00.2'], 0, out, '')])
    assert not failed, result
    device = result['devices'][0]
    assert device['lspci']['virtual_function'] is True and device['lspci']['downgraded'] is None
    assert device['link']['virtual_function'] is True and device['assessment']['status'] == 'virtual_function'
    assert result['virtual_functions'] == ['0000:b1:00.2'] and result['unknown'] == []


def test_acs_reads_the_controls_of_every_bridge_above_the_devices(tmp_path):
    root = node_tree(tmp_path)
    on = fixtures.local('lspci/lspci_vvv_s_amd_matisse_downstream_port_acsctl_redirect_on_found_public.txt')
    result, failed = run_module(pcie_info.main, {'sysfs_root': root, 'devices': ['0000:01:00.0', '0000:21:00.0'], 'acs': True},
                                calls=[Call(LSPCI + ['0000:00:01.0'], out=on), Call(LSPCI + ['0000:20:01.0'], out='')], any_order=True)
    assert not failed, result
    first, second = (device['upstream'][0]['acs'] for device in result['devices'])
    assert first['redirects'] == ['ReqRedir', 'CmpltRedir', 'UpstreamFwd'] and first['line'].startswith('ACSCtl:')
    assert first['cmd'] == '/usr/bin/lspci -vvv -s 0000:00:01.0'
    # A bridge lspci prints nothing for: no capability read, nothing to grade.
    assert second['ctl'] is None and second['redirects'] is None
