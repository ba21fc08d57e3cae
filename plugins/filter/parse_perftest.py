# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_perftest
short_description: Parse the output of a perftest run (ib_write_bw, ib_send_lat...)
version_added: 0.1.0
description:
  - Reads the header, the result table and any error of one perftest bandwidth or latency run, client or server side.
  - Bandwidth rows keep the figure perftest printed and add decimal Gb/s and GB/s; perftest C(MB/sec) and C(MiB/sec) both mean 2^20 bytes per second.
  - A peak perftest did not measure (duration mode prints C(0.00)) is returned as null, not zero.
  - Failures are classified in C(error_class) with operator advice in C(error_hint).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text perftest printed (stdout and stderr together).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Check a perftest log kept in an evidence bundle
  ansible.builtin.assert:
    that: >-
      (lookup('ansible.builtin.file', 'ib_write_bw.log') | gpufleet.netval.parse_perftest).results
      | map(attribute='bw_avg_gbps') | max >= 350
'''

RETURN = r'''
_value:
  description:
    - C(test), C(kind) (C(bw) or C(lat)), C(device), C(link_type), C(gid_index), C(mtu), C(bw_unit), C(results) (one row per message size),
      C(error_class), C(error_hint), C(error_text), the other header fields, C(warnings) and C(sections) (one per header/table in the text,
      so server and client output captured together are kept apart).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.perftest import parse_perftest
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_perftest': as_filter('parse_perftest', parse_perftest)}
