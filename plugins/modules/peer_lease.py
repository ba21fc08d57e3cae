#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: peer_lease
short_description: Take or give back exclusive use of a known-good peer for one node's tests
version_added: 0.1.0
description:
  - A known-good peer's HCAs carry one node's tests at a time; two nodes measured against one peer at once each see part of
    its bandwidth. With O(state=acquired) the module takes the lease of the first free peer of O(peers), in order, waiting
    up to O(wait) seconds while all are busy (a work queue - a node starts as soon as any of its peers frees).
    With O(state=released) it gives the lease back if this node holds it.
  - With O(state=suspected) it records that this node failed against the peer and passed against another (the figures in
    O(figures)); a peer that O(suspect_limit) nodes of one run suspect leaves the pool for the rest of that run (O(state=acquired)
    never takes it again, and returns it in RV(excluded)).
  - With O(state=lost) it records that the peer went away (unreachable) while this node was tested on it, with O(step) and
    O(detail); the peer leaves the pool for the rest of the run at once (O(state=acquired) never takes it again and returns
    it in RV(lost)), and the node is rescheduled on another peer by the playbook.
  - With O(state=promoted) it records that this node, accepted in the run with every test healthy against the peer in O(peers),
    may serve the run's later nodes as a peer (C(netval_promote_accepted)); O(state=acquired) with O(grow=true) then also takes
    such nodes, after O(peers), for as long as it waits (the pool grows at run time). A promoted node leaves the pool like any
    peer when suspected or gone.
  - A lease is a file in O(lease_dir) created atomically (C(O_EXCL)), naming the node, the run and the controller process
    that holds it (pid and start time). A lease past O(ttl) seconds, or whose controller process is gone, is stale and is
    taken over, so a crashed run never blocks a peer.
  - "Runs on the controller: C(delegate_to: localhost)."
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  state:
    description:
      - Take (V(acquired)) or give back (V(released)) the lease; record a suspect (V(suspected)), a peer gone (V(lost)) or this
        node as a peer for the rest of the run (V(promoted)).
    type: str
    choices: [acquired, released, suspected, lost, promoted]
    default: acquired
  peers:
    description:
      - With O(state=acquired), the peers to try in preference order; with O(state=released), the peer to release (one); with
        O(state=promoted), the peer that validated this node (one).
    type: list
    elements: str
    required: true
  node:
    description: The node that takes the lease.
    type: str
    required: true
  run:
    description: The run's identity (its UTC timestamp), so a lease of an earlier run of the same node is not mistaken for ours.
    type: str
    required: true
  lease_dir:
    description: Folder of the lease files on the controller; every run that shares the peers must use the same one.
    type: path
    required: true
  ttl:
    description: Seconds after which the lease expires even if its holder still lives (the node's planned peer time plus margin).
    type: int
    default: 3600
  wait:
    description:
      - Seconds to wait for a free peer before giving up.
      - V(0) tries once and fails at once with RV(error_class=peer_busy) when every peer is taken (validate.yml's look for a free
        peer before the node's peer-independent tests fill the wait).
    type: int
    default: 86400
  suspect_limit:
    description: How many nodes of one run must suspect a peer before it leaves the pool; V(0) keeps every peer.
    type: int
    default: 2
  figures:
    description: With O(state=suspected), the figures that make the peer suspect (first peer's and second peer's), kept with the record.
    type: list
    elements: dict
    default: []
  grow:
    description:
      - With O(state=acquired), also take the nodes this run promoted (O(state=promoted)), after O(peers) in the order they
        were promoted, never this node itself.
    type: bool
    default: false
  step:
    description: With O(state=lost), the step of the node's tests at which the peer stopped answering.
    type: str
    default: ''
  detail:
    description: With O(state=lost), what the controller saw (the connection error), kept with the record for the report.
    type: str
    default: ''
attributes:
  check_mode:
    description: In check mode no lease is taken or given back; the module reports which peer is free now.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Wait for a free known-good peer
  gpufleet.netval.peer_lease:
    peers: [peer01, peer02]
    node: "{{ inventory_hostname }}"
    run: "{{ netval_run_timestamp }}"
    lease_dir: /var/lib/netval/leases
    ttl: 1800
  delegate_to: localhost
  register: lease

- name: Give the peer back
  gpufleet.netval.peer_lease:
    state: released
    peers: ["{{ lease.peer }}"]
    node: "{{ inventory_hostname }}"
    run: "{{ netval_run_timestamp }}"
    lease_dir: /var/lib/netval/leases
  delegate_to: localhost
'''

RETURN = r'''
peer:
  description: The peer now leased to this node (V(acquired)), or the peer released; null when none was free in time.
  returned: always
  type: str
waited_s:
  description: Seconds spent waiting for a free peer.
  returned: always
  type: float
acquired_at:
  description: When the lease was taken (seconds since the epoch), for the report's timeline.
  returned: when a lease was taken
  type: float
released:
  description: With O(state=released), whether a lease of this node was removed.
  returned: always
  type: bool
excluded:
  description: With O(state=acquired), the peers of O(peers) that left the pool this run, each with the nodes that suspect it.
  returned: when state is acquired
  type: list
  elements: dict
  sample: [{peer: peer01, suspected_by: [node05, node07]}]
lost:
  description:
    - With O(state=acquired), the peers of O(peers) that went away mid-run this run; with O(state=lost), the record that stands
      (the first node to see a peer go names it).
  returned: when state is acquired or lost
  type: list
  elements: dict
  sample: [{peer: peer01, node: node03, step: start the servers of ib_send_bw, detail: "Failed to connect to the host via ssh"}]
suspected_by:
  description: With O(state=suspected), every node of this run that suspects the peer, this one included.
  returned: when state is suspected
  type: list
  elements: str
left_pool:
  description: With O(state=suspected), whether the peer has now left the pool for the rest of the run.
  returned: when state is suspected
  type: bool
promoted_peer:
  description: With O(state=acquired), whether the peer taken is a node this run promoted (O(grow)) rather than a known-good peer.
  returned: when a lease was taken
  type: bool
promoted:
  description: With O(state=promoted), every node this run has promoted so far, in order, each with the peer that validated it.
  returned: when state is promoted
  type: list
  elements: dict
  sample: [{node: node01, validated_by: peer01, run: 20261201T120000Z, at: 1796150000.0}]
error_class:
  description: C(peer_busy) when no peer freed within O(wait), C(lease_error) when the lease folder is unusable; null on success.
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class).
  returned: always
  type: str
error_side:
  description: C(ours) for both failure classes (never the node's fault); null on success.
  returned: always
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.netval.plugins.module_utils import lease, validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', default='acquired', choices=['acquired', 'released', 'suspected', 'lost', 'promoted']),
            peers=dict(type='list', elements='str', required=True),
            node=dict(type='str', required=True),
            run=dict(type='str', required=True),
            lease_dir=dict(type='path', required=True),
            ttl=dict(type='int', default=3600),
            wait=dict(type='int', default=86400),
            suspect_limit=dict(type='int', default=2),
            figures=dict(type='list', elements='dict', default=[]),
            step=dict(type='str', default=''),
            detail=dict(type='str', default=''),
            grow=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = validate.control_characters(params)
    problems += validate.problems_of([validate.check_path_component('node', params['node']),
                                      validate.check_path_component('run', params['run']),
                                      validate.check_timeout('ttl', params['ttl'], maximum=7 * 86400),
                                      validate.check_timeout('wait', params['wait'], maximum=7 * 86400, allow_zero=True)]
                                     + [validate.check_path_component('peers[%d]' % i, p) for i, p in enumerate(params['peers'])])
    if not params['lease_dir'].startswith('/'):
        problems.append('lease_dir must be an absolute path, got %r' % params['lease_dir'])
    if not params['peers']:
        problems.append('peers must name at least one peer')
    validate.fail_if_invalid(module, 'peer_lease', problems)
    holder = {'node': params['node'], 'run': params['run']}
    peers = params['peers']
    try:
        if params['state'] == 'suspected':
            if module.check_mode:
                module.exit_json(changed=False, peer=peers[0], waited_s=0.0, released=False, suspected_by=[], left_pool=False, **SUCCESS)
            nodes = lease.suspect(params['lease_dir'], peers[0], params['run'], params['node'], params['figures'])
            module.exit_json(changed=True, peer=peers[0], waited_s=0.0, released=False, suspected_by=nodes,
                             left_pool=bool(params['suspect_limit']) and len(nodes) >= params['suspect_limit'], **SUCCESS)
        if params['state'] == 'lost':
            if module.check_mode:
                module.exit_json(changed=False, peer=peers[0], waited_s=0.0, released=False, lost=[], **SUCCESS)
            record = lease.mark_lost(params['lease_dir'], peers[0], params['run'], params['node'], params['step'], params['detail'])
            module.exit_json(changed=True, peer=peers[0], waited_s=0.0, released=False, lost=[record], **SUCCESS)
        if params['state'] == 'promoted':
            if module.check_mode:
                module.exit_json(changed=False, peer=peers[0], waited_s=0.0, released=False, promoted=[], **SUCCESS)
            lease.promote(params['lease_dir'], params['run'], params['node'], peers[0])
            module.exit_json(changed=True, peer=peers[0], waited_s=0.0, released=False,
                             promoted=lease.promoted(params['lease_dir'], params['run']), **SUCCESS)
        if params['state'] == 'released':
            if module.check_mode:
                module.exit_json(changed=False, peer=peers[0], waited_s=0.0, released=False, **SUCCESS)
            removed = lease.release(params['lease_dir'], peers[0], holder)
            module.exit_json(changed=removed, peer=peers[0], waited_s=0.0, released=removed, **SUCCESS)
        if module.check_mode:
            free = [p for p in peers if lease.stale(lease.read(params['lease_dir'], p))] if os.path.isdir(params['lease_dir']) else peers
            module.exit_json(changed=False, peer=(free or [None])[0], waited_s=0.0, released=False, **SUCCESS)
        taken, waited = lease.acquire(params['lease_dir'], peers, holder, params['ttl'], params['wait'],
                                      suspect_limit=params['suspect_limit'], grow=params['grow'])
        # What left the pool: of the known-good peers and of the nodes promoted meanwhile.
        peers = lease.pool(params['lease_dir'], peers, holder, params['grow'])
        out = lease.excluded(params['lease_dir'], peers, params['run'], params['suspect_limit'])
        gone = lease.lost(params['lease_dir'], peers, params['run'])
    except lease.LeaseError as exc:
        module.fail_json(msg='%s: peer_lease for node %s: %s' % (hostname(), params['node'], exc), peer=None, waited_s=0.0,
                         released=False, **failure('lease_error'))
    left = [{'peer': peer, 'suspected_by': nodes} for peer, nodes in sorted(out.items())]
    gone_list = [gone[peer] for peer in sorted(gone)]
    if taken is None and len(set(out) | set(gone)) == len(set(peers)):
        reasons = ['%s (suspected by %s)' % (e['peer'], ', '.join(e['suspected_by'])) for e in left]
        reasons += ['%s (went away while %s was tested on it)' % (e['peer'], e.get('node')) for e in gone_list if e['peer'] not in out]
        module.fail_json(msg='%s: every known-good peer of node %s left the pool this run: %s' % (hostname(), params['node'], '; '.join(reasons)),
                         peer=None, waited_s=round(waited, 3), released=False, excluded=left, lost=gone_list, **failure('peer_busy'))
    if taken is None:
        module.fail_json(msg='%s: no known-good peer of %s became free for node %s within %d s'
                         % (hostname(), ', '.join(peers), params['node'], params['wait']),
                         peer=None, waited_s=round(waited, 3), released=False, excluded=left, lost=gone_list, **failure('peer_busy'))
    module.exit_json(changed=True, peer=taken['peer'], waited_s=round(waited, 3), acquired_at=taken['acquired'], released=False,
                     excluded=left, lost=gone_list, promoted_peer=taken['peer'] not in params['peers'], **SUCCESS)


if __name__ == '__main__':
    main()
