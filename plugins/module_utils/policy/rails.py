# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compute rails of a box: which RDMA ports the tier tests, how node and peer rails pair, which addresses carry IP.

An 8-GPU node carries more RDMA ports than compute rails: storage and in-band NICs (often a dual-port card with one
port uncabled), a front-end NIC at another rate and PCIe generation, BlueField or SR-IOV functions.  Only the rails
are graded and tested; every other port is recorded (``info``) and never held against the node.

* ``rail_selector(profile, devices)``: the tier's ``nics.select`` (link layer, rate, netdev pattern), or the box's
  explicit list (inventory ``netval_rdma_devices``), which wins.
* ``select_rails(rdma, selector)``: every port of rdma_info's ``devices`` with whether it is a rail and why not; the
  rails that are Active, as rdma_info's ``live_ports`` entries, in the devices' natural order (mlx5_2 before mlx5_10),
  never re-ordered by whether a port has an address.  Rails are of one link layer: a selector of any link layer that
  matches Active ports of both keeps the one most of them have (InfiniBand on a tie).
* ``rail_pairs(node_rails, peer_rails, rails_map)``: node rail to peer rail by rail identity - an explicit map first,
  then the same device name, then the same IPv4 subnet - never across link layers or rates; a node rail no peer rail
  matches is a planning problem with our cause, never silently measured against another rail.
* ``ip_path(pairs, ...)``: the rail pair and the two addresses that carry the IP tests (ping, iperf3): the inventory's
  fabric addresses when given, else the first pair whose ports are both addressed; never the management address.

No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import re

SELECT_KEYS = ('devices', 'link_layer', 'rate_gbps', 'netdev_pattern')
LINK_LAYERS = ('InfiniBand', 'Ethernet', 'any')
STATE_ACTIVE = 4


class RailError(ValueError):
    """A selector or rails map that cannot be used; the message names the key."""


def natural_key(name):
    """mlx5_2 before mlx5_10: digits compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', str(name))]


def rail_selector(profile, devices=None):
    """The selector of a box's rails: the profile's ``nics.select`` with the box's explicit device list over it."""
    select = dict(((profile or {}).get('nics') or {}).get('select') or {})
    if devices:
        select['devices'] = [str(device) for device in devices]
    return select


def selector_errors(select, where='nics.select'):
    """What makes a selector unusable: plain sentences, empty when fine."""
    if select is None:
        return []
    if not isinstance(select, dict):
        return ['%s must be a mapping of %s, got %r' % (where, ', '.join(SELECT_KEYS), select)]
    errors = ['%s.%s is not a selector key (known: %s)' % (where, key, ', '.join(SELECT_KEYS)) for key in sorted(select)
              if key not in SELECT_KEYS]
    devices = select.get('devices')
    if devices is not None and (not isinstance(devices, list) or not all(isinstance(d, str) and d for d in devices)):
        errors.append('%s.devices must be a list of RDMA device names, got %r' % (where, devices))
    if select.get('link_layer') not in (None,) + LINK_LAYERS:
        errors.append('%s.link_layer must be one of %s or null, got %r' % (where, ', '.join(LINK_LAYERS), select.get('link_layer')))
    rate = select.get('rate_gbps')
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
        errors.append('%s.rate_gbps must be a positive number or null, got %r' % (where, rate))
    pattern = select.get('netdev_pattern')
    if pattern is not None:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            errors.append('%s.netdev_pattern %r is not a regular expression: %s' % (where, pattern, exc))
    return errors


def _active(port):
    state = str(port.get('state') or '')
    return port.get('state_code') == STATE_ACTIVE or state.upper().endswith('ACTIVE')


def _netdevs(device, number):
    """The netdevs of one port: the device's own (device/net) and those its GIDs name."""
    names = list(device.get('netdevs') or [])
    for gid in ((device.get('ports') or {}).get(number) or {}).get('gids') or []:
        if isinstance(gid, dict) and gid.get('netdev') and gid['netdev'] not in names:
            names.append(gid['netdev'])
    return names


