# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: all_nics_measurements
short_description: The aggregate and pause-rate figures of the test plan's all-NICs run
version_added: 0.1.0
description:
  - Takes the all-NICs run of P(gpufleet.netval.test_plan#filter) (C(runs.all_nics[0]), with its C(batch)), the registered results
    of its three perftest calls (servers started with O(gpufleet.netval.perftest#module:sessions), every client at once with
    O(gpufleet.netval.perftest#module:concurrent)) and the node's counter snapshots of
    M(gpufleet.netval.nic_info) before and after, and returns the aggregate figure and one pause-frame rate per node netdev.
  - A session whose server did not start or whose client failed is named in the aggregate's error; nothing planned is dropped.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The all-NICs run.
    type: dict
    required: true
  servers:
    description: The registered result of the server start.
    type: dict
    required: true
  clients:
    description: The registered result of the client run (empty when no server started).
    type: dict
    required: true
  before:
    description: The node's M(gpufleet.netval.nic_info) result with counters, taken before the clients ran.
    type: dict
  after:
    description: The same, taken after the clients finished.
    type: dict
  peer:
    description: The peer the measurements were taken against.
    type: str
'''

EXAMPLES = r'''
- name: Record the aggregate and the pause-frame rates
  ansible.builtin.set_fact:
    measurements: >-
      {{ measurements + (plan.runs.all_nics[0] | gpufleet.netval.all_nics_measurements(started, ran, before, after, 'peer01')) }}
'''

RETURN = r'''
_value:
  description: The measurements, the aggregate first.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import CatalogueError
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import all_nics_measurements


def _all_nics_measurements(run, servers, clients, before=None, after=None, peer=None):
    try:
        return all_nics_measurements(run, servers, clients, before, after, peer)
    except (CatalogueError, ValueError, KeyError, TypeError) as exc:
        raise AnsibleFilterError('all_nics_measurements: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'all_nics_measurements': _all_nics_measurements}
