"""Peer choice, the re-test decision and the merge of two peers' figures."""
import json
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import measurements, peer_policy
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    P400 = yaml.safe_load(handle)['tier_profile_tiers']['400G']


def graded(metric, status, subject='mlx5_0'):
    return {'id': '%s:%s' % (metric, subject), 'metric': metric, 'subject': subject, 'status': status}


def test_nodes_are_spread_round_robin_over_the_sorted_peers_with_the_rest_as_fallback():
    nodes = ['node03', 'node01', 'node02']
    peers = ['peer02', 'peer01']
    assert peer_policy.peer_order('node01', nodes, peers) == ['peer01', 'peer02']
    assert peer_policy.peer_order('node02', nodes, peers) == ['peer02', 'peer01']
    assert peer_policy.peer_order('node03', nodes, peers) == ['peer01', 'peer02']


def test_an_explicit_peer_comes_first_even_outside_the_group():
    assert peer_policy.peer_order('node01', ['node01'], ['peer01', 'peer02'], 'peer02') == ['peer02', 'peer01']
    assert peer_policy.peer_order('node01', ['node01'], [], 'lab-peer') == ['lab-peer']


def test_no_peers_gives_no_order_and_an_unknown_node_is_refused():
    assert peer_policy.peer_order('node01', ['node01'], []) == []
    with pytest.raises(peer_policy.PeerPolicyError, match='node09'):
        peer_policy.peer_order('node09', ['node01'], ['peer01'])


def lab_peer_reads():
    """A 400G box's preflight_info reads as the lab's healthy-400g host gave them (a real lab capture, evidence bundle)."""
    with open(fixtures.local_path('drift/lab_400g_node01_preflight.json'), encoding='utf-8') as handle:
        reads = json.load(handle)
    reads.pop('_provenance')
    return reads


def test_a_known_good_peer_is_qualified_on_the_tiers_preflight_before_it_measures_anyone():
    healthy = lab_peer_reads()
    slow = lab_peer_reads()
    slow['rdma']['devices']['mlx5_3']['ports']['1']['rate_gbps'] = 200
    gen4 = lab_peer_reads()
    gen4['pcie']['devices'][0]['link']['current_speed_gts'] = 16.0
    gen4['pcie']['devices'][0]['assessment'] = {'status': 'degraded', 'reason': 'trained at 16 GT/s of 32'}
    results = [{'item': 'peer01', 'reads': healthy}, {'item': 'peer02', 'reads': slow}, {'item': 'peer03', 'reads': gen4},
               {'item': 'peer04', 'unreachable': True, 'msg': 'ssh: connect to host 10.251.0.14 port 22: No route to host'},
               {'item': 'peer05', 'failed': True, 'msg': 'the rdma read (rdma_info) failed: no /sys/class/infiniband'}]
    found = peer_policy.qualify_peers(results, P400)
    assert dict((peer, entry['qualified']) for peer, entry in found.items()) == {
        'peer01': True, 'peer02': False, 'peer03': False, 'peer04': False, 'peer05': False}
    # 400G runs NCCL: the peer's GPUs are checked too.
    assert found['peer01']['reasons'] == [] and {'port_state', 'pcie_link', 'firmware_min_version', 'gpu_count'} <= set(found['peer01']['checked'])
    # The tier's rails are its 400 Gb/s ports (policy/rails.py): a port trained at 200 is left out of them, so the peer has
    # one rail too few, the port and its rate named.
    assert found['peer02']['reasons'] == ['nic_count: 7 of 8 compute rails Active (left out: mlx5_3/1 Active at 200 Gb/s, '
                                          'the rails run at 400 Gb/s)']
    assert found['peer03']['reasons'][0].startswith('pcie_link: NIC mlx5_0 at 0000:1a:00.0: LnkSta 16GT/s x16')
    assert found['peer04']['reasons'] == ['cannot be reached: ssh: connect to host 10.251.0.14 port 22: No route to host']
    assert 'no /sys/class/infiniband' in found['peer05']['reasons'][0]
    # The qualified peers in each node's own order of preference (and only its own candidates).
    assert peer_policy.healthy_peers(found) == ['peer01']
    assert peer_policy.healthy_peers(found, ['peer02', 'peer01']) == ['peer01'] and peer_policy.healthy_peers(found, []) == []


