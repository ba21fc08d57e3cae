"""Lab profiles and emulated hardware trees (lab/netval_lab/profiles.py, hardware.py): plain unit tests, no root needed."""
import json
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import host_tuning
from lab.netval_lab import hardware, profiles

FABRIC = {'fabric': [{'netdev': 'fab-peer01', 'ip': '10.252.1.1', 'peer_ip': '10.252.1.2', 'peer': 'peer01'}],
          'mgmt_ip': '10.251.0.11'}


def write_profile(tmp_path, text, name='x'):
    path = tmp_path / ('%s.yml' % name)
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------ profiles

def test_all_profiles_load_and_match_their_tier():
    names = profiles.list_profiles()
    assert set(names) >= {'healthy-400g', 'gen4-nic0', 'platform-slow', 'gpu-missing', 'nccl-socket-fallback',
                          'spark-pair-throttled', 'healthy-100g', 'healthy-800g'}
    for name in names:
        profile = profiles.load_profile(name)
        assert profile['name'] == name
        assert profile['hardware']['nics'], name


def test_healthy_400g_numbers():
    hw = profiles.load_profile('healthy-400g')['hardware']
    assert [nic['name'] for nic in hw['nics']] == ['mlx5_%d' % index for index in range(8)]
    for nic in hw['nics']:
        assert (nic['link_layer'], nic['rate_gbps'], nic['bw_gbytes_s'], nic['hca_type']) == ('InfiniBand', 400, 47.0, 'MT4129')
        assert nic['pcie'] == {'lnkcap_gts': 32, 'lnkcap_width': 16, 'lnksta_gts': 32, 'lnksta_width': 16,
                               'upstream_max_gts': 32, 'upstream_width': 16}
    assert (hw['gpus']['count_present'], hw['gpus']['model']) == (8, 'NVIDIA H100 80GB HBM3')
    assert (hw['nccl']['transport'], hw['nccl']['busbw_gbs']) == ('IB', 46.0)


def test_extends_merges_nics_by_name():
    hw = profiles.load_profile('gen4-nic0')['hardware']
    by_name = {nic['name']: nic for nic in hw['nics']}
    assert by_name['mlx5_0']['pcie']['lnksta_gts'] == 16 and by_name['mlx5_0']['pcie']['lnkcap_gts'] == 32
    assert by_name['mlx5_0']['bw_gbytes_s'] == 38.0
    assert by_name['mlx5_3']['pcie']['lnksta_gts'] == 32 and by_name['mlx5_3']['bw_gbytes_s'] == 41.0
    assert by_name['mlx5_1']['bw_gbytes_s'] == 47.0 and len(hw['nics']) == 8


def test_other_profiles():
    slow = profiles.load_profile('platform-slow')['hardware']
    assert {nic['bw_gbytes_s'] for nic in slow['nics']} == {42.0}
    assert (slow['host']['governor'], slow['host']['hugepages_total']) == ('powersave', 0)
    missing = profiles.load_profile('gpu-missing')['hardware']['gpus']
    assert (missing['count_expected'], missing['count_present']) == (8, 7)
    assert any('Xid' in line and ': 79,' in line and 'fallen off the bus' in line for line in missing['xid_lines'])
    assert profiles.load_profile('nccl-socket-fallback')['hardware']['nccl']['transport'] == 'Socket'
    assert {nic['rate_gbps'] for nic in profiles.load_profile('healthy-800g')['hardware']['nics']} == {800}
    assert len(profiles.load_profile('healthy-100g')['hardware']['nics']) == 2


def test_spark_pair_live_device_differs_between_boxes():
    profile = profiles.load_profile('spark-pair-throttled')
    new = profiles.resolve_role(profile, 'new')
    peer = profiles.resolve_role(profile, 'peer')
    names = ['rocep1s0f0', 'rocep1s0f1', 'roceP2p1s0f0', 'roceP2p1s0f1']
    assert [nic['name'] for nic in new['nics']] == names == [nic['name'] for nic in peer['nics']]
    assert [nic['name'] for nic in new['nics'] if nic['state'] == 'ACTIVE'] == ['rocep1s0f0', 'roceP2p1s0f0']
    assert [nic['name'] for nic in peer['nics'] if nic['state'] == 'ACTIVE'] == ['rocep1s0f1', 'roceP2p1s0f1']
    assert {nic['link_layer'] for nic in new['nics']} == {'Ethernet'}
    throttled = [nic['bw_gbytes_s'] * 8 for nic in new['nics'] if nic['state'] == 'ACTIVE']
    assert throttled == [14.0, 14.0]


