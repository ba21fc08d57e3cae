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
    O(figures), each naming the peer HCA it ran on as C(peer_device)); a peer one of whose HCAs O(suspect_limit) different
    nodes of one run failed on leaves the pool for the rest of that run (O(state=acquired) never takes it again, and returns it
    in RV(excluded)), unless it is the last peer of O(peers) still there (suspicion never empties the pool).
  - With O(state=lost) it records that the peer went away (unreachable) while this node was tested on it, with O(step) and
    O(detail); the peer leaves the pool for the rest of the run at once (O(state=acquired) never takes it again and returns
    it in RV(lost)), and the node is rescheduled on another peer by the playbook.
  - With O(state=promoted) it records that this node, accepted in the run with every test healthy against the peer in O(peers),
    may serve the run's later nodes as a peer (C(netval_promote_accepted)); O(state=acquired) with O(grow=true) then also takes
    such nodes, after O(peers), for as long as it waits (the pool grows at run time). A promoted node leaves the pool like any
    peer when suspected or gone.
  - A lease names the node and the run that hold it (O(run), unique to one C(ansible-playbook) run) and a renewal deadline,
    O(ttl) seconds after it was taken or last renewed. While the run's C(ansible-playbook) lives, its renewer (one detached
    process per run on the controller, started by the first lease the run takes) renews every lease the run holds, four
    times per O(ttl); a lease past its deadline has lapsed and is taken over, a live one never. Nothing about the holder is
    a process, so a lease means the same to runs on several controllers or AWX jobs that share the lease store.
  - Where the leases live, O(backend) - V('') (the default), one file per peer in O(lease_dir), changed under the peer's
    C(flock); C(redis://) or C(rediss://) URLs, one key per peer in a Redis that every controller sharing the peers
    reaches, expiring on the server's clock. The run's records (suspects, peers gone, promoted nodes) stay in O(lease_dir).
  - "Runs on the controller: C(delegate_to: localhost). Its action plugin does the work inside the controller's worker
    process (no module process is started for it) and starts the run's renewer; run as a module, a lease is not renewed
    and lapses after O(ttl) seconds."
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
        O(state=promoted), the peer that validated this node (one); with O(state=suspected), the suspected peer first, then the
        run's other known-good peers (whether it is the last one standing).
    type: list
    elements: str
    required: true
  node:
    description: The node that takes the lease.
    type: str
    required: true
  run:
    description:
      - The run's identity, unique to one C(ansible-playbook) run (validate.yml uses its UTC timestamp and a random suffix), so
        the holder of the run's leases, renewed by the run's renewer; a lease of another run of the same node is not ours.
    type: str
    required: true
  lease_dir:
    description:
      - Folder on the controller of the run's records (suspects, peers gone, promoted nodes), of the run's renewer lock and,
        with the default O(backend), of the lease files; every run that shares the peers through the folder must use the same one.
    type: path
    required: true
  backend:
    description:
      - Where the leases live. V('') keeps them in O(lease_dir). A C(redis://[[user]:password@]host[:port][/db]) URL
        (C(rediss://) for TLS) keeps them in that Redis, shared by every controller and AWX job that uses the same URL.
    type: str
    default: ''
  ttl:
    description:
      - Seconds a lease lives without a renewal, which is how long after its run's C(ansible-playbook) is gone (a crash, a kill, the end of
        a job's container) other runs may take the peer.
    type: int
    default: 120
  wait:
    description:
      - Seconds to try for a free peer before answering RV(error_class=peer_busy); while it tries, the task holds its worker.
        validate.yml's tests play runs under ansible.builtin.host_pinned (no more nodes in it than forks), so a waiting node holds
        only its own worker.
      - V(0) tries once and fails at once with RV(error_class=peer_busy) when every peer is taken (validate.yml's look for a free
        peer before the node's peer-independent tests fill the wait).
    type: int
    default: 86400
  suspect_limit:
    description: How many different nodes of one run must fail on the same HCA of a peer before it leaves the pool; V(0) keeps every peer.
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
    run: "{{ netval_run_timestamp }}-{{ netval_run_nonce }}"
    lease_dir: /var/lib/netval/leases
    backend: "redis://:{{ netval_redis_password }}@redis.example:6379/0"
    wait: 30
  delegate_to: localhost
  register: lease

- name: Give the peer back
  gpufleet.netval.peer_lease:
    state: released
    peers: ["{{ lease.peer }}"]
    node: "{{ inventory_hostname }}"
    run: "{{ netval_run_timestamp }}-{{ netval_run_nonce }}"
    lease_dir: /var/lib/netval/leases
    backend: "redis://:{{ netval_redis_password }}@redis.example:6379/0"
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
deadline:
  description: When the lease lapses unless renewed (seconds since the epoch).
  returned: when a lease was taken
  type: float
in_pool:
  description:
    - With O(state=acquired), how many peers are still in the pool (not suspected out, not gone). V(0) with no RV(peer)
      means waiting longer cannot help; more with no RV(peer) means every one was busy for O(wait) seconds.
  returned: when state is acquired
  type: int
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
  description:
    - C(peer_busy) when no peer freed within O(wait) or every peer left the pool (RV(in_pool)), C(lease_error) when the lease
      folder or the backend is unusable; null on success.
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.netval.plugins.module_utils import lease_task, validate


def main():
    # The action plugin of the same name runs lease_task in the controller's worker; this runs it as a module.
    module = AnsibleModule(argument_spec=lease_task.ARGUMENT_SPEC, supports_check_mode=True)
    validate.finish(module, lease_task.run(module.params, module.check_mode))


if __name__ == '__main__':
    main()
