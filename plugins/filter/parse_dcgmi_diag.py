# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_dcgmi_diag
short_description: Parse the result of dcgmi diag (JSON or text table)
version_added: 0.1.0
description:
  - Reads the C(-j) JSON of DCGM 3.x (C(DCGM GPU Diagnostic)) and 4.x (C(DCGM Diagnostic), per-entity results, or C(tests) at
    the top level), or the text table C(dcgmi diag) prints without C(-j).
  - Statuses are normalised to C(pass), C(warn), C(fail) and C(skip) (C(Not Run) is a skip).
  - A text table cut before its closing border is C(truncated); its overall result is then null unless a failure was seen.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The output of C(dcgmi diag).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: List the GPUs that failed a saved diagnostic
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'dcgmi_diag.json') | gpufleet.netval.parse_dcgmi_diag).gpus_failed }}"
'''

RETURN = r'''
_value:
  description:
    - C(tests) (C(category), C(name), C(status), C(overall), C(per_gpu) keyed by GPU id as a string with C(status), C(messages),
      C(error_ids), C(messages) and C(all_gpus)), C(failed_tests), C(warned_tests), C(skipped_tests), C(gpus_failed), C(gpus_warned),
      C(overall), C(version), C(driver_version), C(gpu_device_ids), C(gpus_in_run), C(format), C(truncated) and C(runtime_error).
    - A text row such as C(Fail - All) sets C(all_gpus) and gives that status to every GPU of C(gpus_in_run), the GPUs the
      table itself names or lists; C(gpus_in_run) is null when it names none.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.dcgmi import parse_dcgmi_diag
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_dcgmi_diag': as_filter('parse_dcgmi_diag', parse_dcgmi_diag)}
