"""After acceptance on the lab: `make demo` (README's command: node01 healthy, node02 with a NIC at Gen4, one peer) accepts
node01, its baseline of parsed facts kept beside the raw outputs, and must have measured its two nodes one at a time on
the peer; then real and emulated changes are applied to node01 with the lab's faults and drift.yml must report each with
its severity and exit code."""
import json
import os
import pathlib
import re
import subprocess
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.lab.conftest import BIN, LAB_ROOT, ROOT, bench_script, cli, lab_env

pytestmark = pytest.mark.lab


def playbook(name, reports, evidence, *extra, limit='node01'):
    # The lab's nodes are its new_nodes: drift.yml watches accepted_nodes unless told which group holds the accepted ones.
    group = ['-e', 'netval_nodes=new_nodes'] if name == 'drift.yml' else []
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', 'inventories/lab', 'playbooks/%s' % name, '-l', limit,
            '-e', 'report_root=%s' % reports, '-e', 'evidence_controller_dir=%s' % evidence] + group + list(extra)
    proc = subprocess.run(argv, cwd=ROOT, env=lab_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=900, check=False)
    return proc.returncode, proc.stdout


def drift_findings(reports, node='node01'):
    with open(str(reports / 'latest' / 'drift.json'), encoding='utf-8') as handle:
        return json.load(handle)['nodes'][node]['findings']


# What make demo's run was: the peer HCA intervals per node, and its summary.
DEMO = {}


@pytest.fixture(scope='module')
def accepted(lab_session, tmp_path_factory):  # pylint: disable=unused-argument
    base = tmp_path_factory.mktemp('drift')
    reports, evidence = base / 'reports', os.path.join(ROOT, 'evidence')  # make demo keeps its evidence in the checkout
    bench = bench_script()
    started = time.time()
    with bench.LedgerPoller(os.path.join(LAB_ROOT, 'nodes')) as poller:
        demo = subprocess.run(['make', 'demo'], cwd=ROOT, env=lab_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=900, check=False)
    assert demo.returncode == 0, demo.stdout[-4000:]
    DEMO.update(output=demo.stdout, peer_sessions=bench.session_intervals(poller.store, ['node01', 'node02'], ['peer01'],
                                                                          window=(started, time.time())))
    return base, reports, pathlib.Path(evidence)


def test_make_demo_measures_its_two_nodes_one_at_a_time_on_the_peer_and_prints_the_summary(accepted):  # pylint: disable=unused-argument
    intervals, unattributed = DEMO['peer_sessions']
    assert unattributed == 0 and sorted(set(node for _p, _h, node, _s, _e in intervals)) == ['node01', 'node02']
    assert task_timeline.peer_overlap_s(intervals) == 0, task_timeline.peer_overlap_spans(intervals)
    rows = [line.split() for line in DEMO['output'].splitlines() if line.startswith('node0')]
    summary = [row for row in rows if len(row) > 3 and row[2] == '400G']  # summary.txt's table, not the play recap
    assert [(row[0], row[1], row[3]) for row in summary] == [('node01', 'peer01', 'A'), ('node02', 'peer01', 'C')], DEMO['output'][-3000:]
    # No re-test with one peer: the run took what was predicted before its tests started, within a quarter.
    predicted = [line for line in DEMO['output'].splitlines() if '"prediction: 2 node(s) on 1 peer(s)' in line]
    timing = re.search(r'run: predicted (\d+) s \(without re-tests\), took (\d+) s \(([+-]\d+) %\)', DEMO['output'])
    assert predicted and timing and abs(int(timing.group(3))) <= 25, DEMO['output'][-3000:]


def test_acceptance_keeps_a_baseline_of_parsed_facts_beside_the_raw_outputs(accepted):
    _base, _reports, evidence = accepted
    with open(str(evidence / 'node01' / 'baseline' / 'baseline.json'), encoding='utf-8') as handle:
        baseline = json.load(handle)
    assert baseline['node'] == 'node01' and baseline['tier'] == '400G'
    # A real site's box: eight rails, a front-end and a storage NIC (the storage card's second port Down) - all kept.
    assert len([n for n in baseline['facts']['nics'] if n.get('present')]) == 12
    assert len([g for g in baseline['facts']['gpus'] if g.get('present')]) == 8
    assert any(f['metric'] == 'ib_send_bw_gbs' and f['subject'] == 'mlx5_0' and f['peer'] == 'peer01' for f in baseline['figures'])
    mtus = dict((i['netdev'], i['mtu']) for n in baseline['facts']['nics'] for i in n['interfaces'])
    assert mtus['ibp26s0'] == 4092 and mtus['enp41s0f0np0'] == 9000, mtus  # IPoIB rails, a RoCE storage port
    assert (evidence / 'node01' / 'baseline' / 'commands').is_dir()  # the raw outputs stay beside it


