# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: measurement
short_description: Turn a test module's result into a gradeable measurement
version_added: 0.1.0
description:
  - Converts a registered result of perftest, iperf3, jumbo_ping, nccl_tests, dcgmi_diag or a pair of nic_info counter snapshots
    into measurement dicts (C(id), C(metric), C(subject), C(value) in the threshold's unit, C(as_printed), C(verbatim) raw lines, C(cmd), C(error)).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The registered module result (a list of results for C(aggregate_bw); C({before, after}) for C(pause_rate)).
    type: raw
    required: true
  kind:
    description: One of perftest_bw, perftest_lat, iperf3, ping_loss, ping_rtt, aggregate_bw, pause_rate, nccl, dcgmi.
    type: str
    required: true
  subject:
    description: What was measured (an HCA name, a peer address, C(all NICs)).
    type: str
    required: true
  metric:
    description: The threshold name in the tier profile, such as C(ib_send_bw_gbs).
    type: str
    required: true
  peer:
    description: The peer the measurement was taken against.
    type: str
  multi:
    description: Always return a list.
    type: bool
    default: false
  at_bytes:
    description: For C(nccl), the message size whose row is graded.
    type: int
'''

EXAMPLES = r'''
- name: Record a perftest client result
  ansible.builtin.set_fact:
    measurements: "{{ measurements + [client | gpufleet.netval.measurement('perftest_bw', 'mlx5_0', 'ib_send_bw_gbs', 'peer01')] }}"
'''

RETURN = r'''
_value:
  description: One measurement dict, or a list of them.
  type: raw
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.measurements import measurement


def _measurement(result, kind, subject, metric, peer=None, multi=False, at_bytes=None):
    try:
        return measurement(result, kind, subject, metric, peer, multi=multi, at_bytes=at_bytes)
    except ValueError as exc:
        raise AnsibleFilterError('measurement: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'measurement': _measurement}
