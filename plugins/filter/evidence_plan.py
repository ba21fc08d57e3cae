# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: evidence_plan
short_description: Plan a node's evidence beyond the fixed checklist
version_added: 0.1.0
description:
  - From a node result, its profile and its preflight facts, lists the per-netdev ethtool commands, per-device flint, mlxconfig
    and lspci commands, mlxlink for every NIC whose RDMA result was marginal or rejected, and the files to store
    (results, thresholds, preflight facts and every test's raw output).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node result (netval_node_result).
    type: dict
    required: true
  profile:
    description: The resolved tier profile (thresholds used).
    type: dict
    required: true
  facts:
    description: The preflight facts (netval_preflight_facts).
    type: dict
    required: true
  procfs_root:
    description: Root of procfs on the node; C(/proc/...) paths are read under it.
    type: str
    default: /proc
  paths:
    description: Files to copy into the bundle.
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Plan evidence
  ansible.builtin.set_fact:
    plan: "{{ netval_node_result | gpufleet.netval.evidence_plan(netval_profile, netval_preflight_facts, '/proc', ['/proc/cmdline']) }}"
'''

RETURN = r'''
_value:
  description: C(commands) (name, argv), C(files) (relative path to content) and C(paths).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.evidence import evidence_plan


class FilterModule(object):
    def filters(self):
        return {'evidence_plan': evidence_plan}
