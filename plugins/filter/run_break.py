# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: run_break
short_description: A node's verdict once its run broke (unreachable, a task that failed, a crash of our own code)
version_added: 0.1.0
description:
  - Takes the node's verdict, or null when the run broke before it had one, and returns the verdict that says where and
    why the run broke, so that the node keeps its place in every report instead of vanishing from it.
  - With a verdict, what was measured stays as it was graded; a C(run_incomplete) finding (status unknown) is added and its
    cause is named first, so the node cannot be accepted. Without one, the node gets bucket B with the cause
    C(run_incomplete) alone. Neither is ever held against the node (never bucket C on its own).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's verdict (C(verdict_node_result)), or null.
    type: dict
    required: true
  where:
    description: Where the run broke, for example C(preflight) and the task's name.
    type: str
    required: true
  why:
    description: What Ansible or our code said (the failed task's message).
    type: str
    required: true
  node:
    description: The node's inventory name (for a node without a verdict).
    type: str
    required: true
  tier:
    description: The node's tier, when known.
    type: str
    required: false
'''

EXAMPLES = r'''
- name: Record where the node's run broke
  ansible.builtin.set_fact:
    verdict_node_result: >-
      {{ verdict_node_result | default(none) | gpufleet.netval.run_break('evidence: ' + ansible_failed_task.name,
                                                                          ansible_failed_result.msg, inventory_hostname, netval_tier) }}
'''

RETURN = r'''
_value:
  description: The verdict with C(run_incomplete) ({where, why}), its finding and its cause, bucket and counts taken again.
  type: dict
'''

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import verdict


def run_break(result, where, why, node, tier=None):
    if result is None or result == '':
        return verdict.incomplete_verdict(str(node), where, why, tier=None if tier is None else str(tier))
    if not isinstance(result, Mapping):
        raise AnsibleFilterError('run_break: expected the node\'s verdict (a mapping) or null, got %r' % (result,))
    return verdict.with_run_break(dict(result), where, why)


class FilterModule(object):
    def filters(self):
        return {'run_break': run_break}
