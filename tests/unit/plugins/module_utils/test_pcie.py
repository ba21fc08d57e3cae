"""pcie: lspci -vvv parsing on real outputs, sysfs readers on real and built trees, link assessment."""
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import pcie
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

PROCFS_TREE = 'sysfs/procfs_fixtures_ib_mlx4_mlx5_hfi1_and_pci_e810_nvme/sys'
VM_TREE = 'sysfs_pci/firecracker_vm_virtio_tree.txt'


def by_bdf(text):
    return dict((d['bdf'], d) for d in pcie.parse_lspci(text)['devices'])


# ------------------------------------------------------------------ parse_lspci on real outputs

def test_real_h100_node_cx7_gen5_x16_healthy():
    devices = by_bdf(fixtures.local('lspci/lspci_vvv_h100_cx7_gen5_x16_ok_cx6dx_switch_port_gpud.txt'))
    assert list(devices) == ['17:03.0', '19:00.0', '1a:00.0', '1b:00.0']
    cx7 = devices['1a:00.0']
    assert cx7['description'] == 'Mellanox Technologies MT2910 Family [ConnectX-7]'
    assert cx7['class'] == 'Ethernet controller' and cx7['port_type'] == 'Endpoint'
    assert (cx7['lnkcap_speed_gts'], cx7['lnkcap_width'], cx7['lnksta_speed_gts'], cx7['lnksta_width']) == (32.0, 16, 32.0, 16)
    assert cx7['downgraded'] is False and cx7['speed_downgraded'] is False and cx7['width_downgraded'] is False
    assert cx7['lnkcap2_speeds'] == [2.5, 5.0, 8.0, 16.0, 32.0]
    assert cx7['numa_node'] == 0 and cx7['kernel_driver'] == 'mlx5_core'
    gpu = devices['19:00.0']
    assert gpu['class'] == '3D controller' and gpu['kernel_driver'] == 'nvidia' and gpu['downgraded'] is False
    cx6 = devices['1b:00.0']
    assert (cx6['lnkcap_speed_gts'], cx6['lnksta_speed_gts'], cx6['lnkcap2_speeds'][-1]) == (16.0, 16.0, 16.0)


def test_real_switch_downstream_port_reports_lspci_downgraded_annotation():
    port = by_bdf(fixtures.local('lspci/lspci_vvv_h100_cx7_gen5_x16_ok_cx6dx_switch_port_gpud.txt'))['17:03.0']
    assert port['port_type'] == 'Downstream Port' and port['kernel_driver'] == 'pcieport'
    assert port['description'] == 'Broadcom / LSI PEX890xx PCIe Gen 5 Switch'
    assert port['lnksta_speed_gts'] == 16.0 and port['speed_downgraded'] is True and port['width_downgraded'] is False


def test_real_nic_width_downgraded():
    devices = by_bdf(fixtures.local('lspci/lspci_vvv_bcm5720_nic_width_x1_downgraded_gpud.txt'))
    for bdf in ('01:00.0', '01:00.1'):
        nic = devices[bdf]
        assert (nic['lnkcap_speed_gts'], nic['lnkcap_width'], nic['lnksta_speed_gts'], nic['lnksta_width']) == (5.0, 2, 5.0, 1)
        assert nic['downgraded'] is True and nic['width_downgraded'] is True and nic['speed_downgraded'] is False
        assert nic['kernel_driver'] == 'tg3'


def test_real_outputs_without_annotations_are_compared_by_the_parser():
    """Older lspci prints no (ok)/(downgraded): the same real outputs, annotations removed, must give the same verdicts."""
    for name in ('lspci/lspci_vvv_bcm5720_nic_width_x1_downgraded_gpud.txt',
                 'lspci/lspci_vvv_h100_cx7_gen5_x16_ok_cx6dx_switch_port_gpud.txt'):
        text = fixtures.local(name)
        bare = text.replace(' (ok)', '').replace(' (downgraded)', '')
        assert bare != text
        for with_note, without in zip(pcie.parse_lspci(text)['devices'], pcie.parse_lspci(bare)['devices']):
            for key in ('downgraded', 'speed_downgraded', 'width_downgraded', 'lnksta_speed_gts', 'lnksta_width'):
                assert with_note[key] == without[key], (with_note['bdf'], key)


