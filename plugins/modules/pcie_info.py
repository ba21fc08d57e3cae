#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: pcie_info
short_description: Read the PCIe links of a node's NICs and GPUs, judged against their slot and upstream bridges
version_added: 0.1.0
description:
  - Reads each device's current and maximum PCIe link speed and width, NUMA node, class, IDs and driver from sysfs,
    walks its upstream bridges and ports up to the root port, and judges the link against the least capable hop.
  - A Gen5 NIC in a Gen4 slot is reported as C(slot_limited) (a placement limit, not a faulty NIC); a device running
    below what both it and its path support is C(degraded); a GPU at reduced speed but full width is C(idle_downtrained),
    because GPUs train their link down at idle by design.
  - By default it inspects every NVIDIA/Mellanox network adapter (vendor C(0x15b3), Ethernet or InfiniBand class) and
    every NVIDIA GPU (vendor C(0x10de), VGA or 3D class). Hosts without such hardware return empty lists, not an error.
  - SR-IOV virtual functions (a C(physfn) link in sysfs, or a known VF device ID) have no PCIe link of their own; discovery
    lists them under RV(virtual_functions) and does not inspect them, and a VF named in O(devices) is assessed
    C(virtual_function), never judged as a link.
  - With O(lspci=true) it also runs C(lspci -vvv -s BDF) per device and returns the parsed LnkCap/LnkSta lines.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  sysfs_root:
    description: Root of the sysfs tree to read (tests and the lab point this at a fixture tree).
    type: path
    default: /sys
  devices:
    description:
      - PCI addresses to inspect, as C(0000:1b:00.0) or C(1b:00.0) (domain 0000 assumed).
      - When omitted, the NICs and GPUs found in sysfs are inspected (see O(all_network_devices)).
    type: list
    elements: str
  all_network_devices:
    description: When discovering devices, include every network controller (class C(0x02)), not only NVIDIA/Mellanox ones.
    type: bool
    default: false
  lspci:
    description:
      - Also run C(lspci -vvv -s BDF) for each device and return its parsed link lines under RV(devices[].lspci).
      - lspci shows the link capabilities only when run as root.
      - The devices' lspci run side by side (up to eight at once); the first failure, in PCI address order, is the one reported.
    type: bool
    default: false
  acs:
    description:
      - Also run C(lspci -vvv -s BDF) for every bridge above the devices and return its Access Control Services controls on each hop
        (C(acs) of each hop of RV(devices[].upstream)); ACS request or completion redirection on the switch ports between a NIC and its GPU sends
        GPUDirect RDMA through the root complex.
    type: bool
    default: false
notes:
  - Supports check mode; it only reads (lspci is read-only too).
  - Speeds are GT/s per lane (2.5, 5.0, 8.0, 16.0, 32.0 for Gen1 to Gen5), widths are lane counts.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads sysfs and runs lspci, which changes nothing.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Inspect the PCIe links of all NVIDIA NICs and GPUs
  gpufleet.netval.pcie_info:
  register: pcie

- name: Fail on links running below what the device and its slot support
  ansible.builtin.assert:
    that: pcie.degraded | length == 0
    fail_msg: "degraded PCIe links: {{ pcie.degraded | join(', ') }}"

- name: Inspect two NICs by address, with lspci's view of the link
  gpufleet.netval.pcie_info:
    devices: ['0000:1a:00.0', '3c:00.0']
    lspci: true
  become: true
'''

RETURN = r'''
devices:
  description: One entry per inspected device, in PCI address order.
  returned: always
  type: list
  elements: dict
  contains:
    bdf:
      description: PCI address with domain.
      type: str
      sample: "0000:1a:00.0"
    kind:
      description: C(nic), C(gpu) or C(other), from the PCI class.
      type: str
      sample: nic
    link:
      description:
        - Link facts from sysfs, C(current_speed_gts), C(max_speed_gts), C(current_width), C(max_width), C(numa_node),
          C(class), C(vendor), C(device), C(driver); null where the kernel exposes nothing (virtual devices).
        - C(physfn) (the PF of an SR-IOV VF, else null), C(virtual_function) (true for a VF) and C(sriov_numvfs) (a PF's
          enabled VFs).
      type: dict
      sample: {"bdf": "0000:1a:00.0", "current_speed_gts": 32.0, "max_speed_gts": 32.0, "current_width": 16, "max_width": 16,
               "numa_node": 0, "class": "0x020000", "vendor": "0x15b3", "device": "0x1021", "driver": "mlx5_core"}
    upstream:
      description:
        - The bridges and ports above the device, its slot first, up to the root port, each with the same link facts.
        - With O(acs), each hop also has C(acs) (C(ctl) the ACSCtl flags, C(redirects) the enabled ones that reroute peer-to-peer
          traffic, C(line) as lspci printed it, C(cmd), C(error)); C(ctl) is null for a bridge without the capability.
      type: list
      elements: dict
    assessment:
      description:
        - C(expected_speed_gts) and C(expected_width) (the least capable of the device and its upstream hops),
          C(bottleneck) (C(device), C(slot), C(upstream:<bdf>) or null), C(status) and a plain-text C(reason).
        - C(status) is C(ok), C(degraded), C(slot_limited), C(idle_downtrained), C(virtual_function) (an SR-IOV VF, not
          judged) or C(unknown).
      type: dict
      sample: {"expected_speed_gts": 16.0, "expected_width": 16, "bottleneck": "slot", "status": "slot_limited",
               "reason": "device can do 32.0 GT/s (Gen5) x16 but its slot 0000:00:01.0 only 16.0 GT/s (Gen4) x16 ..."}
    lspci:
      description:
        - The device as parsed from C(lspci -vvv -s BDF) (LnkCap/LnkSta speeds and widths, downgraded flags); only with O(lspci=true).
        - C(link_lines) holds the LnkCap and LnkSta lines verbatim and C(cmd) the command that printed them.
      type: dict
      returned: when O(lspci=true)
degraded:
  description: Addresses of devices whose link runs below what they and their path support.
  returned: always
  type: list
  elements: str
  sample: ["0000:1a:00.0"]
slot_limited:
  description: Addresses of devices limited by their slot or an upstream bridge (not a device fault).
  returned: always
  type: list
  elements: str
unknown:
  description: Addresses of devices whose link could not be judged (missing link facts).
  returned: always
  type: list
  elements: str
virtual_functions:
  description: Addresses of the SR-IOV virtual functions found or named; they have no link of their own and are never judged.
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import pcie_info as reads


def main():
    module = AnsibleModule(argument_spec=reads.ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **reads.read(module))


if __name__ == '__main__':
    main()