def test_peer_of_a_faulty_profile_is_healthy():
    peer = profiles.resolve_role(profiles.load_profile('gen4-nic0'), 'peer')
    assert {nic['pcie']['lnksta_gts'] for nic in peer['nics']} == {32}
    assert {nic['bw_gbytes_s'] for nic in peer['nics']} == {47.0}
    assert profiles.resolve_role(profiles.load_profile('gpu-missing'), 'peer')['gpus']['count_present'] == 8


def test_typo_is_reported_with_file_and_dotted_field(tmp_path):
    path = write_profile(tmp_path, 'name: x\ntier: 400G\nnics:\n  - name: mlx5_0\n  - name: mlx5_1\n  - name: mlx5_2\n    rate_gpbs: 400\n')
    with pytest.raises(profiles.ProfileError) as info:
        profiles.load_profile(path)
    message = str(info.value)
    assert path in message and 'nics[2].rate_gpbs: unknown field (did you mean rate_gbps?)' in message


@pytest.mark.parametrize('body, expected', [
    ('name: x\ntier: 300G\n', "tier: '300G' is not one of"),
    ('name: x\ntier: 400G\nnics:\n  - name: mlx5_0\n    rate_gbps: fast\n', 'nics[0].rate_gbps: expected integer'),
    ('name: x\ntier: 400G\nhost:\n  no_turbo: 1\n', 'host.no_turbo: expected boolean'),
    ('name: x\ntier: 400G\ngpus:\n  count_present: true\n', 'gpus.count_present: expected integer, got boolean'),
    ('name: x\ntier: 400G\nnccl:\n  transport: RoCE\n', "nccl.transport: 'RoCE' is not one of IB, Socket"),
    ('name: x\ntier: 400G\ndcgmi:\n  results:\n    PCIe: Broken\n', 'dcgmi.results.PCIe'),
    ('name: x\ntier: 400G\npeer:\n  nics:\n    - name: mlx5_0\n      stat: DOWN\n', 'peer.nics[0].stat: unknown field (did you mean state?)'),
    ('tier: 400G\n', 'name: required field is missing'),
    ('name: x\nextends: no-such-profile\n', 'no-such-profile.yml: cannot read profile'),
    ('- a list\n', 'expected a mapping at the top level'),
    ('name: [x\n', 'not valid YAML'),
])
def test_schema_errors(tmp_path, body, expected):
    path = write_profile(tmp_path, body)
    with pytest.raises(profiles.ProfileError) as info:
        profiles.load_profile(path)
    assert expected in str(info.value)


def test_extends_loop_is_an_error(tmp_path):
    write_profile(tmp_path, 'name: a\nextends: %s\n' % str(tmp_path / 'b.yml'), 'a')
    write_profile(tmp_path, 'name: b\nextends: %s\n' % str(tmp_path / 'a.yml'), 'b')
    with pytest.raises(profiles.ProfileError, match='extends loop'):
        profiles.load_profile(str(tmp_path / 'a.yml'))


# ------------------------------------------------------------------ materialize

@pytest.fixture
def node(tmp_path):
    node_dir = tmp_path / 'node01'
    state = hardware.materialize('healthy-400g', 'node01', 'new', str(node_dir), FABRIC)
    return node_dir, state


def test_layout_and_state(node):
    node_dir, state = node
    for name in ('sys', 'proc', 'bin', 'log', 'state.json', 'state.base.json'):
        assert (node_dir / name).exists(), name
    with open(str(node_dir / 'state.json'), encoding='utf-8') as handle:
        assert json.load(handle)['nics'][0]['name'] == 'mlx5_0'
    assert state['nics'][0]['netdev'] == 'fab-peer01' and state['nics'][0]['netdev_real']
    assert state['nics'][1]['netdev'] == 'ibp59s0' and not state['nics'][1]['netdev_real']
    for tool in hardware.TOOLS:
        path = node_dir / 'bin' / tool
        assert os.access(str(path), os.X_OK), tool
        assert path.read_text().startswith('#!/bin/sh\n')


def test_sysfs_tree_links_stay_inside_the_tree(node):
    node_dir, _state = node
    sysfs = node_dir / 'sys'
    device = sysfs / 'class' / 'infiniband' / 'mlx5_0' / 'device'
    assert os.readlink(str(device)).startswith('../../../devices/pci0000:')
    real = os.path.realpath(str(device))
    assert real.startswith(os.path.realpath(str(sysfs)) + os.sep) and real.endswith('0000:1a:00.0')
    for root, dirs, files in os.walk(str(sysfs)):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                assert not os.readlink(path).startswith('/'), path
                assert os.path.realpath(path).startswith(os.path.realpath(str(sysfs))), path
    assert (sysfs / 'class' / 'infiniband' / 'mlx5_0' / 'ports' / '1' / 'state').read_text() == '4: ACTIVE\n'
    assert (sysfs / 'class' / 'infiniband' / 'mlx5_0' / 'ports' / '1' / 'rate').read_text() == '400 Gb/sec (4X NDR)\n'
    assert (sysfs / 'bus' / 'pci' / 'devices' / '0000:1a:00.0' / 'current_link_speed').read_text() == '32.0 GT/s PCIe\n'
    assert (sysfs / 'bus' / 'pci' / 'devices' / '0000:1a:00.0' / 'class').read_text() == '0x020700\n'
    assert (sysfs / 'bus' / 'pci' / 'devices' / '0000:1b:00.0' / 'class').read_text() == '0x030200\n'
    assert (sysfs / 'class' / 'net' / 'fab-peer01' / 'mtu').exists()


