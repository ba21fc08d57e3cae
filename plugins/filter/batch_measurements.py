# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: batch_measurements
short_description: The measurements of one perftest batch of the test plan
version_added: 0.1.0
description:
  - Takes a batch of P(gpufleet.netval.test_plan#filter) (C(batches)) and the registered results of its three perftest calls
    (servers started with O(gpufleet.netval.perftest#module:sessions), clients run in turn) and returns one measurement per
    planned run, read from its client entry, else from its server entry when that server did not start, else from the
    failed call; nothing planned is dropped.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The batch.
    type: dict
    required: true
  servers:
    description: The registered result of the batch's server start.
    type: dict
    required: true
  clients:
    description: The registered result of the batch's client run (empty when no server started).
    type: dict
    required: true
  peer:
    description: The peer the measurements were taken against.
    type: str
'''

EXAMPLES = r'''
- name: Record a batch's measurements
  ansible.builtin.set_fact:
    measurements: "{{ measurements + (batch | gpufleet.netval.batch_measurements(started, ran, 'peer01')) }}"
'''

RETURN = r'''
_value:
  description: The measurements.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import CatalogueError
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import batch_measurements


def _batch_measurements(batch, servers, clients, peer=None):
    try:
        return batch_measurements(batch, servers, clients, peer)
    except (CatalogueError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('batch_measurements: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'batch_measurements': _batch_measurements}