def test_real_truncated_cx6dx_without_lnksta_is_unknown_not_healthy():
    devices = pcie.parse_lspci(fixtures.shared('lspci/lspci_cx6dx_header_lnkcap_16GT_x16_l2fwd6_truncated.txt'))['devices']
    assert len(devices) == 1
    nic = devices[0]
    assert nic['bdf'] == 'b3:00.0' and nic['description'] == 'Mellanox Technologies MT2892 Family [ConnectX-6 Dx]'
    assert nic['numa_node'] == 0 and (nic['lnkcap_speed_gts'], nic['lnkcap_width']) == (16.0, 16)
    assert nic['lnksta_speed_gts'] is None and nic['downgraded'] is None


def test_real_fragment_without_header_or_lnkcap_uses_the_annotations():
    devices = pcie.parse_lspci(fixtures.shared(
        'lspci/lspci_quadro_rtx8000_lnksta_5GT_x1_both_downgraded_geerling480_fragment.txt'))['devices']
    assert len(devices) == 1
    gpu = devices[0]
    assert gpu['bdf'] is None and gpu['lnkcap_speed_gts'] is None
    assert (gpu['lnksta_speed_gts'], gpu['lnksta_width']) == (5.0, 1)
    assert gpu['downgraded'] is True and gpu['speed_downgraded'] is True and gpu['width_downgraded'] is True


def test_real_grep_fragment_gpu_speed_downgraded_width_ok():
    devices = pcie.parse_lspci(fixtures.local('lspci/lspci_lnk_grep_rtx4090_2.5GT_downgraded_x16_ok_jan183.txt'))['devices']
    assert len(devices) == 1 and devices[0]['bdf'] is None
    gpu = devices[0]
    assert (gpu['lnkcap_speed_gts'], gpu['lnkcap_width'], gpu['lnksta_speed_gts'], gpu['lnksta_width']) == (16.0, 16, 2.5, 16)
    assert gpu['speed_downgraded'] is True and gpu['width_downgraded'] is False and gpu['downgraded'] is True


def test_real_old_lspci_speed_unknown_is_none():
    device = pcie.parse_lspci(fixtures.local('lspci/lspci_lnk_grep_cx7_old_pciutils_speed_unknown_lshca51.txt'))['devices'][0]
    assert device['lnkcap_speed_gts'] is None and device['lnkcap_width'] == 16
    assert device['lnksta_speed_gts'] == 16.0 and device['lnksta_width'] == 16
    assert device['speed_downgraded'] is None and device['width_downgraded'] is False and device['downgraded'] is None


@pytest.mark.parametrize('name,first_bdf', [
    ('lspci/lspci_vvv_firecracker_vm_virtio_no_pcie_caps.txt', '00:00.0'),
    ('lspci/lspci_vvv_nn_D_firecracker_vm_virtio_no_pcie_caps.txt', '0000:00:00.0'),
])
def test_real_vm_devices_without_pcie_capability(name, first_bdf):
    devices = pcie.parse_lspci(fixtures.local(name))['devices']
    assert len(devices) == 6 and devices[0]['bdf'] == first_bdf
    for device in devices:
        for key in ('lnkcap_speed_gts', 'lnkcap_width', 'lnksta_speed_gts', 'lnksta_width', 'downgraded', 'numa_node'):
            assert device[key] is None, (device['bdf'], key)
    net = devices[3]
    assert net['class'] == 'Ethernet controller' and net['description'] == 'Red Hat, Inc. Virtio 1.0 network device'
    assert net['kernel_driver'] == 'virtio-pci'


def test_real_vm_nn_form_keeps_class_code_and_ids():
    net = by_bdf(fixtures.local('lspci/lspci_vvv_nn_D_firecracker_vm_virtio_no_pcie_caps.txt'))['0000:00:03.0']
    assert net['class_code'] == '0200' and net['vendor_device'] == '1af4:1041'


def test_real_vm_single_device():
    devices = pcie.parse_lspci(fixtures.local('lspci/lspci_vvv_s_firecracker_vm_virtio_net.txt'))['devices']
    assert [d['bdf'] for d in devices] == ['00:03.0'] and devices[0]['downgraded'] is None


# ------------------------------------------------------------------ parse_lspci edge cases