def test_host_tuning_readers_on_the_tree(node, tmp_path):
    node_dir, _state = node
    sysfs, procfs = str(node_dir / 'sys'), str(node_dir / 'proc')
    assert host_tuning.summarize_governors(host_tuning.read_cpu_governors(sysfs))['uniform'] == 'performance'
    assert host_tuning.read_no_turbo(sysfs) is False
    assert host_tuning.read_hugepage_pools(sysfs) == {1048576: 128, 2048: 0}
    with open(os.path.join(procfs, 'cmdline'), encoding='utf-8') as handle:
        assert 'iommu=pt' in host_tuning.parse_cmdline(handle.read())['tokens']
    with open(os.path.join(procfs, 'meminfo'), encoding='utf-8') as handle:
        assert host_tuning.parse_meminfo(handle.read())['hugepages']['total'] == 128
    with open(os.path.join(procfs, 'modules'), encoding='utf-8') as handle:
        assert 'nvidia_peermem' in host_tuning.parse_proc_modules(handle.read())['modules']
    with open(os.path.join(procfs, 'self', 'limits'), encoding='utf-8') as handle:
        assert host_tuning.parse_limits(handle.read())['memlock_bytes'] == {'soft': 'unlimited', 'hard': 'unlimited'}
    slow = tmp_path / 'slow'
    hardware.materialize('platform-slow', 'node02', 'new', str(slow), FABRIC)
    assert host_tuning.summarize_governors(host_tuning.read_cpu_governors(str(slow / 'sys')))['uniform'] == 'powersave'
    assert host_tuning.read_hugepage_pools(str(slow / 'sys'))[1048576] == 0


def test_peer_role_and_bad_arguments(tmp_path):
    state = hardware.materialize('spark-pair-throttled', 'peer01', 'peer', str(tmp_path / 'peer01'), FABRIC)
    assert state['role'] == 'peer'
    assert [nic['name'] for nic in state['nics'] if nic['netdev_real']] == ['rocep1s0f1']
    with pytest.raises(ValueError):
        hardware.materialize('healthy-400g', 'node01', 'spare', str(tmp_path / 'x'), FABRIC)
    with pytest.raises(ValueError):
        hardware.materialize('healthy-400g', '../evil', 'new', str(tmp_path / 'y'), FABRIC)


# ------------------------------------------------------------------ faults

def _read(path):
    with open(str(path), encoding='utf-8') as handle:
        return handle.read()


def test_nic0_gen4_fault_and_clear(node):
    node_dir, _state = node
    speed = node_dir / 'sys' / 'bus' / 'pci' / 'devices' / '0000:1a:00.0' / 'current_link_speed'
    state = hardware.apply_fault(str(node_dir), 'nic0-gen4')
    assert _read(speed) == '16.0 GT/s PCIe\n'
    assert state['nics'][0]['bw_gbytes_s'] == 38.0 and state['faults'] == ['nic0-gen4']
    assert json.loads(_read(node_dir / 'state.json'))['nics'][0]['pcie']['lnksta_gts'] == 16
    state = hardware.clear_faults(str(node_dir))
    assert _read(speed) == '32.0 GT/s PCIe\n' and state['nics'][0]['bw_gbytes_s'] == 47.0 and state['faults'] == []


def test_cmdline_drop_and_fw_change(node):
    node_dir, state = node
    hardware.apply_fault(str(node_dir), 'cmdline-drop')
    assert 'iommu=pt' not in _read(node_dir / 'proc' / 'cmdline').split()
    after = hardware.apply_fault(str(node_dir), 'fw-change')
    assert after['faults'] == ['cmdline-drop', 'fw-change']
    new_fw = after['nics'][0]['fw_version']
    assert new_fw != state['nics'][0]['fw_version']
    assert _read(node_dir / 'sys' / 'class' / 'infiniband' / 'mlx5_0' / 'fw_ver').strip() == new_fw
    assert _read(node_dir / 'sys' / 'class' / 'infiniband' / 'mlx5_1' / 'fw_ver').strip() == state['nics'][1]['fw_version']
    hardware.clear_faults(str(node_dir))
    assert 'iommu=pt' in _read(node_dir / 'proc' / 'cmdline').split()


