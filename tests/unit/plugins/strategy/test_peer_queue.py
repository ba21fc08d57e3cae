"""peer_queue: the tries for a peer lease hold at most netval_lease_waiters workers; the others wait in line without one,
in the order they asked, and every other task goes to a worker as under ansible.builtin.free."""
import queue
from types import SimpleNamespace
from unittest import mock

import pytest

from ansible.plugins.strategy import StrategyBase

from ansible_collections.gpufleet.netval.plugins.strategy import peer_queue


def task(name, action='gpufleet.netval.peer_lease', **args):
    return SimpleNamespace(action=action, args=args, _uuid=name)


def host(name):
    return SimpleNamespace(name=name)


TRY = dict(wait='{{ validate_lease_try.wait_s }}')


class Harness(object):
    """A peer_queue strategy over a fake task queue manager; what reached a worker is in ``started``."""

    def __init__(self, forks):
        self.callbacks = []
        self.started = []
        self.results = []
        tqm = mock.MagicMock()
        tqm._workers = [None] * forks
        tqm._final_q = queue.Queue()
        tqm.send_callback = lambda name, *args, **kwargs: self.callbacks.append((name, args[0].name))
        self.strategy = peer_queue.StrategyModule(tqm)

    def queue(self, who, what, task_vars=None):
        self.strategy._queue_task(host(who), what, task_vars or {}, None)

    def finish(self, who, what):
        self.results.append(SimpleNamespace(host=host(who), task=what))
        return self.strategy._process_pending_results(None)

    def close(self):
        self.strategy.cleanup()


@pytest.fixture
def harness():
    made = []

    def base_queue(strategy, host_, task_, task_vars, play_context):  # pylint: disable=unused-argument
        strategy._tqm.send_callback('v2_runner_on_start', host_, task_)
        made[0].started.append(host_.name)

    def base_results(strategy, iterator, one_pass=False, max_passes=None):  # pylint: disable=unused-argument
        found, made[0].results[:] = list(made[0].results), []
        return found

    with mock.patch.object(StrategyBase, '_queue_task', base_queue), mock.patch.object(StrategyBase, '_process_pending_results', base_results):
        def make(forks):
            made[:] = [Harness(forks)]
            return made[0]
        yield make
        if made:
            made[0].close()


def test_tries_beyond_the_allowed_wait_in_line_without_a_worker_and_start_in_the_order_they_asked(harness):
    run = harness(4)  # half the forks: two tries at once
    tries = dict((name, task('try-' + name, **TRY)) for name in ('node01', 'node02', 'node03', 'node04'))
    for name in sorted(tries):
        run.queue(name, tries[name])
    assert run.started == ['node01', 'node02']
    # Every try is seen to start once, when it asked: a timeline counts its time in line as the try's.
    assert run.callbacks == [('v2_runner_on_start', name) for name in sorted(tries)]
    run.queue('node05', task('tests of node01', action='gpufleet.netval.perftest'))
    assert run.started == ['node01', 'node02', 'node05']  # a holder's task never waits behind the tries
    run.finish('node02', tries['node02'])
    assert run.started[-1] == 'node03' and run.callbacks[-1] == ('v2_runner_on_start', 'node05')
    run.finish('node05', task('tests of node01', action='gpufleet.netval.perftest'))
    assert run.started[-1] == 'node03'  # another task's end frees no try's place
    run.finish('node01', tries['node01'])
    run.finish('node03', tries['node03'])
    assert run.started == ['node01', 'node02', 'node05', 'node03', 'node04']


def test_a_later_try_never_overtakes_one_already_in_line(harness):
    run = harness(2)  # one try at a time
    first, second, third = task('a', **TRY), task('b', **TRY), task('c', **TRY)
    run.queue('node01', first)
    run.queue('node02', second)
    run.finish('node01', first)
    run.queue('node03', third)
    assert run.started == ['node01', 'node02']
    run.finish('node02', second)
    assert run.started == ['node01', 'node02', 'node03']


@pytest.mark.parametrize('what, is_try', [
    (task('t', **TRY), True),
    (task('t', wait=30), True),
    (task('t', action='peer_lease', wait=5), True),
    (task('t'), True),                                   # the module's default wait
    (task('t', wait=0), False),                          # the look at once: never waits
    (task('t', state='released'), False),
    (task('t', state='promoted'), False),
    (task('t', action='ansible.builtin.wait_for', timeout=30), False),
])
def test_a_try_is_a_peer_lease_that_may_wait(what, is_try):
    assert peer_queue.is_lease_try(what) is is_try


@pytest.mark.parametrize('task_vars, forks, allowed', [
    ({}, 20, 10), ({}, 2, 1), ({}, 3, 1), ({}, 1, 1), ({'netval_lease_waiters': 4}, 20, 4),
    ({'netval_lease_waiters': '64'}, 20, 19), ({'netval_lease_waiters': 0}, 20, 1), ({'netval_lease_waiters': 'many'}, 20, 10),
])
def test_the_tries_hold_half_the_forks_or_netval_lease_waiters_never_all_of_them(task_vars, forks, allowed):
    assert peer_queue.waiters_allowed(task_vars, forks) == allowed
