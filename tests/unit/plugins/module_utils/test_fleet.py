"""Batch-relative grading and the common element of failing pairs (plugins/module_utils/policy/fleet.py).

The robust statistics are proven on real per-node figures: a Storage Scale cluster's network readiness runs (three
nodes, four runs, one node far below its siblings in two of them; tests/fixtures/fleet/), each node-run a sibling of
the others.  The node verdicts around them are built as the verdict role builds them (node_verdict); the other
cases (latency, baselines, SKU, common elements) are synthetic and say so.
"""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline, fleet, verdict
from tests.unit import fixtures
from tests.unit.plugins.module_utils import drift_samples

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']
with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'defaults', 'main.yml'), encoding='utf-8') as handle:
    RULES = yaml.safe_load(handle)['tier_profile_fleet_rules']
# A site contract of TCP at 20 Gb/s or more (reject under 10): the real figures (34-89 Gb/s) all meet it.
SITE = copy.deepcopy(TIERS['100G'])
SITE['thresholds']['iperf3_gbps'].update(healthy=[20, None], reject_below=10)
SKU = 'NVIDIA A100 80GB PCIe / MT4123 MT_0000000222'


def readiness_runs():
    """{run: {node: MB/sec}} of the real Storage Scale readiness output ("all at the same time" is not a node)."""
    runs, current = {}, None
    for line in fixtures.local('fleet/spectrumscale_network_readiness_3node_4runs_issue10.txt').splitlines():
        if line.startswith('test'):
            current = runs.setdefault(line.strip(), {})
        elif current is not None and ',' in line and not line.startswith(('Host', 'all at the same time')):
            node, value = line.split(',')
            current[node] = float(value)
    return runs


def tcp_node(name, mb_per_s, profile=SITE, sku=SKU, tier='100G'):
    """A node's verdict with one per-node TCP figure (MB/s as printed, in Gb/s as the catalogue measures it)."""
    gbps = mb_per_s * 8 / 1000.0
    figure = {'id': 'iperf3_gbps:10.0.0.2', 'kind': 'iperf3', 'metric': 'iperf3_gbps', 'subject': '10.0.0.2', 'peer': 'peer01',
              'peer_device': None, 'value': gbps, 'unit': 'Gb/s', 'as_printed': '%s MB/sec' % mb_per_s, 'verbatim': [], 'cmd': None,
              'error': None, 'error_class': None, 'error_side': None, 'raw': ''}
    return dict(verdict.node_verdict([figure], [], profile), node=name, tier=tier, sku=sku)


def batch_of(runs):
    return dict(('%s-%s' % (run, node), tcp_node('%s-%s' % (run, node), value)) for run in runs for node, value in runs[run].items())


def test_the_real_readiness_output_is_read_as_twelve_node_runs():
    runs = readiness_runs()
    assert sorted(runs) == ['test1', 'test2', 'test3', 'test4']
    assert runs['test1'] == {'node1': 10800.0, 'node2': 4250.0, 'node3': 11100.0}
    assert runs['test3']['node1'] == 3500.0


def test_robust_centre_of_the_real_figures_is_not_moved_by_the_slow_node():
    values = [v for run in ('test1', 'test2', 'test4') for v in readiness_runs()[run].values()]
    centre, mad, spread = fleet.robust_centre(values)
    # Nine node-runs, one at 4250: the median stays 11000 and half of them read it exactly, so the MAD is 0 ...
    assert (centre, mad, spread) == (11000.0, 0.0, 0.0)
    # ... where the mean and standard deviation are dragged by it (10228 and about 2200).
    mean = sum(values) / len(values)
    assert 10200 < mean < 10300
    assert fleet.robust_centre([1.0, 2.0, 3.0, 4.0, 100.0]) == (3.0, 1.0, fleet.MAD_SCALE)


