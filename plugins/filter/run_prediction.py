# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: run_prediction
short_description: The predicted wall time of a validation run, before its tests start
version_added: 0.1.0
description:
  - Plays the run's work queue forward from every node's plan seconds (P(gpufleet.netval.plan_seconds#filter)) - each node
    takes, of the healthy peers it may use, the one that frees first; its peer-independent tests fill the wait or follow -
    and adds the fixed costs per node and per run.
  - With the cost C(parallel_nodes) (how many nodes' orchestration the controller carries at full speed) or O(forks), the
    smaller of the two as parallel_nodes, the fixed costs of N nodes stretch by N / parallel_nodes and the calls of the
    nodes that hold peers at once by their number / parallel_nodes (never below once); the durations never stretch.
  - A node that will take no peer (its run record's C(tests_skipped), blocked in preflight; or no record, its run broke) costs only its fixed time.
  - Never fails the run - costs it cannot use give C(error) instead of a prediction.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The play's hosts as hostvars (C(netval_run), the run record with its C(plan_seconds), C(healthy_peers) and C(tests_skipped); C(netval_peer)).
    type: list
    elements: dict
    required: true
  costs:
    description: The costs, as for P(gpufleet.netval.plan_seconds#filter).
    type: dict
    required: true
  local_while_waiting:
    description: Whether the peer-independent tests fill the wait (validate.yml's C(netval_local_tests_while_waiting)).
    type: bool
    default: true
  forks:
    description: Ansible's forks (C(ansible_forks)); no more nodes than this are ever worked on at once, so it caps C(parallel_nodes).
    type: int
'''

EXAMPLES = r'''
- name: Predict the run
  ansible.builtin.set_fact:
    netval_run_prediction: "{{ ansible_play_hosts | map('extract', hostvars) | list | gpufleet.netval.run_prediction(validate_prediction_costs) }}"
  run_once: true
'''

RETURN = r'''
_value:
  description:
    - C(predicted_s) (the whole run), C(tests_s) (from the first peer test to the last test), C(peers), C(rounds),
      C(waiting_nodes), C(load) (C(parallel_nodes), C(fixed_factor) and C(queue_factor), how much load stretches the fixed
      costs and the calls), and C(nodes) - per node C(peer) (the one it is predicted to take), C(peer_s), C(local_s),
      C(start_s) and C(end_s) (seconds from the start of the tests); C(error) alone when there is no prediction.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.prediction import run_prediction


class FilterModule(object):
    def filters(self):
        return {'run_prediction': run_prediction}