def test_speed_unknown_and_width_x0_are_none():
    device = pcie.parse_lspci('\t\tLnkSta:\tSpeed unknown, Width x0, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n')['devices'][0]
    assert device['lnksta_speed_gts'] is None and device['lnksta_width'] is None and device['downgraded'] is None


def test_capabilities_access_denied_is_flagged():
    text = '1a:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n\tCapabilities: <access denied>\n'
    device = pcie.parse_lspci(text)['devices'][0]
    assert device['capabilities_readable'] is False and device['lnksta_speed_gts'] is None and device['downgraded'] is None


def test_empty_output_has_no_devices():
    assert pcie.parse_lspci('') == {'devices': []}
    assert pcie.parse_lspci('\n  \n') == {'devices': []}


@pytest.mark.parametrize('text', ['this is not lspci\n', 'Settings for eth0:\n\tSpeed: 100000Mb/s\n', 'a\x00b'])
def test_foreign_text_raises(text):
    with pytest.raises(ParseError):
        pcie.parse_lspci(text)


@pytest.mark.parametrize('value,expected', [
    ('32.0 GT/s PCIe', 32.0), ('16 GT/s', 16.0), ('2.5 GT/s', 2.5), ('8.0 GT/s PCIe\n', 8.0), ('16GT/s', 16.0),
    ('Unknown', None), ('Unknown speed', None), ('', None), (None, None), ('0 GT/s', None), (b'5.0 GT/s PCIe', 5.0),
])
def test_speed_gts(value, expected):
    assert pcie.speed_gts(value) == expected


@pytest.mark.parametrize('value,expected', [('16', 16), ('x8', 8), ('0', None), ('', None), (None, None), ('abc', None)])
def test_link_width(value, expected):
    assert pcie.link_width(value) == expected


@pytest.mark.parametrize('value,expected', [('1b:00.0', '0000:1b:00.0'), ('0000:1B:00.0', '0000:1b:00.0'),
                                            ('1b:00.8', None), ('1b:00', None), ('eth0', None), (None, None)])
def test_normalize_bdf(value, expected):
    assert pcie.normalize_bdf(value) == expected


# ------------------------------------------------------------------ sysfs trees

def make_pci_tree(root, chain, root_bus='0000:00', drivers=None):
    """Build a real-layout sysfs tree: devices/pci<root_bus>/<hop>/.../<device> plus bus/pci/devices symlinks.

    ``chain`` lists (bdf, facts) from the root port down to the device; facts
    hold current/max speed strings and widths as the kernel writes them.
    """
    drivers = drivers or {}
    path = os.path.join(str(root), 'devices', 'pci' + root_bus)
    bus = os.path.join(str(root), 'bus', 'pci', 'devices')
    os.makedirs(bus, exist_ok=True)
    for bdf, facts in chain:
        path = os.path.join(path, bdf)
        os.makedirs(path)
        files = {'class': '0x060400', 'vendor': '0x8086', 'device': '0x352a', 'numa_node': '0'}
        files.update(facts)
        for name, value in files.items():
            with open(os.path.join(path, name), 'w') as handle:
                handle.write('%s\n' % value)
        if bdf in drivers:
            os.makedirs(os.path.join(str(root), 'bus', 'pci', 'drivers', drivers[bdf]), exist_ok=True)
            os.symlink('../../../bus/pci/drivers/%s' % drivers[bdf], os.path.join(path, 'driver'))
        os.symlink(os.path.relpath(path, bus), os.path.join(bus, bdf))
    return str(root)


def link(cur, cur_w, top, top_w, **extra):
    facts = {'current_link_speed': cur, 'current_link_width': cur_w, 'max_link_speed': top, 'max_link_width': top_w}
    facts.update(extra)
    return facts


GEN5, GEN4, GEN1 = '32.0 GT/s PCIe', '16.0 GT/s PCIe', '2.5 GT/s PCIe'
CX7 = {'class': '0x020000', 'vendor': '0x15b3', 'device': '0x1021', 'numa_node': '1'}
H100 = {'class': '0x030200', 'vendor': '0x10de', 'device': '0x2330', 'numa_node': '0'}


def assess(root, bdf, is_gpu=False):
    return pcie.assess_link(pcie.read_pci_link(root, bdf), pcie.walk_upstream(root, bdf), is_gpu=is_gpu)


