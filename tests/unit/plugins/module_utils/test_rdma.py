"""rdma parsers and the sysfs reader on real outputs (shared fixtures), truncated ones and faulty input."""
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

IBSTAT_H100 = 'ibstat/ibstat_h100_12x_roce_2down_polling_disabled_gpud.txt'
IBSTAT_MLX4 = 'ibstat/ibstat_cx3pro_mlx4_port_disabled_rdmacore847_truncated.txt'
IBSTAT_MOONCAKE = 'ibstat/ibstat_cx7_roce_200_and_cx6lx_disabled_mooncake1999_truncated.txt'
IBSTATUS_A100 = 'ibstatus/ibstatus_a100_9x_hdr200_all_active_gpud.txt'
IBSTATUS_ROCE = 'ibstatus/ibstatus_roce_100g_edr_label_nccl1866_truncated.txt'
SYSFS_H100 = 'sysfs/sys-class-infiniband_h100_8xCX7_NDR_plus_bond_gpud'
SYSFS_PROCFS = 'sysfs/procfs_fixtures_ib_mlx4_mlx5_hfi1_and_pci_e810_nvme/sys'

IBSTAT_PORT_KEYS = {'state', 'physical_state', 'rate_gbps', 'base_lid', 'lid', 'sm_lid', 'capability_mask',
                    'port_guid', 'link_layer'}
IBSTAT_DEVICE_KEYS = {'ca_type', 'number_of_ports', 'firmware_version', 'hardware_version', 'node_guid',
                      'system_image_guid', 'ports'}


def gpud_tree(tmp_path):
    """The gpud fixture is a copy of /sys/class/infiniband itself: give it a sysfs root."""
    (tmp_path / 'class').mkdir()
    os.symlink(fixtures.shared_path(SYSFS_H100), str(tmp_path / 'class' / 'infiniband'))
    return str(tmp_path)


# ---------------------------------------------------------------- ibstat

def test_ibstat_h100_twelve_roce_ports_two_down():
    devices = rdma.parse_ibstat(fixtures.shared(IBSTAT_H100))['devices']
    assert len(devices) == 12
    for device in devices.values():
        assert set(device) == IBSTAT_DEVICE_KEYS
        assert set(device['ports'][1]) == IBSTAT_PORT_KEYS
    down = dict((name, d['ports'][1]['physical_state']) for name, d in devices.items() if d['ports'][1]['state'] != 'Active')
    assert down == {'mlx5_11': 'Polling', 'mlx5_5': 'Disabled'}
    assert devices['mlx5_0'] == {
        'ca_type': 'MT4129', 'number_of_ports': 1, 'firmware_version': '28.39.1002', 'hardware_version': '0',
        'node_guid': '0xa088c20300adeab8', 'system_image_guid': '0xa088c20300adeab8',
        'ports': {1: {'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 400, 'base_lid': 0, 'lid': 0,
                      'sm_lid': 0, 'capability_mask': '0x00010000', 'port_guid': '0xa288c2fffeadeab8',
                      'link_layer': 'Ethernet'}}}
    active_rates = sorted(d['ports'][1]['rate_gbps'] for d in devices.values() if d['ports'][1]['state'] == 'Active')
    assert active_rates == [100] * 4 + [400] * 6
    # the rate of a down port is what ibstat printed; it is not a link speed (state says Down)
    assert devices['mlx5_11']['ports'][1]['rate_gbps'] == 40 and devices['mlx5_11']['ports'][1]['state'] == 'Down'
    assert isinstance(devices['mlx5_0']['ports'][1]['rate_gbps'], int)


