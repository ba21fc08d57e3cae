"""The lab's sites: what a real GPU-fleet site looks like next to the lab's ideal boxes.

``real`` (the default) is what an 8-GPU node on a real site has:

* the compute rails, one switch (a bridge in the root namespace, ``nvlab-r<N>``) per rail, every host's rail netdev a
  veth into it under the NIC's real netdev name (``ibp26s0`` on InfiniBand, ``enp26s0f0np0`` on RoCE): IPoIB at MTU
  4092 (a profile may choose 2044), RoCE at 9000;
* more RDMA devices than rails: a dual-port front-end Ethernet NIC at another rate and PCIe generation (ConnectX-6 Dx,
  100 GbE, Gen4; its first port on the front-end network) and a dual-port storage NIC (ConnectX-7, 200 GbE, port 1 on
  the storage network, port 2 not cabled: Down), named mlx5_10 and mlx5_11 so that a prefix match on mlx5_1 catches them;
* addresses as a real pair of boxes has them: a peer on every rail, a new node on its odd rails only (its first rail
  unaddressed), its storage port addressed; RoCE rails are addressed on every host (RoCE needs them);
* a management network that is the default route and is shaped like one: 1 Gbit/s, MTU 1500; its gateway answers
  nobody, so anything that falls back to it measures it and reaches no fabric address through it.

``ideal`` keeps the lab's first boxes: one veth per node-peer pair at MTU 9000 standing for the first NIC, the other NICs
emulated only, an unshaped management link without a default route.  The two-box RoCE pair (one cable) keeps its own
cable on either site.

Pure planning (no I/O): ``__main__`` builds what this plans, ``hardware`` emulates the NICs it lists.
"""

import copy

SITES = ('real', 'ideal')
DEFAULT_SITE = 'real'
RAIL_BRIDGE = 'nvlab-r%d'
STORAGE_BRIDGE = 'nvlab-stor'
FRONTEND_BRIDGE = 'nvlab-fe'
RAIL_NET = '10.252.%d.0'
STORAGE_NET = '10.254.0.0'
FRONTEND_NET = '10.250.0.0'
PREFIX = 24
# The management network: a gateway nobody answers, so a fallback to it reaches no fabric address (and nothing outside the lab).
MGMT_GATEWAY = '10.251.0.254'
MGMT_RATE = '1gbit'
MGMT_MTU = 1500
IPOIB_MTU = 4092
ROCE_MTU = 9000
# The storage NIC's names catch a prefix match on mlx5_1 (NCCL_IB_HCA=mlx5_1 also selects mlx5_10 and mlx5_11).
STORAGE_NAMES = ('mlx5_10', 'mlx5_11')
STORAGE_PCI = ('0000:29:00.0', '0000:29:00.1')
FRONTEND_PCI = ('0000:a9:00.0', '0000:a9:00.1')

_CX6DX = {'hca_type': 'MT4125', 'part_number': 'MCX623106AN-CDAT', 'psid': 'MT_0000000359', 'board_id': 'MT_0000000359',
          'fw_version': '22.39.1002', 'description': 'ConnectX-6 Dx EN adapter card; 100GbE; dual-port QSFP56; PCIe 4.0 x16',
          'rate_gbps': 100, 'pcie': {'lnkcap_gts': 16, 'lnkcap_width': 16, 'lnksta_gts': 16, 'lnksta_width': 16,
                                     'upstream_max_gts': 16, 'upstream_width': 16},
          'bw_gbytes_s': 11.8, 'gdr_bw_gbytes_s': 11.5, 'lat_us': 1.6}
_STORAGE_CX7 = {'hca_type': 'MT4129', 'part_number': 'MCX755106AS-HEAT', 'psid': 'MT_0000000834', 'board_id': 'MT_0000000834',
                'fw_version': '28.39.2048', 'description': 'NVIDIA ConnectX-7 adapter card; 200GbE; dual-port QSFP112; PCIe 5.0 x16',
                'rate_gbps': 200, 'pcie': {'lnkcap_gts': 32, 'lnkcap_width': 16, 'lnksta_gts': 32, 'lnksta_width': 16,
                                           'upstream_max_gts': 32, 'upstream_width': 16},
                'bw_gbytes_s': 23.5, 'gdr_bw_gbytes_s': 23.0, 'lat_us': 1.3}


