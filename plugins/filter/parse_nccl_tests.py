# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_nccl_tests
short_description: Parse the output of an nccl-tests benchmark (all_reduce_perf, all_gather_perf, ...)
version_added: 0.1.0
description:
  - Reads the result table of an nccl-tests C(*_perf) run, with or without C(NCCL_DEBUG=INFO) lines mixed in.
  - Returns the rows (time in us, algbw and busbw in decimal GB/s as printed, C(#wrong)), the average bus bandwidth,
    the out-of-bounds count, the transport NCCL used (C(IB) or C(Socket)) and whether GPU Direct RDMA was used.
  - A log holding two job headers (each rank ran its own job) is flagged with C(multiple_jobs); its top-level rows are then null.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The output of the nccl-tests run (stdout, optionally followed by stderr).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Grade a saved all_reduce_perf log
  ansible.builtin.set_fact:
    nccl_parsed: "{{ lookup('ansible.builtin.file', 'all_reduce_perf.log') | gpufleet.netval.parse_nccl_tests }}"

- name: Require NET/IB and at least 40 GB/s average bus bandwidth
  ansible.builtin.assert:
    that:
      - nccl_parsed.transport == 'IB'
      - nccl_parsed.avg_busbw_gbs >= 40
'''

RETURN = r'''
_value:
  description:
    - C(rows) (C(size_bytes), C(count), C(type), C(redop), C(root), C(oop_time_us), C(oop_algbw_gbs), C(oop_busbw_gbs), C(oop_wrong),
      C(ip_time_us), C(ip_algbw_gbs), C(ip_busbw_gbs), C(ip_wrong), C(wrong)), C(avg_busbw_gbs), C(out_of_bounds), C(transport),
      C(gdr), C(nccl_version), C(ranks), C(net_devices), C(ib_hcas), C(socket_ifaces), C(channels), C(multiple_jobs), C(jobs),
      C(errors) and C(truncated).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.nccl import parse_nccl_tests
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_nccl_tests': as_filter('parse_nccl_tests', parse_nccl_tests)}