def test_ibstat_mlx4_truncated_port_keeps_what_it_has():
    devices = rdma.parse_ibstat(fixtures.shared(IBSTAT_MLX4))['devices']
    assert list(devices) == ['mlx4_0']  # ibwarn: and "+ " shell-trace lines ignored
    ports = devices['mlx4_0']['ports']
    assert ports[1] == {'state': 'Down', 'physical_state': 'Disabled', 'rate_gbps': 10, 'base_lid': 38, 'lid': 38,
                        'sm_lid': 13, 'capability_mask': '0x02594868', 'port_guid': '0xf4521403007be0e1',
                        'link_layer': 'InfiniBand'}
    assert ports[2]['state'] == 'Active' and ports[2]['physical_state'] == 'LinkUp' and ports[2]['rate_gbps'] == 56
    # "Base lid:" was cut off: unknown, not 0
    assert ports[2]['base_lid'] is None and ports[2]['sm_lid'] is None and ports[2]['link_layer'] is None


def test_ibstat_mooncake_roce_200_and_truncated_disabled_device():
    devices = rdma.parse_ibstat(fixtures.shared(IBSTAT_MOONCAKE))['devices']
    assert sorted(devices) == ['mlx5_0', 'mlx5_1', 'mlx5_10']
    assert devices['mlx5_1']['ports'][1]['rate_gbps'] == 200
    assert devices['mlx5_1']['ports'][1]['link_layer'] == 'Ethernet'
    assert devices['mlx5_1']['system_image_guid'] == '0x58a2e10300dae626'
    cut = devices['mlx5_10']
    assert cut['ca_type'] == 'MT4125' and cut['firmware_version'] == '22.31.1014'
    assert cut['ports'][1]['state'] == 'Down' and cut['ports'][1]['physical_state'] == 'Disabled'
    assert cut['ports'][1]['rate_gbps'] is None and cut['ports'][1]['link_layer'] is None


def test_ibstat_device_whose_ports_were_cut_off_has_no_ports():
    text = fixtures.shared(IBSTAT_MOONCAKE)
    devices = rdma.parse_ibstat(text[:text.index('        Port 1:', text.index("CA 'mlx5_10'"))])['devices']
    assert devices['mlx5_10']['ports'] == {}
    assert devices['mlx5_10']['number_of_ports'] == 1


def test_ibstat_synthetic_fdr10_and_1x_sdr_rates():
    ports = rdma.parse_ibstat(fixtures.local('ibstat/ibstat_synthetic_fdr10_1x_sdr_initializing.txt'))['devices']['mlx4_0']['ports']
    assert ports[1]['rate_gbps'] == 40 and ports[1]['state'] == 'Active'
    assert ports[2]['rate_gbps'] == 2.5 and ports[2]['state'] == 'Initializing' and ports[2]['physical_state'] == 'LinkUp'


def test_ibstat_single_port_form():
    devices = rdma.parse_ibstat(fixtures.local('ibstat/ibstat_synthetic_single_port_form_ndr.txt'))['devices']
    port = devices['mlx5_0']['ports'][1]
    assert port['state'] == 'Active' and port['rate_gbps'] == 400 and port['lid'] == 17 and port['sm_lid'] == 1
    assert devices['mlx5_0']['firmware_version'] is None  # not printed in this form: unknown


def test_ibstat_no_devices_and_garbage():
    assert rdma.parse_ibstat('') == {'devices': {}}
    with pytest.raises(ParseError, match='ibstat output'):
        rdma.parse_ibstat('ibpanic: [1234] main: stat of IB device failed\n')
    with pytest.raises(ParseError):
        rdma.parse_ibstat(fixtures.shared(IBSTATUS_A100))


# ---------------------------------------------------------------- ibstatus

def test_ibstatus_a100_nine_devices():
    devices = rdma.parse_ibstatus(fixtures.shared(IBSTATUS_A100))['devices']
    assert len(devices) == 9
    port = devices['mlx5_0']['ports'][1]
    assert port['default_gid'] == 'fe80:0000:0000:0000:0015:5dff:fd34:11eb'
    assert port['base_lid'] == 0x33bf and port['sm_lid'] == 1
    assert (port['state'], port['state_code'], port['phys_state'], port['phys_state_code']) == ('ACTIVE', 4, 'LinkUp', 5)
    assert (port['rate_gbps'], port['rate_text'], port['width'], port['speed']) == (200, '200 Gb/sec (4X HDR)', '4X', 'HDR')
    assert port['link_layer'] == 'InfiniBand' and port['warnings'] == []
    eth = devices['mlx5_8']['ports'][1]
    assert eth['default_gid'] is None  # ibstatus printed "unknown"
    assert eth['link_layer'] == 'Ethernet' and eth['rate_gbps'] == 40


