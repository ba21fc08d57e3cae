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
  - A port that goes down and up during validation is a reject on its own; corrected AER errors are marginal, uncorrected ones reject.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: A gpu_info result read with C(kernel_log=true) since the tests began.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Link events during the tests
  ansible.builtin.set_fact:
    flaps: "{{ kernel_since_start | gpufleet.netval.link_flap_findings }}"
'''

RETURN = r'''
_value:
  description: Findings with C(check) link_flap or pcie_aer.
  type: list
  elements: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import link_flap_findings


class FilterModule(object):
    def filters(self):
        return {'link_flap_findings': link_flap_findings}