def test_a_batch_with_one_slow_node_marks_it_and_only_it():
    runs = readiness_runs()
    nodes = batch_of(dict((run, runs[run]) for run in ('test1', 'test2', 'test4')))
    assert all(node['bucket'] == 'A' for node in nodes.values())  # every figure meets the site contract
    analysis = fleet.analyse(nodes, {'100G': RULES})
    assert sorted(analysis['marks']) == ['test1-node2']
    mark = analysis['marks']['test1-node2']['iperf3_gbps:10.0.0.2']
    assert mark['median'] == pytest.approx(88.0) and mark['mad'] == 0 and mark['batch_nodes'] == 9
    assert mark['shortfall_pct'] == pytest.approx(61.4, abs=0.1)
    # test1-node1 reads 10800, 1.8 % below the median: with no spread at all only the percentage keeps it a sibling.
    batch = analysis['batches'][0]
    assert batch['judged'] and [f['node'] for f in batch['outliers']] == ['test1-node2']
    result = verdict.with_fleet_outliers(nodes['test1-node2'], analysis['marks']['test1-node2'])
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['fleet_outlier']
    detail = result['causes'][0]['detail']
    assert 'iperf3 multi-stream TCP 10.0.0.2 at 34 Gb/s, 61.4 % worse than the median 88 Gb/s of 9 figures' in detail
    assert '(robust spread 0: the siblings do not vary). The siblings: 9 nodes of tier 100G, SKU %s.' % SKU in detail
    assert 'healthy >= 20 Gb/s' in detail
    test = result['tests'][0]
    assert test['status'] == 'marginal' and test['expected_contract'].startswith('healthy >= 20 Gb/s')
    assert result['counts']['marginal'] == 1 and result['counts']['healthy'] == 0


def test_a_bimodal_batch_is_split_and_judges_nobody():
    runs = readiness_runs()
    nodes = batch_of(dict((run, runs[run]) for run in ('test1', 'test3')))  # 4250 and 3500 among six node-runs
    analysis = fleet.analyse(nodes, {'100G': RULES})
    batch = analysis['batches'][0]
    assert batch['reason'] == 'split' and not batch['judged'] and analysis['marks'] == {}
    assert sorted(f['node'] for f in batch['low']) == ['test1-node2', 'test3-node1']
    assert batch['median'] == pytest.approx(87.2) and batch['mad'] == pytest.approx(1.6)
    assert any('splits in two: 2 of 6 nodes (test1-node2, test3-node1)' in note for note in analysis['notes'])
    assert analysis['low'] == {('test1-node2', 'iperf3_gbps:10.0.0.2'), ('test3-node1', 'iperf3_gbps:10.0.0.2')}


def test_a_batch_of_three_is_too_small_to_judge_and_says_so():
    nodes = batch_of({'test1': readiness_runs()['test1']})
    analysis = fleet.analyse(nodes, {'100G': RULES})
    assert analysis['marks'] == {} and analysis['batches'][0]['reason'] == 'too_small'
    assert analysis['notes'] == ['fleet: tier 100G, SKU %s: 3 node(s) (0 of them accepted baselines), fewer than the 5 a comparison '
                                 'with siblings needs: graded against the contract only' % SKU]


def test_the_least_batch_size_and_the_spreads_are_profile_data():
    runs = readiness_runs()
    three = batch_of({'test1': runs['test1']})
    assert fleet.analyse(three, {'100G': dict(RULES, min_batch=3)})['batches'][0]['reason'] == 'split'  # 1 of 3 is a third
    assert list(fleet.analyse(three, {'100G': dict(RULES, min_batch=3, max_outlier_share=0.4)})['marks']) == ['test1-node2']
    nine = batch_of(dict((run, runs[run]) for run in ('test1', 'test2', 'test4')))
    assert fleet.analyse(nine, {'100G': dict(RULES, min_shortfall_pct=70)})['marks'] == {}
    assert fleet.analyse(nine, {'100G': dict(RULES, exclude_metrics=['iperf3_gbps'])})['batches'] == []


def synthetic_rdma_node(name, values, metric='ib_send_bw_gbs', profile=None, peer='peer01', peer_devices=None, sku=SKU):
    """Synthetic: a 100G node's per-HCA figures, graded by node_verdict."""
    profile = profile or LENIENT_100G
    tests = []
    for index, value in enumerate(values):
        hca = 'mlx5_%d' % index
        tests.append({'id': '%s:%s' % (metric, hca), 'kind': 'perftest_bw', 'metric': metric, 'subject': hca, 'peer': peer,
                      'peer_device': (peer_devices or {}).get(hca, hca), 'value': value, 'unit': 'GB/s', 'as_printed': None,
                      'verbatim': [], 'cmd': None, 'error': None, 'error_class': None, 'error_side': None, 'raw': ''})
    return dict(verdict.node_verdict(tests, [], profile), node=name, tier='100G', sku=sku)