def test_ibstatus_roce_100g_edr_label_and_truncated_block():
    devices = rdma.parse_ibstatus(fixtures.shared(IBSTATUS_ROCE))['devices']
    assert sorted(devices) == ['mlx5_0', 'mlx5_1', 'mlx5_2']  # the nvidia-smi legend before is ignored
    port = devices['mlx5_0']['ports'][1]
    assert port['rate_gbps'] == 100 and port['rate_text'] == '100 Gb/sec (4X EDR)' and port['link_layer'] == 'Ethernet'
    assert port['base_lid'] == 0 and port['state_code'] == 4
    cut = devices['mlx5_2']['ports'][1]
    assert cut['default_gid'] == 'fe80:0000:0000:0000:8ae9:a4ff:fe77:0b48'
    assert cut['state'] is None and cut['state_code'] is None and cut['rate_gbps'] is None and cut['base_lid'] is None


def test_ibstatus_flags_a_state_the_kernel_never_writes():
    text = ("Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t unknown\n\tbase lid:\t unknown\n"
            "\tsm lid:\t\t unknown\n\tstate:\t\t 4: ACTIVE\n\tphys state:\t 4: ACTIVE\n\trate:\t\t unknown\n\tlink_layer:\t IB\n\n")
    port = rdma.parse_ibstatus(text)['devices']['mlx5_0']['ports'][1]
    assert port['phys_state_code'] == 4 and port['phys_state'] == 'ACTIVE'
    assert port['warnings'] and 'phys_state' in port['warnings'][0]
    assert port['rate_gbps'] is None and port['base_lid'] is None


@pytest.mark.parametrize('text', ['', 'Fatal error:  No devices\n', 'CA \'mlx5_0\'\n\tCA type: MT4129\n'])
def test_ibstatus_rejects_other_text(text):
    with pytest.raises(ParseError):
        rdma.parse_ibstatus(text)


# ---------------------------------------------------------------- ibv_devinfo

def test_ibv_devinfo_cx7_port_down_truncated():
    devices = rdma.parse_ibv_devinfo(fixtures.shared('ibv_devinfo/ibv_devinfo_cx7_ib_port_down_deepep60_truncated.txt'))['devices']
    assert sorted(devices) == ['mlx5_0', 'mlx5_1']
    hca = devices['mlx5_0']
    assert (hca['transport'], hca['transport_code'], hca['fw_ver']) == ('InfiniBand', 0, '28.39.2048')
    assert hca['vendor_part_id'] == 4129 and hca['board_id'] == 'MT_0000000838' and hca['phys_port_cnt'] == 1
    port = hca['ports'][1]
    assert (port['state'], port['state_code']) == ('PORT_DOWN', 1)
    assert port['active_mtu'] == 4096 and port['port_lid'] == 65535 and port['sm_lid'] == 0
    assert port['link_layer'] == 'InfiniBand'
    # mlx5_1 was cut after board_id: no ports known, port count unknown
    assert devices['mlx5_1']['ports'] == {} and devices['mlx5_1']['phys_port_cnt'] is None


def test_ibv_devinfo_public_softroce_without_link_layer():
    devices = rdma.parse_ibv_devinfo(fixtures.local('ibstat/ibv_devinfo_rxe0_softroce_active_no_link_layer_rxedev46.txt'))['devices']
    port = devices['rxe0']['ports'][1]
    assert (port['state'], port['state_code'], port['active_mtu'], port['max_mtu']) == ('PORT_ACTIVE', 4, 1024, 4096)
    assert port['link_layer'] is None  # not printed by that version: unknown
    assert devices['rxe0']['board_id'] is None and devices['rxe0']['fw_ver'] == '0.0.0'


