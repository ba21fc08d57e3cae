"""Re-grading past runs from their evidence bundles (policy/regrade.py, reporting/evidence_reads.py, regrade_report).

A bundle here is built as a run builds one: the node's verdict from real tool outputs (perftest on NDR, iperf3 on the
lab's veth, nccl-tests on 2 H100 nodes) read by the measurement readers and graded by node_verdict with the lab's
resolved 400G profile, the evidence plan's files, a manifest, the .tar.gz the node would send, unpacked by
evidence.unpack_bundle as evidence_store does.  Edits of a raw output are synthetic and say so.
"""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import iperf3, nccl, perftest
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import measurements, preflight, regrade, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import evidence_reads
from ansible_collections.gpufleet.netval.plugins.modules import regrade_report
from tests.unit import fixtures
from tests.unit.plugins.module_utils import drift_samples
from tests.unit.plugins.modules.utils import run_module

PERFTEST = 'perftest/ib_send_bw_ndr_perftest24_header_cpu_warning_in_table_prompt.txt'   # 46557.03 MiB/sec = 48.82 GB/s
IPERF3 = 'iperf3/iperf3_3.12_tcp_p4_client_json_netns_veth.txt'
NCCL = 'nccl/all_reduce_perf_h100_ring_512M_8G_healthy_avg95_nccltests252.txt'
HCAS = ['mlx5_%d' % i for i in range(8)]
STAMP = '20261201T100556Z'


def profile():
    """The lab's resolved 400G profile (tests/fixtures/drift) with the tests these bundles ran: per-HCA send, TCP, NCCL."""
    resolved = drift_samples.profile()
    for name in ('jumbo_ping', 'gdr', 'all_nics', 'dcgmi'):
        resolved['tests'][name]['enabled'] = False
    # The real nccl-tests table was captured without NCCL_DEBUG=INFO: this contract asks for no transport and no GPUDirect
    # (NCCL_INFO_HEAD below names the HCAs only).
    resolved['tests']['nccl']['require_transport'] = None
    resolved['tests']['nccl']['require_gdr'] = None
    return resolved


# synthetic: the device list and NET/IB line NCCL_DEBUG=INFO prints (real formats: nccl-tests #29, #293), put before the
# real table so the bundle names the 8 HCAs NCCL used on the node (rank 0's host).
NCCL_INFO_HEAD = '''# Using devices
#  Rank  0 Group  0 Pid  40211 on     node01 device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  38876 on     peer01 device  0 [0x1b] NVIDIA H100 80GB HBM3
node01:40211:40230 [0] NCCL INFO NET/IB : Using %s ; OOB eth0:10.0.0.11<0>
''' % ' '.join('[%d]%s:1/RoCE' % (i, hca) for i, hca in enumerate(HCAS))


def nccl_text():
    return NCCL_INFO_HEAD + fixtures.local(NCCL)


def stricter():
    """A contract that asks for 50 GB/s per HCA (reject under 49): the NDR figure of 48.8 GB/s fails it."""
    strict = profile()
    strict['thresholds']['ib_send_bw_gbs'].update(healthy=[50, None], reject_below=49)
    return strict


def measured(perftest_text=None):
    text = perftest_text or fixtures.local(PERFTEST)
    found = []
    for hca in HCAS:
        run = {'test': 'ib_send_bw', 'metric': 'ib_send_bw_gbs', 'subject': hca, 'id': 'ib_send_bw_gbs:%s' % hca, 'direction': 'receive',
               'peer_device': hca}
        result = {'perftest': perftest.parse_perftest(text), 'stdout': text, 'cmd': 'ib_send_bw -d %s -F --report_gbits 10.0.0.2' % hca}
        found.extend(measurements.run_measurements(result, run, 'peer01'))
    text = fixtures.local(IPERF3)
    run = {'test': 'iperf3', 'metric': 'iperf3_gbps', 'subject': '10.0.0.2', 'id': 'iperf3_gbps:10.0.0.2', 'direction': 'receive'}
    found.extend(measurements.run_measurements(dict(iperf3.parse_iperf3(text), stdout=text, cmd='iperf3 -c 10.0.0.2 -J -P 4'), run, 'peer01'))
    text = nccl_text()
    parsed = nccl.parse_nccl_tests(text)
    parsed['local_ib_hcas'] = nccl.local_hcas(parsed, 'node01')
    run = {'test': 'nccl', 'metric': 'nccl_busbw_gbs', 'subject': 'all_reduce', 'at_bytes': profile()['tests']['nccl'].get('at_bytes')}
    found.extend(measurements.run_measurements(dict(parsed, stdout=text, cmd='mpirun ... all_reduce_perf -b 512M -e 8G'), run, 'peer01'))
    return found, parsed['transport']


