# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: preflight_findings
short_description: Compare a node's inventory facts with its tier profile
version_added: 0.1.0
description:
  - Turns the results of rdma_info, pcie_info, nic_info, mlx_fw_info, gpu_info and host_tuning_info into preflight findings
    (check, subject, status healthy/marginal/reject/unknown, expected, actual, detail, blocking, verbatim).
  - A blocking finding (GPUs missing, ports down, RDMA modules missing) means throughput tests would give meaningless numbers.
  - The checks the profile's C(preflight) mapping configures (hugepages on the cmdline, NIC firmware per model, GPU memory wear)
    take their expectation and severity from it; a malformed entry fails the filter with a message naming it.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: Module results keyed C(rdma), C(pcie), C(nic), C(firmware), C(gpu), C(host); missing keys are skipped.
    type: dict
    required: true
  profile:
    description: The resolved tier profile (C(netval_profile)).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Grade preflight facts
  ansible.builtin.set_fact:
    findings: "{{ {'rdma': rdma_result, 'host': host_result} | gpufleet.netval.preflight_findings(netval_profile) }}"
'''

RETURN = r'''
_value:
  description: The findings.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import preflight_errors, preflight_findings


def _preflight_findings(facts, profile):
    errors = preflight_errors(profile)
    if errors:
        raise AnsibleFilterError('preflight_findings: %s' % '; '.join(errors))
    return preflight_findings(facts or {}, profile)


class FilterModule(object):
    def filters(self):
        return {'preflight_findings': _preflight_findings}