# Written for this test from libibverbs/examples/devinfo.c (rdma-core) printf formats: synthetic, -v excerpt.
DEVINFO_V_SYNTHETIC = (
    "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.1002\n"
    "\tnode_guid:\t\t\ta088:c203:00ad:eab8\n\tphys_port_cnt:\t\t\t1\n"
    "\tmax_mr_size:\t\t\t0xffffffffffffffff\n\tdevice_cap_flags:\t\t0x21361c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n\tgeneral_odp_caps:\n\t\t\t\t\tODP_SUPPORT\n"
    "\tcompletion_timestamp_mask not supported\n"
    "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t1024 (3)\n"
    "\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tmax_msg_sz:\t\t0x40000000\n\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:a288:c2ff:fead:eab8, RoCE v1\n"
    "\t\t\tGID[  3]:\t\t::ffff:10.0.0.1, RoCE v2\n\n")


def test_ibv_devinfo_verbose_fields_and_gids():
    hca = rdma.parse_ibv_devinfo(DEVINFO_V_SYNTHETIC)['devices']['mlx5_0']
    assert hca['fields']['max_mr_size'] == '0xffffffffffffffff'
    assert 'BAD_PKEY_CNTR' not in hca['fields']
    port = hca['ports'][1]
    assert (port['phys_state'], port['phys_state_code']) == ('LINK_UP', 5)
    assert port['active_width'] == '4X (2)' and port['fields']['max_msg_sz'] == '0x40000000'
    assert port['gids'] == [{'index': 0, 'gid': 'fe80:0000:0000:0000:a288:c2ff:fead:eab8', 'type': 'RoCE v1'},
                            {'index': 3, 'gid': '::ffff:10.0.0.1', 'type': 'RoCE v2'}]
    assert rdma.ipv4_from_gid(port['gids'][1]['gid']) == '10.0.0.1'


def test_ibv_devinfo_no_devices_and_garbage():
    assert rdma.parse_ibv_devinfo('No IB devices found\n') == {'devices': {}}
    with pytest.raises(ParseError):
        rdma.parse_ibv_devinfo('Failed to get IB devices list: Function not implemented\n')


# ---------------------------------------------------------------- show_gids

def test_show_gids_cx5_picks_roce_v2_ipv4_index():
    result = rdma.parse_show_gids(fixtures.shared('show_gids/show_gids_cx5_roce_v1v2_ipv4.txt'))
    assert len(result['gids']) == 5 and result['n_gids_found'] == 5 and result['complete'] is True
    assert result['roce_v2_ipv4'] == {'mlx5_0': {'port': 1, 'index': 3, 'ipv4': '192.168.6.132', 'netdev': 'mce0'}}
    assert result['gids'][0] == {'device': 'mlx5_0', 'port': 1, 'index': 0, 'gid': 'fe80:0000:0000:0000:9640:c9ff:fe8c:a09c',
                                 'ipv4': None, 'roce_version': 'v1', 'netdev': 'mce0'}
    assert result['gids'][4]['netdev'] is None and result['gids'][4]['device'] == 'mlx5_1'


def test_show_gids_tab_separated_as_the_script_prints_it_and_truncated():
    # the script's own layout: tabs, "IPv4 \t" after an address, three tabs when there is none
    text = ("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4 \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------ \t---\t---\n"
            "rocep1s0f1\t1\t0\tfe80:0000:0000:0000:4ebb:47ff:fe0a:0001\t\t\tv1\tenp1s0f1np1\n"
            "rocep1s0f1\t1\t1\tfe80:0000:0000:0000:4ebb:47ff:fe0a:0001\t\t\tv2\tenp1s0f1np1\n"
            "rocep1s0f1\t1\t2\t0000:0000:0000:0000:0000:ffff:0a00:0002\t10.0.0.2 \tv1\tenp1s0f1np1\n"
            "rocep1s0f1\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0002\t10.0.0.2 \tv2\tenp1s0f1np1\n")
    result = rdma.parse_show_gids(text)
    assert result['roce_v2_ipv4'] == {'rocep1s0f1': {'port': 1, 'index': 3, 'ipv4': '10.0.0.2', 'netdev': 'enp1s0f1np1'}}
    assert result['complete'] is False and result['n_gids_found'] is None