def node_result(name, perftest_text=None):
    """The node's verdict as the verdict role writes it into results.json."""
    found, transport = measured(perftest_text)
    facts = drift_samples.facts()
    result = verdict.node_verdict(found, preflight.preflight_findings(facts, profile()), profile(), {'nccl_transport': transport})
    result.update(node=name, peer='peer01', tier='400G', timestamp=STAMP)
    return result, facts


def make_bundle(evidence_dir, name, stamp=STAMP, perftest_text=None, edit=None):
    """``evidence_dir/<name>/<stamp>/`` as evidence_store leaves it; ``edit(files)`` changes the files before they are sealed."""
    result, facts = node_result(name, perftest_text)
    files = dict(evidence.evidence_plan(result, profile(), facts)['files'], **{'commands.json': '[]'})
    if edit:
        edit(files)
    stage = os.path.join(str(evidence_dir), '.stage-%s-%s' % (name, stamp))
    evidence.build_bundle(stage, files)
    dest = os.path.join(str(evidence_dir), name, stamp)
    os.makedirs(dest)
    tarball = evidence.tar_folder(stage, os.path.join(dest, '%s-%s.tar.gz' % (name, stamp))) and os.path.join(dest, '%s-%s.tar.gz' % (name, stamp))
    evidence.unpack_bundle(tarball, dest)
    return dest, result


def regraded(folder, name, graded_with):
    bundle = evidence_reads.read_bundle(folder, name)
    return regrade.regrade(bundle['results'], bundle['outputs'], bundle['preflight'], graded_with), bundle


def test_a_bundle_graded_again_with_its_own_contract_gives_its_verdict_again(tmp_path):
    folder, before = make_bundle(tmp_path, 'node01')
    assert before['bucket'] == 'A', before['causes']
    after, bundle = regraded(folder, 'node01', profile())
    assert sorted(bundle['outputs']) == list(range(len([t for t in before['tests'] if t.get('raw')])))
    assert after['bucket'] == 'A' and after['causes'] == [] and after['regrade_notes'] == []
    send = [t for t in after['tests'] if t['metric'] == 'ib_send_bw_gbs']
    assert len(send) == 8 and all(t['regraded'] == 'parsed' and t['value'] == pytest.approx(48.8186, abs=1e-3) for t in send)
    assert [(t['id'], t['status']) for t in after['tests']] == [(t['id'], t['status']) for t in before['tests']]
    assert [t['value'] for t in after['tests'] if t['metric'] == 'nccl_busbw_gbs'] == [95.1]


def test_a_stricter_contract_moves_the_node_to_c(tmp_path):
    folder, _before = make_bundle(tmp_path, 'node01')
    after, _bundle = regraded(folder, 'node01', stricter())
    assert after['bucket'] == 'C'
    assert set(t['status'] for t in after['tests'] if t['metric'] == 'ib_send_bw_gbs') == {'reject'}
    assert set(['platform_tuning', 'rdma_all_slow']) & set(c['cause'] for c in after['causes']), after['causes']


def test_a_bundle_whose_files_were_changed_is_never_read(tmp_path):
    folder, _before = make_bundle(tmp_path, 'node01')
    with open(os.path.join(folder, 'results.json'), 'a', encoding='utf-8') as handle:
        handle.write(' ')
    listed, problems = evidence_reads.verify_bundle(folder)
    assert problems[0] == 'results.json does not match its checksum'
    with pytest.raises(evidence_reads.BundleError, match='checksums do not verify: results.json does not match its checksum'):
        evidence_reads.read_bundle(folder, 'node01')


