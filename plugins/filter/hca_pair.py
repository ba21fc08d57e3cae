# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: hca_pair
short_description: Pair a node's live RDMA port with a peer's, and with the node's NUMA-local GPU
version_added: 0.1.0
description:
  - Takes a C([node_port, peer_port]) pair (as produced by C(zip) over two C(live_ports) lists of rdma_info) and returns
    the device names, ports and GID indexes of both ends plus the GPU paired with the node's NIC by gpu_info.
  - Each box keeps its own device name, so a two-box RoCE pair whose live port is named differently on each box works.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: A two-element list, the node's live port and the peer's live port.
    type: list
    required: true
  gpu_pairs:
    description: gpu_info's C(gpu_nic_pairs).
    type: list
    elements: dict
    default: []
'''

EXAMPLES = r'''
- name: Pair HCAs
  ansible.builtin.set_fact:
    pairs: "{{ node_rdma.live_ports | zip(peer_rdma.live_ports) | map('gpufleet.netval.hca_pair', gpu.gpu_nic_pairs) | list }}"
'''

RETURN = r'''
_value:
  description: C(device), C(port), C(netdev), C(gid_index), C(peer_device), C(peer_port), C(peer_gid_index), C(gpu).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.measurements import hca_pair


class FilterModule(object):
    def filters(self):
        return {'hca_pair': hca_pair}
