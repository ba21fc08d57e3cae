# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: nccl_outcome
short_description: The result a node's NCCL figures are read from, when its launch may have failed before nccl-tests ran
version_added: 0.2.0
description:
  - Takes the registered results of the NCCL test's steps in order (the launcher's check on the node and on the peer, the
    launcher's key, the peer's trust, the node's session check, nccl-tests) and returns the first that failed, or else the
    last that ran. A launch that failed on our side (C(launcher_missing), C(launcher_unreachable), ...) so gives every NCCL
    figure that failure, with its class and side, instead of a figure that was never measured.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The steps' registered results, in the order they ran (skipped ones are passed over).
    type: list
    elements: dict
    required: true
'''

EXAMPLES = r'''
- name: Record the NCCL measurements
  ansible.builtin.set_fact:
    tier_tests_measurements: >-
      {{ tier_tests_measurements + ([launcher_node, launcher_peer, nccl] | gpufleet.netval.nccl_outcome
                                    | gpufleet.netval.run_measurements(tier_tests_plan.runs.nccl[0], netval_peer_host)) }}
'''

RETURN = r'''
_value:
  description: The first failed step's result (its C(error_class) set, or failed, or unreachable), else the last one that ran.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import nccl_outcome


class FilterModule(object):
    def filters(self):
        return {'nccl_outcome': nccl_outcome}
