# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_nvidia_smi_topo
short_description: Parse the GPU/NIC matrix of nvidia-smi topo -m
version_added: 0.1.0
description:
  - Reads C(nvidia-smi topo -m) into the column names, the link matrix, the per-GPU CPU/NUMA affinity and the NIC legend.
  - Links are as printed, C(X) for self, C(NV#) for NVLink, C(PIX), C(PXB), C(PHB), C(NODE) or C(SYS).
  - A row cut short keeps only the columns it has; N/A affinity values are null.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(nvidia-smi topo -m).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Read the topology
  ansible.builtin.command: nvidia-smi topo -m
  register: topo_out
  changed_when: false

- name: GPU0 must sit behind the same PCIe switch as NIC0
  ansible.builtin.assert:
    that: (topo_out.stdout | gpufleet.netval.parse_nvidia_smi_topo).matrix.GPU0.NIC0 == 'PIX'
'''

RETURN = r'''
_value:
  description:
    - C(devices) (column names in order), C(matrix) (row -> column -> link), C(affinity) (GPU -> C(cpu_affinity),
      C(numa_affinity), C(gpu_numa_id)) and C(nic_legend) (NIC0 -> RDMA device name such as mlx5_0).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.nvidia import parse_nvidia_smi_topo
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_nvidia_smi_topo': as_filter('parse_nvidia_smi_topo', parse_nvidia_smi_topo)}
