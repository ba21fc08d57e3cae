# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: drift_current
short_description: Build a node's current state from a drift capture, in the baseline's shape
version_added: 0.1.0
description:
  - Returns the same document as P(gpufleet.netval.netval_baseline#filter) (C(kind) current) from the info modules' results
    of a drift capture, with no figures, for P(gpufleet.netval.drift_findings#filter).
  - "Capture with M(gpufleet.netval.rdma_info) C(counters=true) and M(gpufleet.netval.nic_info) C(counters=true) so port and NIC
    counters can be judged, and M(gpufleet.netval.gpu_info) C(kernel_log=true) with C(since) the baseline's time, so every Xid
    in the capture is new since the baseline."
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description:
      - The capture, C(rdma), C(pcie), C(nic), C(firmware), C(gpu) and C(host), each an info module's result, as the preflight facts are.
    type: dict
    required: true
  node:
    description: The node's name (C(inventory_hostname)).
    type: str
    required: true
  timestamp:
    description: When the capture was taken, a run stamp such as C(20261202T030000Z), an ISO time or seconds since the epoch.
    type: raw
    required: true
  profile:
    description: The node's resolved tier profile (C(tier_profile_resolved)); its device counts mark missing devices.
    type: dict
  ethtool_stats:
    description: Optional C(ethtool -S) counters per netdev, as for P(gpufleet.netval.netval_baseline#filter).
    type: dict
'''

EXAMPLES = r'''
- name: The node's state now
  ansible.builtin.set_fact:
    drift_state: >-
      {{ {'rdma': cap_rdma, 'pcie': cap_pcie, 'nic': cap_nic, 'firmware': cap_fw, 'gpu': cap_gpu, 'host': cap_host}
         | gpufleet.netval.drift_current(inventory_hostname, netval_run_timestamp, tier_profile_resolved) }}
'''

RETURN = r'''
_value:
  description: A baseline-shaped document with C(kind) current and an empty C(figures) list.
  type: dict
'''

from ansible.errors import AnsibleFilterError, AnsibleUndefinedVariable
from jinja2 import Undefined

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.baseline import BaselineError, current_state


def drift_current(facts, node, timestamp, profile=None, ethtool_stats=None):
    # An undefined argument is the caller's undefined variable (say so as one), not a bad value.
    for name, value in (('facts', facts), ('node', node), ('timestamp', timestamp), ('profile', profile)):
        if isinstance(value, Undefined):
            raise AnsibleUndefinedVariable('drift_current: %s is undefined' % name)
    try:
        return current_state(facts, node, timestamp, profile, ethtool_stats)
    except BaselineError as exc:
        raise AnsibleFilterError('drift_current: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'drift_current': drift_current}
