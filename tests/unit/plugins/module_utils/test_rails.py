"""The compute rails (policy/rails.py): which RDMA ports are rails, how node and peer rails pair, which rail carries IP.

Boxes come from real outputs: the sysfs tree of an H100 node (8 ConnectX-7 NDR rails and a BlueField-3 bond at 200 Gb/s
Ethernet) and ibstat of an H100 node with twelve RoCE ports (six ConnectX-7 Active at 400, two Down, four ConnectX-6 Dx
front-end ports at 100).
"""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.filter.compute_rails import compute_rails
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import preflight, rails
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']
P400 = TIERS['400G']
SYSFS_H100 = 'sysfs/sys-class-infiniband_h100_8xCX7_NDR_plus_bond_gpud'
IBSTAT_H100 = 'ibstat/ibstat_h100_12x_roce_2down_polling_disabled_gpud.txt'


def sysfs_box(tmp_path):
    """rdma_info's devices and live ports of the real H100 tree (no addresses read)."""
    os.makedirs(str(tmp_path / 'class'))
    os.symlink(fixtures.shared_path(SYSFS_H100), str(tmp_path / 'class' / 'infiniband'))
    devices = rdma.read_infiniband_sysfs(str(tmp_path))['devices']
    return {'devices': devices, 'live_ports': rdma.select_live_ports(devices)}


def ibstat_box(addresses=None):
    """rdma_info's view of the real 12-port ibstat: each CA's port 1 as sysfs shows it, the live ports as rdma_info picks them."""
    devices = {}
    for name, ca in rdma.parse_ibstat(fixtures.shared(IBSTAT_H100))['devices'].items():
        port = list(ca['ports'].values())[0]
        active = port['state'] == 'Active'
        devices[name] = {'netdevs': ['ens%s' % name.split('_')[1]], 'pci_address': '0000:%02x:00.0' % (0x10 + int(name.split('_')[1])),
                         'ports': {1: {'state': port['state'].upper(), 'state_code': 4 if active else 1,
                                       'phys_state': port['physical_state'], 'phys_state_code': 5 if port['physical_state'] == 'LinkUp' else 2,
                                       'rate_gbps': port['rate_gbps'], 'link_layer': port['link_layer'], 'gids': []}}}
    ipv4 = dict(('ens%s' % device.split('_')[1], [address]) for device, address in (addresses or {}).items())
    return {'devices': devices, 'live_ports': rdma.select_live_ports(devices, ipv4)}


# ---------------------------------------------------------------------------------------------------------- selection

def test_the_400g_rails_of_a_real_h100_tree_leave_its_bluefield_bond_out(tmp_path):
    box = sysfs_box(tmp_path)
    chosen = rails.select_rails(box, rails.rail_selector(P400))
    assert [r['device'] for r in chosen['rails']] == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']
    bond = [p for p in chosen['ports'] if p['device'] == 'mlx5_bond_0'][0]
    assert not bond['selected'] and bond['why'] == 'Active at 200 Gb/s, the rails run at 400 Gb/s'
    # By link layer the bond (Ethernet) is left out for its link layer, before its rate is looked at.
    by_layer = rails.select_rails(box, {'link_layer': 'InfiniBand'})
    assert [p['why'] for p in by_layer['ports'] if p['device'] == 'mlx5_bond_0'] == ['link layer Ethernet, the rails are InfiniBand']
    assert len(by_layer['rails']) == 8


def test_twelve_roce_ports_by_rate_six_rails_active_two_down_and_the_front_end_left_out():
    chosen = rails.select_rails(ibstat_box(), rails.rail_selector(P400))
    assert [r['device'] for r in chosen['rails']] == ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_6', 'mlx5_9', 'mlx5_10']
    # The two Down ConnectX-7 ports show ibstat's placeholder rate 40: a rate cannot tell them from a rail.
    assert [p['device'] for p in chosen['ports'] if p['selected'] and not p['active']] == ['mlx5_5', 'mlx5_11']
    assert sorted(p['device'] for p in chosen['ports'] if not p['selected']) == ['mlx5_1', 'mlx5_2', 'mlx5_7', 'mlx5_8']
    # Natural order: mlx5_9 before mlx5_10, whatever has an address.
    assert chosen['devices'][-3:] == ['mlx5_9', 'mlx5_10', 'mlx5_11']


