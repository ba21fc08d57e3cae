"""Known-good peers that are not: a degraded NIC on a peer must not cost a healthy node its acceptance, and the peer is named."""
import json

import pytest

from tests.lab.conftest import cli
from tests.lab.test_validate import node_result, validate

pytestmark = pytest.mark.lab


def test_a_degraded_peer_nic_sends_the_node_to_the_other_peer_that_accepts_it_and_names_the_peer(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-400g', '--nodes', '1', '--peers', '2', check=True)
    cli('fault', 'peer-nic-slow', '--node', 'node01', check=True)  # node01's own peer, peer01: mlx5_0 at 60 %
    try:
        rc, out, reports, _evidence = validate(tmp_path)
    finally:
        cli('fault', 'clear')
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['first_peer'] == 'peer01' and result['retested_against'] == 'peer02'
    first = [t for t in result['first_peer_tests'] if t['metric'] == 'ib_send_bw_gbs' and t['subject'] == 'mlx5_0']
    assert first and first[0]['status'] == 'reject' and 25 < first[0]['value'] < 32, first  # ~60 % of 47 GB/s
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


def test_a_peer_that_goes_down_midrun_leaves_the_pool_and_the_node_is_rescheduled_and_validated(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-400g', '--nodes', '1', '--peers', '2', check=True)
    cli('fault', 'peer-down-midrun', '--node', 'node01', check=True)  # peer01 stops at node01's first RDMA session
    try:
        rc, out, reports, _evidence = validate(tmp_path)
        with open('/run/netval-lab/nodes/peer01/log/down-midrun.log', encoding='utf-8') as handle:
            fired = handle.read()
        status = cli('status').stdout
    finally:
        cli('fault', 'clear')
    assert 'peer01 goes down during: ib_' in fired
    assert 'DOWN' in [line.split()[3] for line in status.splitlines() if line.startswith('peer01')], status
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['bucket'] == 'A', result['causes']
    assert result['peer'] == 'peer02'
    assert not [f for f in result.get('findings', []) if f.get('check') == 'run_error'], result['findings']
    lost = result['lost_peers']
    assert [entry['peer'] for entry in lost] == ['peer01'] and 'went away during' in lost[0]['detail'], lost
    peer_tests = [t for t in result['tests'] if t.get('peer')]
    assert peer_tests and all(t['peer'] == 'peer02' for t in peer_tests), sorted(set(t['peer'] for t in peer_tests))
    assert any(t['metric'] == 'ib_send_bw_gbs' and t['status'] == 'healthy' for t in peer_tests)
    with open(str(reports / 'latest' / 'summary.json'), encoding='utf-8') as handle:
        summary = json.load(handle)
    assert summary['lost_peers']['peer01'][0]['node'] == 'node01' and summary['lost_peers']['peer01'][0]['then'] == 'peer02'
    assert 'peer peer01 went away mid-run and left the pool: node01 was on it' in (reports / 'latest' / 'summary.txt').read_text()
