"""The verdict filters: node_verdict, tier_profile_errors (its verdict part) and preflight_findings as a playbook calls them."""
import copy
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter import node_verdict, preflight_findings, qualify_peers, tier_profile_errors
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']


def test_node_verdict_takes_the_resolved_profile_and_names_a_bad_one():
    grade = node_verdict.FilterModule().filters()['node_verdict']
    figure = {'id': 'ib_send_bw_gbs:mlx5_0', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'value': 47.0, 'unit': 'GB/s'}
    assert grade([figure], [], TIERS['400G'], {'nccl_transport': None, 'expected': None})['bucket'] == 'A'
    broken = copy.deepcopy(TIERS['400G'])
    broken['cause_rules']['platform_min_ratio'] = 75
    with pytest.raises(AnsibleFilterError, match='node_verdict: cause_rules.platform_min_ratio must be a fraction'):
        grade([figure], [], broken)


def test_profile_errors_filter_lists_every_problem():
    errors = tier_profile_errors.FilterModule().filters()['tier_profile_errors']
    assert all(errors(profile, name) == [] for name, profile in TIERS.items())
    broken = copy.deepcopy(TIERS['400G'])
    broken['thresholds']['ib_send_bw_gbs'] = {'healthy': [46, 48]}
    broken['preflight']['gpu_pages_pending'] = {'severity': 'fatal'}
    assert errors(broken, '400G') == ['tier 400G: thresholds.ib_send_bw_gbs has no source: say whether the runbook, the contract or '
                                      'this project ("project: <why>") states the line',
                                      'tier 400G: threshold ib_send_bw_gbs needs exactly one of reject_below / reject_above',
                                      'tier 400G: preflight.gpu_pages_pending.severity must be marginal or reject']


def test_preflight_findings_filter_refuses_a_malformed_check_setting():
    grade = preflight_findings.FilterModule().filters()['preflight_findings']
    assert grade({}, TIERS['400G']) == []
    broken = copy.deepcopy(TIERS['400G'])
    broken['preflight']['hugepages_cmdline'] = {'severity': 'marginal'}
    with pytest.raises(AnsibleFilterError, match='preflight_findings: preflight.hugepages_cmdline.default_size is missing'):
        grade({}, broken)


def test_node_reports_pairs_each_verdict_with_its_evidence_folder():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpufleet.netval.plugins.filter.node_reports import node_reports
    hosts = [{'inventory_hostname': 'node01', 'verdict_node_result': {'node': 'node01', 'bucket': 'A'},
              'evidence_location': '/e/node01/20261201T000000Z'},
             {'inventory_hostname': 'node02', 'verdict_node_result': {'node': 'node02', 'bucket': 'C'}},
             {'inventory_hostname': 'node03'}]
    nodes = node_reports(hosts, 'verdict_node_result', 'evidence_location')
    assert sorted(nodes) == ['node01', 'node02', 'node03']
    assert nodes['node01'] == {'node': 'node01', 'bucket': 'A', 'evidence': '/e/node01/20261201T000000Z'}
    assert nodes['node02'] == {'node': 'node02', 'bucket': 'C'}
    # A host that never got a verdict is not dropped: bucket B, our cause, and why.
    assert nodes['node03']['bucket'] == 'B' and [c['cause'] for c in nodes['node03']['causes']] == ['run_incomplete']
    assert 'before this node had a verdict' in nodes['node03']['causes'][0]['detail']
    for bad in ('node01', [['A']], [{'inventory_hostname': 'n', 'verdict_node_result': ['A']}]):
        try:
            node_reports(bad, 'verdict_node_result', 'evidence_location')
        except AnsibleFilterError as exc:
            assert 'node_reports' in str(exc)
        else:
            raise AssertionError('expected an AnsibleFilterError for %r' % (bad,))


def test_run_break_keeps_a_verdict_and_gives_one_to_a_node_without():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpufleet.netval.plugins.filter.run_break import run_break
    fresh = run_break(None, 'connect', 'Failed to connect to the host via ssh', 'node03', '400G')
    assert fresh['node'] == 'node03' and fresh['tier'] == '400G' and fresh['bucket'] == 'B'
    kept = run_break({'node': 'node01', 'bucket': 'A', 'tests': [{'metric': 'm', 'status': 'healthy'}], 'findings': [], 'causes': []},
                     'evidence: Capture', 'rc=255', 'node01')
    assert kept['bucket'] == 'B' and kept['tests'] == [{'metric': 'm', 'status': 'healthy'}]
    assert kept['run_incomplete'] == {'where': 'evidence: Capture', 'why': 'rc=255'}
    with pytest.raises(AnsibleFilterError, match='run_break'):
        run_break(['A'], 'x', 'y', 'node01')


def test_qualify_peers_takes_each_peers_own_rails_and_names_a_bad_list():
    qualify = qualify_peers.FilterModule().filters()['qualify_peers']
    assert qualify([{'item': 'peer01', 'unreachable': True, 'msg': 'no route'}], TIERS['400G'], {'peer01': ['mlx5_0']}) == {
        'peer01': {'qualified': False, 'reasons': ['cannot be reached: no route'], 'notes': [], 'checked': []}}
    with pytest.raises(AnsibleFilterError, match=r"qualify_peers: devices\[peer01\] \(its netval_rdma_devices\) must be a list"):
        qualify([], TIERS['400G'], {'peer01': 'mlx5_0'})
    with pytest.raises(AnsibleFilterError, match='qualify_peers: devices must map a peer'):
        qualify([], TIERS['400G'], ['mlx5_0'])