# Synthetic: a contract at 80 % of the 12.5 GB/s line rate, where a node 9 % below 12.1 GB/s still passes.
LENIENT_100G = copy.deepcopy(TIERS['100G'])
LENIENT_100G['thresholds']['ib_send_bw_gbs'].update(healthy=[10, None], reject_below=9)


def test_per_hca_figures_are_pooled_and_every_rail_of_a_slow_node_is_marked():
    nodes = dict(('node%02d' % i, synthetic_rdma_node('node%02d' % i, [12.1, 12.1])) for i in range(1, 8))
    nodes['node08'] = synthetic_rdma_node('node08', [11.01, 11.01])
    analysis = fleet.analyse(nodes, {'100G': RULES})
    assert sorted(analysis['marks']['node08']) == ['ib_send_bw_gbs:mlx5_0', 'ib_send_bw_gbs:mlx5_1'] and list(analysis['marks']) == ['node08']
    assert analysis['batches'][0]['figures'] == 16 and analysis['batches'][0]['nodes'] == 8


def test_a_latency_is_worse_above_the_median():
    profile = copy.deepcopy(TIERS['roce-pair-2x100g'])
    nodes = dict(('node%02d' % i, synthetic_rdma_node('node%02d' % i, [1.40], metric='ib_write_lat_us', profile=profile)) for i in range(1, 7))
    nodes['node07'] = synthetic_rdma_node('node07', [1.62], metric='ib_write_lat_us', profile=profile)
    nodes['node08'] = synthetic_rdma_node('node08', [1.30], metric='ib_write_lat_us', profile=profile)  # faster: never an outlier
    nodes = dict((name, dict(node, tier='roce-pair-2x100g')) for name, node in nodes.items())
    assert all(n['bucket'] == 'A' for n in nodes.values())
    analysis = fleet.analyse(nodes, {'roce-pair-2x100g': RULES})
    assert list(analysis['marks']) == ['node07']


def test_an_outlier_never_makes_a_node_c_and_a_reject_keeps_its_own_status():
    nodes = dict(('node%02d' % i, synthetic_rdma_node('node%02d' % i, [12.1, 12.1])) for i in range(1, 8))
    nodes['node08'] = synthetic_rdma_node('node08', [11.0, 8.0])  # mlx5_1 below the reject line already
    assert nodes['node08']['bucket'] == 'C'
    analysis = fleet.analyse(nodes, {'100G': RULES})
    result = verdict.with_fleet_outliers(nodes['node08'], analysis['marks']['node08'])
    statuses = dict((t['subject'], t['status']) for t in result['tests'])
    assert statuses == {'mlx5_0': 'marginal', 'mlx5_1': 'reject'} and result['bucket'] == 'C'
    assert 'fleet_outlier' in [c['cause'] for c in result['causes']]
    # The letter names only what is short of the contract: never the sibling comparison.
    from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report
    letter = report.vendor_letter(dict(result, node='node08', tier='100G', peer='peer01'))
    assert 'siblings' not in letter and 'mlx5_0' not in letter and 'on mlx5_1, and repair' in letter
    a_node = synthetic_rdma_node('node09', [11.0, 11.0])
    assert verdict.with_fleet_outliers(a_node, {'ib_send_bw_gbs:mlx5_0': analysis['marks']['node08']['ib_send_bw_gbs:mlx5_0']})['bucket'] == 'B'