def test_gen5_nic_behind_gen4_root_port_is_slot_limited(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN4, 16, GEN4, 16)),
                                    ('0000:01:00.0', link(GEN4, 16, GEN5, 16, **CX7))], drivers={'0000:01:00.0': 'mlx5_core'})
    facts = pcie.read_pci_link(root, '01:00.0')
    assert facts == {'bdf': '0000:01:00.0', 'current_speed_gts': 16.0, 'max_speed_gts': 32.0, 'current_width': 16, 'max_width': 16,
                     'numa_node': 1, 'class': '0x020000', 'vendor': '0x15b3', 'device': '0x1021', 'driver': 'mlx5_core',
                     'physfn': None, 'virtual_function': False, 'sriov_numvfs': None}
    hops = pcie.walk_upstream(root, '0000:01:00.0')
    assert [hop['bdf'] for hop in hops] == ['0000:00:01.0'] and hops[0]['max_speed_gts'] == 16.0
    verdict = pcie.assess_link(facts, hops)
    assert verdict['status'] == 'slot_limited' and verdict['bottleneck'] == 'slot'
    assert (verdict['expected_speed_gts'], verdict['expected_width']) == (16.0, 16)
    assert '0000:00:01.0' in verdict['reason'] and 'not a device fault' in verdict['reason']


def test_gen5_nic_at_gen4_behind_gen5_ports_is_degraded_naming_the_device(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN5, 16, GEN5, 16)),
                                    ('0000:01:00.0', link(GEN5, 16, GEN5, 16)),
                                    ('0000:02:03.0', link(GEN4, 16, GEN5, 16)),
                                    ('0000:03:00.0', link(GEN4, 16, GEN5, 16, **CX7))])
    verdict = assess(root, '0000:03:00.0')
    assert verdict['status'] == 'degraded' and verdict['bottleneck'] == 'device'
    assert verdict['expected_speed_gts'] == 32.0
    assert '0000:03:00.0' in verdict['reason'] and '0000:02:03.0' in verdict['reason']
    assert [hop['bdf'] for hop in pcie.walk_upstream(root, '0000:03:00.0')] == ['0000:02:03.0', '0000:01:00.0', '0000:00:01.0']


def test_nic_at_x8_is_degraded(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN5, 8, GEN5, 16)), ('0000:01:00.0', link(GEN5, 8, GEN5, 16, **CX7))])
    verdict = assess(root, '0000:01:00.0')
    assert verdict['status'] == 'degraded' and verdict['bottleneck'] == 'device' and verdict['expected_width'] == 16
    assert 'x8' in verdict['reason']


def test_upstream_switch_link_running_slow_is_degraded_naming_the_hop(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN5, 4, GEN5, 16)),
                                    ('0000:01:00.0', link(GEN5, 4, GEN5, 16)),
                                    ('0000:02:00.0', link(GEN5, 16, GEN5, 16)),
                                    ('0000:03:00.0', link(GEN5, 16, GEN5, 16, **CX7))])
    verdict = assess(root, '0000:03:00.0')
    assert verdict['status'] == 'degraded' and verdict['bottleneck'] == 'upstream:0000:01:00.0'


def test_idle_gpu_at_gen1_full_width_is_idle_downtrained(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN1, 16, GEN5, 16)), ('0000:01:00.0', link(GEN1, 16, GEN5, 16, **H100))])
    verdict = assess(root, '0000:01:00.0', is_gpu=True)
    assert verdict['status'] == 'idle_downtrained' and verdict['bottleneck'] is None
    assert assess(root, '0000:01:00.0', is_gpu=False)['status'] == 'degraded'


def test_gpu_with_narrow_width_is_degraded_even_at_idle(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN1, 8, GEN5, 16)), ('0000:01:00.0', link(GEN1, 8, GEN5, 16, **H100))])
    assert assess(root, '0000:01:00.0', is_gpu=True)['status'] == 'degraded'


def test_healthy_gen5_x16_is_ok(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN5, 16, GEN5, 16)), ('0000:01:00.0', link(GEN5, 16, GEN5, 16, **CX7))])
    verdict = assess(root, '0000:01:00.0')
    assert verdict['status'] == 'ok' and verdict['bottleneck'] is None and verdict['expected_speed_gts'] == 32.0