def test_preflight_blocks_a_box_with_fewer_active_rails_than_the_tier_and_names_what_it_left_out():
    found = preflight.check_ports(ibstat_box(), P400)
    count = [f for f in found if f['check'] == 'nic_count'][0]
    assert count['status'] == 'reject' and count['blocking'] and count['actual'] == 6
    assert '6 of 8 compute rails Active' in count['detail'] and 'mlx5_1/1 Active at 100 Gb/s, the rails run at 400 Gb/s' in count['detail']
    down = [(f['subject'], f['status'], f['blocking']) for f in found if f['check'] == 'port_state' and f['status'] != 'healthy']
    assert down == [('mlx5_5', 'reject', True), ('mlx5_11', 'reject', True)]
    # The front-end ports are recorded, never graded.
    front = [f for f in found if f['check'] == 'rail_selection']
    assert [(f['subject'], f['status']) for f in front] == [('mlx5_1/1', 'info'), ('mlx5_2/1', 'info'), ('mlx5_7/1', 'info'),
                                                            ('mlx5_8/1', 'info')]


def test_a_down_port_changes_nothing_when_the_box_has_its_rails():
    # A contract of six rails: the six Active ConnectX-7 ports are enough, the two Down ones are a storage card's.
    six = copy.deepcopy(P400)
    six['nics']['count'] = 6
    found = preflight.check_ports(ibstat_box(), six)
    assert preflight.blocking(found) == []
    assert [(f['subject'], f['status']) for f in found if f['check'] == 'port_state' and f['status'] != 'healthy'] == [
        ('mlx5_5/1', 'info'), ('mlx5_11/1', 'info')]
    assert 'not counted, the node has the 6 Active rails the tier needs' in [f for f in found if f['subject'] == 'mlx5_5/1'][0]['detail']