def _why_not(select, port, netdevs):
    """Why a port is not a rail under ``select`` (None when it is one)."""
    devices = select.get('devices')
    if devices:
        return None if port['device'] in devices else 'not in the rails named for this box (%s)' % ', '.join(devices)
    layer = select.get('link_layer')
    if layer not in (None, 'any') and port['link_layer'] and port['link_layer'] != layer:
        return 'link layer %s, the rails are %s' % (port['link_layer'], layer)
    pattern = select.get('netdev_pattern')
    if pattern and not any(re.search(str(pattern), name) for name in netdevs):
        return 'netdev %s does not match %s' % (', '.join(netdevs) or 'none', pattern)
    rate = select.get('rate_gbps')
    # A port that is not Active shows a placeholder rate (40 Gb/s on mlx5): it cannot be told apart by rate.
    if rate and port['active'] and port['rate_gbps'] is not None and float(port['rate_gbps']) != float(rate):
        return 'Active at %s Gb/s, the rails run at %s Gb/s' % (_g(port['rate_gbps']), _g(rate))
    return None


def _g(value):
    value = float(value)
    return str(int(value)) if value == int(value) else str(value)


def select_rails(rdma, select):
    """Which ports of rdma_info's result are the box's rails.

    Returns {rails: [live port entries of the Active rails, natural order], ports: [{device, port, active, state,
    phys_state, link_layer, rate_gbps, netdev, selected, why}] for every port, devices: [names of devices with a rail
    port], select}.  A port that is not Active but matches is ``selected``: whether the box is short of rails is
    preflight's to say, from how many selected ports are Active.
    """
    rdma = rdma if isinstance(rdma, dict) else {}
    select = select or {}
    live = dict(((p.get('device'), str(p.get('port'))), p) for p in rdma.get('live_ports') or [] if isinstance(p, dict))
    ports = []
    for name in sorted((rdma.get('devices') or {}), key=natural_key):
        device = rdma['devices'][name] or {}
        for number in sorted((device.get('ports') or {}), key=natural_key):
            info = device['ports'][number] or {}
            netdevs = _netdevs(device, number)
            entry = {'device': name, 'port': _port_number(number), 'active': _active(info), 'state': info.get('state'),
                     'phys_state': info.get('phys_state'), 'link_layer': info.get('link_layer'), 'rate_gbps': info.get('rate_gbps'),
                     'netdev': (live.get((name, str(number))) or {}).get('netdev') or (netdevs[0] if netdevs else None),
                     'pci_address': device.get('pci_address')}
            entry['why'] = _why_not(select, entry, netdevs)
            entry['selected'] = entry['why'] is None
            ports.append(entry)
    _one_link_layer(select, ports)
    rails = []
    for entry in ports:
        found = live.get((entry['device'], str(entry['port'])))
        if entry['selected'] and found is not None:
            rails.append(dict(found))
    return {'rails': rails, 'ports': ports, 'select': select,
            'devices': sorted(set(p['device'] for p in ports if p['selected']), key=natural_key),
            'netdevs': [rail['netdev'] for rail in rails if rail.get('netdev')]}


def _one_link_layer(select, ports):
    """Rails of one link layer: a selector of any link layer that matched Active ports of both (a 100 Gb/s front-end
    Ethernet card beside 100 Gb/s InfiniBand rails, a 200 GbE storage port beside HDR rails) keeps the link layer most
    of them have (InfiniBand on a tie: a box's second link layer is its front-end or storage one) and records why the
    others are left out.  An explicit device list is taken as it is."""
    if select.get('devices') or select.get('link_layer') not in (None, 'any'):
        return
    counts = {}
    for entry in ports:
        if entry['selected'] and entry['active'] and entry['link_layer']:
            counts[entry['link_layer']] = counts.get(entry['link_layer'], 0) + 1
    if len(counts) < 2:
        return
    kept = sorted(counts, key=lambda layer: (-counts[layer], layer != 'InfiniBand', layer))[0]
    for entry in ports:
        if entry['selected'] and entry['link_layer'] and entry['link_layer'] != kept:
            entry['selected'] = False
            entry['why'] = ('link layer %s, the rails are %s (of the Active ports that match the tier %d are %s, %d %s; '
                            'netval_rdma_devices or nics.select.link_layer chooses otherwise)'
                            % (entry['link_layer'], kept, counts[kept], kept, counts.get(entry['link_layer'], 0), entry['link_layer']))