def test_a_manifest_rewritten_to_match_is_caught_by_the_fetched_tarball(tmp_path):
    folder, _before = make_bundle(tmp_path, 'node01')
    path = os.path.join(folder, 'results.json')
    with open(path, encoding='utf-8') as handle:
        text = handle.read() + ' '
    os.chmod(path, 0o644)
    os.unlink(path)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    manifest = os.path.join(folder, evidence.MANIFEST)
    entries = [(evidence.sha256_file(path) if rel == 'results.json' else digest, rel) for digest, rel in evidence.read_manifest(folder)]
    os.unlink(manifest)
    with open(manifest, 'w', encoding='utf-8') as handle:
        handle.write(''.join('%s  %s\n' % entry for entry in entries))
    _listed, problems = evidence_reads.verify_bundle(folder)
    assert any('differs from the one in node01-%s.tar.gz' % STAMP in p for p in problems), problems
    assert any('results.json differ from the files of the fetched bundle' in p for p in problems), problems


def test_an_output_todays_parser_cannot_read_is_unknown_never_a_traceback(tmp_path):
    def garble(files):
        # Synthetic: mlx5_3's recorded perftest output cut before its result table.
        key = [k for k in files if k.startswith('tests/ib_send_bw_gbs_mlx5_3')][0]
        files[key] = files[key].split(' #bytes')[0]
    folder, _before = make_bundle(tmp_path, 'node01', edit=garble)
    after, _bundle = regraded(folder, 'node01', profile())
    entry = [t for t in after['tests'] if t['id'] == 'ib_send_bw_gbs:mlx5_3'][0]
    assert entry['status'] == 'unknown' and after['bucket'] == 'B'
    assert 'measurement_incomplete' in [c['cause'] for c in after['causes']]


def test_a_metric_the_new_contract_asks_for_and_the_bundle_lacks_is_not_measurable(tmp_path):
    folder, _before = make_bundle(tmp_path, 'node01')
    more = profile()
    more['tests']['gdr']['enabled'] = True
    after, _bundle = regraded(folder, 'node01', more)
    gdr = [t for t in after['tests'] if t['metric'] == 'gdr_bw_gbs']
    assert len(gdr) == 1 and gdr[0]['status'] == 'unknown' and 'the test was not run when the node was validated' in gdr[0]['error']
    assert after['bucket'] == 'B'


def test_repeats_are_read_again_one_by_one_and_combined(tmp_path):
    slower = fixtures.local(PERFTEST).replace('46557.03', '44000.00')  # synthetic: a second, slower repeat

    def repeated(files):
        results = json.loads(files['results.json'])
        for key in [k for k in files if k.startswith('tests/ib_send_bw_gbs_mlx5_0')]:
            files[key] = files[key].split('\n', 1)[0] + '\n' + '# repeat 1 of 2\n%s\n# repeat 2 of 2 (graded)\n%s\n' % (
                fixtures.local(PERFTEST), slower)
        files['results.json'] = json.dumps(results)
    folder, _before = make_bundle(tmp_path, 'node01', edit=repeated)
    after, _bundle = regraded(folder, 'node01', profile())
    entry = [t for t in after['tests'] if t['id'] == 'ib_send_bw_gbs:mlx5_0'][0]
    assert entry['repeats'] == 2 and len(entry['samples']) == 2 and entry['value'] == pytest.approx(46.137, abs=1e-3)


def test_bundles_are_found_by_node_folder_and_date(tmp_path):
    make_bundle(tmp_path, 'node01')
    make_bundle(tmp_path, 'node01', stamp='20261205T080000Z')
    make_bundle(tmp_path, 'node02')
    found, problems = evidence_reads.find_bundles(str(tmp_path))
    assert [(n, s) for n, s, _f in found] == [('node01', STAMP), ('node02', STAMP), ('node01', '20261205T080000Z')] and problems == []
    found, _problems = evidence_reads.find_bundles(str(tmp_path), since=evidence_reads.since_seconds('2026-12-02'))
    assert [(n, s) for n, s, _f in found] == [('node01', '20261205T080000Z')]
    found, problems = evidence_reads.find_bundles(str(tmp_path), nodes=['node02', 'node09'])
    assert [n for n, _s, _f in found] == ['node02'] and problems == ['no bundle of node09']
    found, _problems = evidence_reads.find_bundles(folders=[str(tmp_path / 'node01' / STAMP), str(tmp_path / 'node02')])
    assert [(n, s) for n, s, _f in found] == [('node01', STAMP), ('node02', STAMP)]
    assert evidence_reads.since_seconds('yesterday') is None and evidence_reads.since_seconds('20261101T100000Z') == 1793527200.0