def test_slow_device_behind_hop_without_link_facts_is_unknown(tmp_path):
    root = make_pci_tree(tmp_path, [('0000:00:01.0', {}), ('0000:01:00.0', link(GEN4, 16, GEN5, 16, **CX7))])
    verdict = assess(root, '0000:01:00.0')
    assert verdict['status'] == 'unknown' and '0000:00:01.0' in verdict['reason']


def test_device_without_link_files_is_unknown():
    verdict = pcie.assess_link({'bdf': '0000:00:03.0', 'current_speed_gts': None, 'max_speed_gts': None,
                                'current_width': None, 'max_width': None}, [])
    assert verdict['status'] == 'unknown' and verdict['expected_speed_gts'] is None


def test_read_pci_devices_filters_class_and_vendor(tmp_path):
    make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN5, 16, GEN5, 16)), ('0000:01:00.0', link(GEN5, 16, GEN5, 16, **CX7))])
    make_pci_tree(tmp_path, [('0000:80:01.0', link(GEN5, 16, GEN5, 16)), ('0000:81:00.0', link(GEN5, 16, GEN5, 16, **H100))], root_bus='0000:80')
    make_pci_tree(tmp_path, [('0000:90:00.0', {'class': '0x020000', 'vendor': '0x8086', 'device': '0x159b'})], root_bus='0000:90')
    root = str(tmp_path)
    everything = pcie.read_pci_devices(root, list(pcie.NIC_CLASSES) + list(pcie.GPU_CLASSES))
    assert [(d['bdf'], d['kind']) for d in everything] == [('0000:01:00.0', 'nic'), ('0000:81:00.0', 'gpu'), ('0000:90:00.0', 'nic')]
    mellanox = pcie.read_pci_devices(root, [pcie.CLASS_ETHERNET], {pcie.CLASS_ETHERNET: [pcie.VENDOR_MELLANOX]})
    assert [d['bdf'] for d in mellanox] == ['0000:01:00.0']
    assert pcie.read_pci_devices(root, ['0x0108']) == []
    assert pcie.read_pci_link(root, '0000:55:00.0') is None and pcie.walk_upstream(root, '0000:55:00.0') == []


def test_shared_real_tree_e810_and_nvme():
    root = fixtures.shared_path(PROCFS_TREE)
    e810 = pcie.read_pci_link(root, '0000:a2:00.0')
    assert e810 == {'bdf': '0000:a2:00.0', 'current_speed_gts': 16.0, 'max_speed_gts': 16.0, 'current_width': 8, 'max_width': 8,
                    'numa_node': 1, 'class': '0x020000', 'vendor': '0x8086', 'device': '0x159b', 'driver': 'ice',
                    'physfn': None, 'virtual_function': False, 'sriov_numvfs': 0}
    assert pcie.walk_upstream(root, '0000:a2:00.0') == []
    assert pcie.assess_link(e810, [])['status'] == 'ok'
    nvme = pcie.read_pci_link(root, '01:00.0')
    assert (nvme['current_speed_gts'], nvme['current_width'], nvme['numa_node'], nvme['driver']) == (8.0, 4, -1, 'nvme')
    hops = pcie.walk_upstream(root, '01:00.0')
    assert [hop['bdf'] for hop in hops] == ['0000:00:02.1'] and hops[0]['max_speed_gts'] is None
    verdict = pcie.assess_link(nvme, hops)
    assert verdict['status'] == 'ok' and '0000:00:02.1' in verdict['reason']
    nics = pcie.read_pci_devices(root, list(pcie.NIC_CLASSES))
    assert [(d['bdf'], d['kind']) for d in nics] == [('0000:a2:00.0', 'nic')]


def test_real_vm_tree_captured_here(tmp_path):
    root = os.path.join(fixtures.local_tree(VM_TREE, tmp_path), 'sys')
    net = pcie.read_pci_link(root, '0000:00:03.0')
    assert net['class'] == '0x020000' and net['vendor'] == '0x1af4' and net['driver'] == 'virtio-pci'
    assert net['numa_node'] == -1 and net['current_speed_gts'] is None and net['max_width'] is None
    assert pcie.walk_upstream(root, '0000:00:03.0') == []
    assert pcie.assess_link(net, [])['status'] == 'unknown'
    assert [d['bdf'] for d in pcie.read_pci_devices(root, [pcie.CLASS_NETWORK])] == ['0000:00:03.0']


