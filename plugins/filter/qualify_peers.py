# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: qualify_peers
short_description: Qualify the known-good peers before they measure anyone
version_added: 0.1.0
description:
  - Takes the C(results) of preflight_info looped over the known-good peers (delegated to each, run once) and grades each
    peer's reads as preflight grades a node of the given tier (its RDMA ports Active at the tier's rate and enough of them,
    its PCIe links, its firmware, and its GPUs where the tier runs NCCL).
  - Returns per peer C(qualified), C(reasons) (why not, for a peer that could not be reached, whose reads failed, or whose checks
    are marginal or reject), C(notes) (what could not be read there) and C(checked).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The C(results) of the looped preflight_info.
    type: list
    elements: dict
    required: true
  profile:
    description: The node's resolved tier profile.
    type: dict
    required: true
  devices:
    description:
      - Per peer, its compute rails by RDMA device name (the peer's inventory C(netval_rdma_devices)); a peer without an
        entry has its rails chosen by the profile's C(nics.select), as a node's are.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Qualify the peers for this node's tier
  ansible.builtin.set_fact:
    peer_qualification: "{{ peer_reads.results | gpufleet.netval.qualify_peers(tier_profile_resolved) }}"

- name: The same, where a peer names its own rails (netval_rdma_devices)
  ansible.builtin.set_fact:
    peer_qualification: >-
      {{ peer_reads.results | gpufleet.netval.qualify_peers(tier_profile_resolved,
                                                            {'peer01': ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_5']}) }}
'''

RETURN = r'''
_value:
  description: "{peer: {qualified, reasons, notes, checked}}"
  type: dict
'''

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import qualify_peers
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import preflight_errors


def _qualify_peers(results, profile, devices=None):
    errors = preflight_errors(profile)
    if devices is not None and not isinstance(devices, Mapping):
        errors.append('devices must map a peer to its RDMA device names (netval_rdma_devices), got %r' % (devices,))
    for peer, names in sorted((devices or {}).items() if isinstance(devices, Mapping) else []):
        if names is not None and (isinstance(names, (str, bytes)) or not isinstance(names, Sequence)):
            errors.append('devices[%s] (its netval_rdma_devices) must be a list of RDMA device names, got %r' % (peer, names))
    if errors:
        raise AnsibleFilterError('qualify_peers: %s' % '; '.join(errors))
    return qualify_peers(results, profile, devices)


class FilterModule(object):
    def filters(self):
        return {'qualify_peers': _qualify_peers}