def _port_number(number):
    try:
        return int(number)
    except (TypeError, ValueError):
        return number


# ----------------------------------------------------------------------------------------------------------------- pairs

def _network(port):
    if not port.get('ipv4') or port.get('ipv4_prefixlen') is None:
        return None
    try:
        return ipaddress.ip_network('%s/%s' % (port['ipv4'], port['ipv4_prefixlen']), strict=False)
    except ValueError:
        return None


def _compatible(node, peer):
    """None when the two ports can be one rail, else why not (another link layer or rate)."""
    if node.get('link_layer') and peer.get('link_layer') and node['link_layer'] != peer['link_layer']:
        return 'link layer %s against %s' % (node['link_layer'], peer['link_layer'])
    if node.get('rate_gbps') and peer.get('rate_gbps') and float(node['rate_gbps']) != float(peer['rate_gbps']):
        return '%s Gb/s against %s Gb/s' % (_g(node['rate_gbps']), _g(peer['rate_gbps']))
    return None


def _pair(node, peer, how):
    return {
        'device': node.get('device'), 'ib_port': node.get('port') or 1, 'netdev': node.get('netdev'), 'gid_index': node.get('gid_index'),
        'ipv4': node.get('ipv4'), 'ipv4_prefixlen': node.get('ipv4_prefixlen'), 'link_layer': node.get('link_layer'),
        'rate_gbps': node.get('rate_gbps'), 'local_cpus': node.get('local_cpus'),
        'peer_device': peer.get('device'), 'peer_ib_port': peer.get('port') or 1, 'peer_netdev': peer.get('netdev'),
        'peer_gid_index': peer.get('gid_index'), 'peer_ipv4': peer.get('ipv4'), 'peer_ipv4_prefixlen': peer.get('ipv4_prefixlen'),
        'paired_by': how,
    }


def rails_map_errors(rails_map, where='netval_rails'):
    if rails_map is None:
        return []
    if not isinstance(rails_map, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in rails_map.items()):
        return ['%s must map a node RDMA device to the peer RDMA device on its rail, got %r' % (where, rails_map)]
    return []


def rail_pairs(node_rails, peer_rails, rails_map=None, peer_name='the peer'):
    """(pairs, unpaired): each node rail with the peer rail on the same rail.

    An explicit ``rails_map`` ({node device: peer device}, inventory ``netval_rails``) wins for the devices it names;
    then the same device name on both boxes (identical SKUs name their rails alike); then the same IPv4 subnet.  A
    pair never joins two link layers or two rates, and each peer rail serves one node rail.  ``unpaired`` is
    [{device, reason}] for node rails left without a partner: a planning problem, never a silent re-use.
    """
    errors = rails_map_errors(rails_map)
    if errors:
        raise RailError('; '.join(errors))
    rails_map = rails_map or {}
    free = [p for p in peer_rails or [] if isinstance(p, dict)]
    by_name = dict((p.get('device'), p) for p in free)
    pairs, unpaired, refused = [], [], {}
    pending = [n for n in node_rails or [] if isinstance(n, dict)]

    def take(node, peer, how):
        why = _compatible(node, peer)
        if why:
            refused.setdefault(node.get('device'), []).append('%s %s: %s' % (peer_name, peer.get('device'), why))
            return False
        free.remove(peer)
        pairs.append(_pair(node, peer, how))
        return True

    left = []
    for node in pending:
        wanted = rails_map.get(node.get('device'))
        peer = by_name.get(wanted) if wanted else None
        if wanted and (peer is None or peer not in free):
            refused.setdefault(node.get('device'), []).append('netval_rails names %s %s, which is not a free rail there' % (peer_name, wanted))
            continue
        if peer is None or not take(node, peer, 'netval_rails'):
            left.append(node)
    still = []
    for node in left:
        if node.get('device') in rails_map:
            still.append(node)
            continue
        peer = by_name.get(node.get('device'))
        if peer is None or peer not in free or not take(node, peer, 'device name'):
            still.append(node)
    for node in still:
        network = _network(node)
        match = [p for p in free if network is not None and _network(p) == network] if node.get('device') not in rails_map else []
        if not (match and take(node, match[0], 'subnet %s' % network)):
            unpaired.append(node)
    pairs.sort(key=lambda p: natural_key(p['device']))
    reasons = []
    for node in unpaired:
        if refused.get(node.get('device')):
            why = '; '.join(refused[node['device']])
        elif len(peer_rails or []) < len(node_rails or []):
            why = ('%s has %d rail(s) for the node\'s %d: no rail of %s shares its name or subnet (name it in netval_rails)'
                   % (peer_name, len(peer_rails or []), len(node_rails or []), peer_name))
        else:
            why = 'no rail of %s shares its name or IPv4 subnet: name the peer rail in netval_rails' % peer_name
        reasons.append({'device': node.get('device'), 'reason': 'no rail of %s for %s (%s)' % (peer_name, node.get('device'), why)})
    return pairs, reasons