def test_pause_storm_rate_and_no_temporary_files(node):
    node_dir, _state = node
    state = hardware.apply_fault(str(node_dir), 'pause-storm')
    assert {nic['pause_rate_per_s'] for nic in state['nics']} == {hardware.PAUSE_STORM_RATE}
    again = hardware.apply_fault(str(node_dir), 'pause-storm')
    assert again['faults'] == ['pause-storm']
    assert again['nics'][0]['pause_epoch'] == state['nics'][0]['pause_epoch']
    cleared = hardware.clear_faults(str(node_dir))
    assert cleared['nics'][0]['pause_rate_per_s'] == 0 and cleared['nics'][0]['pause_base'] >= 0
    for root, _dirs, files in os.walk(str(node_dir)):
        assert not [name for name in files if name.startswith('.tmp-')], root


def test_unknown_fault(node):
    node_dir, _state = node
    with pytest.raises(ValueError, match='unknown emulated fault'):
        hardware.apply_fault(str(node_dir), 'link-flap')


def test_atomic_write_skips_identical_content(tmp_path):
    path = str(tmp_path / 'f')
    assert hardware.atomic_write(path, 'a\n') is True
    assert hardware.atomic_write(path, 'a\n') is False
    assert hardware.atomic_write(path, 'b\n') is True and _read(path) == 'b\n'


# ------------------------------------------------------------------ a real site's boxes (lab/netval_lab/site.py)

def test_a_real_sites_box_has_more_rdma_devices_than_rails_and_is_addressed_unevenly():
    from lab.netval_lab import site  # pylint: disable=import-outside-toplevel
    hw = profiles.resolve_role(profiles.load_profile('healthy-400g'), 'new')
    nics = site.host_nics(hw, 8)
    assert [nic['name'] for nic in nics] == ['mlx5_%d' % index for index in range(12)]
    # front-end CX-6 Dx at 100 GbE on Gen4, storage CX-7 at 200 GbE with its second port not cabled
    assert [(nic['role'], nic['rate_gbps'], nic['link_layer'], nic['state']) for nic in nics[8:]] == [
        ('frontend', 100, 'Ethernet', 'ACTIVE'), ('frontend', 100, 'Ethernet', 'ACTIVE'),
        ('storage', 200, 'Ethernet', 'ACTIVE'), ('storage', 200, 'Ethernet', 'DOWN')]
    assert nics[8]['pcie']['lnkcap_gts'] == 16 and nics[10]['pcie']['lnkcap_gts'] == 32
    node = site.host_ports(1, 'new', nics, 8)
    peer = site.host_ports(3, 'peer', nics, 8)
    rails = [port for port in node if port['kind'] == 'rail']
    # a new node: its odd rails addressed, IPoIB at 4092, every rail on its own switch
    assert [port['ip'] for port in rails] == [None if rail % 2 == 0 else '10.252.%d.11' % rail for rail in range(8)]
    assert {port['mtu'] for port in rails} == {4092} and len({port['bridge'] for port in rails}) == 8
    # a peer on every rail; the storage port addressed, the front-end's first port, the Down port on no switch
    assert [port['ip'] for port in peer if port['kind'] == 'rail'] == ['10.252.%d.13' % rail for rail in range(8)]
    assert [(port['name'], port['ip'], port['bridge']) for port in node[8:]] == [
        ('mlx5_8', '10.250.0.11', 'nvlab-fe'), ('mlx5_9', None, 'nvlab-fe'),
        ('mlx5_10', '10.254.0.11', 'nvlab-stor'), ('mlx5_11', None, None)]


def test_a_roce_sites_rails_are_addressed_on_every_host_at_9000():
    from lab.netval_lab import site  # pylint: disable=import-outside-toplevel
    hw = profiles.resolve_role(profiles.load_profile('healthy-400g-roce'), 'new')
    ports = site.host_ports(1, 'new', site.host_nics(hw, len(hw['nics'])), len(hw['nics']))
    rails = [port for port in ports if port['kind'] == 'rail']
    assert all(port['ip'] and port['mtu'] == 9000 and port['isolated'] for port in rails)


def test_only_a_real_site_of_a_switched_tier_has_rails():
    from lab.netval_lab import site  # pylint: disable=import-outside-toplevel
    assert site.rail_fabric('real', '400G') and not site.rail_fabric('ideal', '400G')
    assert not site.rail_fabric('real', 'roce-pair-2x100g')