def test_unchanged_node_has_no_red_finding_and_a_textfile_prometheus_parses(accepted):
    _base, reports, evidence = accepted
    rc, out = playbook('drift.yml', reports, evidence)
    assert rc == 0, out[-4000:]
    assert [f for f in drift_findings(reports) if f['severity'] == 'red'] == []
    families = dict((f.name, f) for f in text_string_to_metric_families((reports / 'latest' / 'netval.prom').read_text()))
    stamps = [s for s in families['netval_last_run_timestamp_seconds'].samples if s.labels == {'node': 'node01', 'playbook': 'drift'}]
    assert stamps and stamps[0].value > 1.7e9
    buckets = dict((s.labels['bucket'], s.value) for s in families['netval_node_bucket'].samples if s.labels['node'] == 'node01')
    assert buckets == {'A': 1, 'B': 0, 'C': 0}  # the bucket of the validation that made the baseline
    assert (reports / 'latest' / 'junit.xml').exists() and (reports / 'latest' / 'nodes' / 'node01.md').exists()


def test_a_node_without_a_baseline_says_so_and_fails(accepted, tmp_path):
    _base, reports, _evidence = accepted
    rc, out = playbook('drift.yml', reports, tmp_path / 'no-evidence')
    assert rc != 0, out[-4000:]
    findings = drift_findings(reports)
    assert [(f['check'], f['kind'], f['severity']) for f in findings] == [('baseline', 'baseline_missing', 'red')]


def test_lost_setting_slower_link_lower_mtu_and_new_firmware_each_get_their_severity_and_the_run_fails(accepted):
    _base, reports, evidence = accepted
    for fault in ('cmdline-drop', 'nic0-gen4', 'fw-change', 'mtu-mismatch'):
        cli('fault', fault, '--node', 'node01', check=True)
    try:
        rc, out = playbook('drift.yml', reports, evidence)
    finally:
        cli('fault', 'clear', check=True)
    assert rc != 0, out[-4000:]
    found = dict(((f['check'], f['subject']), f) for f in drift_findings(reports))
    assert found[('cmdline', 'iommu=pt')]['severity'] == 'red'
    assert found[('pcie_link', 'mlx5_0')]['severity'] == 'red' and found[('pcie_link', 'mlx5_0')]['current'] == '16GT/s x16'
    assert (found[('firmware', 'mlx5_0')]['severity'], found[('firmware', 'mlx5_0')]['current']) == ('info', '28.40.1000')
    # The fault lowers node01's first addressed rail (mlx5_1, ibp59s0) from the IPoIB 4092 to 1500.
    mtu = found[('mtu', 'ibp59s0')]
    assert (mtu['severity'], mtu['baseline'], mtu['current']) == ('red', 4092, 1500), mtu
    assert 'red drift findings on node01' in out


def test_a_firmware_change_a_maintenance_record_lists_is_expected_and_the_run_passes(accepted, tmp_path):
    _base, reports, evidence = accepted
    record = tmp_path / 'change-1234.yml'
    record.write_text('reason: NIC firmware update (change 1234)\nchanges:\n  - {check: firmware, subject: mlx5_0, to: "28.40.1000"}\n')
    cli('fault', 'fw-change', '--node', 'node01', check=True)
    try:
        rc, out = playbook('drift.yml', reports, evidence, '-e', 'netval_maintenance_file=%s' % record)
    finally:
        cli('fault', 'clear', check=True)
    assert rc == 0, out[-4000:]
    firmware = [f for f in drift_findings(reports) if f['check'] == 'firmware']
    assert [(f['subject'], f['severity']) for f in firmware] == [('mlx5_0', 'expected')]


