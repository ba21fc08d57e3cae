"""Letters, summary, JUnit, and evidence written atomically and never overwritten."""
import subprocess
import tarfile
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report

PERFTEST_ROW = ' 65536      30000            0.00               36239.87            0.579838'


def rejected_node():
    return {
        'node': 'gpu-01', 'peer': 'peer01', 'tier': '400G', 'tier_description': '400 Gb/s NDR (tier 3)', 'bucket': 'C',
        'contract_text': '8 ConnectX-7 NICs at 400 Gb/s NDR, PCIe gen5 x16',
        'identity': {'rack': 'R12', 'asset_tag': 'XYZ123'},
        'ruled_out': ['We reseated the card on mlx5_0', 'The cable was replaced once; no change'],
        'tests': [
            {'id': 'ib_send_bw_gbs:mlx5_0', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'status': 'reject', 'value': 38.0,
             'expected': 'healthy >= 46 GB/s (46-48), reject < 42 GB/s, one-way', 'label': 'ib_send_bw per HCA',
             'cmd': 'ib_send_bw -d mlx5_0 -F -s 65536 -t 128 10.252.1.2',
             'verbatim': [' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]', PERFTEST_ROW],
             'as_printed': '38.00 GB/s (perftest printed 36239.87 MB/sec)'},
            {'id': 'ib_send_bw_gbs:mlx5_5', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_5', 'status': 'healthy', 'value': 47.0,
             'as_printed': '47.00 GB/s (perftest printed 44822.69 MB/sec)', 'label': 'ib_send_bw per HCA'},
        ],
        'findings': [{'check': 'pcie_link', 'subject': 'mlx5_0', 'status': 'reject',
                      'detail': 'NIC mlx5_0 at 0000:1b:00.0: LnkSta 16GT/s x16, LnkCap 32GT/s x16',
                      'verbatim': ['LnkCap: Port #0, Speed 32GT/s, Width x16', 'LnkSta: Speed 16GT/s (downgraded), Width x16 (ok)']}],
        'causes': [{'cause': 'single_nic_slow', 'subjects': ['mlx5_0'], 'detail': 'mlx5_0 is slow; its PCIe link is degraded'}],
        'counts': {'healthy': 1, 'marginal': 0, 'reject': 2},
    }


def test_letter_has_the_runbook_shape_and_pastes_measurements_verbatim():
    letter = report.vendor_letter(rejected_node())
    assert letter.startswith('Hi,\n')
    assert not any(line.startswith('# ') or line.startswith('## ') for line in letter.splitlines())
    assert 'gpu-01 (rack R12, asset tag XYZ123)' in letter and '400 Gb/s NDR (tier 3)' in letter
    assert 'The contract specifies 8 ConnectX-7 NICs' in letter
    assert PERFTEST_ROW in letter and '$ ib_send_bw -d mlx5_0 -F -s 65536 -t 128 10.252.1.2' in letter
    assert 'LnkSta: Speed 16GT/s (downgraded), Width x16 (ok)' in letter and '0000:1b:00.0' in letter
    assert 'We reseated the card on mlx5_0' in letter
    assert 'stays cordoned' in letter
    order = [letter.index(s) for s in ('The contract specifies', 'Measured results', 'What differs', 'Already ruled out', 'Could you', 'cordoned')]
    assert order == sorted(order)


def test_letter_says_when_a_second_peer_confirmed_the_result():
    node = dict(rejected_node(), retested_against='peer02', first_peer='peer01')
    letter = report.vendor_letter(node)
    assert 'second known-good peer (peer02; the first was peer01)' in letter
    assert 'second known-good peer' not in report.vendor_letter(rejected_node())


def test_letter_never_invents_a_measurement():
    node = rejected_node()
    node['tests'][0].pop('verbatim')
    node['tests'][0].pop('as_printed')
    node['tests'][0]['value'] = None
    node['tests'][0]['error'] = "Couldn't connect to 10.252.1.2:18515"
    letter = report.vendor_letter(node)
    assert "Couldn't connect to 10.252.1.2:18515" in letter
    assert '38.0' not in letter and '38 GB/s' not in letter