@pytest.mark.parametrize('text', ['', 'bash: show_gids: command not found\n',
                                  'DEV PORT INDEX GID IPv4 VER DEV\nmlx5_0 1 x fe80::1 v2 eth0\n'])
def test_show_gids_rejects_garbage(text):
    with pytest.raises(ParseError):
        rdma.parse_show_gids(text)


# ---------------------------------------------------------------- ip -o addr

def test_ip_addr_real_capture():
    result = rdma.parse_ip_addr(fixtures.local('sysfs_ib/ip_4_o_addr_show_netns_veth_roce_names.txt'))
    assert result['ipv4_by_netdev'] == {'lo': ['127.0.0.1'], 'enP2p1s0f0np0': ['192.168.6.132', '192.168.7.5'],
                                        'enp1s0f0np0': ['10.0.0.1', '10.0.0.5', '10.0.0.2']}
    by_address = dict((a['address'], a) for a in result['addresses'])
    assert by_address['10.0.0.5']['label'] == 'enp1s0f0np0:1' and by_address['10.0.0.5']['prefixlen'] == 30
    assert by_address['10.0.0.2']['secondary'] is True and by_address['10.0.0.1']['secondary'] is False
    assert by_address['127.0.0.1']['scope'] == 'host'
    assert result['ipv4_prefixlen_by_netdev']['enp1s0f0np0']['10.0.0.5'] == 30
    assert result['ipv4_prefixlen_by_netdev']['lo'] == {'127.0.0.1': 8}


def test_ip_addr_rejects_non_oneline_output():
    with pytest.raises(ParseError, match='ip output'):
        rdma.parse_ip_addr('2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP\n')
    assert rdma.parse_ip_addr('') == {'addresses': [], 'ipv4_by_netdev': {}, 'ipv4_prefixlen_by_netdev': {}}


# ---------------------------------------------------------------- helpers

@pytest.mark.parametrize('gid,ipv4', [
    ('0000:0000:0000:0000:0000:ffff:c0a8:0684', '192.168.6.132'),
    ('::ffff:10.0.0.1', '10.0.0.1'),
    ('fe80:0000:0000:0000:9640:c9ff:fe8c:a09c', None),
    ('0000:0000:0000:0000:0000:0000:c0a8:0684', None),
    ('2001:0db8:0000:0000:0000:ffff:c0a8:0684', None),
    ('not a gid', None), (None, None)])
def test_ipv4_from_gid(gid, ipv4):
    assert rdma.ipv4_from_gid(gid) == ipv4


@pytest.mark.parametrize('text,expected', [
    ('400 Gb/sec (4X NDR)', (400, '4X', 'NDR')), ('2.5 Gb/sec (1X SDR)', (2.5, '1X', 'SDR')),
    ('200 Gb/sec (2X NDR)', (200, '2X', 'NDR')), ('garbage', (None, None, None)), (None, (None, None, None))])
def test_split_rate(text, expected):
    rate = rdma.split_rate(text)
    assert (rate['rate_gbps'], rate['width'], rate['speed']) == expected


# ---------------------------------------------------------------- sysfs

