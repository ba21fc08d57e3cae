# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: node_sku
short_description: The SKU of a node (its GPU and RDMA NIC models), from its preflight facts
version_added: 0.1.0
description:
  - One text naming the node's GPU models (gpu_info) and RDMA NIC models (rdma_info's HCA type and board id), for example
    C(NVIDIA H100 80GB HBM3 / MT4129 MT_0000000838); null when the preflight read neither.
  - The verdict role keeps it in the node's result as C(sku). The run's report compares each node's figures only with those
    of nodes of the same tier and SKU (batch-relative grading, C(fleet_rules)); an accepted node's baseline gives the same
    text from the same models.
  - A missing GPU or NIC does not change it (models, not counts), so a node with a fault stays among its siblings.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The preflight facts (C(preflight_facts)).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Keep the node's SKU with its verdict
  ansible.builtin.set_fact:
    node_sku: "{{ preflight_facts | gpufleet.netval.node_sku }}"
'''

RETURN = r'''
_value:
  description: The SKU text, or null when neither GPUs nor RDMA NICs were read.
  type: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.fleet import sku_from_facts


class FilterModule(object):
    def filters(self):
        return {'node_sku': sku_from_facts}
