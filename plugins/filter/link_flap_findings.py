# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: link_flap_findings
short_description: Findings for link flaps and PCIe AER errors seen in the kernel log during validation
version_added: 0.1.0
description:
  - A port that goes down and up during validation is a reject on its own; corrected AER errors are marginal, uncorrected ones reject;
    a fatal GPU Xid during validation is a reject, an application's Xid information.
  - With O(since_epoch) (the window's start read on the node), events whose journal time is before it never count, whatever the
    node's time zone.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: A gpu_info result read with C(kernel_log=true) since the tests began.
    type: dict
    required: true
  since_epoch:
    description: The start of the test window on the node's clock, in seconds since the epoch.
    type: int
'''

EXAMPLES = r'''
- name: Link events during the tests
  ansible.builtin.set_fact:
    flaps: "{{ kernel_since_start | gpufleet.netval.link_flap_findings(netval_run.tests_started) }}"
'''

RETURN = r'''
_value:
  description: Findings with C(check) link_flap, pcie_aer or gpu_xid.
  type: list
  elements: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import link_flap_findings


class FilterModule(object):
    def filters(self):
        return {'link_flap_findings': link_flap_findings}
