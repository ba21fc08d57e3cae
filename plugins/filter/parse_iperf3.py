# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_iperf3
short_description: Parse iperf3 output, JSON (-J) or text
version_added: 0.1.0
description:
  - Reads the output of an iperf3 client or server, either C(iperf3 -J) JSON or the text summary
    (old C(Bandwidth) and new C(Bitrate) columns, C([SUM]) lines, UDP jitter and loss).
  - The received rate is taken from the receiver's side; a server's own empty sender line is reported as unknown (null).
  - Rates are bits per second, decimal (C(Gbits/sec) = 1e9); the text figures as printed are kept in C(sent_printed) and C(received_printed).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The output of iperf3.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Check an iperf3 run captured in an evidence bundle
  ansible.builtin.assert:
    that: (lookup('ansible.builtin.file', 'iperf3_client.json') | gpufleet.netval.parse_iperf3).received_bps > 90e9
'''

RETURN = r'''
_value:
  description:
    - C(sent_bps), C(received_bps), C(retransmits), C(lost_percent), C(protocol), C(streams), C(per_stream), C(intervals),
      C(min_interval_bps), C(duration_s), C(cpu), C(reverse), C(role), C(error) and the printed figures; unknown values are null.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.iperf3 import parse_iperf3
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_iperf3': as_filter('parse_iperf3', parse_iperf3)}