def test_the_qualifications_of_nodes_of_different_tiers_merge_per_peer():
    merged = peer_policy.merge_qualifications([
        {'peer01': {'qualified': True, 'reasons': [], 'notes': [], 'checked': ['port_rate']}},
        {'peer01': {'qualified': False, 'reasons': ['port_rate: mlx5_3 port 1 runs at 400 Gb/s, expected 800'], 'notes': [],
                    'checked': ['port_rate']}}, None])
    assert merged == {'peer01': {'qualified': False, 'reasons': ['port_rate: mlx5_3 port 1 runs at 400 Gb/s, expected 800'],
                                 'notes': [], 'checked': ['port_rate']}}


def test_a_throughput_reject_is_retested_once_on_an_untried_healthy_peer():
    result = {'bucket': 'C', 'tests': [graded('ib_send_bw_gbs', 'reject'), graded('gdr_bw_gbs', 'healthy')]}
    assert peer_policy.retest_peer(result, ['peer01', 'peer02'], ['peer01']) == 'peer02'
    assert peer_policy.retest_peer(dict(result, retested_against='peer02'), ['peer01', 'peer02'], ['peer01']) == ''
    assert peer_policy.retest_peer(result, ['peer01'], ['peer01']) == ''
    assert peer_policy.retest_peer(result, ['peer01', 'peer02'], ['peer01'], enabled=False) == ''


def test_a_reject_a_second_peer_cannot_change_is_not_retested():
    gpu = {'bucket': 'C', 'tests': [graded('gdr_bw_gbs', 'healthy')], 'findings': [{'check': 'gpu_count', 'status': 'reject'}]}
    assert peer_policy.retest_peer(gpu, ['peer01', 'peer02'], ['peer01']) == ''
    nccl = {'bucket': 'C', 'tests': [graded('nccl_busbw_gbs', 'reject', 'all_reduce'), graded('ib_send_bw_gbs', 'healthy')]}
    assert peer_policy.retest_peer(nccl, ['peer01', 'peer02'], ['peer01']) == ''
    gdr = {'bucket': 'C', 'tests': [graded('gdr_bw_gbs', 'reject')]}
    assert peer_policy.retest_peer(gdr, ['peer01', 'peer02'], ['peer01']) == 'peer02'
    marginal = {'bucket': 'B', 'tests': [graded('iperf3_gbps', 'marginal', '10.0.0.2')]}
    assert peer_policy.retest_peer(marginal, ['peer01', 'peer02'], ['peer01']) == ''
    tcp = {'bucket': 'C', 'tests': [graded('iperf3_gbps', 'reject', '10.0.0.2')]}
    assert peer_policy.retest_peer(tcp, ['peer01', 'peer02'], ['peer01']) == 'peer02'


def test_merge_keeps_the_second_peers_figures_for_what_it_re_measured():
    first = [graded('jumbo_ping_loss_pct', 'healthy', '10.0.0.2'), graded('ib_send_bw_gbs', 'reject', 'mlx5_0'),
             graded('ib_send_bw_gbs', 'healthy', 'mlx5_1'), graded('gdr_bw_gbs', 'healthy')]
    second = [dict(graded('ib_send_bw_gbs', 'healthy', 'mlx5_0'), peer='peer02'), dict(graded('ib_send_bw_gbs', 'healthy', 'mlx5_1'), peer='peer02')]
    merged = peer_policy.merge_retest(first, second)
    assert [m['id'] for m in merged] == ['jumbo_ping_loss_pct:10.0.0.2', 'gdr_bw_gbs:mlx5_0', 'ib_send_bw_gbs:mlx5_0', 'ib_send_bw_gbs:mlx5_1']
    assert all(m.get('peer') == 'peer02' for m in merged if m['metric'] == 'ib_send_bw_gbs')
    assert [t['id'] for t in peer_policy.first_peer_tests(first, second)] == ['ib_send_bw_gbs:mlx5_0', 'ib_send_bw_gbs:mlx5_1']


def test_an_explicit_healthy_peer_is_the_only_first_choice_else_any_healthy_peer():
    assert peer_policy.first_peers(['peer02', 'peer01'], 'peer01') == ['peer01']
    assert peer_policy.first_peers(['peer02'], 'peer01') == ['peer02']  # its own peer is down: any healthy one
    assert peer_policy.first_peers(['peer02', 'peer01'], '') == ['peer02', 'peer01']
    assert peer_policy.first_peers([], 'peer01') == []


