# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_nvidia_smi
short_description: Parse nvidia-smi -q -x (XML) or nvidia-smi -q (text) into per-GPU health facts
version_added: 0.1.0
description:
  - Text starting with C(<) is read as C(nvidia-smi -q -x); anything else as the text query C(nvidia-smi -q)
    (also C(-q -d ECC) or C(-q -d PAGE_RETIRED), which print only some sections).
  - Returns the driver and CUDA versions, C(gpu_count) (attached GPUs as the driver reports them) and one record per GPU
    with its bus id, name, UUID, serial, PCIe generation and width, ECC mode and counters, retired pages, remapped rows,
    temperature, power draw and active clock throttle reasons.
  - Values printed as N/A are null (unknown), never 0.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(nvidia-smi -q -x) or C(nvidia-smi -q).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Query the GPUs
  ansible.builtin.command: nvidia-smi -q -x
  register: smi
  changed_when: false

- name: No GPU may have a pending row remap
  ansible.builtin.assert:
    that: >-
      (smi.stdout | gpufleet.netval.parse_nvidia_smi).gpus
      | map(attribute='remapped_rows.pending') | select('equalto', true) | list | length == 0
'''

RETURN = r'''
_value:
  description:
    - C(driver_version), C(cuda_version), C(timestamp), C(gpu_count), C(gpu_count_mismatch) and C(gpus), a list of dicts with
      C(index), C(bus_id), C(bus_id_raw), C(name), C(uuid), C(serial), C(persistence_mode), C(mig_mode_current), C(pcie),
      C(ecc_mode_current), C(ecc_mode_pending), C(ecc_errors) (C(volatile) and C(aggregate)), C(retired_pages), C(remapped_rows),
      C(temperature_c), C(power_draw_w) (the instant reading where the driver prints instant and average), C(power_average_w)
      and C(clocks_throttle_reasons).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.nvidia import parse_nvidia_smi
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_nvidia_smi': as_filter('parse_nvidia_smi', parse_nvidia_smi)}
