# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: loop_measurements
short_description: One measurement per result of a looped test task
version_added: 0.1.0
description:
  - Like C(gpufleet.netval.measurement), for the C(results) of a registered loop; each measurement's subject is the
    C(device) found along the result's C(item) chain (the HCA the iteration tested).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The C(results) list of a registered loop.
    type: list
    elements: dict
    required: true
  kind:
    description: The measurement kind, as for C(gpufleet.netval.measurement).
    type: str
    required: true
  metric:
    description: The threshold name in the tier profile.
    type: str
    required: true
  peer:
    description: The peer the measurements were taken against.
    type: str
'''

EXAMPLES = r'''
- name: Record per-HCA results
  ansible.builtin.set_fact:
    measurements: "{{ measurements + clients.results | gpufleet.netval.loop_measurements('perftest_bw', 'ib_send_bw_gbs', 'peer01') }}"
'''

RETURN = r'''
_value:
  description: The measurements.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.measurements import loop_measurements


def _loop_measurements(results, kind, metric, peer=None):
    try:
        return loop_measurements(results, kind, metric, peer)
    except ValueError as exc:
        raise AnsibleFilterError('loop_measurements: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'loop_measurements': _loop_measurements}