# ----------------------------------------------------------------------------------------------------------------- IP path

def ip_path(pairs, node_name='the node', peer_name='the peer', node_address=None, peer_address=None):
    """The rail pair the IP tests (ping, iperf3) run over: {pair, node_ip, peer_ip, netdev, link_layer} or {problem}.

    ``node_address`` / ``peer_address`` are the inventory's fabric addresses of the two boxes (netval_fabric_ip(s)):
    the node's must be the address of one of its tested rails.  Without them, the first pair (natural order) whose two
    ports share an IPv4 subnet, else the first whose two ports both have one.  Never the management address: a box
    without an address on a tested rail is a problem with our cause ("no fabric address for <host> on <rails>").
    """
    pairs = [p for p in pairs or [] if isinstance(p, dict)]
    if not pairs:
        return {'problem': 'no rail pair between %s and %s to run IP tests over' % (node_name, peer_name)}
    if node_address:
        found = [p for p in pairs if p.get('ipv4') == node_address]
        if not found:
            return {'problem': 'the fabric address %s given for %s is on none of its tested rails (%s)'
                               % (node_address, node_name, ', '.join('%s %s' % (p['device'], p.get('ipv4') or 'unaddressed') for p in pairs))}
        pair = found[0]
        return _path(pair, node_address, peer_address or pair.get('peer_ipv4'), peer_name)
    both = [p for p in pairs if p.get('ipv4') and (peer_address or p.get('peer_ipv4'))]
    same = [p for p in both if not peer_address and _network(p) is not None
            and _network(p) == _network({'ipv4': p.get('peer_ipv4'), 'ipv4_prefixlen': p.get('peer_ipv4_prefixlen')})]
    if same or both:
        pair = (same or both)[0]
        return _path(pair, pair['ipv4'], peer_address or pair.get('peer_ipv4'), peer_name)
    if not any(p.get('ipv4') for p in pairs):
        return {'problem': 'no fabric address for %s on %s' % (node_name, ', '.join(p['device'] for p in pairs))}
    addressed = [p for p in pairs if p.get('ipv4')]
    return {'problem': 'no fabric address for %s on %s (the rails %s is addressed on)'
                       % (peer_name, ', '.join(p['peer_device'] for p in addressed), node_name)}


def _path(pair, node_ip, peer_ip, peer_name):
    if not peer_ip:
        return {'problem': 'no fabric address for %s on %s' % (peer_name, pair.get('peer_device'))}
    return {'pair': pair, 'node_ip': node_ip, 'peer_ip': peer_ip, 'netdev': pair.get('netdev'), 'link_layer': pair.get('link_layer'),
            'device': pair.get('device'), 'peer_device': pair.get('peer_device')}


def with_local_cpus(selection, host):
    """The selection with each rail's NUMA-local CPUs (host_tuning_info ``irq_placement`` by PCI address) as ``local_cpus``:
    where the IP tests' processes are pinned."""
    placement = dict((str(bdf).lower(), entry) for bdf, entry in ((host or {}).get('irq_placement') or {}).items()
                     if isinstance(entry, dict))
    pcis = dict((p['device'], str(p.get('pci_address') or '').lower()) for p in selection.get('ports') or [])
    rails = []
    for rail in selection.get('rails') or []:
        cpus = (placement.get(pcis.get(rail.get('device'))) or {}).get('local_cpus')
        rails.append(dict(rail, local_cpus=list(cpus) if cpus else None))
    return dict(selection, rails=rails)