def test_an_explicit_list_of_rails_wins_and_a_slow_rail_on_it_is_a_rate_reject(tmp_path):
    box = ibstat_box()
    named = ['mlx5_0', 'mlx5_1', 'mlx5_3', 'mlx5_4', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_2']
    found = preflight.preflight_findings({'rdma': box}, P400, named)
    rate = [(f['subject'], f['status']) for f in found if f['check'] == 'port_rate']
    assert rate == [('mlx5_1', 'reject'), ('mlx5_2', 'reject')]
    assert 'not in the rails named for this box' in [f for f in found if f['subject'] == 'mlx5_11/1'][0]['detail']
    assert not [f for f in found if f['check'] == 'nic_count' and f['status'] == 'reject']


def test_rails_of_any_link_layer_keep_the_one_most_ports_have_and_infiniband_on_a_tie(tmp_path):
    # The real H100 tree under a 200 Gb/s selector of any link layer: its BlueField bond (Ethernet, 200) is the only
    # match, so it is the rail; with the eight NDR ports at 200 too (synthetic), they win and the bond is left out.
    box = sysfs_box(tmp_path)
    alone = rails.select_rails(box, {'link_layer': 'any', 'rate_gbps': 200})
    assert [r['device'] for r in alone['rails']] == ['mlx5_bond_0']
    hdr = copy.deepcopy(box)
    for name, device in hdr['devices'].items():
        device['ports'][1]['rate_gbps'] = 200
    hdr['live_ports'] = [dict(p, rate_gbps=200) for p in hdr['live_ports']]
    chosen = rails.select_rails(hdr, {'link_layer': 'any', 'rate_gbps': 200})
    assert len(chosen['rails']) == 8 and 'mlx5_bond_0' not in [r['device'] for r in chosen['rails']]
    assert [p['why'] for p in chosen['ports'] if p['device'] == 'mlx5_bond_0'] == [
        'link layer Ethernet, the rails are InfiniBand (of the Active ports that match the tier 8 are InfiniBand, 1 Ethernet; '
        'netval_rdma_devices or nics.select.link_layer chooses otherwise)']
    # A tie (two 100 Gb/s InfiniBand rails beside a dual-port 100 GbE front-end card): InfiniBand.
    tie = {'devices': {}, 'live_ports': []}
    for index, layer in enumerate(['InfiniBand', 'InfiniBand', 'Ethernet', 'Ethernet']):
        name = 'mlx5_%d' % index
        state = {'state': 'ACTIVE', 'state_code': 4, 'rate_gbps': 100, 'link_layer': layer}
        tie['devices'][name] = {'netdevs': ['n%d' % index], 'ports': {1: state}}
        tie['live_ports'].append({'device': name, 'port': 1, 'link_layer': layer, 'rate_gbps': 100, 'netdev': 'n%d' % index})
    chosen = rails.select_rails(tie, rails.rail_selector(TIERS['100G']))
    assert [r['device'] for r in chosen['rails']] == ['mlx5_0', 'mlx5_1']
    # Named link layer or devices: taken as they are.
    assert [r['device'] for r in rails.select_rails(tie, {'link_layer': 'Ethernet'})['rails']] == ['mlx5_2', 'mlx5_3']
    assert len(rails.select_rails(tie, {'devices': ['mlx5_0', 'mlx5_2']})['rails']) == 2


def test_a_netdev_pattern_chooses_the_rails_and_a_bad_selector_is_named():
    chosen = rails.select_rails(ibstat_box(), {'netdev_pattern': r'^ens(0|3|4|6)$'})
    assert [r['device'] for r in chosen['rails']] == ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_6']
    assert 'netdev ens9 does not match' in [p['why'] for p in chosen['ports'] if p['device'] == 'mlx5_9'][0]
    assert rails.selector_errors({'devices': 'mlx5_0', 'rate_gbps': True, 'link_layer': 'IB'}) == [
        "nics.select.devices must be a list of RDMA device names, got 'mlx5_0'",
        "nics.select.link_layer must be one of InfiniBand, Ethernet, any or null, got 'IB'",
        'nics.select.rate_gbps must be a positive number or null, got True']


def test_the_filter_gives_the_rails_their_nic_cpus_and_refuses_bad_input():
    box = ibstat_box()
    pci = box['devices']['mlx5_0']['pci_address']
    chosen = compute_rails(box, P400, [], {'irq_placement': {pci: {'local_cpus': [0, 1, 2, 3]}}})
    assert chosen['rails'][0]['local_cpus'] == [0, 1, 2, 3] and chosen['rails'][1]['local_cpus'] is None
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match='devices .netval_rdma_devices. must be a list'):
        compute_rails(box, P400, 'mlx5_0')
    with pytest.raises(AnsibleFilterError, match='must be an rdma_info result'):
        compute_rails(None, P400)


# ---------------------------------------------------------------------------------------------------------- pairs

def port(device, ip=None, layer='InfiniBand', rate=400, netdev=None, prefix=24):
    return {'device': device, 'port': 1, 'netdev': netdev or 'ib%s' % device, 'ipv4': ip, 'ipv4_prefixlen': prefix if ip else None,
            'link_layer': layer, 'rate_gbps': rate, 'gid_index': None}


def test_rails_pair_by_name_then_subnet_never_by_position_or_address_order():
    # The node is addressed on two rails only, and its storage-looking port sorts first by address: never position.
    node = [port('mlx5_0'), port('mlx5_1', '10.252.1.11'), port('mlx5_2'), port('mlx5_3', '10.252.3.11')]
    peer = [port('mlx5_%d' % i, '10.252.%d.21' % i) for i in range(4)]
    pairs, unpaired = rails.rail_pairs(node, peer)
    assert [(p['device'], p['peer_device'], p['paired_by']) for p in pairs] == [('mlx5_%d' % i, 'mlx5_%d' % i, 'device name') for i in range(4)]
    assert unpaired == []
    # Boxes that name their rails differently pair by the subnet each rail lives in.
    other = [port('ibdev%d' % i, '10.252.%d.21' % (3 - i)) for i in range(4)]
    pairs, unpaired = rails.rail_pairs([port('mlx5_%d' % i, '10.252.%d.11' % i) for i in range(4)], other, peer_name='peer01')
    assert [(p['device'], p['peer_device']) for p in pairs] == [
        ('mlx5_0', 'ibdev3'), ('mlx5_1', 'ibdev2'), ('mlx5_2', 'ibdev1'), ('mlx5_3', 'ibdev0')]
    assert pairs[0]['paired_by'] == 'subnet 10.252.0.0/24'