def test_a_second_peer_re_runs_only_the_rejected_or_marginal_re_testable_tests():
    result = {'tests': [graded('ib_send_bw_gbs', 'reject'), graded('gdr_bw_gbs', 'healthy'), graded('nccl_busbw_gbs', 'reject'),
                        graded('iperf3_gbps', 'reject', '10.0.0.2'), graded('nccl_transport', 'reject', 'all_reduce'),
                        graded('all_nics_gbs', 'marginal', 'all NICs'), graded('ib_write_lat_us', 'info')]}
    assert peer_policy.retest_tests(result) == ['iperf3', 'ib_send_bw', 'all_nics']
    assert peer_policy.retest_tests({'tests': []}) == []


def test_a_first_peer_is_suspect_only_for_rejects_the_second_peer_found_healthy():
    # synthetic graded results, in the shape verdict.node_verdict returns
    first = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'status': 'reject', 'value': 28.2, 'unit': 'GB/s', 'peer': 'peer01'},
             {'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_1', 'status': 'reject', 'value': 30.0, 'unit': 'GB/s', 'peer': 'peer01'}]
    final = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'status': 'healthy', 'value': 47.0, 'peer': 'peer02'},
             {'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_1', 'status': 'reject', 'value': 30.1, 'peer': 'peer02'}]
    found = peer_policy.suspect_peer(first, final, 'peer01')
    assert found['peer'] == 'peer01'
    assert [(f['subject'], f['first_value'], f['second_value'], f['second_peer']) for f in found['figures']] == [
        ('mlx5_0', 28.2, 47.0, 'peer02')]
    # the node itself is slow on mlx5_1 against both peers: that proves nothing against peer01
    assert peer_policy.suspect_peer(first[1:], final, 'peer01') == {}
    assert peer_policy.suspect_peer(first, [dict(t, peer='peer01') for t in final], 'peer01') == {}


def _diagnostic(text):
    """A real dcgmi diag output through the module's parser and the measurement reader."""
    return measurements.run_measurements(dcgmi.parse_dcgmi_diag(text), {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})


def test_a_failed_gpu_diagnostic_gives_up_the_place_in_the_queue_and_says_what_failed():
    # Found public output: 8x H100, DCGM 3.3.8, dcgmi diag -r 3, GPU Memory failing on all GPUs (tests/fixtures/dcgmi).
    failed = _diagnostic(fixtures.local('dcgmi/dcgmi_diag_r3_dcgm3.3.8_gpu_memory_fail_all_8xh100_prompt_nccltests264.txt'))
    assert [m['preset_status'] for m in failed if m['preset_status'] == 'reject']
    reason = peer_policy.gives_up_peer(failed)
    assert reason.startswith('dcgmi diag failed while the node waited for a peer (')
    assert 'gave up its place in the queue' in reason
    for entry in failed:
        if entry['preset_status'] == 'reject':
            assert entry['as_printed'] in reason


def test_near_miss_a_passing_diagnostic_or_one_that_could_not_run_keeps_the_place():
    assert peer_policy.gives_up_peer(_diagnostic(fixtures.shared('dcgmi/dcgmi_diag_r3_dcgm3.0.4_deployment_pass_dcgm55_truncated.txt'))) == ''
    missing = {'id': 'dcgmi_diag:gpus', 'metric': 'dcgmi_diag', 'subject': 'gpus', 'value': None, 'error_class': 'tool_missing',
               'error': "node01: required tool 'dcgmi' was not found on PATH"}
    warned = {'id': 'dcgmi_diag:PCIe', 'metric': 'dcgmi_diag', 'subject': 'PCIe', 'preset_status': 'marginal'}
    assert peer_policy.gives_up_peer([missing, warned]) == '' and peer_policy.gives_up_peer([]) == ''


UNREACHABLE = {'changed': False, 'unreachable': True,
               'msg': 'Data could not be sent to remote host "10.251.0.12". Make sure this host can be reached over ssh: \nssh: connect refused'}


def test_a_peer_that_stops_answering_is_lost_at_the_first_step_that_could_not_reach_it():
    servers_ok = {'changed': True, 'servers': [{'id': 'a', 'pid': 10}]}
    lost = peer_policy.lost_peer('peer01', [[servers_ok, True, 'the start of the servers of ib_send_bw:0'],
                                            [UNREACHABLE, True, 'the clients of ib_send_bw:0'],
                                            [UNREACHABLE, True, 'the stop of the servers of ib_send_bw:0']])
    assert lost['peer'] == 'peer01' and lost['step'] == 'the clients of ib_send_bw:0'
    assert lost['detail'].startswith('known-good peer peer01 went away during the clients of ib_send_bw:0: Data could not be sent')
    assert '\n' not in lost['detail']
    # A loop (iperf3's clients) whose second item could not reach the peer.
    loop = {'changed': False, 'unreachable': True, 'results': [{'rc': 0}, dict(UNREACHABLE, item='r')]}
    assert peer_policy.lost_peer('peer01', [[loop, True, 'the iperf3 clients']])['step'] == 'the iperf3 clients'