def test_sysfs_gpud_h100_tree(tmp_path):
    devices = rdma.read_infiniband_sysfs(gpud_tree(tmp_path))['devices']
    assert sorted(devices) == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9', 'mlx5_bond_0']
    port = devices['mlx5_0']['ports'][1]
    assert (port['state'], port['state_code'], port['phys_state'], port['phys_state_code']) == ('ACTIVE', 4, 'LinkUp', 5)
    assert (port['rate_gbps'], port['width'], port['speed'], port['link_layer']) == (400, '4X', 'NDR', 'InfiniBand')
    assert devices['mlx5_0']['hca_type'] == 'MT4129' and devices['mlx5_0']['fw_ver'] == '28.41.1000'
    bond = devices['mlx5_bond_0']
    assert bond['ports'][1]['rate_gbps'] == 200 and bond['ports'][1]['link_layer'] == 'Ethernet'
    # the tree has no device/ links: unknown, not empty
    assert bond['pci_address'] is None and bond['netdevs'] is None and bond['numa_node'] is None
    assert port['gids'] == [] and 'counters' not in port
    live = rdma.select_live_ports(devices)
    assert len(live) == 9 and all(entry['ipv4'] is None for entry in live)


def test_sysfs_gpud_counters(tmp_path):
    devices = rdma.read_infiniband_sysfs(gpud_tree(tmp_path), counters=True)['devices']
    assert devices['mlx5_1']['ports'][1]['counters']['link_downed'] == 255
    assert devices['mlx5_0']['ports'][1]['counters']['link_downed'] == 0
    assert 'out_of_sequence' in devices['mlx5_0']['ports'][1]['hw_counters']


def test_sysfs_procfs_tree_flags_hand_edited_phys_state():
    devices = rdma.read_infiniband_sysfs(fixtures.shared_path(SYSFS_PROCFS))['devices']
    assert sorted(devices) == ['hfi1_0', 'mlx4_0', 'mlx5_0']
    assert sorted(devices['mlx4_0']['ports']) == [1, 2]
    assert devices['mlx4_0']['ports'][2]['rate_text'] == '40 Gb/sec (4X QDR)'
    assert devices['hfi1_0']['hca_type'] is None  # file absent in the tree
    assert devices['mlx5_0']['node_guid'] == '0a7f:bc12:45ef:d23b'  # no trailing newline in the file
    bad = devices['mlx5_0']['ports'][1]
    assert bad['phys_state'] == 'ACTIVE' and bad['warnings']
    live = rdma.select_live_ports(devices)
    assert [(e['device'], e['port']) for e in live] == [('hfi1_0', 1), ('mlx4_0', 1), ('mlx4_0', 2)]


def test_sysfs_without_infiniband_is_empty(tmp_path):
    assert rdma.read_infiniband_sysfs(str(tmp_path)) == {'devices': {}}
    assert rdma.read_infiniband_sysfs(str(tmp_path / 'nonexistent')) == {'devices': {}}


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_roce_device(root, name, bdf, netdev, state, ipv4_gid=None, uevent_only=False):
    """A RoCE device as the kernel lays it out: class/infiniband/<dev>/device -> ../../../devices/.../<bdf>."""
    pci = root / 'devices' / 'pci0000:00' / '0000:00:01.0' / bdf
    write(pci / 'numa_node', '0\n')
    (pci / 'net' / netdev).mkdir(parents=True)
    dev = root / 'class' / 'infiniband' / name
    dev.mkdir(parents=True)
    if uevent_only:
        write(dev / 'device' / 'uevent', 'DRIVER=mlx5_core\nPCI_SLOT_NAME=%s\n' % bdf)
        (dev / 'device' / 'net' / netdev).mkdir(parents=True)
    else:
        os.symlink(os.path.relpath(str(pci), str(dev)), str(dev / 'device'))
    for key, value in (('fw_ver', '28.45.1200'), ('hca_type', 'MT4129'), ('node_guid', 'a088:c203:0046:e8f4')):
        write(dev / key, value + '\n')
    port = dev / 'ports' / '1'
    code, word, phys = {'ACTIVE': (4, 'ACTIVE', '5: LinkUp'), 'DOWN': (1, 'DOWN', '3: Disabled')}[state]
    write(port / 'state', '%d: %s\n' % (code, word))
    write(port / 'phys_state', phys + '\n')
    write(port / 'rate', '200 Gb/sec (4X HDR)\n')
    write(port / 'link_layer', 'Ethernet\n')
    gids = [('fe80:0000:0000:0000:4ebb:47ff:fe0a:00%02x' % len(name), 'IB/RoCE v1'),
            ('fe80:0000:0000:0000:4ebb:47ff:fe0a:00%02x' % len(name), 'RoCE v2')]
    if ipv4_gid:
        octets = [int(x) for x in ipv4_gid.split('.')]
        mapped = '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' % tuple(octets)
        gids += [(mapped, 'IB/RoCE v1'), (mapped, 'RoCE v2')]
    gids += [('0000:0000:0000:0000:0000:0000:0000:0000', None)]
    for index, (gid, gid_type) in enumerate(gids):
        write(port / 'gids' / str(index), gid + '\n')
        if gid_type:
            write(port / 'gid_attrs' / 'types' / str(index), gid_type + '\n')
            write(port / 'gid_attrs' / 'ndevs' / str(index), netdev + '\n')