def test_regrade_report_writes_the_before_and_after_table_and_compares_each_run_with_its_siblings(tmp_path):
    evidence_dir = tmp_path / 'evidence'
    evidence_dir.mkdir()
    for index in range(1, 7):
        make_bundle(evidence_dir, 'node%02d' % index)
    # Synthetic: node07's recorded outputs read 5.7 % below its six siblings' (43900 and 46557 MiB/sec), above the 46 GB/s line.
    make_bundle(evidence_dir, 'node07', perftest_text=fixtures.local(PERFTEST).replace('46557.03', '43900.00'))
    folder = evidence_dir / 'node03' / STAMP
    (folder / 'results.json').chmod(0o644)
    (folder / 'results.json').write_text('{}')  # not what the manifest says: reported, never graded
    # The run's report said node05 was B (it is the before when that report verifies).
    report = dict(node_result('node05')[0], bucket='B', causes=[{'cause': 'host_configuration', 'detail': 'x', 'subjects': []}])
    evidence.build_bundle(str(tmp_path / 'reports' / STAMP), {'nodes/node05.json': json.dumps(report)})
    rules = drift_samples_fleet_rules()
    strict = dict(stricter(), fleet_rules=rules)
    lenient = dict(profile(), fleet_rules=rules)
    args = {'root': str(tmp_path / 'regrade'), 'timestamp': '20261215T090000Z', 'profiles': {'400G': lenient},
            'evidence_dir': str(evidence_dir), 'reports_dir': str(tmp_path / 'reports')}
    result, failed = run_module(regrade_report.main, args)
    assert not failed, result
    assert result['not_verified'] == ['node03/%s' % STAMP] and result['changed_nodes'] == ['node05', 'node07']
    table = result['summary_table']
    assert table.startswith('regrade of 7 bundle(s) with today\'s tier profiles: 2 changed, 4 unchanged, 1 not verified, 0 not graded')
    assert 'node03 %s: not verified, not graded: checksums do not verify: results.json does not match its checksum' % STAMP in table
    rows = dict((line.split()[0], line.split()) for line in table.splitlines()[3:10])
    assert rows['node07'][2:5] == ['A', 'B', '-'] and rows['node07'][5] == 'fleet_outlier'
    assert rows['node05'][2:4] == ['B', 'A'] and rows['node01'][2:4] == ['A', 'A']
    document = json.loads((tmp_path / 'regrade' / 'latest' / 'regrade.json').read_text())
    by_node = dict((b['node'], b) for b in document['bundles'])
    assert by_node['node05']['before']['source'] == 'report' and by_node['node01']['before']['source'] == 'bundle'
    assert [f['after'] for f in by_node['node07']['figures'] if f['metric'] == 'ib_send_bw_gbs'] == ['marginal'] * 8
    written = json.loads((tmp_path / 'regrade' / 'latest' / 'nodes' / 'node07' / ('%s.json' % STAMP)).read_text())
    assert written['bucket'] == 'B' and all(not t.get('raw') for t in written['tests'])
    # With the stricter contract every verified node moves to C; the report folder is a new one, never over the last.
    result, failed = run_module(regrade_report.main, dict(args, timestamp='20261215T100000Z', profiles={'400G': strict},
                                                          contract='contract file strict.yml', nodes=['node01', 'node02']))
    assert not failed and result['changed_nodes'] == ['node01', 'node02'] and 'with contract file strict.yml' in result['summary_table']
    again, failed = run_module(regrade_report.main, dict(args, timestamp='20261215T100000Z'))
    assert failed and 'never overwritten' in again['msg']


def drift_samples_fleet_rules():
    import yaml
    with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        return copy.deepcopy(yaml.safe_load(handle)['tier_profile_fleet_rules'])


def test_regrade_report_refuses_bad_options_naming_each(tmp_path):
    result, failed = run_module(regrade_report.main, {'root': str(tmp_path), 'timestamp': 'today', 'profiles': {'400G': 'x'},
                                                      'since': 'last week', 'nodes': ['../x']})
    assert failed and result['error_class'] == 'invalid_options'
    for words in ("timestamp 'today' must look like", 'give evidence_dir', "since must be a UTC date", 'nodes[0] must be one file name',
                  'profiles.400G must be a resolved tier profile'):
        assert words in result['msg'], (words, result['msg'])
