#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: mlx_fw_info
short_description: Read firmware version, PSID and firmware configuration of NVIDIA (Mellanox) adapters
version_added: 0.1.0
description:
  - Runs C(flint -d DEV q) and C(mlxconfig -d DEV q) from the NVIDIA Firmware Tools (MFT), or C(mstflint -d DEV q) and
    C(mstconfig -d DEV q) from the open-source mstflint package, for each device and returns them parsed.
  - Reports the CQE compression setting of the firmware (C(CQE_COMPRESSION)) separately.
  - With O(link_info), also runs C(mlxlink -d DEV -m -c -e) (MFT) or C(mstlink) (mstflint) per device for the link's FEC mode,
    BER counters, cable module and eye; this module already speaks the MFT/mstflint tools per PCI device, nic_info only ethtool.
    A missing link tool or a failed query is recorded in the device's C(link.error) (our gap, not the node's), never fatal.
  - Only queries; nothing is burnt or set.
  - The devices are grouped by adapter (the functions of one PCI bus:device, such as C(0000:af:00.0) and C(0000:af:00.1), are one
    card, with one flash, one configuration and one lock the tools take while they read it). flint and mlxconfig run once per adapter, on its
    first function, and mlxlink on each function in turn; adapters are read side by side (up to eight at once).
  - A query that fails (a busy or locked adapter, a tool error, unreadable output) is recorded in the C(error) of that adapter's
    functions only, with host, command and rc; the other devices are read as usual and the module does not fail.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  devices:
    description:
      - Devices to query, each an MST device (C(/dev/mst/mt4129_pciconf0)), a PCI address (C(0000:af:00.0) or C(af:00.0))
        or an RDMA device name (C(mlx5_0)).
      - When omitted, the PCI addresses of the devices under C(/sys/class/infiniband/) of O(sysfs_root).
    type: list
    elements: str
  tool:
    description:
      - Which tool family to use. C(auto) uses C(flint)/C(mlxconfig) where installed and falls back to
        C(mstflint)/C(mstconfig) otherwise; C(mft) and C(mstflint) insist on one family.
    type: str
    choices: [auto, mft, mstflint]
    default: auto
  query_config:
    description: Also run C(mlxconfig q) / C(mstconfig q) and return the firmware configuration.
    type: bool
    default: true
  link_info:
    description: Also query each device's physical link with C(mlxlink -m -c -e) (or C(mstlink)) and return it as C(link).
    type: bool
    default: true
  sysfs_root:
    description: Root of the sysfs tree used to find the devices when O(devices) is omitted.
    type: path
    default: /sys
  timeout:
    description: Seconds each command may run before it is killed (a firmware query can take tens of seconds).
    type: int
    default: 120
notes:
  - Supports check mode; it only queries.
  - Needs root (the tools open the PCI configuration space).
attributes:
  check_mode:
    description: Can run in check mode; the module only queries, so it runs the same commands.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Firmware of every RDMA adapter
  gpufleet.netval.mlx_fw_info:
  register: fw
  become: true

- name: Require the fleet firmware and CQE compression
  ansible.builtin.assert:
    that:
      - item.value.firmware.fw_version == '28.43.1014'
      - item.value.cqe_compression.enabled
  loop: "{{ fw.devices | dict2items }}"

- name: Query one adapter with mstflint only, without its configuration
  gpufleet.netval.mlx_fw_info:
    devices: ['0000:af:00.0']
    tool: mstflint
    query_config: false
'''

RETURN = r'''
devices:
  description:
    - Per device the parsed C(firmware) (flint/mstflint q), C(config) (mlxconfig/mstconfig q, null without O(query_config)),
      C(cqe_compression) (mode and whether it is enabled), C(tool) (C(mft) or C(mstflint)), C(tools) (the commands used),
      C(adapter) (its PCI bus:device), C(firmware_from) (the function whose query gave the adapter's firmware, null for that one)
      and C(error) (why the adapter's firmware or configuration query failed, null when it did not; C(firmware) and C(config)
      are then null).
  returned: always
  type: dict
  sample:
    "0000:af:00.0":
      firmware: {"fw_version": "28.43.1014", "psid": "MT_0000000838", "reset_pending": false, "secure_fw": true}
      config: {"device_type": "ConnectX7", "parameters": {"SRIOV_EN": "True(1)", "CQE_COMPRESSION": "BALANCED(0)"}}
      cqe_compression: {"present": true, "value": "BALANCED(0)", "mode": "BALANCED", "code": 0, "enabled": true}
      tool: mft
      tools: {"firmware": "flint", "config": "mlxconfig", "link": "mlxlink"}
      adapter: "0000:af:00"
      firmware_from: null
      error: null
      link:
        cmd: mlxlink -d 0000:af:00.0 -m -c -e
        error: null
        operational: {"state": "Active", "physical_state": "LinkUp", "speed": "400G", "width": "4x", "fec": "Standard_RS-FEC - (544,514)"}
        counters: {"effective_physical_ber": 1.5e-254, "raw_physical_ber": 2e-09, "effective_physical_errors": 0, "link_down_counter": 0}
        module: {"identifier": "OSFP", "vendor_name": "NVIDIA", "vendor_part_number": "MMA4Z00-NS", "temperature_c": 47.0}
        troubleshooting: {"status_opcode": 0, "group_opcode": null, "recommendation": "No issue was observed"}
        truncated: false
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import mlx_fw_info as reads


def main():
    module = AnsibleModule(argument_spec=reads.ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **reads.read(module))


if __name__ == '__main__':
    main()
