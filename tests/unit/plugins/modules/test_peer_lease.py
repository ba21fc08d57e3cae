"""peer_lease: one node per known-good peer, a work queue over the peers, and the one failure shape.

Every case runs twice: as the module (plugins/modules/peer_lease.py) and as the action plugin that plays run in the
controller's worker (plugins/action/peer_lease.py); both must give the same results and leave the same lease files.
"""
import os
from unittest import mock

import pytest

from ansible_collections.gpufleet.netval.plugins.action import peer_lease as peer_lease_action
from ansible_collections.gpufleet.netval.plugins.module_utils import lease_renewer
from ansible_collections.gpufleet.netval.plugins.modules import peer_lease
from tests.redis_server import RedisServer
from tests.unit.plugins.modules.utils import run_module

RENEWERS = []


@pytest.fixture(autouse=True)
def no_renewer_process(monkeypatch):
    """The action starts the run's renewer (a detached process) after each lease it takes: recorded here instead."""
    del RENEWERS[:]
    monkeypatch.setattr(lease_renewer, 'ensure', lambda *args, **kwargs: RENEWERS.append(args))


def run_action(task_args, check_mode=False):
    """The action plugin's result for ``task_args`` as a play would give them (``_ansible_check_mode`` sets check mode)."""
    task_args = dict(task_args)
    task = mock.MagicMock(async_val=0, check_mode=check_mode or bool(task_args.pop('_ansible_check_mode', False)), args=task_args)
    action = peer_lease_action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                            shared_loader_obj=None)
    result = action.run(task_vars={})
    return result, bool(result.get('failed'))


@pytest.fixture(params=['module', 'action'])
def call(request):
    if request.param == 'module':
        return lambda task_args, check_mode=False: run_module(peer_lease.main, task_args, check_mode=check_mode)
    return run_action


RUN = '20261201T000000Z'


def args(tmp_path, node, **extra):
    base = {'peers': ['peer01', 'peer02'], 'node': node, 'run': RUN, 'lease_dir': str(tmp_path / 'leases'), 'wait': 1}
    base.update(extra)
    return base


def test_each_node_gets_the_next_free_peer_and_a_third_waits_then_fails_on_our_side(tmp_path, call):
    first, failed = call(args(tmp_path, 'node01'))
    assert not failed and first['peer'] == 'peer01' and first['changed'] and first['error_class'] is None
    second, failed = call(args(tmp_path, 'node02'))
    assert not failed and second['peer'] == 'peer02'
    third, failed = call(args(tmp_path, 'node03'))
    assert failed and third['error_class'] == 'peer_busy' and third['error_side'] == 'ours' and third['waited_s'] >= 1
    assert 'peer01, peer02' in third['msg'] and 'node03' in third['msg'] and third['in_pool'] == 2  # busy, not gone: queue again
    released, failed = call(args(tmp_path, 'node01', state='released', peers=['peer01']))
    assert not failed and released['released'] and released['changed']
    again, failed = call(args(tmp_path, 'node03'))
    assert not failed and again['peer'] == 'peer01'


def test_releasing_a_lease_another_node_holds_changes_nothing(tmp_path, call):
    call(args(tmp_path, 'node01'))
    result, failed = call(args(tmp_path, 'node02', state='released', peers=['peer01']))
    assert not failed and not result['released'] and not result['changed']
    assert os.path.exists(str(tmp_path / 'leases' / 'peer01.lease'))


def test_check_mode_takes_nothing(tmp_path, call):
    result, failed = call(args(tmp_path, 'node01'), check_mode=True)
    assert not failed and result['peer'] == 'peer01' and not result['changed']
    assert not os.path.exists(str(tmp_path / 'leases'))


def test_bad_options_fail_before_any_lease_is_touched(tmp_path, call):
    result, failed = call(args(tmp_path, 'node01', lease_dir='leases', ttl=0))
    assert failed and result['error_class'] == 'invalid_options' and 'lease_dir' in result['msg'] and 'ttl' in result['msg']
    result, failed = call(args(tmp_path, 'node01', peers=[]))
    assert failed and 'peers must name at least one peer' in result['msg']


def test_wait_zero_takes_a_free_peer_or_says_busy_at_once(tmp_path, call):
    first, failed = call(args(tmp_path, 'node01', wait=0, peers=['peer01']))
    assert not failed and first['peer'] == 'peer01' and first['waited_s'] < 0.5
    busy, failed = call(args(tmp_path, 'node02', wait=0, peers=['peer01']))
    assert failed and busy['error_class'] == 'peer_busy' and busy['peer'] is None and busy['waited_s'] < 0.5
    negative, failed = call(args(tmp_path, 'node02', wait=-1, peers=['peer01']))
    assert failed and 'wait must be a finite number of seconds, from 0 to' in negative['msg']