def test_the_cause_ranks_after_the_nodes_own_faults_and_before_what_was_not_measured():
    nodes = dict(('node%02d' % i, synthetic_rdma_node('node%02d' % i, [12.1, 12.1])) for i in range(1, 8))
    slow = synthetic_rdma_node('node08', [11.0, 11.0])
    slow = dict(slow, causes=[{'cause': 'host_configuration', 'detail': 'x', 'subjects': []},
                              {'cause': 'measurement_incomplete', 'detail': 'y', 'subjects': []}])
    nodes['node08'] = slow
    marks = fleet.analyse(nodes, {'100G': RULES})['marks']['node08']
    result = verdict.with_fleet_outliers(slow, marks)
    assert [c['cause'] for c in result['causes']] == ['host_configuration', 'fleet_outlier', 'measurement_incomplete']


def lab_baseline(name, value):
    """Synthetic: the lab's 400G baseline of node01 (tests/fixtures/drift) for another node, its per-HCA figures at ``value``."""
    result, facts = drift_samples.result(), drift_samples.facts()
    for test in result['tests']:
        if test['metric'] == 'ib_send_bw_gbs':
            test['value'] = value
    return baseline.build_baseline(dict(result, node=name), facts, drift_samples.profile()), facts


def test_the_sku_of_a_baseline_is_the_sku_of_the_preflight_it_was_built_from():
    doc, facts = lab_baseline('node01', 47.0)
    assert fleet.sku_from_baseline(doc) == fleet.sku_from_facts(facts) == 'NVIDIA H100 80GB HBM3 / MT4129 MT_0000000838'
    assert fleet.sku_from_facts({}) is None and fleet.sku_from_facts({'gpu': {'gpus': [{'name': 'X'}]}}) == 'X / no RDMA NIC'


def test_accepted_baselines_join_a_batch_the_run_alone_is_too_small_for():
    profile = copy.deepcopy(TIERS['400G'])
    profile['thresholds']['ib_send_bw_gbs'].update(healthy=[40, None], reject_below=38)
    sku = fleet.sku_from_baseline(lab_baseline('x', 47.0)[0])

    def run_node(name, value):
        tests = [{'id': 'ib_send_bw_gbs:mlx5_%d' % i, 'kind': 'perftest_bw', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_%d' % i,
                  'peer': 'peer01', 'peer_device': 'mlx5_%d' % i, 'value': value, 'unit': 'GB/s', 'error': None} for i in range(8)]
        return dict(verdict.node_verdict(tests, [], profile), node=name, tier='400G', sku=sku)

    nodes = {'node10': run_node('node10', 47.0), 'node11': run_node('node11', 42.8)}
    alone = fleet.analyse(nodes, {'400G': RULES})
    assert alone['marks'] == {} and 'fewer than the 5' in alone['notes'][0]
    baselines = dict(('node0%d' % i, lab_baseline('node0%d' % i, 47.0)[0]) for i in range(1, 5))
    baselines['node11'] = lab_baseline('node11', 47.0)[0]  # the run's own node: its new figures count, not its old baseline
    analysis = fleet.analyse(nodes, {'400G': RULES}, baselines)
    batch = [b for b in analysis['batches'] if b['metric'] == 'ib_send_bw_gbs'][0]
    assert batch['baseline_nodes'] == ['node01', 'node02', 'node03', 'node04'] and batch['nodes'] == 6
    assert list(analysis['marks']) == ['node11'] and analysis['marks']['node11']['ib_send_bw_gbs:mlx5_0']['baseline_nodes'] == 4
    # A baseline of another SKU is no sibling.
    other = dict((name, dict(doc, facts=dict(doc['facts'], gpus=[]))) for name, doc in baselines.items())
    assert fleet.analyse(nodes, {'400G': RULES}, other)['marks'] == {}


def test_fleet_rules_are_checked_key_by_key():
    assert fleet.rules_errors(RULES) == []
    errors = fleet.rules_errors(dict(RULES, max_mads=0, min_batch=2, exclude_metrics=['nope'], extra=1))
    assert 'fleet_rules.extra is not a fleet rule' in errors[0]
    assert any('fleet_rules.max_mads must be' in e for e in errors) and any('fleet_rules.min_batch must be' in e for e in errors)
    assert any('fleet_rules.exclude_metrics must be' in e for e in errors)
    with pytest.raises(fleet.FleetError, match='tier 100G'):
        fleet.analyse({}, {'100G': dict(RULES, max_outlier_share=0.6)})