def test_sysfs_roce_device_with_gids_pci_and_netdev(tmp_path):
    make_roce_device(tmp_path, 'rocep1s0f0', '0000:01:00.0', 'enp1s0f0np0', 'ACTIVE', ipv4_gid='10.0.0.1')
    make_roce_device(tmp_path, 'rocep1s0f1', '0000:01:00.1', 'enp1s0f1np1', 'DOWN', uevent_only=True)
    devices = rdma.read_infiniband_sysfs(str(tmp_path))['devices']
    live = devices['rocep1s0f0']
    assert live['pci_address'] == '0000:01:00.0' and live['netdevs'] == ['enp1s0f0np0'] and live['numa_node'] == 0
    gids = live['ports'][1]['gids']
    assert [g['index'] for g in gids] == [0, 1, 2, 3]  # the all-zero GID 4 is skipped
    assert gids[3] == {'index': 3, 'gid': '0000:0000:0000:0000:0000:ffff:0a00:0001', 'type': 'RoCE v2',
                       'roce_version': 'v2', 'netdev': 'enp1s0f0np0', 'ipv4': '10.0.0.1'}
    assert gids[2]['roce_version'] == 'v1'
    assert devices['rocep1s0f1']['pci_address'] == '0000:01:00.1'  # from device/uevent
    assert rdma.roce_v2_gid_indexes(devices) == {
        'rocep1s0f0': {'port': 1, 'index': 3, 'ipv4': '10.0.0.1', 'netdev': 'enp1s0f0np0'}, 'rocep1s0f1': None}


def test_select_live_ports_prefers_the_addressed_port(tmp_path):
    make_roce_device(tmp_path, 'rocep1s0f0', '0000:01:00.0', 'enp1s0f0np0', 'ACTIVE')
    make_roce_device(tmp_path, 'roceP2p1s0f1', '0002:01:00.1', 'enP2p1s0f1np1', 'ACTIVE')
    make_roce_device(tmp_path, 'rocep1s0f1', '0000:01:00.1', 'enp1s0f1np1', 'DOWN')
    devices = rdma.read_infiniband_sysfs(str(tmp_path))['devices']
    live = rdma.select_live_ports(devices, {'enP2p1s0f1np1': ['10.0.0.2'], 'lo': ['127.0.0.1']},
                                  prefixlen_by_netdev={'enP2p1s0f1np1': {'10.0.0.2': 24}, 'lo': {'127.0.0.1': 8}})
    assert live == [
        {'device': 'roceP2p1s0f1', 'port': 1, 'netdev': 'enP2p1s0f1np1', 'ipv4': '10.0.0.2', 'ipv4_prefixlen': 24, 'rate_gbps': 200,
         'link_layer': 'Ethernet', 'gid_index': None},
        {'device': 'rocep1s0f0', 'port': 1, 'netdev': 'enp1s0f0np0', 'ipv4': None, 'ipv4_prefixlen': None, 'rate_gbps': 200,
         'link_layer': 'Ethernet', 'gid_index': None}]
    assert [e['device'] for e in rdma.select_live_ports(devices, {'enP2p1s0f1np1': ['10.0.0.2']}, require_ipv4=True)] == ['roceP2p1s0f1']
    assert rdma.select_live_ports(devices, {}, require_ipv4=True) == []


