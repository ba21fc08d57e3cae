# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: run_measurements
short_description: The measurements of one test-plan run from its module result
version_added: 0.1.0
description:
  - Converts the registered result of the module that ran one run of P(gpufleet.netval.test_plan#filter) into measurement
    dicts, read as the test catalogue says for the run's test (unit, reader, subject).
  - For the all-NIC test the input is C({clients, before, after}), the concurrent clients' results and the two nic_info
    counter snapshots; it gives the aggregate and one pause-frame rate per RDMA netdev.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The registered module result.
    type: raw
    required: true
  run:
    description: The planned run.
    type: dict
    required: true
  peer:
    description: The peer the measurement was taken against.
    type: str
  end:
    description: Where the module ran - V(node), V(peer), or the run's V(client) or V(server) end.
    type: str
    default: node
'''

EXAMPLES = r'''
- name: Record the iperf3 measurement
  ansible.builtin.set_fact:
    measurements: "{{ measurements + (iperf3_result | gpufleet.netval.run_measurements(plan.runs.iperf3[0], 'peer01')) }}"
'''

RETURN = r'''
_value:
  description: The measurements.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import CatalogueError
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import run_measurements


def _run_measurements(result, run, peer=None, end=None):
    try:
        return run_measurements(result, run, peer, end)
    except (CatalogueError, ValueError) as exc:
        raise AnsibleFilterError('run_measurements: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'run_measurements': _run_measurements}
