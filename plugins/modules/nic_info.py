#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nic_info
short_description: Read link settings, driver, rings, channels, pause and counters of network interfaces with ethtool
version_added: 0.1.0
description:
  - Runs C(ethtool DEV), C(ethtool -i), C(ethtool -g), C(ethtool -l) and C(ethtool -a) for each network interface
    and returns them parsed, with the interface MTU read from C(<sysfs_root>/class/net/<netdev>/mtu);
    optionally C(ethtool -k) (offload features) and C(ethtool -S) (counters).
  - By default reads every netdev that sits behind an RDMA device (C(/sys/class/infiniband/*/device/net/*)).
  - A section the driver does not support (C(Operation not supported)) is returned as null with the error text
    under C(errors); it does not fail the module. Any other failure of ethtool does, naming host, command and rc.
  - Two runs with O(counters=true) give rates through the P(gpufleet.netval.counter_deltas#filter) filter.
  - The settings of the netdevs are read side by side (up to eight at once, each netdev's calls in turn), so a node with eight
    NICs takes about one NIC's time; the first failure, in the netdevs' order, is the one reported. The counters are read
    after them, one netdev after the other in the same order, so that two snapshots give true rates.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  netdevs:
    description:
      - Network interfaces to read. When omitted, every netdev behind C(/sys/class/infiniband/*/device/net/) plus O(include).
    type: list
    elements: str
  include:
    description: Extra network interfaces to read in addition to the discovered ones (for example a bond or a plain Ethernet NIC).
    type: list
    elements: str
    default: []
  sysfs_root:
    description: Root of the sysfs tree used to discover netdevs and read their MTU (tests point this at a fixture tree).
    type: path
    default: /sys
  settings:
    description:
      - Read the link settings, driver, rings, channels and pause settings (C(ethtool DEV), C(-i), C(-g), C(-l), C(-a))
        and the MTU (sysfs).
      - C(false) with O(counters=true) reads only the counters, one ethtool call per netdev (the cheap snapshot around a sustained test).
    type: bool
    default: true
  counters:
    description: Also run C(ethtool -S) and return the counters with a C(timestamp) (seconds since the epoch).
    type: bool
    default: false
  features:
    description: Also run C(ethtool -k) and return the offload features.
    type: bool
    default: false
  timeout:
    description: Seconds each ethtool command may run before it is killed.
    type: int
    default: 15
notes:
  - Supports check mode; it only reads.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads, so it runs the same ethtool queries.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Read every RDMA netdev
  gpufleet.netval.nic_info:
  register: nic

- name: Require 100G and a detected link
  ansible.builtin.assert:
    that:
      - item.value.link.speed_mbps == 100000
      - item.value.link.link_detected
  loop: "{{ nic.nics | dict2items }}"

- name: Counters before the test
  gpufleet.netval.nic_info:
    netdevs: [ens3np0]
    counters: true
  register: before

- name: Counters after the test
  gpufleet.netval.nic_info:
    netdevs: [ens3np0]
    counters: true
  register: after

- name: Pause and discard rates during the test
  ansible.builtin.debug:
    msg: "{{ before.nics.ens3np0 | gpufleet.netval.counter_deltas(after.nics.ens3np0, none, {'pause_per_s': 1000}) }}"
'''

RETURN = r'''
nics:
  description:
    - Per netdev the parsed C(link) (ethtool DEV), C(driver) (-i), C(ring) (-g), C(channels) (-l), C(pause) (-a),
      C(features) (-k, with O(features)), C(counters) and C(timestamp) (-S, with O(counters)), C(mtu) (an int from
      sysfs with O(settings); null with C(errors.mtu) when unreadable), C(rdma_device) when discovered through sysfs,
      and C(errors) (section to error text for sections the driver does not support).
  returned: always
  type: dict
  sample:
    ens3np0:
      mtu: 9000
      link: {"speed_mbps": 100000, "duplex": "Full", "link_detected": true, "port": "Direct Attach Copper"}
      driver: {"driver": "mlx5_core", "firmware_version": "28.43.1014 (MT_0000000838)", "bus_info": "0000:af:00.0"}
      ring: {"maximum": {"rx": 8192, "tx": 8192}, "current": {"rx": 1024, "tx": 1024}}
      channels: {"maximum": {"combined": 63}, "current": {"combined": 24}}
      pause: null
      errors: {"pause": "netlink error: Operation not supported"}
      rdma_device: mlx5_0
netdevs:
  description: The netdevs that were read, in order.
  returned: always
  type: list
  elements: str
  sample: ["ens3np0"]
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import nic_info as reads


def main():
    module = AnsibleModule(argument_spec=reads.ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **reads.read(module))


if __name__ == '__main__':
    main()
