# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_kernel_log
short_description: Find GPU, NIC link and PCIe AER events in dmesg or journalctl -k text
version_added: 0.1.0
description:
  - Reads kernel log text as printed by C(dmesg) (plain or C(--ctime)), C(journalctl -k) (default or C(-o short-iso)) or syslog.
  - Returns NVIDIA Xid events (code, bus id, pid), NVSwitch SXid events, GPUs fallen off the bus, thermal events,
    NIC link and cable module events, PCIe AER errors and PCIe link bandwidth/hotplug lines.
  - An empty log gives empty lists; whether the log could be read at all is for the caller to say.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The kernel log text.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Read the kernel log
  ansible.builtin.command: journalctl -k -o short-iso --no-pager --since=-1h
  register: klog
  changed_when: false
  become: true

- name: No GPU may have fallen off the bus
  ansible.builtin.assert:
    that: (klog.stdout | gpufleet.netval.parse_kernel_log).fallen_off_bus | length == 0
'''

RETURN = r'''
_value:
  description:
    - C(xid), C(sxid), C(fallen_off_bus), C(thermal), C(link_events), C(aer), C(pcie_link_changes) (lists of dicts, each with
      C(time) and C(line)) and C(line_count).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_kernel_log': as_filter('parse_kernel_log', parse_kernel_log)}
