#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_info
short_description: Inventory the RDMA devices of a node and find its live port
version_added: 0.1.0
description:
  - Reads C(/sys/class/infiniband) - firmware, HCA type, PCI address, NUMA node, netdevs, and per port the state,
    physical state, rate, link layer and GID table (with RoCE version, netdev and IPv4 of each GID).
  - Picks the live port(s) - C(ACTIVE) and C(LinkUp), those whose netdev has an IPv4 address first - and,
    per device, the GID index that carries RoCE v2 with an IPv4 address (what perftest C(-x) and C(NCCL_IB_GID_INDEX) need).
  - On a pair of boxes cabled back to back the live device can be named differently on each box
    (for example C(rocep1s0f0) on one and C(rocep1s0f1) on the other); this module answers per box.
  - A node without RDMA hardware or driver returns empty results, not an error.
  - Nothing is changed.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  sysfs_root:
    description: Root of the sysfs tree to read (tests and labs point this at a tree of their own).
    type: path
    default: /sys
  ipv4:
    description:
      - Read the IPv4 addresses of the devices' netdevs with C(ip -4 -o addr show) (package iproute2).
      - Without it C(ipv4) is null (unknown) everywhere and live ports are ordered by name only.
    type: bool
    default: true
  tool_outputs:
    description:
      - Also run C(ibstat) (package infiniband-diags) and return its parsed output as C(ibstat).
      - Fails, naming the package, when C(ibstat) is not installed.
    type: bool
    default: false
  devices:
    description:
      - Report only these RDMA devices (for example C(mlx5_0)); names not present on the node are listed in C(missing_devices).
      - Empty means every device.
    type: list
    elements: str
    default: []
  counters:
    description: Also return each port's C(counters/) and C(hw_counters/) (port_rcv_data and port_xmit_data count 4-byte words).
    type: bool
    default: false
  timeout:
    description: Seconds after which C(ibstat) is stopped.
    type: int
    default: 30
notes:
  - Supports check mode; it only reads, so it also reads in check mode.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads files and runs read-only commands.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Inventory RDMA devices
  gpufleet.netval.rdma_info:
  register: rdma

- name: Require one live RoCE port with an IPv4 address
  ansible.builtin.assert:
    that:
      - rdma.live_ports | length > 0
      - rdma.live_ports[0].ipv4 is not none
    fail_msg: "no ACTIVE/LinkUp port with an IPv4 address on {{ inventory_hostname }}"

- name: Use this box's own live device and GID index for perftest
  ansible.builtin.set_fact:
    netval_hca: "{{ rdma.live_ports[0].device }}"
    netval_gid_index: "{{ rdma.live_ports[0].gid_index }}"

- name: Read a lab node's tree and cross-check with ibstat
  gpufleet.netval.rdma_info:
    sysfs_root: /run/netval-lab/nodes/node1/sys
    tool_outputs: true
'''

RETURN = r'''
devices:
  description:
    - RDMA devices by name; ports by number (as a string key). Missing files are null. C(netdevs) is null when the tree has no C(device) directory.
    - Per port C(state)/C(state_code) (C(ACTIVE)/4), C(phys_state)/C(phys_state_code) (C(LinkUp)/5), C(rate_gbps) with the
      kernel's C(rate_text), C(width) and C(speed) labels, C(link_layer), C(lid), C(sm_lid), C(gids) and C(warnings)
      (values the kernel never writes, such as C(ACTIVE) as a phys_state).
    - C(ipv4) lists the IPv4 addresses of the device's netdevs (null when not read); C(gids) lists the non-zero GIDs of every port;
      C(roce_v2_gid) is the chosen RoCE v2 IPv4 GID (or null).
  returned: always
  type: dict
  sample:
    rocep1s0f0:
      fw_ver: "28.45.1200"
      hca_type: MT4129
      board_id: NVD0000000087
      node_guid: "a088:c203:0046:e8f4"
      node_type: "1: CA"
      pci_address: "0000:01:00.0"
      numa_node: 0
      netdevs: [enp1s0f0np0]
      ipv4: [10.0.0.1]
      ports:
        '1':
          state: ACTIVE
          state_code: 4
          phys_state: LinkUp
          phys_state_code: 5
          rate_gbps: 200
          rate_text: "200 Gb/sec (4X HDR)"
          width: 4X
          speed: HDR
          link_layer: Ethernet
          lid: 0
          sm_lid: 0
          warnings: []
          gids:
            - {index: 3, gid: "0000:0000:0000:0000:0000:ffff:0a00:0001", type: "RoCE v2", roce_version: v2, netdev: enp1s0f0np0, ipv4: 10.0.0.1}
      gids:
        - {port: 1, index: 3, gid: "0000:0000:0000:0000:0000:ffff:0a00:0001", type: "RoCE v2", roce_version: v2, netdev: enp1s0f0np0, ipv4: 10.0.0.1}
      roce_v2_gid: {port: 1, index: 3, ipv4: 10.0.0.1, netdev: enp1s0f0np0}
live_ports:
  description:
    - Ports that are C(ACTIVE) and C(LinkUp); those whose netdev has an IPv4 address come first.
    - C(gid_index) is the port's RoCE v2 GID carrying that IPv4 address (null on InfiniBand or without an address).
    - C(ipv4_prefixlen) is that address's prefix length as C(ip -4 -o addr) shows it (null without an address or O(ipv4=false));
      the P(gpufleet.netval.fabric_subnet#filter) filter derives the fabric subnet from it.
  returned: always
  type: list
  elements: dict
  sample: [{"device": "rocep1s0f0", "port": 1, "netdev": "enp1s0f0np0", "ipv4": "10.0.0.1", "ipv4_prefixlen": 24, "rate_gbps": 200,
            "link_layer": "Ethernet", "gid_index": 3}]
roce_v2_gid_index:
  description: Per device, the GID index of the first RoCE v2 GID with an IPv4 address (an ACTIVE port preferred); null when there is none (InfiniBand, no IP).
  returned: always
  type: dict
  sample: {"rocep1s0f0": 3, "rocep1s0f1": null}
counters_at:
  description: Unix time at which the port counters were read (the start of the read); a rate is a delta over two reads' times.
  returned: when O(counters=true)
  type: float
  sample: 1764930000.25
missing_devices:
  description: Names given in O(devices) that the node does not have.
  returned: always
  type: list
  elements: str
  sample: []
ibstat:
  description: Parsed C(ibstat) output (devices, each with C(ca_type), firmware and ports with C(state), C(physical_state), C(rate_gbps)...).
  returned: when O(tool_outputs=true)
  type: dict
  sample: {"devices": {"mlx5_0": {"ca_type": "MT4129", "firmware_version": "28.39.1002", "ports": {"1": {"state": "Active", "rate_gbps": 400}}}}}
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import rdma_info as reads


def main():
    module = AnsibleModule(argument_spec=reads.ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **reads.read(module))


if __name__ == '__main__':
    main()
