# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: promotable
short_description: Whether an accepted node may serve the run's later nodes as a known-good peer
version_added: 0.1.0
description:
  - Reads a node's result (the verdict role's C(verdict_node_result)). True when the node is accepted (bucket A) with every
    test and finding healthy (informational figures count as healthy), and was measured without a re-test or a suspicion
    of its peer; false otherwise, and for anything that is not a node result.
  - validate.yml promotes such a node with C(netval_promote_accepted=true) (M(gpufleet.netval.peer_lease) O(state=promoted)),
    so the pool of peers grows during the run.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's result.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Offer the accepted node as a peer to the nodes still waiting
  gpufleet.netval.peer_lease:
    state: promoted
    peers: ["{{ netval_peer_host }}"]
    node: "{{ inventory_hostname }}"
    run: "{{ netval_run_timestamp }}"
    lease_dir: /var/lib/netval/leases
  delegate_to: localhost
  when: netval_promote_accepted | bool and verdict_node_result | gpufleet.netval.promotable
'''

RETURN = r'''
_value:
  description: Whether the node may serve as a peer.
  type: bool
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.peer_policy import promotable


class FilterModule(object):
    def filters(self):
        return {'promotable': promotable}