def test_a_pause_storm_since_the_baseline_is_red(accepted):
    _base, reports, evidence = accepted
    cli('fault', 'pause-storm', '--node', 'node01', check=True)
    try:
        rc, out = playbook('drift.yml', reports, evidence)
    finally:
        cli('fault', 'clear', check=True)
    assert rc != 0, out[-4000:]
    red = [f for f in drift_findings(reports) if f['severity'] == 'red' and f['check'] == 'pause_frames']
    # Pause frames exist on Ethernet only: the node's front-end NIC (mlx5_8, mlx5_9) and its cabled storage port (mlx5_10)
    # count them, each named by its RDMA device; its IPoIB rails and the uncabled mlx5_11 do not.
    assert sorted(f['subject'] for f in red) == ['mlx5_10', 'mlx5_8', 'mlx5_9'], red
    assert all(f['rate_per_hour'] > f['limit_per_hour'] for f in red), red


LOOSE_CONTRACT = '''# A contract that accepts 40 GB/s per HCA at 400G, with three runs of ib_send_bw (synthetic, for the re-validation check)
tests:
  ib_send_bw: {repeats: 3}
thresholds:
  ib_send_bw_gbs: {healthy: [42, null], reject_below: 40, unit: GB/s, direction: one-way, source: 'contract: 40 GB/s per HCA'}
  gdr_bw_gbs: {healthy: [42, null], reject_below: 40, unit: GB/s, direction: one-way, source: 'contract: 40 GB/s per HCA'}
'''


def test_revalidation_after_a_cable_swap_reports_the_hcas_delta_while_the_node_still_passes(accepted, tmp_path):
    _base, reports, evidence = accepted
    contract = tmp_path / 'contract.yml'
    contract.write_text(LOOSE_CONTRACT)
    before = os.readlink(str(evidence / 'node01' / 'baseline'))
    cli('fault', 'cable-swap', '--node', 'node01', check=True)
    try:
        rc, out = playbook('revalidate.yml', reports, evidence, '-e', 'netval_contract_file=%s' % contract,
                           '-e', 'netval_revalidate_reason=cable replaced (ticket 4711)', '-e', 'netval_revalidate_changes=cable mlx5_3')
    finally:
        cli('fault', 'clear', check=True)
    assert rc == 0, out[-6000:]
    with open(str(reports / 'latest' / 'revalidation' / 'revalidation.json'), encoding='utf-8') as handle:
        node = json.load(handle)['nodes']['node01']
    assert node['bucket'] == 'A'
    rows = dict(((r['metric'], r['subject']), r) for r in node['figure_deltas'])
    swapped = rows[('ib_send_bw_gbs', 'mlx5_3')]
    assert swapped['verdict'] == 'regression' and -9.5 < swapped['delta_pct'] < -6.5, swapped
    # Three repeats a HCA: the samples the spread is judged on (the baseline ran once).
    assert (swapped['samples_new'], swapped['samples_baseline']) == (3, 1), swapped
    assert rows[('gdr_bw_gbs', 'mlx5_3')]['verdict'] == 'regression'
    assert all(r['verdict'] == 'within' for (metric, subject), r in rows.items() if metric == 'ib_send_bw_gbs' and subject != 'mlx5_3')
    assert 'mlx5_3' in (reports / 'latest' / 'revalidation' / 'nodes' / 'node01.md').read_text()
    # The new acceptance is the new baseline; the old bundle and its baseline are kept as they were.
    after = os.readlink(str(evidence / 'node01' / 'baseline'))
    assert after != before and (evidence / 'node01' / before / 'baseline.json').exists()
    assert (evidence / 'node01' / after / 'baseline.json').exists()


def test_evidence_playbook_collects_three_verified_bundles_without_tests(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-400g', '--nodes', '3', '--peers', '1', check=True)
    rc, out = playbook('evidence.yml', tmp_path / 'reports', tmp_path / 'evidence', limit='new_nodes')
    assert rc == 0, out[-4000:]
    assert 'tier_tests' not in out and 'perftest' not in out
    bundles = sorted((tmp_path / 'evidence').glob('node0*/2*'))
    assert [b.parent.name for b in bundles] == ['node01', 'node02', 'node03']
    for bundle in bundles:
        check = subprocess.run(['sha256sum', '--quiet', '-c', 'MANIFEST.sha256'], cwd=str(bundle), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        assert check.returncode == 0, check.stdout
        assert (bundle / 'commands' / 'ibstat.txt').exists() and not (bundle / 'baseline.json').exists()
