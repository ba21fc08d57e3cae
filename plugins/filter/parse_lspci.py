# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_lspci
short_description: Parse the text of lspci -vvv into PCIe link facts per device
version_added: 0.1.0
description:
  - Reads C(lspci -vvv) output (also with C(-s BDF), C(-D) or C(-nn)) into one entry per device with its PCI address,
    class, description, NUMA node, kernel driver and the LnkCap/LnkSta link speed (GT/s) and width (lanes).
  - C(downgraded) comes from lspci's own C(downgraded) and C(ok) annotations on LnkSta when printed, else from comparing LnkSta with LnkCap;
    it is null when either is unknown or the device has no PCI Express capability.
  - Bare LnkCap/LnkSta lines without a device header (as pasted from a grep) give one device whose C(bdf) is null.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(lspci -vvv).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Read the link of a NIC from lspci
  ansible.builtin.command: lspci -vvv -s 0000:1a:00.0
  register: lspci_out
  changed_when: false
  become: true

- name: Require the NIC's link not to be downgraded
  ansible.builtin.assert:
    that: not (lspci_out.stdout | gpufleet.netval.parse_lspci).devices[0].downgraded
'''

RETURN = r'''
_value:
  description:
    - C(devices), a list of dicts with C(bdf), C(description), C(class), C(lnkcap_speed_gts), C(lnkcap_width), C(lnksta_speed_gts),
      C(lnksta_width), C(downgraded), C(speed_downgraded), C(width_downgraded), C(lnkcap2_speeds), C(numa_node), C(kernel_driver)
      (plus C(class_code), C(vendor_device), C(port_type), C(capabilities_readable)); unknown values are null.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.pcie import parse_lspci
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_lspci': as_filter('parse_lspci', parse_lspci)}
