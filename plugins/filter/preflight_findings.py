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
  devices:
    description:
      - The node's compute rails by RDMA device name (inventory C(netval_rdma_devices)); empty lets the profile's
        C(nics.select) (link layer, rate, netdev pattern) choose them.
      - Only the rails are graded; every other RDMA port is an C(info) finding (C(rail_selection)), recorded and never held
        against the node.
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Grade preflight facts
  ansible.builtin.set_fact:
    findings: "{{ {'rdma': rdma_result, 'host': host_result} | gpufleet.netval.preflight_findings(netval_profile) }}"

- name: Grade only the rails the inventory names
  ansible.builtin.set_fact:
    findings: "{{ node_reads | gpufleet.netval.preflight_findings(netval_profile, ['mlx5_0', 'mlx5_1']) }}"
'''

RETURN = r'''
_value:
  description: The findings.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import preflight_errors, preflight_findings


def _preflight_findings(facts, profile, devices=None):
    errors = preflight_errors(profile)
    if devices is not None and (not isinstance(devices, list) or not all(isinstance(d, str) for d in devices)):
        errors.append('devices (netval_rdma_devices) must be a list of RDMA device names, got %r' % (devices,))
    if errors:
        raise AnsibleFilterError('preflight_findings: %s' % '; '.join(errors))
    return preflight_findings(facts or {}, profile, devices or None)


class FilterModule(object):
    def filters(self):
        return {'preflight_findings': _preflight_findings}
