# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: gpudirect
short_description: How GPUDirect RDMA runs on a node, from its preflight reads
version_added: 0.1.0
description:
  - Decides the node's GPUDirect mode from preflight_info's reads (gpu_info C(gdr_support), host_tuning_info C(modules))
    C(peermem) (nvidia_peermem loaded), C(dmabuf) (the open GPU kernel modules and a perftest with C(--use_cuda_dmabuf)) or
    C(none) (with C(reason), what to install or load).
  - Returns the decision with C(perftest) (the perftest options of the node's GPUDirect end - C(use_cuda_dmabuf),
    C(cuda_device_order), C(by_bus_id), C(ready_timeout) from the profile's C(tests.gdr.server_ready_timeout)) and
    C(gpu_bus_ids) (nvidia-smi index to PCI address, to name a GPU by C(--use_cuda_bus_id)).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: preflight_info's C(reads).
    type: dict
    required: true
  profile:
    description: The node's resolved tier profile.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: The node's GPUDirect end
  ansible.builtin.set_fact:
    node_gdr: "{{ preflight_reads.reads | gpufleet.netval.gpudirect(tier_profile_resolved) }}"
'''

RETURN = r'''
_value:
  description: "{mode, reason, peermem_loaded, open_kernel_module, driver_version, perftest_tool, cuda_bus_id, cuda_dmabuf,
    needs_peermem, perftest, gpu_bus_ids}"
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.gpudirect import node_gpudirect


class FilterModule(object):
    def filters(self):
        return {'gpudirect': node_gpudirect}
