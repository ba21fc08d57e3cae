# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: plan_seconds
short_description: How long one node's tier tests take, from its test plan
version_added: 0.1.0
description:
  - Plans the node's tier tests (as P(gpufleet.netval.test_plan#filter) would against a peer like the node) and adds them up
    into the seconds the node holds a peer and the seconds of its peer-independent tests - every session's duration (the
    typical time of one the profile gives no duration) plus the cost of the module calls that start, run and stop them.
  - Never fails the node - a plan or costs it cannot use give zero seconds and an C(error) naming why.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's resolved tier profile.
    type: dict
    required: true
  live_ports:
    description: The node's live RDMA ports (rdma_info's C(live_ports)).
    type: list
    elements: dict
    required: true
  gpu_pairs:
    description: The node's GPU-NIC pairs (gpu_info's C(gpu_nic_pairs)).
    type: list
    elements: dict
    required: true
  options:
    description: Plan options, as for P(gpufleet.netval.test_plan#filter) (C(duration_override) matters here).
    type: dict
    required: true
  costs:
    description:
      - C(call_s) (one module call), C(session_s) (set-up of one session), C(node_fixed_s), C(run_fixed_s) and C(untimed_s)
        (typical seconds per module, dcgmi_diag by level), as in C(playbooks/vars/prediction.yml).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: How long this node's tests take
  ansible.builtin.set_fact:
    node_plan_seconds: >-
      {{ tier_profile_resolved | gpufleet.netval.plan_seconds(preflight_facts.rdma.live_ports, preflight_facts.gpu.gpu_nic_pairs,
                                                              {'duration_override': 0}, validate_prediction_costs) }}
'''

RETURN = r'''
_value:
  description:
    - C(peer_s), C(local_s) (seconds), C(calls), C(sessions) and C(peer_overhead_s) (the calls and session set-ups within
      C(peer_s), what load stretches); C(error) when the node has no prediction.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.prediction import node_plan_seconds


class FilterModule(object):
    def filters(self):
        return {'plan_seconds': node_plan_seconds}