def rail_fabric(site, tier):
    """Whether a lab of this site and tier is built with rails (a switch per rail), not with node-peer cables."""
    return site == 'real' and tier != 'roce-pair-2x100g'


def _bus(pci):
    return int(pci[5:7], 16)


def extra_nics(rails, template):
    """The front-end and storage NICs of a real site's box, as profile NIC entries (the compute NICs are mlx5_0..rails-1).

    ``template`` is a completed compute NIC of the profile, for the fields every NIC carries.
    """
    extras = []
    front_names = ['mlx5_%d' % rails, 'mlx5_%d' % (rails + 1)]
    for index, (name, pci) in enumerate(zip(front_names, FRONTEND_PCI)):
        nic = dict(copy.deepcopy(template), **copy.deepcopy(_CX6DX))
        nic.update(name=name, pci_address=pci, numa_node=1, link_layer='Ethernet', state='ACTIVE', phys_state='LinkUp',
                   netdev='enp%ds0f%dnp%d' % (_bus(pci), index, index), role='frontend', gid_index=0)
        extras.append(nic)
    for index, (name, pci) in enumerate(zip(STORAGE_NAMES, STORAGE_PCI)):
        nic = dict(copy.deepcopy(template), **copy.deepcopy(_STORAGE_CX7))
        down = index == 1
        nic.update(name=name, pci_address=pci, numa_node=0, link_layer='Ethernet', state='DOWN' if down else 'ACTIVE',
                   phys_state='Polling' if down else 'LinkUp', netdev='enp%ds0f%dnp%d' % (_bus(pci), index, index), role='storage',
                   gid_index=0)
        extras.append(nic)
    return extras


def _address(net, host_index):
    """The host's address in one /24: hosts are numbered from 1 in the lab's order, at .11 and up."""
    base = net.rsplit('.', 1)[0]
    return '%s.%d' % (base, 10 + host_index)


def host_nics(hw, rails):
    """A real site's box: its profile's compute NICs (the first ``rails``) and the site's front-end and storage NICs."""
    compute = list(hw['nics'])[:rails]
    return compute + extra_nics(rails, compute[0])


def host_ports(host_index, role, nics, rails):
    """One host's ports on a real site: [{name (its RDMA device), netdev, rail (or None), bridge (or None: not cabled),
    ip (or None), prefix, mtu, up, kind, isolated}], one per NIC of ``host_nics``."""
    compute = nics[:rails]
    roce = compute[0]['link_layer'] == 'Ethernet'
    rail_mtu = ROCE_MTU if roce else (compute[0].get('netdev_mtu') or IPOIB_MTU)
    ports = []
    for rail, nic in enumerate(compute):
        # A new node is addressed on its odd rails only (RoCE needs every rail addressed); a peer on every rail.
        addressed = roce or role != 'new' or rail % 2 == 1
        ports.append({'name': nic['name'], 'netdev': nic['netdev'], 'rail': rail, 'bridge': RAIL_BRIDGE % rail, 'kind': 'rail',
                      'mtu': nic.get('netdev_mtu') or rail_mtu, 'up': nic['state'] == 'ACTIVE',
                      'ip': _address(RAIL_NET % rail, host_index) if addressed else None, 'prefix': PREFIX, 'isolated': roce})
    for nic in nics[rails:]:
        storage = nic['role'] == 'storage'
        cabled = nic['state'] == 'ACTIVE'
        first = nic['name'] in (STORAGE_NAMES[0], 'mlx5_%d' % rails)
        ports.append({'name': nic['name'], 'netdev': nic['netdev'], 'rail': None, 'kind': nic['role'], 'prefix': PREFIX,
                      'bridge': (STORAGE_BRIDGE if storage else FRONTEND_BRIDGE) if cabled else None, 'isolated': True,
                      'mtu': ROCE_MTU if storage else 1500, 'up': cabled,
                      'ip': _address(STORAGE_NET if storage else FRONTEND_NET, host_index) if cabled and first else None})
    return ports