def test_unreadable_rate_of_a_down_port_is_unknown(tmp_path):
    make_roce_device(tmp_path, 'rocep1s0f1', '0000:01:00.1', 'enp1s0f1np1', 'DOWN')
    os.remove(str(tmp_path / 'class/infiniband/rocep1s0f1/ports/1/rate'))
    port = rdma.read_infiniband_sysfs(str(tmp_path))['devices']['rocep1s0f1']['ports'][1]
    assert port['rate_gbps'] is None and port['rate_text'] is None and port['state'] == 'DOWN'


def test_ibv_devinfo_with_512k_of_spaces_is_a_clear_error():
    """Issue 13: 512 KB of spaces in one ibv_devinfo line took 416 s; a line over 64 KiB is refused at once."""
    with pytest.raises(ParseError, match=r'ibv_devinfo output: a line is 524294 characters long'):
        rdma.parse_ibv_devinfo('hca_id:\tmlx5_0\n\ta: x' + ' ' * 524288 + 'x\n')


def test_ibv_devinfo_value_padded_with_spaces_is_read():
    """The same shape within the line limit: a value followed by a long run of spaces, read in linear time."""
    devices = rdma.parse_ibv_devinfo('hca_id:\tmlx5_0\n\tfw_ver:\t\t\t28.39.1002' + ' ' * 60000 + '\n')['devices']
    assert devices['mlx5_0']['fw_ver'] == '28.39.1002'


def test_connectx8_ibstat_on_a_b300_node_found_public():
    devices = rdma.parse_ibstat(fixtures.local('ibstat/ibstat_11x_cx8_mt4131_disabled_cx7_active_b300_xe9780_2026.txt'))['devices']
    assert len(devices) == 11
    cx8 = [name for name, device in devices.items() if device['ca_type'] == 'MT4131']
    assert sorted(cx8) == ['mlx5_0', 'mlx5_1', 'mlx5_10', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']
    port = devices['mlx5_0']['ports'][1]
    assert devices['mlx5_0']['firmware_version'] == '40.46.5500'
    assert (port['state'], port['physical_state'], port['rate_gbps'], port['lid'], port['link_layer']) == (
        'Down', 'Disabled', 10, 65535, 'InfiniBand')
    cx7 = devices['mlx5_4']
    assert (cx7['ca_type'], cx7['ports'][1]['state'], cx7['ports'][1]['rate_gbps'], cx7['ports'][1]['sm_lid']) == (
        'MT4129', 'Active', 100, 1)


def test_connectx8_ibv_devinfo_synthetic():
    devices = rdma.parse_ibv_devinfo(fixtures.local('ibstat/ibv_devinfo_2x_cx8_mt4131_xdr_active_and_down_synthetic.txt'))['devices']
    assert [(name, d['vendor_part_id'], d['fw_ver']) for name, d in sorted(devices.items())] == [
        ('mlx5_0', 4131, '40.46.5500'), ('mlx5_1', 4131, '40.46.5500')]
    up, down = devices['mlx5_0']['ports'][1], devices['mlx5_1']['ports'][1]
    assert (up['state'], up['state_code'], up['active_mtu'], up['port_lid'], up['sm_lid']) == ('PORT_ACTIVE', 4, 4096, 17, 1)
    assert (down['state_code'], down['port_lid'], down['sm_lid']) == (1, 65535, 0)