@pytest.mark.skipif(not os.path.isdir('/sys/bus/pci/devices'), reason='this host has no PCI bus in sysfs')
def test_this_machines_sys_read_only():
    devices = pcie.read_pci_devices('/sys', [pcie.CLASS_NETWORK] + list(pcie.GPU_CLASSES))
    for entry in devices:
        facts = pcie.read_pci_link('/sys', entry['bdf'])
        assert facts['bdf'] == entry['bdf'] and facts['class'] == entry['class']
        verdict = pcie.assess_link(facts, pcie.walk_upstream('/sys', entry['bdf']), is_gpu=entry['kind'] == 'gpu')
        assert verdict['status'] in ('ok', 'degraded', 'slot_limited', 'idle_downtrained', 'unknown')
        assert verdict['reason']


VF_KVM = 'lspci/lspci_vvv_cx7_pf_downgraded_and_mlx5gen_vf_speed_unknown_x0_kvm_list_2025.txt'
VF_AZURE = 'lspci/lspci_vvv_cx5_vf_azure_speed_unknown_x0_elided_pcie_notes.txt'
VF_BY_ID = 'lspci/lspci_D_nn_vvv_vfs_by_device_id_no_name_synthetic.txt'


def test_sriov_vf_is_no_downgraded_link_and_its_pf_still_is_found_public():
    devices = dict((d['bdf'], d) for d in pcie.parse_lspci(fixtures.local(VF_KVM))['devices'])
    pf, vf = devices['b1:00.1'], devices['b1:00.2']
    assert (pf['lnkcap_speed_gts'], pf['lnkcap_width'], pf['lnksta_speed_gts'], pf['lnksta_width']) == (32.0, 16, 16.0, 8)
    assert pf['downgraded'] is True and pf['virtual_function'] is False
    assert pf['sriov'] == {'initial_vfs': 8, 'total_vfs': 8, 'num_vfs': 0}
    assert vf['description'] == 'Mellanox Technologies ConnectX Family mlx5Gen Virtual Function'
    assert vf['virtual_function'] is True and vf['sriov'] is None and vf['kernel_driver'] == 'mlx5_vfio_pci'
    assert (vf['lnkcap_speed_gts'], vf['lnkcap_width'], vf['lnksta_speed_gts'], vf['lnksta_width']) == (32.0, 16, None, None)
    assert (vf['downgraded'], vf['speed_downgraded'], vf['width_downgraded']) == (None, None, None)


def test_azure_cx5_vf_pasted_with_an_elision_found_public():
    (vf,) = pcie.parse_lspci(fixtures.local(VF_AZURE))['devices']
    assert vf['bdf'] == 'd6f5:00:02.0' and vf['virtual_function'] is True
    assert (vf['lnkcap_speed_gts'], vf['lnkcap_width'], vf['lnksta_speed_gts'], vf['lnksta_width']) == (8.0, 16, None, None)
    assert vf['downgraded'] is None


def test_vfs_known_by_device_id_alone_synthetic():
    devices = dict((d['bdf'], d) for d in pcie.parse_lspci(fixtures.local(VF_BY_ID))['devices'])
    assert devices['0000:3b:00.3']['vendor_device'] == '15b3:101e' and devices['0000:3b:00.3']['virtual_function'] is True
    assert devices['0000:3b:00.4']['vendor_device'] == '8086:1889' and devices['0000:3b:00.4']['virtual_function'] is True
    # A VF whose LnkSta mirrors its PF's link is still not graded as a link of its own.
    assert devices['0000:3b:00.4']['lnksta_speed_gts'] == 16.0 and devices['0000:3b:00.4']['downgraded'] is None


def test_unknown_lnksta_is_never_a_downgrade_whatever_lspci_annotates():
    text = 'LnkCap:\tPort #0, Speed 16GT/s, Width x16\nLnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)\n'
    (device,) = pcie.parse_lspci(text)['devices']
    assert device['downgraded'] is None and device['virtual_function'] is None
    text = 'LnkCap:\tPort #0, Speed 16GT/s, Width x16\nLnkSta:\tSpeed unknown (downgraded), Width x8 (downgraded)\n'
    (device,) = pcie.parse_lspci(text)['devices']
    assert (device['speed_downgraded'], device['width_downgraded'], device['downgraded']) == (None, True, True)


