"""Known-good peers that are not: a degraded NIC on a peer must not cost a healthy node its acceptance, and the peer is named;
a peer that goes away mid-run costs its node nothing; and with netval_promote_accepted the pool grows by accepted nodes."""
import json
import os
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.lab.conftest import LAB_ROOT, bench_script, cli
from tests.lab.test_validate import assert_every_enabled_test_has_its_figures, node_result, validate

pytestmark = pytest.mark.lab


def test_a_degraded_peer_nic_sends_the_node_to_the_other_peer_that_accepts_it_and_names_the_peer(lab_session, tmp_path):  # pylint: disable=unused-argument
    # The 100G tier (two HCAs) keeps the run short; the peer's degraded HCA is judged the same way in every tier.
    cli('up', '--profile', 'healthy-100g', '--nodes', '1', '--peers', '2', check=True)
    cli('fault', 'peer-nic-slow', '--node', 'node01', check=True)  # node01's own peer, peer01: mlx5_0 at 60 %
    try:
        rc, out, reports, _evidence = validate(tmp_path)
    finally:
        cli('fault', 'clear')
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['first_peer'] == 'peer01' and result['retested_against'] == 'peer02'
    first = [t for t in result['first_peer_tests'] if t['metric'] == 'ib_send_bw_gbs' and t['subject'] == 'mlx5_0']
    assert first and first[0]['status'] == 'reject' and 6.5 < first[0]['value'] < 8.0, first  # ~60 % of 12.1 GB/s
    assert result['bucket'] == 'A', result['causes']
    send = dict((t['subject'], t) for t in result['tests'] if t['metric'] == 'ib_send_bw_gbs')
    assert send['mlx5_0']['peer'] == 'peer02' and send['mlx5_0']['status'] == 'healthy'  # which peer produced each figure
    suspect = result['suspect_peer']
    assert suspect['peer'] == 'peer01' and suspect['suspected_by'] == ['node01'] and suspect['left_pool'] is False
    assert ('ib_send_bw_gbs', 'mlx5_0') in [(f['metric'], f['subject']) for f in suspect['figures']]
    with open(str(reports / 'latest' / 'summary.json'), encoding='utf-8') as handle:
        summary = json.load(handle)
    assert summary['suspect_peers']['peer01']['suspected_by'] == ['node01']
    assert 'suspect peer peer01: node01 ib_send_bw_gbs mlx5_0' in (reports / 'latest' / 'summary.txt').read_text()


def test_a_downed_peer_leaves_the_pool_and_its_node_is_rescheduled_and_measured_in_full(lab_session, tmp_path):  # pylint: disable=unused-argument
    # The rescheduled node is measured from the start on peer02: a healthy 100G node, so its report must hold every
    # test of its tier with its figure, per HCA (read, write, GPUDirect), all from peer02.
    cli('up', '--profile', 'healthy-100g', '--nodes', '1', '--peers', '2', check=True)
    cli('fault', 'peer-down-midrun', '--node', 'node01', check=True)  # peer01 stops at node01's first RDMA session
    try:
        rc, out, reports, _evidence = validate(tmp_path)
        with open('/run/netval-lab/nodes/peer01/log/down-midrun.log', encoding='utf-8') as handle:
            fired = handle.read()
        status = cli('status').stdout
    finally:
        cli('fault', 'clear')
    assert 'peer01 goes down during: ib_' in fired
    assert [line.split()[3:5] for line in status.splitlines() if line.startswith('peer01')] == [['up', 'DOWN']], status
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['bucket'] == 'A', result['causes']
    assert result['peer'] == 'peer02'
    assert not [f for f in result.get('findings', []) if f.get('check') == 'run_incomplete'], result['findings']
    lost = result['lost_peers']
    assert [entry['peer'] for entry in lost] == ['peer01'] and 'went away during' in lost[0]['detail'], lost
    peer_tests = [t for t in result['tests'] if t.get('peer')]
    assert peer_tests and all(t['peer'] == 'peer02' for t in peer_tests), sorted(set(t['peer'] for t in peer_tests))
    assert any(t['metric'] == 'ib_send_bw_gbs' and t['status'] == 'healthy' for t in peer_tests)
    assert result['causes'] == []
    assert_every_enabled_test_has_its_figures(result, ['mlx5_0', 'mlx5_1'])
    read = [t for t in result['tests'] if t['metric'] == 'ib_read_bw_gbs']
    assert all(t['unit'] == 'GB/s' and t['value'] >= 11 and 'MB/sec' in t['as_printed'] for t in read), read
    with open(str(reports / 'latest' / 'summary.json'), encoding='utf-8') as handle:
        summary = json.load(handle)
    assert summary['lost_peers']['peer01'][0]['node'] == 'node01' and summary['lost_peers']['peer01'][0]['then'] == 'peer02'
    assert 'peer peer01 went away mid-run and left the pool: node01 was on it' in (reports / 'latest' / 'summary.txt').read_text()


