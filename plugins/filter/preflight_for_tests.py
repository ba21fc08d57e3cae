# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: preflight_for_tests
short_description: The part of a node's preflight facts that its tests and verdict read
version_added: 0.1.0
description:
  - From preflight_info's reads, the keys validate.yml's tests play reads after preflight - C(rdma.devices),
    C(rdma.live_ports), C(gpu.gpus), C(gpu.gpu_nic_pairs), C(gpu.gdr_support) and C(host.modules) - as they were. The
    pass's plan, the GPUDirect mode, the NCCL launcher's rails and the verdict's SKU come out the same from them.
  - The preflight role with C(preflight_packed_reads) (validate.yml) keeps this part as the node's C(preflight_facts) for
    the rest of the run, and the whole reads packed as the node sent them (preflight_info's C(packed)) for the evidence
    bundle, so that the controller's main process, which every task forks, holds a fraction of them per node.
  - A section that is not a dict (a read that gave nothing) is kept as it was; one that is absent stays absent.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The preflight facts (C(preflight_facts), preflight_info's C(reads)).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Keep what the tests read of the node's preflight facts, and the whole reads packed for the evidence
  ansible.builtin.set_fact:
    node_preflight_packed: "{{ preflight_facts | gpufleet.netval.to_packed_json }}"
    preflight_facts: "{{ preflight_facts | gpufleet.netval.preflight_for_tests }}"
'''

RETURN = r'''
_value:
  description: "{rdma: {devices, live_ports}, gpu: {gpus, gpu_nic_pairs, gdr_support}, host: {modules}}, the keys the reads had."
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import facts_for_tests


class FilterModule(object):
    def filters(self):
        return {'preflight_for_tests': facts_for_tests}
