"""The run's prediction: a node's plan in seconds, the work queue over the peers, and predicted against actual."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import node_run, plan, prediction
from tests.unit import fixtures
from tests.unit.plugins.module_utils.test_plan import TIERS, batches_of, gpu_pairs_of, live_ports

with open(os.path.join(fixtures.ROOT, 'playbooks', 'vars', 'prediction.yml'), encoding='utf-8') as handle:
    COSTS = yaml.safe_load(handle)['validate_prediction_costs']


def seconds_400g(**options):
    node = live_ports(8)
    return prediction.node_plan_seconds(TIERS['400G'], node, gpu_pairs_of([p['device'] for p in node]), options, COSTS)


def test_a_400g_node_adds_up_its_sessions_and_calls_and_keeps_dcgmi_apart():
    made = plan.tier_test_plan(TIERS['400G'], live_ports(8), live_ports(8), gpu_pairs_of(['mlx5_%d' % i for i in range(8)]), {})
    counted = prediction.plan_seconds(made, COSTS)
    # dcgmi level 3 needs no peer: 1800 s typical plus one session's set-up and one call.
    assert counted['local_s'] == pytest.approx(1800 + COSTS['session_s'] + COSTS['call_s'])
    # iperf3 and all_nics run 60 s each (the profile's durations); perftest sessions by iterations take their typical time.
    perftest_sessions = sum(len(made['runs'][name]) for name in made['perftest_tests'])
    assert perftest_sessions == 16  # ib_send_bw and gdr, one per HCA
    assert counted['peer_s'] > 60 * len(made['runs']['iperf3']) + 60 + perftest_sessions * COSTS['untimed_s']['perftest']
    assert counted['sessions'] >= perftest_sessions + 2 and counted['calls'] >= 3 * len(batches_of(made, 'ib_send_bw'))
    assert seconds_400g() == dict(counted)


def test_a_shortened_run_is_predicted_shorter_and_bad_input_gives_an_error_not_an_exception():
    lab = seconds_400g(duration_override=1)
    assert lab['peer_s'] < seconds_400g()['peer_s']
    assert 'error' in prediction.node_plan_seconds(TIERS['400G'], live_ports(8), [], {'slot': -1}, COSTS)
    assert 'lack' in prediction.node_plan_seconds(TIERS['400G'], live_ports(8), [], {}, {'call_s': 1})['error']
    with pytest.raises(prediction.PredictionError, match='finite'):
        prediction.check_costs(dict(COSTS, call_s=float('nan')))


def nodes(count, peer_s=50.0, local_s=20.0):
    return [{'node': 'node%02d' % i, 'peer_s': peer_s, 'local_s': local_s} for i in range(1, count + 1)]


def test_the_queue_fills_the_peers_in_rounds_and_the_wait_with_local_tests():
    costs = dict(COSTS, node_fixed_s=30, run_fixed_s=10)
    run = prediction.predict_run(nodes(4), ['peer01', 'peer02'], costs)
    assert run['rounds'] == 2 and run['waiting_nodes'] == 2
    first, third = run['nodes']['node01'], run['nodes']['node03']
    assert (first['start_s'], first['end_s']) == (0.0, 70.0)      # peer tests, then its local tests
    assert (third['start_s'], third['end_s']) == (50.0, 100.0)     # local tests ran in the wait
    assert run['tests_s'] == 100.0 and run['predicted_s'] == 140.0
    serial = prediction.predict_run(nodes(4), ['peer01', 'peer02'], costs, local_while_waiting=False)
    assert serial['tests_s'] == 140.0


def test_a_pinned_node_waits_for_its_own_peer_and_a_blocked_node_takes_none():
    entries = nodes(3)
    entries[1]['peers'] = ['peer01']   # pinned to the busy one
    entries[2]['takes_peer'] = False   # blocked in preflight
    run = prediction.predict_run(entries, ['peer01', 'peer02'], COSTS)
    assert run['nodes']['node02']['peer'] == 'peer01' and run['nodes']['node02']['start_s'] == 50.0
    assert run['nodes']['node03'] == {'peer': None, 'peers': [], 'peer_s': 0.0, 'local_s': 0.0, 'start_s': None, 'end_s': 0.0}
    # Two nodes one after the other on peer01 (peer02 stays idle): two rounds, not the ceil(2 / 2) of an even spread.
    assert run['rounds'] == 2 and run['nodes']['node02']['round'] == 2


def test_with_promotion_the_pool_grows_from_each_node_that_finishes_and_the_rounds_fall_to_about_log2():
    costs = dict(COSTS, node_fixed_s=0.0, run_fixed_s=0.0)
    entries = [dict(e, local_s=0.0) for e in nodes(8)]
    plain = prediction.predict_run(entries, ['peer01'], costs)
    assert plain['rounds'] == 8 and plain['tests_s'] == 8 * 50.0
    grown = prediction.predict_run([dict(e, grow=True) for e in entries], ['peer01'], costs)
    # 1 node after round 1, 2 after round 2, 4 after round 3, all 8 after round 4 (log2(8) + 1 rounds).
    assert grown['rounds'] == 4 and grown['tests_s'] == 4 * 50.0, grown
    assert grown['nodes']['node02']['peer'] == 'peer01' and grown['nodes']['node03']['peer'] == 'node01'
    assert grown['nodes']['node03']['start_s'] == 50.0 and grown['nodes']['node03']['round'] == 2
    # A pinned node (no grow) keeps its peer while the others grow the pool.
    mixed = prediction.predict_run([dict(e, grow=e['node'] != 'node08') for e in entries], ['peer01'], costs)
    assert mixed['nodes']['node08']['peer'] == 'peer01'


def record(healthy, plan_seconds=None, tests_skipped=None):
    """A node's run record after its preflight, as validate.yml's first play leaves it (node_run)."""
    return dict(node_run.new('node'), healthy_peers=healthy, plan_seconds=plan_seconds, tests_skipped=tests_skipped)


def test_hostvars_become_a_prediction_and_bad_costs_an_error():
    hosts = [{'inventory_hostname': 'node02', 'netval_run': record(['peer01'], plan_seconds={'peer_s': 40, 'local_s': 5})},
             {'inventory_hostname': 'node01', 'netval_run': record(['peer01'], plan_seconds={'peer_s': 40, 'local_s': 5}),
              'netval_peer': 'peer01'},
             {'inventory_hostname': 'node03', 'netval_run': record(['peer01'], tests_skipped='GPU off the bus')},
             # Its run broke before it had a record: it takes no peer either.
             {'inventory_hostname': 'node04'}]
    run = prediction.run_prediction(hosts, COSTS)
    assert [run['nodes'][n]['start_s'] for n in ('node01', 'node02', 'node03', 'node04')] == [0.0, 40.0, None, None]
    assert 'lack' in prediction.run_prediction(hosts, {})['error']


def test_predicted_against_actual():
    assert prediction.compare({'predicted_s': 200.0}, 230.04) == {'predicted_s': 200.0, 'actual_s': 230.0, 'error_pct': 15.0}
    assert prediction.compare({}, 10) is None and prediction.compare({'predicted_s': 'x'}, 10) is None
    assert prediction.compare({'predicted_s': 0}, 10)['error_pct'] is None


def test_load_stretches_the_fixed_costs_and_the_calls_never_the_test_durations():
    costs = dict(COSTS, node_fixed_s=10.0, run_fixed_s=0.0, parallel_nodes=2)
    # Each node: 50 s against its peer, of which 10 s are calls and set-ups.
    entries = [dict(e, local_s=0.0, peer_overhead_s=10.0) for e in nodes(8)]
    run = prediction.predict_run(entries, ['peer01', 'peer02', 'peer03', 'peer04'], costs)
    # Eight nodes' fixed work at once on a controller that carries two: four times one node's.
    assert run['load'] == {'parallel_nodes': 2.0, 'fixed_factor': 4.0, 'queue_factor': 2.0}
    # Four nodes hold peers at once: their 10 s of calls take 20 s; the 40 s of test stay 40 s. Two rounds of 60 s.
    assert run['nodes']['node05']['peer_s'] == 60.0 and run['tests_s'] == 120.0
    assert run['predicted_s'] == 4 * 10.0 + 120.0
    # One peer: one node holds it at a time, so only the fixed costs stretch.
    single = prediction.predict_run(entries, ['peer01'], costs)
    assert single['load']['queue_factor'] == 1.0 and single['tests_s'] == 8 * 50.0


def test_forks_cap_the_controller_and_without_either_there_is_no_load_term():
    entries = [dict(e, local_s=0.0, peer_overhead_s=10.0) for e in nodes(8)]
    peers = ['peer01', 'peer02', 'peer03', 'peer04']
    plain = dict(COSTS, node_fixed_s=10.0, run_fixed_s=0.0)
    plain.pop('parallel_nodes', None)
    unloaded = prediction.predict_run(entries, peers, plain)
    assert unloaded['load'] == {'parallel_nodes': None, 'fixed_factor': 1.0, 'queue_factor': 1.0}
    assert unloaded['predicted_s'] == 10.0 + 2 * 50.0
    # forks 4 of a run whose costs say 20: four nodes at once at most.
    capped = prediction.predict_run(entries, peers, dict(plain, parallel_nodes=20), forks=4)
    assert capped['load'] == {'parallel_nodes': 4.0, 'fixed_factor': 2.0, 'queue_factor': 1.0}
    assert prediction.load_factors(plain, 8, 4, forks=2) == {'parallel_nodes': 2.0, 'fixed_factor': 4.0, 'queue_factor': 2.0}
    with pytest.raises(prediction.PredictionError, match='parallel_nodes must be at least 1'):
        prediction.check_costs(dict(COSTS, parallel_nodes=0.5))


def test_the_tests_play_holds_no_more_nodes_than_forks_and_the_next_enters_when_one_leaves():
    entries = [{'node': 'node%02d' % i, 'peer_s': 50.0, 'local_s': 30.0} for i in range(1, 7)]
    peers = ['peer01', 'peer02', 'peer03', 'peer04']
    plain = dict(COSTS, node_fixed_s=0.0, run_fixed_s=0.0)
    plain.pop('parallel_nodes', None)
    # Forks enough for every node: four take a peer at once (their local tests after it), two wait for one, filling
    # the wait with their local tests.
    every = prediction.predict_run(entries, peers, plain, forks=6)
    assert every['tests_s'] == 100.0 and every['waiting_nodes'] == 2
    assert every['nodes'] == prediction.predict_run(entries, peers, plain)['nodes']
    # Two forks (validate.yml's host_pinned): two nodes in the play at a time, each entering when one leaves (at 80 s and
    # 160 s); a free peer waits for them, not they for it.
    two = prediction.predict_run(entries, peers, plain, forks=2)
    assert [(two['nodes'][n]['start_s'], two['nodes'][n]['end_s']) for n in sorted(two['nodes'])] == [
        (0.0, 80.0), (0.0, 80.0), (80.0, 160.0), (80.0, 160.0), (160.0, 240.0), (160.0, 240.0)]
    assert two['tests_s'] == 240.0 and two['waiting_nodes'] == 0


def test_the_plan_names_its_calls_and_set_ups_and_hostvars_carry_them_with_the_forks():
    counted = seconds_400g()
    # Every peer test's calls and set-ups, and nothing of dcgmi (the one local test: one call, one session).
    assert 0 < counted['peer_overhead_s'] < counted['peer_s']
    assert counted['peer_overhead_s'] == pytest.approx(
        (counted['calls'] - 1) * COSTS['call_s'] + (counted['sessions'] - 1) * COSTS['session_s'])
    hosts = [{'inventory_hostname': 'node%02d' % i,
              'netval_run': record(['peer01', 'peer02'], plan_seconds={'peer_s': 40, 'local_s': 0, 'peer_overhead_s': 10})}
             for i in (1, 2, 3, 4)]
    costs = dict(COSTS, node_fixed_s=0.0, run_fixed_s=0.0, parallel_nodes=20)
    assert prediction.run_prediction(hosts, costs, forks='1')['nodes']['node01']['peer_s'] == 50.0
    assert prediction.run_prediction(hosts, costs, forks='many')['nodes']['node01']['peer_s'] == 40.0