def test_summary_table_and_junit():
    healthy = {'node': 'gpu-02', 'peer': 'peer01', 'tier': '400G', 'bucket': 'A', 'tests': [], 'findings': [], 'causes': [],
               'counts': {'healthy': 9}}
    nodes = {'gpu-01': rejected_node(), 'gpu-02': healthy}
    table = report.summary_table(nodes)
    lines = table.splitlines()
    assert lines[0] == '2 of 2 nodes reported: 1 A (accept), 0 B (investigate), 1 C (return to provider)'
    assert lines[1].split()[:4] == ['node', 'peer', 'tier', 'bucket']
    assert lines[3].split()[:4] == ['gpu-01', 'peer01', '400G', 'C'] and 'single_nic_slow' in lines[3]
    assert lines[4].split()[3] == 'A'
    root = ET.fromstring(report.junit_xml(nodes))
    assert root.get('tests') == '3' and root.get('failures') == '2'
    failure = root.find(".//testcase[@name='ib_send_bw_gbs[mlx5_0]']/failure")
    assert failure is not None and failure.get('type') == 'reject'


def test_bundle_is_atomic_verifiable_and_never_overwritten(tmp_path):
    target = tmp_path / 'gpu-01' / '20261130T010000Z'
    entries = evidence.build_bundle(str(target), {'commands/lspci.txt': 'LnkSta: Speed 32GT/s\n', 'results.json': '{}'})
    assert [entry[1] for entry in entries] == ['commands/lspci.txt', 'results.json']
    proc = subprocess.run(['sha256sum', '-c', 'MANIFEST.sha256'], cwd=str(target), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with pytest.raises(evidence.EvidenceError, match='never overwritten'):
        evidence.build_bundle(str(target), {'x.txt': 'second run'})
    assert (target / 'results.json').read_text() == '{}'
    assert [p.name for p in (tmp_path / 'gpu-01').iterdir()] == ['20261130T010000Z']  # no staging left behind
    (target / 'results.json').write_text('tampered')
    assert evidence.verify_manifest(str(target)) == ['results.json']


def test_tarball_is_flat_and_refuses_overwrite(tmp_path):
    folder = tmp_path / 'b'
    evidence.build_bundle(str(folder), {'a.txt': 'A', 'sub/b.txt': 'B'})
    tarball = str(tmp_path / 'n-20261130T010000Z.tar.gz')
    digest = evidence.tar_folder(str(folder), tarball)
    assert len(digest) == 64
    with tarfile.open(tarball) as archive:
        assert sorted(archive.getnames()) == ['MANIFEST.sha256', 'a.txt', 'sub', 'sub/b.txt']
    with pytest.raises(evidence.EvidenceError):
        evidence.tar_folder(str(folder), tarball)


@pytest.mark.parametrize('name', ['../etc/passwd', '/abs', 'a/../b', '', 'sp ace'])
def test_unsafe_names_are_refused(name):
    with pytest.raises(evidence.EvidenceError):
        evidence.safe_relpath(name)


def test_evidence_plan_covers_every_nic_down_ones_included():
    node = rejected_node()
    node['tests'][0]['kind'] = 'perftest_bw'
    node['tests'][0]['raw'] = 'raw perftest text'
    node['tests'][1]['kind'] = 'perftest_bw'
    # rdma_info's shape: mlx5_5's port is DOWN/Polling, so it is not among the live ports; nic_info also read a bond.
    facts = {'rdma': {'devices': {
        'mlx5_0': {'pci_address': '0000:1b:00.0', 'netdevs': ['ibp27s0'],
                   'ports': {'1': {'state': 'ACTIVE', 'state_code': 4, 'phys_state': 'LinkUp', 'phys_state_code': 5}}},
        'mlx5_5': {'pci_address': '0000:9a:00.0', 'netdevs': ['ibp154s0'], 'gids': [{'port': 1, 'index': 3, 'netdev': 'ibp154s0'}],
                   'ports': {'1': {'state': 'DOWN', 'state_code': 1, 'phys_state': 'Polling', 'phys_state_code': 2}}}},
        'live_ports': [{'device': 'mlx5_0', 'netdev': 'ibp27s0'}]},
        'nic': {'nics': {'ibp27s0': {}, 'ibp154s0': {}, 'bond0': {}}}}
    plan = evidence.evidence_plan(node, {'thresholds': {}}, facts, '/run/lab/proc', ['/proc/cmdline', '/etc/os-release'])
    argvs = [c['argv'] for c in plan['commands']]
    for pci in ('0000:1b:00.0', '0000:9a:00.0'):
        assert ['mlxlink', '-d', pci, '-m', '-c', '-e'] in argvs
        assert ['flint', '-d', pci, 'q'] in argvs
    for netdev in ('ibp27s0', 'ibp154s0', 'bond0'):
        assert ['ethtool', '-S', netdev] in argvs and ['ethtool', netdev] in argvs
    assert [a[-1] for a in argvs if a[:2] == ['ethtool', '-S']] == ['ibp27s0', 'ibp154s0', 'bond0']
    assert plan['paths'] == ['/run/lab/proc/cmdline', '/etc/os-release']
    assert plan['files']['tests/ib_send_bw_gbs_mlx5_0.txt'].startswith('$ ib_send_bw -d mlx5_0')


def test_once_stored_a_verdict_names_where_the_bundle_holds_each_output_in_place_of_the_output():
    node = rejected_node()
    node['tests'][0]['raw'] = 'raw perftest text'
    node['tests'][1]['raw'] = ''   # an empty output: no file in the bundle, nothing to point at
    files = evidence.evidence_plan(node, {}, {})['files']
    slim = evidence.outputs_in_bundle(node)
    assert slim['tests'][0]['raw_file'] == 'tests/ib_send_bw_gbs_mlx5_0.txt' and slim['tests'][0]['raw_file'] in files
    assert 'raw' not in slim['tests'][0] and 'raw' not in slim['tests'][1] and 'raw_file' not in slim['tests'][1]
    # Every figure stays, and the verdict given is left as it was (it went into the bundle with its outputs).
    assert [dict(t, raw_file=None) for t in slim['tests']] == [dict((k, v) for k, v in t.items() if k != 'raw') for t in
                                                               [dict(t, raw_file=None) for t in node['tests']]]
    assert node['tests'][0]['raw'] == 'raw perftest text' and slim['bucket'] == node['bucket']


@pytest.mark.parametrize('odd', [None, 'text', [], {'tests': 'not a list'}, {'node': 'node01'}])
def test_anything_but_a_verdict_with_tests_is_given_back_as_it_is(odd):
    assert evidence.outputs_in_bundle(odd) is odd


def test_summary_table_counts_what_could_not_be_measured():
    nodes = {'node01': {'node': 'node01', 'bucket': 'B', 'peer': 'peer01', 'tier': '400G', 'tests': [], 'findings': [],
                        'counts': {'healthy': 70, 'marginal': 0, 'reject': 0, 'unknown': 3},
                        'causes': [{'cause': 'measurement_incomplete', 'detail': 'dcgmi is not installed', 'subjects': []}]}}
    first, header, _rule, row = report.summary_table(nodes, hosts=['node01', 'node02']).splitlines()
    # The first line says how many of the run's hosts are in the report: node02 is missing from this one.
    assert first == '1 of 2 nodes reported: 0 A (accept), 1 B (investigate), 0 C (return to provider)'
    assert header.split()[4:8] == ['healthy', 'marginal', 'reject', 'unknown']
    assert row.split()[4:9] == ['70', '0', '0', '3', 'measurement_incomplete']


def test_a_peer_that_went_away_is_named_with_the_node_on_it_and_the_peer_that_measured_it_then():
    detail = 'known-good peer peer01 went away during the clients of ib_send_bw:0: Connection refused'
    rescheduled = {'node': 'gpu-02', 'peer': 'peer02', 'tier': '400G', 'bucket': 'A', 'findings': [], 'causes': [], 'counts': {'healthy': 1},
                   'tests': [{'id': 'ib_send_bw_gbs:mlx5_0', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'status': 'healthy', 'peer': 'peer02'}],
                   'lost_peers': [{'peer': 'peer01', 'node': 'gpu-02', 'step': 'the clients of ib_send_bw:0', 'detail': detail}]}
    stranded = {'node': 'gpu-03', 'peer': 'peer01', 'tier': '400G', 'bucket': 'B', 'tests': [], 'findings': [], 'causes': [], 'counts': {},
                'lost_peers': [{'peer': 'peer01', 'node': 'gpu-03', 'step': 'the read of its RDMA ports', 'detail': 'gone'}]}
    nodes = {'gpu-02': rescheduled, 'gpu-03': stranded, 'gpu-04': dict(rescheduled, node='gpu-04', lost_peers=[])}
    lost = report.lost_peers(nodes)
    assert list(lost) == ['peer01']
    assert [(e['node'], e['then']) for e in lost['peer01']] == [('gpu-02', 'peer02'), ('gpu-03', None)]
    table = report.summary_table(nodes)
    assert ('peer peer01 went away mid-run and left the pool: gpu-02 was on it (%s), then measured on peer02; '
            'gpu-03 was on it (gone), then not measured' % detail) in table
    assert '- peer gone: %s (it left the pool; the node was rescheduled)' % detail in report.node_markdown(rescheduled)


def test_a_suspect_peer_line_writes_its_figures_as_measured_not_as_floats_print():
    # The figures of a lab run's suspect peer (a degraded HCA on peer01), as the node's re-test recorded them.
    figures = [{'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'unit': 'GB/s', 'first_peer': 'peer01', 'first_value': 7.260004679680001,
                'second_peer': 'peer02', 'second_value': 12.100000808959999}]
    node = {'node': 'node01', 'peer': 'peer02', 'tier': '100G', 'bucket': 'A', 'tests': [], 'findings': [], 'causes': [], 'counts': {},
            'suspect_peer': {'peer': 'peer01', 'left_pool': True, 'figures': figures}}
    table = report.summary_table({'node01': node})
    assert 'suspect peer peer01 (left the pool): node01 ib_send_bw_gbs mlx5_0 7.26 GB/s on peer01, 12.1 on peer02' in table


def test_the_chain_names_who_validated_whom_from_each_known_good_peer():
    def node(name, peer, promoted=False, bucket='A'):
        return {'node': name, 'peer': peer, 'tier': '400G', 'bucket': bucket, 'findings': [], 'causes': [], 'counts': {'healthy': 1},
                'tests': [{'id': 'x', 'metric': 'ib_send_bw_gbs', 'subject': 'mlx5_0', 'status': 'healthy', 'peer': peer}],
                'promoted': promoted}
    nodes = {'gpu-01': node('gpu-01', 'peer01', True), 'gpu-02': node('gpu-02', 'peer01', True), 'gpu-03': node('gpu-03', 'gpu-01', True),
             'gpu-04': node('gpu-04', 'gpu-03'), 'gpu-05': node('gpu-05', 'peer02'),
             'gpu-06': dict(node('gpu-06', 'peer01', bucket='B'), tests=[])}   # never measured: not in the chain
    assert report.validation_chain(nodes) == {'peer01': ['gpu-01', 'gpu-02'], 'gpu-01': ['gpu-03'], 'gpu-03': ['gpu-04'], 'peer02': ['gpu-05']}
    promoted = report.promoted_nodes(nodes)
    assert promoted == {'gpu-01': {'validated_by': 'peer01', 'validated': ['gpu-03']}, 'gpu-02': {'validated_by': 'peer01', 'validated': []},
                        'gpu-03': {'validated_by': 'gpu-01', 'validated': ['gpu-04']}}
    table = report.summary_table(nodes)
    assert 'chain from peer01: peer01 validated gpu-01, gpu-02; gpu-01 validated gpu-03; gpu-03 validated gpu-04\n' in table
    assert 'chain from peer02: peer02 validated gpu-05\n' in table
    assert '- promoted: accepted with every test healthy' in report.node_markdown(nodes['gpu-01'])
    # Without promotion no chain line: the table's peer column says it all.
    plain = dict((name, dict(entry, promoted=False)) for name, entry in nodes.items())
    assert 'chain from' not in report.summary_table(plain)


def test_the_validation_textfile_has_every_node_its_bucket_and_whether_its_run_broke():
    from prometheus_client.parser import text_string_to_metric_families
    from ansible_collections.gpufleet.netval.plugins.module_utils.policy import verdict
    nodes = {'node01': {'node': 'node01', 'bucket': 'A', 'tests': [], 'findings': [], 'causes': []},
             'node03': verdict.incomplete_verdict('node03', 'connect', 'timed out')}
    text = report.validation_textfile(nodes, 1764930000, hosts=['node01', 'node03'])
    samples = dict(((s.name, tuple(sorted(s.labels.items()))), s.value) for f in text_string_to_metric_families(text) for s in f.samples)
    assert samples[('netval_validation_nodes', ())] == 2
    assert samples[('netval_node_bucket', (('bucket', 'B'), ('node', 'node03')))] == 1
    assert samples[('netval_node_bucket', (('bucket', 'A'), ('node', 'node03')))] == 0
    assert samples[('netval_validation_run_incomplete', (('node', 'node03'),))] == 1
    assert samples[('netval_validation_run_incomplete', (('node', 'node01'),))] == 0
    assert samples[('netval_last_run_timestamp_seconds', (('node', 'node01'), ('playbook', 'validate')))] == 1764930000


def letter_node():
    """The runbook's letter case (synthetic): mlx5_0 at Gen4 and slow, the other NICs at Gen5, firmware uniform, a marginal host
    finding and causes addressed to ourselves beside the ones that return the node."""
    node = rejected_node()
    node['findings'] += [
        {'check': 'pcie_link', 'subject': 'mlx5_%d' % i, 'status': 'healthy', 'actual': 'LnkSta 32GT/s x16, LnkCap 32GT/s x16',
         'detail': 'mlx5_%d LnkSta 32GT/s x16' % i} for i in range(1, 8)]
    node['findings'] += [
        {'check': 'firmware_uniform', 'subject': 'MT_0000000838', 'status': 'healthy', 'detail': 'NICs of model MT_0000000838 run firmware 28.39.2048'},
        {'check': 'firmware_min_version', 'subject': '0000:1b:00.0', 'status': 'healthy', 'expected': '>= 28.39.1002'},
        {'check': 'gpu_count', 'subject': 'gpus', 'status': 'healthy', 'detail': '8 GPUs visible'},
        {'check': 'cmdline', 'subject': 'iommu=pt', 'status': 'marginal', 'detail': 'kernel cmdline lacks iommu=pt'}]
    node['causes'] = [
        {'cause': 'pcie_link', 'subjects': ['mlx5_0'], 'detail': 'PCIe link of mlx5_0: below capability', 'returns_node': True},
        {'cause': 'single_nic_slow', 'subjects': ['mlx5_0'], 'returns_node': True,
         'detail': 'mlx5_0 is slow: check its PCIe link (lspci LnkSta), the cable, mlxlink BER and the switch port'},
        {'cause': 'host_configuration', 'subjects': ['iommu=pt'], 'returns_node': False, 'detail': 'Host configuration differs: fix it'},
        {'cause': 'measurement_incomplete', 'subjects': ['mlx5_7'], 'returns_node': False,
         'detail': 'Not everything could be measured; fix on our side and re-run'}]
    node['cluster_id'] = 'eu-west-gpu-7'
    node['support_contract'] = 'SC-2026-0415'
    return node


def test_letter_names_only_the_provider_side_of_what_returns_the_node():
    letter = report.vendor_letter(letter_node())
    assert ('Our reading of the pattern: a PCIe link below the contracted speed or width (mlx5_0); a NIC below the contracted '
            'per-port RDMA throughput while the others meet it (mlx5_0).') in letter
    for ours in ('check its PCIe link', 'switch port', 'fix on our side', 'Host configuration', 'iommu=pt', 're-run'):
        assert ours not in letter, ours


def test_letter_states_what_the_run_rules_out_and_closes_with_the_cluster_and_contract():
    letter = report.vendor_letter(letter_node())
    assert ('The same run shows: the other NICs (mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7) show LnkSta 32GT/s x16, '
            'LnkCap 32GT/s x16; NICs of model MT_0000000838 run firmware 28.39.2048; every NIC runs at least the contracted '
            'minimum firmware (\\>= 28.39.1002); 8 GPUs visible.') in letter
    assert 'Cluster identifier eu-west-gpu-7; support contract SC-2026-0415 (attached).' in letter
    node = letter_node()
    del node['support_contract']
    missing = report.vendor_letter(node)
    assert ('[Cluster identifier and support contract: netval_support_contract not set in the inventory; add them before this '
            'letter is sent.]') in missing