def test_an_explicit_map_wins_and_never_joins_two_link_layers_or_rates():
    node = [port('mlx5_0'), port('mlx5_1'), port('mlx5_2', layer='Ethernet', rate=200)]
    peer = [port('mlx5_0'), port('mlx5_1'), port('mlx5_2')]
    pairs, unpaired = rails.rail_pairs(node, peer, {'mlx5_0': 'mlx5_1', 'mlx5_1': 'mlx5_0'}, 'peer01')
    assert [(p['device'], p['peer_device'], p['paired_by']) for p in pairs] == [('mlx5_0', 'mlx5_1', 'netval_rails'),
                                                                                ('mlx5_1', 'mlx5_0', 'netval_rails')]
    assert unpaired == [{'device': 'mlx5_2',
                         'reason': 'no rail of peer01 for mlx5_2 (peer01 mlx5_2: link layer Ethernet against InfiniBand)'}]
    with pytest.raises(rails.RailError, match='netval_rails must map'):
        rails.rail_pairs(node, peer, ['mlx5_0'])


def test_a_peer_with_fewer_rails_leaves_the_rest_unpaired_with_our_cause():
    pairs, unpaired = rails.rail_pairs([port('mlx5_%d' % i) for i in range(4)], [port('mlx5_%d' % i) for i in range(2)], peer_name='peer01')
    assert len(pairs) == 2 and [u['device'] for u in unpaired] == ['mlx5_2', 'mlx5_3']
    assert "peer01 has 2 rail(s) for the node's 4" in unpaired[0]['reason']


# ---------------------------------------------------------------------------------------------------------- IP path

def test_the_ip_rail_is_the_first_pair_both_ends_address_in_one_subnet_never_the_management_network():
    pairs, _unpaired = rails.rail_pairs([port('mlx5_0'), port('mlx5_1', '10.252.1.11'), port('mlx5_2', '10.254.0.11')],
                                        [port('mlx5_0', '10.252.0.21'), port('mlx5_1', '10.252.1.21'), port('mlx5_2', '10.254.9.21')])
    path = rails.ip_path(pairs, 'node01', 'peer01')
    assert (path['device'], path['node_ip'], path['peer_ip'], path['netdev']) == ('mlx5_1', '10.252.1.11', '10.252.1.21', 'ibmlx5_1')


def test_no_fabric_address_names_the_box_and_its_rails():
    pairs, _unpaired = rails.rail_pairs([port('mlx5_0'), port('mlx5_1')],
                                        [port('mlx5_0', '10.252.0.21'), port('mlx5_1', '10.252.1.21')])
    assert rails.ip_path(pairs, 'node01', 'peer01') == {'problem': 'no fabric address for node01 on mlx5_0, mlx5_1'}
    pairs, _unpaired = rails.rail_pairs([port('mlx5_0', '10.252.0.11'), port('mlx5_1')],
                                        [port('mlx5_0'), port('mlx5_1', '10.252.1.21')])
    assert rails.ip_path(pairs, 'node01', 'peer01') == {
        'problem': 'no fabric address for peer01 on mlx5_0 (the rails node01 is addressed on)'}


def test_the_inventorys_fabric_address_must_be_on_a_tested_rail():
    pairs, _unpaired = rails.rail_pairs([port('mlx5_0', '10.252.0.11'), port('mlx5_1', '10.252.1.11')],
                                        [port('mlx5_0', '10.252.0.21'), port('mlx5_1', '10.252.1.21')])
    path = rails.ip_path(pairs, 'node01', 'peer01', node_address='10.252.1.11', peer_address='10.252.1.99')
    assert (path['device'], path['peer_ip']) == ('mlx5_1', '10.252.1.99')
    wrong = rails.ip_path(pairs, 'node01', 'peer01', node_address='10.251.0.11')
    assert wrong['problem'].startswith('the fabric address 10.251.0.11 given for node01 is on none of its tested rails')
