# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: compute_rails
short_description: The compute rails among a box's RDMA ports
version_added: 0.1.0
description:
  - From an rdma_info result and the tier profile's C(nics.select) (link layer, rate of Active ports, netdev pattern), or the
    box's explicit device list, says which RDMA ports are the box's compute rails and why the others are not.
  - Storage, in-band and front-end ports are never rails under a selector that names the rails' rate or netdevs; a port that
    is not Active shows a placeholder rate, so only preflight's count of Active rails decides whether one is missing.
  - The rails come in the devices' natural order (mlx5_2 before mlx5_10), never re-ordered by whether a port has an address.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: An rdma_info result (C(devices), C(live_ports)).
    type: dict
    required: true
  profile:
    description: The resolved tier profile; its C(nics.select) chooses the rails.
    type: dict
    required: true
  devices:
    description: The box's rails by RDMA device name (inventory C(netval_rdma_devices)); wins over the profile's selector.
    type: list
    elements: str
    default: []
  host:
    description: The box's host_tuning_info result; each rail then carries the CPUs of its NIC's NUMA node (C(local_cpus)).
    type: dict
'''

EXAMPLES = r'''
- name: The node's rails, the peer's rails
  ansible.builtin.set_fact:
    node_rails: "{{ node_rdma | gpufleet.netval.compute_rails(tier_profile_resolved, netval_rdma_devices | default([])) }}"
    peer_rails: "{{ peer_rdma | gpufleet.netval.compute_rails(tier_profile_resolved, hostvars[peer].netval_rdma_devices | default([])) }}"
'''

RETURN = r'''
_value:
  description:
    - C(rails) (rdma_info C(live_ports) entries of the Active rails, with C(local_cpus) when O(host) is given), C(ports) (every
      port with C(selected) and C(why) it is not a rail), C(devices) (the devices with a rail port), C(netdevs) (the rails'
      netdevs) and C(select) (the selector used).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import rails


def compute_rails(rdma, profile, devices=None, host=None):
    if not isinstance(rdma, dict):
        raise AnsibleFilterError('compute_rails: the input must be an rdma_info result (a dict with devices), got %r' % (rdma,))
    if devices is not None and (not isinstance(devices, list) or not all(isinstance(d, str) for d in devices)):
        raise AnsibleFilterError('compute_rails: devices (netval_rdma_devices) must be a list of RDMA device names, got %r' % (devices,))
    select = rails.rail_selector(profile, devices or None)
    errors = rails.selector_errors(select)
    if errors:
        raise AnsibleFilterError('compute_rails: %s' % '; '.join(errors))
    selection = rails.select_rails(rdma, select)
    return rails.with_local_cpus(selection, host) if isinstance(host, dict) else selection


class FilterModule(object):
    def filters(self):
        return {'compute_rails': compute_rails}