def test_a_peer_that_went_away_leaves_the_pool_at_once_and_the_first_record_stands(tmp_path, call):
    lost, failed = call(args(tmp_path, 'node01', state='lost', peers=['peer01'], step='the clients of ib_send_bw:0',
                             detail='known-good peer peer01 went away during the clients of ib_send_bw:0: refused'))
    assert not failed and lost['changed'] and lost['lost'][0]['node'] == 'node01' and lost['lost'][0]['step'] == 'the clients of ib_send_bw:0'
    again, failed = call(args(tmp_path, 'node02', state='lost', peers=['peer01'], detail='later'))
    assert not failed and again['lost'][0]['node'] == 'node01'  # the first node to see it go names it
    taken, failed = call(args(tmp_path, 'node03'))
    assert not failed and taken['peer'] == 'peer02' and [e['peer'] for e in taken['lost']] == ['peer01']
    call(args(tmp_path, 'node03', state='released', peers=['peer02']))
    call(args(tmp_path, 'node01', state='lost', peers=['peer02'], detail='gone too'))
    none, failed = call(args(tmp_path, 'node04', wait=5))
    assert failed and none['error_class'] == 'peer_busy' and none['error_side'] == 'ours' and none['waited_s'] < 1
    assert 'left the pool' in none['msg'] and 'peer01 (went away while node01 was tested on it)' in none['msg']
    assert none['in_pool'] == 0  # nothing to queue for
    other_run, failed = call(args(tmp_path, 'node04', run='20261202T000000Z'))
    assert not failed and other_run['peer'] == 'peer01'  # a peer lost in one run is back in the next


def test_a_lost_record_refuses_a_detail_with_newlines(tmp_path, call):
    result, failed = call(args(tmp_path, 'node01', state='lost', peers=['peer01'], detail='a\nb'))
    assert failed and result['error_class'] == 'invalid_options' and 'detail' in result['msg']
    assert not os.path.exists(str(tmp_path / 'leases' / 'lost'))


def test_a_promoted_node_serves_the_nodes_that_grow_the_pool_and_says_so(tmp_path, call):
    busy = [call(args(tmp_path, node, peers=['peer01'])) for node in ('node02',)]
    assert not busy[0][1] and busy[0][0]['peer'] == 'peer01'
    check, failed = call(args(tmp_path, 'node01', state='promoted', peers=['peer01'], _ansible_check_mode=True))
    assert not failed and not check['changed'] and check['promoted'] == []
    promoted, failed = call(args(tmp_path, 'node01', state='promoted', peers=['peer01']))
    assert not failed and promoted['changed'] and [(r['node'], r['validated_by']) for r in promoted['promoted']] == [('node01', 'peer01')]
    plain, failed = call(args(tmp_path, 'node03', peers=['peer01'], wait=0))
    assert failed and plain['error_class'] == 'peer_busy'   # without grow the pool is the known-good peers alone
    grown, failed = call(args(tmp_path, 'node03', peers=['peer01'], wait=0, grow=True))
    assert not failed and grown['peer'] == 'node01' and grown['promoted_peer'] is True
    again, failed = call(args(tmp_path, 'node04', peers=['peer01'], wait=0, grow=True))
    assert failed and again['error_class'] == 'peer_busy' and 'node04' in again['msg']


def test_the_action_plugin_refuses_unknown_or_mistyped_options_in_the_one_failure_shape(tmp_path):
    result, failed = run_action(args(tmp_path, 'node01', wait='soon', colour='blue'))
    assert failed and result['error_class'] == 'invalid_options' and result['error_side'] == 'ours'
    assert "argument 'wait'" in result['msg'] and 'colour' in result['msg']
    assert not os.path.exists(str(tmp_path / 'leases'))


def test_the_action_starts_the_runs_renewer_after_each_lease_it_takes_and_the_module_does_not(tmp_path, call):
    taken, failed = call(args(tmp_path, 'node01', ttl=90))
    assert not failed and taken['deadline'] > taken['acquired_at'] + 89
    busy, failed = call(args(tmp_path, 'node02', peers=['peer01'], wait=0))
    assert failed and busy['error_class'] == 'peer_busy'
    call(args(tmp_path, 'node03'), check_mode=True)
    expected = [(str(tmp_path / 'leases'), '', '20261201T000000Z', 90)] if call is run_action else []
    assert RENEWERS == expected


def test_a_backend_that_is_not_a_redis_url_is_refused_and_its_password_never_shown(tmp_path, call):
    result, failed = call(args(tmp_path, 'node01', backend='http://user:secret@redis.example/'))
    assert failed and result['error_class'] == 'invalid_options' and 'backend' in result['msg'] and 'secret' not in result['msg']


def test_two_controllers_sharing_a_redis_never_lease_one_peer_to_two_nodes(tmp_path, call):
    """Each controller has its own lease folder (an AWX job's container); only the Redis is shared."""
    with RedisServer(tmp_path / 'redis') as server:
        first, failed = call(args(tmp_path / 'a', 'node01', backend=server.url, run='20261201T000000Z-aaaaaaaa'))
        assert not failed and first['peer'] == 'peer01'
        second, failed = call(args(tmp_path / 'b', 'node02', backend=server.url, run='20261201T000000Z-bbbbbbbb'))
        assert not failed and second['peer'] == 'peer02'
        third, failed = call(args(tmp_path / 'c', 'node03', backend=server.url, run='20261201T000000Z-cccccccc', wait=0))
        assert failed and third['error_class'] == 'peer_busy' and third['in_pool'] == 2
        released, failed = call(args(tmp_path / 'b', 'node02', backend=server.url, run='20261201T000000Z-bbbbbbbb', state='released',
                                     peers=['peer02']))
        assert not failed and released['released']
        again, failed = call(args(tmp_path / 'c', 'node03', backend=server.url, run='20261201T000000Z-cccccccc', wait=0))
        assert not failed and again['peer'] == 'peer02'
        assert not os.path.exists(str(tmp_path / 'a' / 'leases' / 'peer01.lease'))  # the lease is in the Redis, not the folder