def sriov_tree(tmp_path):
    """A Gen5 CX7 PF with two VFs: the VFs link to it through physfn, read 'Unknown' / 0 as a VF does."""
    root = make_pci_tree(tmp_path, [('0000:00:01.0', link(GEN5, 16, GEN5, 16)),
                                    ('0000:01:00.0', link(GEN5, 16, GEN5, 16, sriov_numvfs=2, **CX7))])
    parent = os.path.join(root, 'devices', 'pci0000:00', '0000:00:01.0')
    for function in ('0000:01:00.1', '0000:01:00.2'):
        path = os.path.join(parent, function)
        os.makedirs(path)
        for name, value in link('Unknown', 0, GEN5, 16, **{'class': '0x020000', 'vendor': '0x15b3', 'device': '0x101e'}).items():
            with open(os.path.join(path, name), 'w') as handle:
                handle.write('%s\n' % value)
        os.symlink('../0000:01:00.0', os.path.join(path, 'physfn'))
        os.symlink(os.path.relpath(path, os.path.join(root, 'bus', 'pci', 'devices')), os.path.join(root, 'bus', 'pci', 'devices', function))
    return root


def test_sysfs_vf_is_recognised_by_physfn_and_never_judged(tmp_path):
    root = sriov_tree(tmp_path)
    vf = pcie.read_pci_link(root, '0000:01:00.1')
    assert (vf['physfn'], vf['virtual_function'], vf['current_speed_gts'], vf['current_width']) == ('0000:01:00.0', True, None, None)
    assessment = pcie.assess_link(vf, pcie.walk_upstream(root, '0000:01:00.1'))
    assert assessment['status'] == 'virtual_function' and 'of 0000:01:00.0' in assessment['reason']
    pf = pcie.read_pci_link(root, '0000:01:00.0')
    assert (pf['virtual_function'], pf['sriov_numvfs']) == (False, 2)
    assert pcie.assess_link(pf, pcie.walk_upstream(root, '0000:01:00.0'))['status'] == 'ok'
    found = pcie.read_pci_devices(root, [pcie.CLASS_ETHERNET])
    assert [(d['bdf'], d['virtual_function']) for d in found] == [('0000:01:00.0', False), ('0000:01:00.1', True), ('0000:01:00.2', True)]


def test_acs_control_redirecting_peer_to_peer_is_read_from_a_real_bridge():
    bridge = pcie.parse_lspci(fixtures.local('lspci/lspci_vvv_s_amd_matisse_downstream_port_acsctl_redirect_on_found_public.txt'))['devices'][0]
    assert bridge['bdf'] == '03:02.0' and bridge['port_type'] == 'Downstream Port'
    assert bridge['acs_ctl'] == {'SrcValid': True, 'TransBlk': False, 'ReqRedir': True, 'CmpltRedir': True, 'UpstreamFwd': True,
                                 'EgressCtrl': False, 'DirectTrans': False}
    assert bridge['acs_cap']['DirectTrans'] is True
    assert pcie.acs_redirects(bridge['acs_ctl']) == ['ReqRedir', 'CmpltRedir', 'UpstreamFwd']
    assert bridge['acs_line'].startswith('ACSCtl:') and 'ReqRedir+' in bridge['acs_line']


def test_acs_capable_but_off_redirects_nothing():
    bridge = pcie.parse_lspci(fixtures.local('lspci/lspci_vvv_intel_sunrise_point_root_port_acs_capable_acsctl_off_found_public.txt'))['devices'][0]
    assert bridge['port_type'] == 'Root Port' and bridge['acs_cap']['ReqRedir'] is True
    assert not any(bridge['acs_ctl'].values()) and pcie.acs_redirects(bridge['acs_ctl']) == []


def test_a_device_without_the_acs_capability_has_none():
    text = fixtures.shared('lspci/lspci_cx6dx_header_lnkcap_16GT_x16_l2fwd6_truncated.txt')
    assert 'ACS' not in text
    device = pcie.parse_lspci(text)['devices'][0]
    assert device['acs_ctl'] is None and device['acs_cap'] is None and pcie.acs_redirects(device['acs_ctl']) is None