def test_with_the_only_peer_down_before_the_run_every_node_is_reported_b_never_blamed(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-100g', '--nodes', '2', '--peers', '1', check=True)
    cli('fault', 'peer-down', check=True)  # peer01's management link down: no ssh master of an earlier run can reach it
    try:
        rc, out, reports, _evidence = validate(tmp_path)
    finally:
        cli('fault', 'clear')
    assert rc == 0, out[-6000:]
    summary_txt = (reports / 'latest' / 'summary.txt').read_text()
    assert summary_txt.splitlines()[0] == '2 of 2 nodes reported: 0 A (accept), 2 B (investigate), 0 C (return to provider)', summary_txt
    for node in ('node01', 'node02'):
        result = node_result(reports, node)
        assert result['bucket'] == 'B' and result['tests_skipped'] == 'no healthy known-good peer', result
        peer = [f for f in result['findings'] if f['check'] == 'peer_health']
        assert peer and peer[0]['status'] == 'unknown' and "not the node's fault" in peer[0]['detail']
        assert not (reports / 'latest' / 'letters' / ('%s.txt' % node)).exists()


def test_a_peer_whose_end_of_the_rail_is_at_1500_gives_the_node_its_report_with_the_path_mtu_cause(lab_session, tmp_path):  # pylint: disable=unused-argument
    # Every jumbo frame is lost at the peer's end: the ping once said the host was "unreachable" in a key Ansible reads as
    # its own, and the node vanished from the run.
    cli('up', '--profile', 'healthy-100g', '--nodes', '1', '--peers', '1', check=True)
    cli('fault', 'mtu-mismatch', '--node', 'node01', '--side', 'peer', check=True)
    try:
        rc, out, reports, _evidence = validate(tmp_path)
    finally:
        cli('fault', 'clear')
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['bucket'] in ('B', 'C') and 'jumbo_path' in [c['cause'] for c in result['causes']], result['causes']
    loss = [t for t in result['tests'] if t['metric'] == 'jumbo_ping_loss_pct']
    assert loss and loss[0]['value'] == 100.0, loss
    # The rest of the node was measured: the ping's loss did not end its run.
    assert any(t['metric'] == 'ib_send_bw_gbs' and t['status'] == 'healthy' for t in result['tests'])


def test_with_promotion_an_accepted_node_serves_a_later_one_alone_and_the_report_shows_the_chain(lab_session, tmp_path):  # pylint: disable=unused-argument
    # Three nodes, one known-good peer, a fabric where the nodes reach each other: without promotion three rounds on
    # peer01; with it the first node accepted serves the third while peer01 serves the second.
    cli('up', '--profile', 'healthy-100g', '--nodes', '3', '--peers', '1', '--unpinned', '--mesh', check=True)
    bench = bench_script()
    started = time.time()
    with bench.LedgerPoller(os.path.join(LAB_ROOT, 'nodes')) as poller:
        rc, out, reports, _evidence = validate(tmp_path, '-e', 'netval_promote_accepted=true')
    window = (started, time.time())
    assert rc == 0, out[-6000:]
    nodes = ['node01', 'node02', 'node03']
    results = dict((node, node_result(reports, node)) for node in nodes)
    assert dict((n, r['bucket']) for n, r in results.items()) == dict.fromkeys(nodes, 'A'), [r['causes'] for r in results.values()]
    served = [n for n in nodes if results[n]['peer'] in nodes]
    assert served, 'no node was measured against a promoted node: %s' % dict((n, r['peer']) for n, r in results.items())
    for node in served:
        validator = results[node]['peer']
        assert results[validator].get('promoted') is True and results[validator]['peer'] == 'peer01'
        # Every figure of the node's peer tests came from the promoted node, at the node profile's rates.
        peer_tests = [t for t in results[node]['tests'] if t.get('peer')]
        assert peer_tests and all(t['peer'] == validator for t in peer_tests), sorted(set(t['peer'] for t in peer_tests))
        assert any(t['metric'] == 'ib_send_bw_gbs' and t['status'] == 'healthy' for t in peer_tests)
    with open(str(reports / 'latest' / 'summary.json'), encoding='utf-8') as handle:
        summary = json.load(handle)
    for node in served:
        validator = results[node]['peer']
        assert node in summary['chain'][validator] and summary['promoted'][validator]['validated_by'] == 'peer01'
        assert node in summary['promoted'][validator]['validated']
    text = (reports / 'latest' / 'summary.txt').read_text()
    assert 'chain from peer01: peer01 validated ' in text and '; %s validated %s' % (results[served[0]]['peer'], served[0]) in text, text
    # One node at a time on every HCA, the promoted nodes' included; a promoted node serves only after its own tests.
    intervals, _unattributed = bench.session_intervals(poller.store, nodes, ['peer01'], window=window)
    promoted = bench.promoted_intervals(poller.store, nodes, window=window)
    assert promoted, 'no ledger session shows a node serving another'
    assert task_timeline.peer_overlap_s(intervals + promoted) == 0, task_timeline.peer_overlap_spans(intervals + promoted)
    for node in served:
        validator = results[node]['peer']
        pair = '+'.join(sorted((node, validator)))
        own_end = max(end for host, _d, label, _s, end in promoted if host == validator and label == validator)
        first_served = min(start for host, _d, label, start, _e in promoted if host == validator and label == pair)
        assert own_end <= first_served, (validator, own_end, first_served)
