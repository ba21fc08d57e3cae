# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: fabric_subnet
short_description: The smallest subnet (CIDR) that covers the node's and the peer's fabric networks
version_added: 0.1.0
description:
  - Takes the node's live RDMA ports and the peer's (rdma_info C(live_ports), each with C(ipv4) and C(ipv4_prefixlen)) and returns
    the smallest CIDR that covers every network those addresses sit in, on both ends, as a plain string.
  - This is what Open MPI's C(oob_tcp_if_include) and C(btl_tcp_if_include) are pinned to, so its out-of-band traffic stays on the
    fabric and never picks a bridge both boxes happen to share (docker0 C(172.17.0.0/16) on node and peer).
  - An address without a prefix length counts as a host (C(/32)); ports without an address are left out.
  - Returns null when either end has no addressed live port (nothing to derive; the caller omits the option).
  - When the only covering subnet would be wider than C(/8) (the two ends' fabric addresses in unrelated networks, where one subnet
    would also cover docker0 or the management network), returns the merged networks comma-separated instead, as Open MPI's
    C(*_if_include) options accept them.
  - Needs the Python library netaddr on the controller.
requirements:
  - netaddr
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's live ports (a list of dicts with C(ipv4) and C(ipv4_prefixlen)), or the rdma_info result holding them.
    type: raw
    required: true
  peer:
    description: The peer's live ports, in the same shape.
    type: raw
    required: true
'''

EXAMPLES = r'''
- name: Pin Open MPI's own traffic to the fabric both boxes share
  ansible.builtin.set_fact:
    fabric_cidr: "{{ preflight_facts.rdma.live_ports | gpufleet.netval.fabric_subnet(peer_rdma.live_ports) }}"
'''

RETURN = r'''
_value:
  description:
    - The covering subnet, such as C(10.0.0.0/30), or null when either end has no addressed live port.
    - Comma-separated networks (C(10.0.0.0/30,192.168.7.0/30)) when no subnet of C(/8) or narrower covers both ends.
  type: str
'''

from ansible.errors import AnsibleFilterError

try:
    import netaddr
except ImportError:
    netaddr = None

# A covering subnet wider than this would also cover unrelated networks (docker0, management): the networks are listed instead.
WIDEST_PREFIXLEN = 8


def _networks(ports, end):
    if isinstance(ports, dict):
        ports = ports.get('live_ports')
    if ports is None:
        return []
    if not isinstance(ports, (list, tuple)):
        raise AnsibleFilterError('fabric_subnet: the %s live ports must be a list of dicts with ipv4 and ipv4_prefixlen, got %r'
                                 % (end, ports))
    networks = []
    for port in ports:
        address = (port or {}).get('ipv4') if isinstance(port, dict) else None
        if not address:
            continue
        prefixlen = port.get('ipv4_prefixlen')
        try:
            network = netaddr.IPNetwork('%s/%s' % (address, 32 if prefixlen is None else prefixlen))
        except (netaddr.AddrFormatError, ValueError, TypeError) as exc:
            raise AnsibleFilterError('fabric_subnet: %s port %s has no usable IPv4 address/prefix (%s/%s): %s'
                                     % (end, port.get('device'), address, prefixlen, exc))
        if network.version != 4:
            raise AnsibleFilterError('fabric_subnet: %s port %s address %s is not IPv4' % (end, port.get('device'), address))
        networks.append(network.cidr)
    return networks


def fabric_subnet(node_ports, peer):
    if netaddr is None:
        raise AnsibleFilterError('fabric_subnet needs the Python library netaddr on the controller (pip install netaddr)')
    node = _networks(node_ports, 'node')
    other = _networks(peer, 'peer')
    if not node or not other:
        return None
    merged = netaddr.cidr_merge(node + other)
    # spanning_cidr over the lowest and highest address: given whole networks it widens one step too far.
    covering = merged[0] if len(merged) == 1 else netaddr.spanning_cidr([merged[0][0], merged[-1][-1]])
    if covering.prefixlen < WIDEST_PREFIXLEN:
        return ','.join(str(network) for network in merged)
    return str(covering)


class FilterModule(object):
    def filters(self):
        return {'fabric_subnet': fabric_subnet}
