# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One peer_lease task: its options, their checks and its result, whoever runs it.

The action plugin (plugins/action/peer_lease.py) runs it inside the
controller's worker process, with no module process of its own; the module
(plugins/modules/peer_lease.py) runs the same function where it is executed as
a module.  ``run`` returns the task's result: ``failed: true`` and ``msg`` on
failure, in the one failure shape of the collection.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils import lease, lease_redis, validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname

STATES = ('acquired', 'released', 'suspected', 'lost', 'promoted')

ARGUMENT_SPEC = dict(
    state=dict(type='str', default='acquired', choices=list(STATES)),
    peers=dict(type='list', elements='str', required=True),
    node=dict(type='str', required=True),
    run=dict(type='str', required=True),
    lease_dir=dict(type='path', required=True),
    # A redis:// URL may carry a password.
    backend=dict(type='str', default='', no_log=True),
    ttl=dict(type='int', default=120),
    wait=dict(type='int', default=86400),
    suspect_limit=dict(type='int', default=2),
    figures=dict(type='list', elements='dict', default=[]),
    step=dict(type='str', default=''),
    detail=dict(type='str', default=''),
    grow=dict(type='bool', default=False),
)

# Every state's result carries these, so a task registered under any state reads the same keys.
_NOTHING = dict(waited_s=0.0, released=False)


def problems(params):
    """Sentences for every option that cannot be used (after the argument spec's own type checks)."""
    found = validate.control_characters(params)
    found += validate.problems_of([validate.check_path_component('node', params['node']),
                                   validate.check_path_component('run', params['run']),
                                   validate.check_timeout('ttl', params['ttl'], maximum=7 * 86400),
                                   validate.check_timeout('wait', params['wait'], maximum=7 * 86400, allow_zero=True)]
                                  + [validate.check_path_component('peers[%d]' % i, p) for i, p in enumerate(params['peers'])])
    if not params['lease_dir'].startswith('/'):
        found.append('lease_dir must be an absolute path, got %r' % params['lease_dir'])
    if not params['peers']:
        found.append('peers must name at least one peer')
    if params['backend'] and not params['backend'].startswith(('redis://', 'rediss://')):
        found.append("backend must be '' (the lease folder) or a redis:// or rediss:// URL, got %r" % lease_redis.redacted(params['backend']))
    return found


def _done(peer, changed=True, **fields):
    result = dict(_NOTHING, changed=changed, peer=peer, **SUCCESS)
    result.update(fields)
    return result


def _failed(msg, error_class, **fields):
    result = dict(_NOTHING, failed=True, msg=msg, peer=None, **failure(error_class))
    result.update(fields)
    return result


def _record(params, check_mode):
    """suspected, lost, promoted and released: one record in the lease folder (none in check mode)."""
    state, peer, folder, run, node = params['state'], params['peers'][0], params['lease_dir'], params['run'], params['node']
    if state == 'suspected':
        if check_mode:
            return _done(peer, changed=False, suspected_by=[], left_pool=False)
        nodes = lease.suspect(folder, peer, run, node, params['figures'])
        # It leaves only when one of its HCAs failed against several nodes, and never as the last peer standing.
        out, _gone = lease.left_pool(folder, params['peers'] or [peer], run, params['suspect_limit'])
        return _done(peer, suspected_by=nodes, left_pool=peer in out)
    if state == 'lost':
        if check_mode:
            return _done(peer, changed=False, lost=[])
        return _done(peer, lost=[lease.mark_lost(folder, peer, run, node, params['step'], params['detail'])])
    if state == 'promoted':
        if check_mode:
            return _done(peer, changed=False, promoted=[])
        lease.promote(folder, run, node, peer)
        return _done(peer, promoted=lease.promoted(folder, run))
    if check_mode:
        return _done(peer, changed=False)
    leases = lease.leases_for(folder, params['backend'])
    try:
        removed = leases.give_back(peer, {'node': node, 'run': run})
    finally:
        leases.close()
    return _done(peer, changed=removed, released=removed)


def _acquire(params, check_mode, keep_alive):
    peers, folder = params['peers'], params['lease_dir']
    holder = {'node': params['node'], 'run': params['run']}
    leases = lease.leases_for(folder, params['backend'])
    try:
        if check_mode:
            free = [p for p in peers if lease.lapsed(leases.read(p))]
            return _done((free or [None])[0], changed=False)
        taken, waited = lease.acquire(leases, folder, peers, holder, params['ttl'], params['wait'],
                                      suspect_limit=params['suspect_limit'], grow=params['grow'])
    finally:
        leases.close()
    if taken is not None and keep_alive is not None:
        keep_alive(folder, params['backend'], params['run'], params['ttl'])
    # What left the pool: of the known-good peers and of the nodes promoted meanwhile.
    pool = lease.pool(folder, peers, holder, params['grow'])
    out, gone = lease.left_pool(folder, pool, params['run'], params['suspect_limit'])
    left = [{'peer': peer, 'suspected_by': nodes} for peer, nodes in sorted(out.items())]
    gone_list = [gone[peer] for peer in sorted(gone)]
    waited = round(waited, 3)
    in_pool = len(set(pool) - set(out) - set(gone))
    if taken is None and not in_pool:
        reasons = ['%s (suspected by %s)' % (e['peer'], ', '.join(e['suspected_by'])) for e in left]
        reasons += ['%s (went away while %s was tested on it)' % (e['peer'], e.get('node')) for e in gone_list if e['peer'] not in out]
        return _failed('%s: every known-good peer of node %s left the pool this run: %s' % (hostname(), params['node'], '; '.join(reasons)),
                       'peer_busy', waited_s=waited, excluded=left, lost=gone_list, in_pool=0)
    if taken is None:
        return _failed('%s: no known-good peer of %s became free for node %s within %d s'
                       % (hostname(), ', '.join(pool), params['node'], params['wait']),
                       'peer_busy', waited_s=waited, excluded=left, lost=gone_list, in_pool=in_pool)
    return _done(taken['peer'], waited_s=waited, acquired_at=taken['acquired'], deadline=taken['deadline'], excluded=left,
                 lost=gone_list, promoted_peer=taken['peer'] not in peers, in_pool=in_pool)


def run(params, check_mode=False, keep_alive=None):
    """The result of one peer_lease task with ``params`` (already through ARGUMENT_SPEC): a dict, ``failed`` on failure.

    ``keep_alive(folder, backend, run, ttl)``, when given, is called after a lease was taken: the action plugin starts
    the run's renewer with it (lease_renewer.ensure); without it a lease lives ``ttl`` seconds.
    """
    found = problems(params)
    if found:
        return validate.invalid_result('peer_lease', found)
    try:
        if params['state'] == 'acquired':
            return _acquire(params, check_mode, keep_alive)
        return _record(params, check_mode)
    except lease.LeaseError as exc:
        return _failed('%s: peer_lease for node %s: %s' % (hostname(), params['node'], exc), 'lease_error')
