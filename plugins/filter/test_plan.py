# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: test_plan
short_description: The concrete tier-test runs of one node against its peer
version_added: 0.1.0
description:
  - From the resolved tier profile, the node's and the peer's live RDMA ports and the node's GPU-NIC pairing, computes every
    run the enabled tests make, in run order, with its HCA pair, GPU, TCP port, duration and timeout, and the list of every
    figure the tests must produce (C(expected)), with the reason for any the plan already knows it cannot measure.
  - Ports never collide across test kinds, nor across nodes that share a peer (each node owns a block selected by C(slot)).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The resolved tier profile (C(tier_profile_resolved)).
    type: dict
    required: true
  node_ports:
    description: The node's rdma_info C(live_ports).
    type: list
    elements: dict
    required: true
  peer_ports:
    description: The peer's rdma_info C(live_ports).
    type: list
    elements: dict
    required: true
  gpu_pairs:
    description: gpu_info's C(gpu_nic_pairs) of the node.
    type: list
    elements: dict
    default: []
  options:
    description:
      - C(slot), C(perftest_port_base), C(iperf3_port_base), C(ports_per_node), C(duration_override), C(timeout_margin),
        C(retest_only), C(retest_tests), C(peer_address), C(node_address).
      - C(phase) V(all) (default), V(peer) (only the tests that need a peer, run under its lease) or V(local) (only those that
        do not, such as dcgmi diag, run while the node waits for a peer or after it gave it back; C(peer_ports) may be empty).
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Plan the node's tests
  ansible.builtin.set_fact:
    plan: "{{ tier_profile_resolved | gpufleet.netval.test_plan(node_rdma.live_ports, peer_rdma.live_ports, gpu.gpu_nic_pairs, {'slot': 0}) }}"
'''

RETURN = r'''
_value:
  description:
    - C(tests) (names in run order), C(runs) (test name to its runs), C(perftest_tests) (one-HCA-at-a-time perftest tests),
      C(perftest_batches) (those tests' batches in run order, each with its C(test) and, when the profile repeats it, C(repeat)),
      C(expected) (C(id), C(metric), C(subject), C(test), C(reason)) and C(pairs).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import CatalogueError
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.plan import PlanError, tier_test_plan


def _test_plan(profile, node_ports, peer_ports, gpu_pairs=None, options=None):
    try:
        return tier_test_plan(profile, node_ports, peer_ports, gpu_pairs, options)
    except (CatalogueError, PlanError) as exc:
        raise AnsibleFilterError('test_plan: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'test_plan': _test_plan}