def test_a_task_on_the_node_or_a_failed_one_is_not_the_peer_going_away():
    failed = {'failed': True, 'msg': 'ib_send_bw: Couldn\'t connect to 10.252.0.2:18515'}
    assert peer_policy.lost_peer('peer01', [[UNREACHABLE, False, 'the servers on the node'], [failed, True, 'the clients'],
                                            [{'skipped': True}, True, 'the stop'], [{}, True, 'nothing']]) == {}
    with pytest.raises(peer_policy.PeerPolicyError):
        peer_policy.lost_peer('', [])
    with pytest.raises(peer_policy.PeerPolicyError, match=r'\[result, on_peer, step\]'):
        peer_policy.lost_peer('peer01', [[UNREACHABLE, True]])


def test_only_an_accepted_node_with_every_test_healthy_and_no_doubt_about_its_peer_is_promotable():
    healthy = {'node': 'gpu-01', 'bucket': 'A', 'peer': 'peer01',
               'tests': [{'metric': 'ib_send_bw_gbs', 'status': 'healthy'}, {'metric': 'nccl_socket_note', 'status': 'info'}],
               'findings': [{'check': 'pcie_link', 'status': 'healthy'}]}
    assert peer_policy.promotable(healthy) is True
    assert peer_policy.promotable(dict(healthy, lost_peers=[{'peer': 'peer02'}])) is True   # measured on the next peer
    marginal = dict(healthy, tests=healthy['tests'] + [{'metric': 'ib_send_lat_us', 'status': 'marginal'}])
    for refused in (dict(healthy, bucket='B'), marginal, dict(healthy, findings=[{'check': 'governor', 'status': 'marginal'}]),
                    dict(healthy, tests=[]), dict(healthy, retested_against='peer02'), dict(healthy, suspect_peer={'peer': 'peer01'}),
                    dict(healthy, tests=['not a test']), None, 'A'):
        assert peer_policy.promotable(refused) is False, refused


def test_a_node_without_a_qualified_peer_gets_one_finding_naming_each_candidates_reason():
    qualification = {'peer01': {'qualified': False, 'reasons': ['port_rate: mlx5_3 port 1 runs at 200 Gb/s, expected 400']},
                     'peer02': {'qualified': False, 'reasons': ['cannot be reached: No route to host']}}
    found = peer_policy.peer_findings(qualification, ['peer02', 'peer01'])
    assert [(f['check'], f['status'], f['blocking']) for f in found] == [('peer_health', 'unknown', True)]
    assert found[0]['detail'] == ('no qualified known-good peer (peer02: cannot be reached: No route to host; peer01: port_rate: mlx5_3 '
                                  'port 1 runs at 200 Gb/s, expected 400): the node could not be measured (not the node\'s fault)')
    qualification['peer01']['qualified'] = True
    assert peer_policy.peer_findings(qualification, ['peer02', 'peer01']) == []


def test_a_peer_is_qualified_on_its_own_rails_when_its_inventory_names_them():
    # The peer's port mlx5_3 trained at 200 Gb/s: by the profile's selector it is one rail short; a peer whose inventory
    # names its rails (netval_rdma_devices) without mlx5_3 is graded on those, and one that names mlx5_3 is refused for it.
    slow = lab_peer_reads()
    slow['rdma']['devices']['mlx5_3']['ports']['1']['rate_gbps'] = 200
    results = [{'item': 'peer01', 'reads': slow}, {'item': 'peer02', 'reads': slow}, {'item': 'peer03', 'reads': slow}]
    rails = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7']
    found = peer_policy.qualify_peers(results, dict(P400, nics=dict(P400['nics'], count=7)),
                                      {'peer01': rails, 'peer02': rails[:3] + ['mlx5_3'] + rails[3:]})
    assert found['peer01'] == dict(found['peer01'], qualified=True, reasons=[])
    assert found['peer02']['qualified'] is False and 'mlx5_3' in ' '.join(found['peer02']['reasons'])
    # No entry: the profile's selector, as before (7 of its 8 400 Gb/s ports are rails, the tier asked for 7).
    assert found['peer03']['qualified'] is True
