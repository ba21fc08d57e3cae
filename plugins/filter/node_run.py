# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: node_run
short_description: Move a node's run record on (the validation lifecycle), or ask it what the verdict grades
version_added: 0.1.0
description:
  - validate.yml keeps one fact per node, C(netval_run), the record of its run, and moves it on with this filter; the
    transitions and the record are module_utils/policy/node_run.py's, pure functions with table tests.
  - Transitions return the next record - C(new) (from nothing; O(args) C(node), C(tier), C(run)), C(place) (C(slot),
    C(candidates)), C(check_peers) (C(qualification), the peers graded by P(gpufleet.netval.qualify_peers#filter)),
    C(after_preflight) (C(blocking), C(check_mode), C(started),
    C(plan_seconds)), C(start_pass) (C(kind) peer, retest or local, C(peer), C(lease), C(retest_tests)), C(finish_pass)
    (C(outputs) - the tier_tests role's measurements, expected, findings, nccl_transport, peer_lost), C(read_kernel)
    (C(kernel_result)), C(break_run) (C(where), C(why), C(outputs)), C(keep_first_verdict) (C(verdict)), C(suspect)
    (C(verdict)), C(outputs_kept) (no arguments; once the evidence bundle holds them, the tools' whole outputs leave the record).
  - Queries return an answer - C(verdict_inputs) (what the verdict grades, merged from the passes), C(peers_left) (the
    healthy peers not taken yet), C(timeline) (every pass against a peer with its lease).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's run record (C(netval_run)); null for C(new).
    type: dict
    required: true
  transition:
    description: The transition or query.
    type: str
    required: true
  args:
    description: Its arguments, by name.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: A pass against the leased peer begins
  ansible.builtin.set_fact:
    netval_run: "{{ netval_run | gpufleet.netval.node_run('start_pass', {'kind': 'peer', 'peer': lease.peer, 'lease': lease}) }}"

- name: What the verdict grades
  ansible.builtin.debug:
    msg: "{{ netval_run | gpufleet.netval.node_run('verdict_inputs') }}"
'''

RETURN = r'''
_value:
  description: The next record, or the query's answer.
  type: raw
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import node_run
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_memory import plain_data


def node_run_filter(record, transition, args=None):
    # Plain data: the record's deep copies need dicts and lists, and every node keeps its record in the main process.
    try:
        return node_run.apply(plain_data(record), transition, plain_data(args or {}))
    except (node_run.NodeRunError, TypeError) as exc:
        raise AnsibleFilterError('node_run %s: %s' % (transition, exc))


class FilterModule(object):
    def filters(self):
        return {'node_run': node_run_filter}
