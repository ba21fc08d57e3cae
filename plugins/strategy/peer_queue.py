# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: peer_queue
short_description: ansible.builtin.free, where the hosts that wait for a known-good peer take turns for a few workers
version_added: 0.1.0
description:
  - Runs like P(ansible.builtin.free#strategy) - each host goes on to its next task as soon as its last one ended - with one
    difference - the tries for a peer lease (M(gpufleet.netval.peer_lease) with O(gpufleet.netval.peer_lease#module:state=acquired)
    and a O(gpufleet.netval.peer_lease#module:wait) other than V(0)) run on at most C(netval_lease_waiters) hosts at once.
    The other hosts that want to try wait in line, in the order they asked, holding no worker; a try that ends lets the
    next one in line start.
  - Under P(ansible.builtin.free#strategy) a host whose task waits holds its worker for as long as it waits, and the host
    loop hands the next free worker to whichever host comes next in turn; with many hosts waiting for few peers, the hosts
    that hold the peers wait behind them for every task they run.  Here the waiting hosts never hold more than
    C(netval_lease_waiters) workers, so the holders always find one and forks bound the controller's work, not the fleet.
  - C(netval_lease_waiters) is read from the try's variables (an inventory or play variable); its default is half the
    forks, at least 1, and it is never more than the forks less one, so no forks >= 2 can deadlock.
  - The callbacks see a try start when it joins the line (V(v2_runner_on_start) is sent then, not again when a worker
    takes it), so a task timeline counts the time in line as the try's.
  - validate.yml's second play uses it; any play may.  It relies on the host loop of ansible-core 2.19 to 2.21.
author:
  - gpufleet.netval maintainers (@gpufleet)
'''

import collections

from ansible.plugins.strategy.free import StrategyModule as FreeStrategy

LEASE_ACTIONS = ('gpufleet.netval.peer_lease', 'peer_lease')


def is_lease_try(task):
    """Whether ``task`` tries for a peer lease and may wait (peer_lease, state acquired, a wait other than a literal 0)."""
    if task.action not in LEASE_ACTIONS:
        return False
    args = task.args or {}
    return args.get('state', 'acquired') == 'acquired' and str(args.get('wait', '')).strip() != '0'


def waiters_allowed(task_vars, forks):
    """How many tries may hold workers at once: netval_lease_waiters, else half the forks; 1 to forks - 1 (1 with one fork)."""
    wanted = task_vars.get('netval_lease_waiters')
    try:
        wanted = int(wanted) if wanted not in (None, '') else forks // 2
    except (TypeError, ValueError):
        wanted = forks // 2
    return max(1, min(wanted, forks - 1))


class StrategyModule(FreeStrategy):

    def __init__(self, tqm):
        super(StrategyModule, self).__init__(tqm)
        self._in_line = collections.deque()     # (host, task, task_vars, play_context, allowed), in the order they asked
        self._trying = set()                    # (host name, task uuid) of the tries a worker runs

    def _queue_task(self, host, task, task_vars, play_context):
        if not is_lease_try(task):
            return super(StrategyModule, self)._queue_task(host, task, task_vars, play_context)
        allowed = waiters_allowed(task_vars, len(self._workers))
        self._tqm.send_callback('v2_runner_on_start', host, task)
        if self._in_line or len(self._trying) >= allowed:
            # The host stays blocked (the free loop passes it by) and holds no worker until its turn.
            self._in_line.append((host, task, task_vars, play_context, allowed))
            return None
        return self._start_try(host, task, task_vars, play_context)

    def _start_try(self, host, task, task_vars, play_context):
        """Hand a try to a worker; its v2_runner_on_start was sent when it asked."""
        self._trying.add((host.name, task._uuid))
        send = self._tqm.send_callback
        own = 'send_callback' in vars(self._tqm)

        def without_start(name, *args, **kwargs):
            if name != 'v2_runner_on_start':
                send(name, *args, **kwargs)

        self._tqm.send_callback = without_start
        try:
            return super(StrategyModule, self)._queue_task(host, task, task_vars, play_context)
        finally:
            if own:
                self._tqm.send_callback = send
            else:
                del self._tqm.send_callback

    def _process_pending_results(self, iterator, one_pass=False, max_passes=None):
        results = super(StrategyModule, self)._process_pending_results(iterator, one_pass=one_pass, max_passes=max_passes)
        for result in results:
            self._trying.discard((result.host.name, result.task._uuid))
        while self._in_line and len(self._trying) < self._in_line[0][4]:
            host, task, task_vars, play_context, _allowed = self._in_line.popleft()
            self._start_try(host, task, task_vars, play_context)
        return results