# ---------------------------------------------------------------------------------------------------------------
# The common element (synthetic node results: per-HCA figures against named peer HCAs)


def pair_node(name, peer, values, first=None):
    """A node measured on ``peer`` (HCA i against the peer's HCA i); ``first``: (first peer, values) of a re-test."""
    node = synthetic_rdma_node(name, values, peer=peer)
    if first:
        first_peer, first_values = first
        node['first_peer_tests'] = synthetic_rdma_node(name, first_values, peer=first_peer)['tests']
        node['first_peer'] = first_peer
    return node


def test_a_bad_peer_hca_is_named_with_the_pairs_that_support_it_and_not_the_whole_peer():
    nodes = {}
    for i in range(1, 9):
        peer = 'peer01' if i % 2 else 'peer02'
        # peer01's mlx5_0 carries 7.3 GB/s: the four nodes on it were re-tested on peer02 and passed there.
        nodes['node%02d' % i] = pair_node('node%02d' % i, 'peer02', [12.1, 12.1], first=(peer, [7.3, 12.1]) if peer == 'peer01' else None)
    found = fleet.common_elements(nodes, {'100G': RULES})
    assert [(c['kind'], c['element']) for c in found] == [('peer_hca', 'peer01 mlx5_0')]
    common = found[0]
    assert common['failed'] == 4 and common['carried'] == 4 and common['nodes'] == ['node01', 'node03', 'node05', 'node07']
    assert common['detail'].startswith('peer HCA peer01 mlx5_0 is common to 4 of the run\'s 4 failing node-peer pairs on tier 100G')
    assert 'node01 mlx5_0 on peer01 mlx5_0: ib_send_bw_gbs 7.3 GB/s (reject)' in common['detail']


def test_a_whole_bad_peer_is_named_as_the_peer():
    nodes = dict(('node%02d' % i, pair_node('node%02d' % i, 'peer01' if i <= 3 else 'peer02', [7.3, 7.3] if i <= 3 else [12.1, 12.1]))
                 for i in range(1, 7))
    assert [(c['kind'], c['element']) for c in fleet.common_elements(nodes, {'100G': RULES})] == [('peer', 'peer01')]


def test_a_node_that_fails_with_two_peer_hcas_is_its_own_common_element():
    nodes = dict(('node%02d' % i, pair_node('node%02d' % i, 'peer01', [12.1, 12.1])) for i in range(1, 6))
    nodes['node06'] = pair_node('node06', 'peer02', [8.0, 8.0], first=('peer01', [8.0, 8.0]))
    found = fleet.common_elements(nodes, {'100G': RULES})
    assert [(c['kind'], c['element']) for c in found] == [('node', 'node06')], found


def test_independent_failures_share_nothing_worth_naming():
    # Two nodes with one slow NIC each, on a peer that carried sixteen healthy pairs: 2 of 18 is no common cause.
    nodes = dict(('node%02d' % i, pair_node('node%02d' % i, 'peer01', [12.1, 12.1])) for i in range(1, 9))
    nodes['node09'] = pair_node('node09', 'peer01', [8.0, 12.1])
    nodes['node10'] = pair_node('node10', 'peer01', [12.1, 8.0])
    assert fleet.common_elements(nodes, {'100G': RULES}) == []
    # One failing pair is never a pattern.
    assert fleet.common_elements({'node09': nodes['node09']}, {'100G': RULES}) == []


def test_a_split_batch_low_group_counts_as_failing_for_the_common_element():
    # Synthetic: peer01's mlx5_1 carries 11.3 GB/s, above the line: every node on it reads 7 % below the others.
    nodes = dict(('node%02d' % i, pair_node('node%02d' % i, 'peer01' if i <= 4 else 'peer02', [12.1, 11.3 if i <= 4 else 12.1]))
                 for i in range(1, 9))
    analysis = fleet.analyse(nodes, {'100G': RULES})
    assert analysis['marks'] == {} and analysis['batches'][0]['reason'] == 'split'
    found = fleet.common_elements(nodes, {'100G': RULES}, analysis['low'])
    assert [(c['kind'], c['element']) for c in found] == [('peer_hca', 'peer01 mlx5_1')]
