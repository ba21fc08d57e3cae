"""validate.yml end to end on the lab: every failure pattern ends in the right bucket with the right cause.

One lab holds ten nodes of the 400G tier side by side against two known-good
peers, one failure pattern each, as an operator meets them (the runbook's
"Common failure modes" and the field reports): healthy, one NIC trained at
Gen4, an untuned platform, a GPU off the bus, NCCL falling back to sockets
beside a tc-throttled cable, a GPU failing dcgmi's memory test, an InfiniBand
cable that corrupts symbols under load, a flapping cable, DCGM not installed
(our gap), and one NIC on older firmware.  The lab is a real site
(lab/netval_lab/site.py): every box carries storage and front-end NICs beside
its eight IPoIB rails (the storage card's second port Down), the new nodes are
addressed on some rails only, the management network is the default route at
1 Gbit/s.  A RoCE site has its own run (pause frames, the site's traffic
class, MTU 9000), and so do a node without fabric addresses and one whose
route to the peer leaves through the management network.  So one playbook run checks them all, and that every one of ten
nodes gets its report; the two-box RoCE pair gets its own lab and is
validated twice, to show a second run never touches the first run's evidence.
Every lab host has the docker0 trap (172.17.0.1/16 on node and peer): the
NCCL figures of the healthy nodes show it harmless.  Every host's dcgmi diag
takes DCGMI_SECONDS, long against the lab's peer tests, and the peer HCAs'
ledgers are read all run long: the schedule is checked from the recorded start
and end of every RDMA session and every diagnostic (a peer HCA never carries
two nodes; a node's diagnostic runs while it waits, never beside its own RDMA).
"""
import glob
import hashlib
import json
import os
import subprocess
import time

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.lab.conftest import BIN, LAB_ROOT, ROOT, bench_script, cli, lab_env

pytestmark = pytest.mark.lab

PATTERNS = {
    'node01': 'healthy-400g', 'node02': 'gen4-nic0', 'node03': 'platform-slow', 'node04': 'gpu-missing',
    'node05': 'nccl-socket-fallback', 'node06': 'dcgmi-memory-fail', 'node07': 'ib-symbol-errors', 'node08': 'healthy-400g',
    'node09': 'dcgmi-missing', 'node10': 'firmware-mixed', 'node11': 'healthy-400g', 'node12': 'healthy-400g',
    'node13': 'healthy-400g',
}
# Real faults on top of the profiles: tc throttles node13's cable on one rail (a healthy box otherwise: NCCL's NET/Socket
# fallback on node05 is the node's only when every HCA passed, so the slow cable gets a node of its own); node08's cable
# flaps; node11's management link is down before the run (Ansible cannot reach it); every module on node12 raises before
# it answers.
MIXED_FAULTS = (('slow-link', 'node13'), ('link-flap', 'node08'), ('node-down', 'node11'), ('module-crash', 'node12'))
# The nodes whose run breaks: in every report all the same, bucket B with the cause run_incomplete.
BROKEN = {'node11': 'cannot be reached', 'node12': 'netval lab fault module-crash'}
DCGMI_SECONDS = 20
MIXED = ['up', '--profile', 'healthy-400g', '--nodes', str(len(PATTERNS)), '--peers', '2', '--dcgmi-seconds', str(DCGMI_SECONDS),
         '--node-profiles', ','.join('%s=%s' % (node, profile) for node, profile in sorted(PATTERNS.items()) if profile != 'healthy-400g')]


def diagnostic_runs(node, since):
    """[(start, end)] of every emulated dcgmi diag the host ran from ``since`` on (its log/dcgmi.log)."""
    path = os.path.join(LAB_ROOT, 'nodes', node, 'log', 'dcgmi.log')
    if not os.path.exists(path):
        return []
    with open(path, encoding='utf-8') as handle:
        runs = [(float(line.split()[0]), float(line.split()[1])) for line in handle if line.strip()]
    return [run for run in runs if run[0] >= since]


def overlap(a, b):
    return min(a[1], b[1]) - max(a[0], b[0])


def validate(tmp_path, *extra, env=None):
    """Run validate.yml with reports and evidence under tmp_path; returns (rc, output, reports_root, evidence_root)."""
    reports, evidence = tmp_path / 'reports', tmp_path / 'evidence'
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', 'inventories/lab', 'playbooks/validate.yml', '-l', 'new_nodes',
            '-e', 'report_root=%s' % reports, '-e', 'evidence_controller_dir=%s' % evidence] + list(extra)
    proc = subprocess.run(argv, cwd=ROOT, env=env or lab_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=1800, check=False)
    return proc.returncode, proc.stdout, reports, evidence


def node_result(reports, node):
    with open(str(reports / 'latest' / 'nodes' / ('%s.json' % node)), encoding='utf-8') as handle:
        return json.load(handle)


def causes(result):
    return [c['cause'] for c in result['causes']]


def tier_profile(tier):
    with open(os.path.join(ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)['tier_profile_tiers'][tier]


# The congestion figures of the all-NICs test by the rails' link layer: pause frames exist on Ethernet only.
LINK_LAYER_METRICS = {'InfiniBand': ('ib_port_errors', 'ib_xmit_wait_per_s'), 'Ethernet': ('pause_per_s',)}


def assert_every_enabled_test_has_its_figures(result, hcas, link_layer='InfiniBand'):
    """Every metric of every test the tier enables is in the report with a figure, per HCA where it is per HCA (the
    all-NICs test's congestion figures those of the rails' link layer)."""
    measured = {}
    for test in result['tests']:
        if test.get('value') is not None or test.get('preset_status'):
            measured.setdefault(test['metric'], set()).add(test['subject'])
    assert [t for t in result['tests'] if t['status'] == 'unknown'] == []
    # The figures' whole outputs are in the node's bundle, where the report says (the controller let go of them).
    assert result.get('evidence'), result['node']
    outputs = [t['raw_file'] for t in result['tests'] if t.get('raw_file')]
    assert outputs and not [t['id'] for t in result['tests'] if 'raw' in t]
    for name in outputs:
        assert os.path.getsize(os.path.join(result['evidence'], name)) > 0, (result['node'], name)
    other = set(m for layer, metrics in LINK_LAYER_METRICS.items() if layer != link_layer for m in metrics)
    for entry in catalogue.enabled_tests(tier_profile(result['tier'])):
        for metric in entry['metrics']:
            if metric in other:
                assert metric not in measured, '%s: %s has a figure on %s rails' % (result['node'], metric, link_layer)
                continue
            assert metric in measured, '%s: %s enabled but %s has no figure' % (result['node'], entry['name'], metric)
            if entry['scope'] in (catalogue.SCOPE_HCA, catalogue.SCOPE_GPU_NIC):
                assert measured[metric] == set(hcas), (metric, measured[metric])


@pytest.fixture(scope='module')
def mixed_run(lab_session, tmp_path_factory):  # pylint: disable=unused-argument
    cli(*MIXED, check=True)
    for fault, node in MIXED_FAULTS:
        cli('fault', fault, '--node', node, check=True)
    bench = bench_script()
    workdir = tmp_path_factory.mktemp('mixed')
    # The task timeline gives every node's lease holds (the progress callback stays on: its lines are checked too).
    env = dict(lab_env(), ANSIBLE_CALLBACKS_ENABLED='gpufleet.netval.progress,gpufleet.netval.task_timeline',
               NETVAL_TASK_TIMELINE=str(workdir / 'timeline.json'))
    started = time.time()
    try:
        with bench.LedgerPoller(os.path.join(LAB_ROOT, 'nodes')) as poller:
            rc, out, reports, evidence = validate(workdir, env=env)
    finally:
        cli('fault', 'clear')
    assert rc == 0, out[-6000:]
    with open(str(reports / 'latest' / 'summary.json'), encoding='utf-8') as handle:
        summary = json.load(handle)
    window = (started, time.time())
    MIXED_SCHEDULE.update(sessions=[s for s in poller.store.values() if s['start'] >= started],
                          peer_sessions=bench.session_intervals(poller.store, PATTERNS, ['peer01', 'peer02'], window=window),
                          diagnostics=dict((node, diagnostic_runs(node, started)) for node in PATTERNS), output=out,
                          holds=bench.lease_hold_spans(task_timeline.read_timeline(str(workdir / 'timeline.json')), set(PATTERNS)))
    return summary, reports, evidence


# What the mixed run's schedule was: every ledger session, the peer HCA intervals per node, every diagnostic run.
MIXED_SCHEDULE = {}


# node04's GPU is off the bus: preflight blocks its tests, so it never takes a peer (nor runs dcgmi diag).
BLOCKED_IN_PREFLIGHT = ('node04',) + tuple(sorted(BROKEN))


# node06's GPU fails dcgmi's memory test: when it ran the diagnostic while waiting, it gives up its place in the queue.
FAILS_ITS_DIAGNOSTIC = 'node06'


def gave_up_its_peer(reports, node):
    return 'gave up its place in the queue' in (node_result(reports, node).get('tests_skipped') or '')


def test_no_peer_hca_ever_carries_two_nodes_at_once_and_a_node_blocked_in_preflight_never_takes_one(mixed_run):
    _summary, reports, _evidence = mixed_run
    intervals, unattributed = MIXED_SCHEDULE['peer_sessions']
    assert unattributed == 0
    measured = set(node for _peer, _hca, node, _start, _end in intervals)
    expected = set(PATTERNS) - set(BLOCKED_IN_PREFLIGHT)
    if gave_up_its_peer(reports, FAILS_ITS_DIAGNOSTIC):
        expected.discard(FAILS_ITS_DIAGNOSTIC)
    assert sorted(measured) == sorted(expected)
    assert task_timeline.peer_overlap_s(intervals) == 0, task_timeline.peer_overlap_spans(intervals)


def test_a_node_whose_diagnostic_failed_while_it_waited_gives_up_its_place_else_it_was_measured(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, FAILS_ITS_DIAGNOSTIC)
    assert result['bucket'] == 'C' and 'gpu_diagnostics' in causes(result)
    network = [t for t in result['tests'] if t['metric'] in catalogue.METRICS and catalogue.needs_peer(catalogue.test_of_metric(t['metric']))]
    if gave_up_its_peer(reports, FAILS_ITS_DIAGNOSTIC):
        # It ran the diagnostic before any peer was free: nothing of the network, and the reason names the failure.
        assert network == [] and 'GPU Memory' in result['tests_skipped'], result['tests_skipped']
        diagnostic = MIXED_SCHEDULE['diagnostics'][FAILS_ITS_DIAGNOSTIC][0]
        assert not [s for s in MIXED_SCHEDULE['sessions'] if s['host'] == FAILS_ITS_DIAGNOSTIC]
        assert diagnostic[1] <= max(end for _p, _h, _n, _s, end in MIXED_SCHEDULE['peer_sessions'][0])
    else:
        # It took a peer at once: its network was measured and the diagnostic ran after it gave the peer back.
        assert network and all(t['status'] == 'healthy' for t in network if t['metric'].startswith('ib_'))


def test_the_run_is_predicted_before_its_tests_each_node_shows_its_stages_and_the_report_compares(mixed_run):
    summary, _reports, _evidence = mixed_run
    out = MIXED_SCHEDULE['output']
    assert 'prediction: %d node(s) on 2 peer(s)' % len(PATTERNS) in out
    assert out.index('prediction: ') < out.index('netval progress ')  # printed before the tests start
    progress = [line[line.index('netval progress '):] for line in out.splitlines() if 'netval progress ' in line]
    peers_of = {}
    for peer, _hca, node, _start, _end in MIXED_SCHEDULE['peer_sessions'][0]:
        peers_of.setdefault(node, set()).add(peer)
    for node, peers in sorted(peers_of.items()):
        assert any(' %s: tests against %s |' % (node, peer) in text and 'left for it' in text for text in progress for peer in peers), (node, progress)
    for node in BLOCKED_IN_PREFLIGHT:
        assert not any(' %s: tests against' % node in text for text in progress)
    assert any('waiting for a free known-good peer' in text for text in progress)
    assert progress[-1].endswith('%d of %d nodes measured' % (len(PATTERNS), len(PATTERNS)))
    timing = summary['prediction']
    # The prediction plans no re-test; its costs were measured on a 2-node run and its load term on the N=16 matrix
    # (lab/netval_lab/inventory.py, within -2..+7 % there).  This run's re-tests (a peer hold each) make it longer, by
    # +12 % on 2026-12-04; the upper bound holds it to what the load term explains (without it this run came out
    # 1.44-1.50 times its prediction).  The lower bound is this machine's spread between runs of one code (about 10 %)
    # below what the costs were measured with: since the tests play runs under host_pinned (a waiting node takes a freed
    # peer within one lease poll, with no re-queue tasks) the lab's runs of several nodes take 6-23 % less than those
    # costs predict (0.87 for this run on 2026-12-06), until the lab's costs are measured again.
    assert timing['retested_nodes'] and 0.8 <= timing['actual_s'] / timing['predicted_s'] <= 1.8, timing


def test_diagnostics_run_while_nodes_wait_for_a_peer_never_beside_their_own_rdma(mixed_run):
    diagnostics = MIXED_SCHEDULE['diagnostics']
    ran = dict((node, runs) for node, runs in diagnostics.items() if runs)
    # (A node that gave up its peer after its diagnostic failed has no RDMA session of its own: nothing to overlap.)
    assert sorted(ran) == sorted(n for n in PATTERNS if PATTERNS[n] != 'dcgmi-missing' and n not in BLOCKED_IN_PREFLIGHT)
    assert all(len(runs) == 1 and runs[0][1] - runs[0][0] >= DCGMI_SECONDS - 1 for runs in ran.values()), ran
    own = {}
    for session in MIXED_SCHEDULE['sessions']:
        if session['host'] in PATTERNS and not session['device'].startswith('rail-'):
            own.setdefault(session['host'], []).append((session['start'], session['end'] or session['last_seen']))
    _summary, reports, _evidence = mixed_run
    for node, runs in ran.items():
        if node == FAILS_ITS_DIAGNOSTIC and gave_up_its_peer(reports, node):
            continue
        assert own.get(node), '%s has no RDMA session in its own ledgers' % node
        beside = [s for s in own[node] if overlap(runs[0], s) > 0]
        assert beside == [], '%s ran dcgmi diag %s beside its own RDMA sessions %s' % (node, runs[0], beside)
    # The wait is used: a node that ran its diagnostic before it held a peer ran it while other nodes held the peers,
    # and only the first holders (one per peer) run theirs after their tests. (Another node's lease hold, not its RDMA
    # sessions, is what "while waiting" means: a hold starts with ping and iperf3, which a loaded machine stretches past
    # a 20-s diagnostic.)
    holds = MIXED_SCHEDULE['holds']
    # (A node without a hold gave up its place when its diagnostic failed: it, too, ran it while waiting.)
    waited = [node for node, runs in ran.items() if not holds.get(node) or runs[0][1] <= holds[node][0][0]]
    for node in waited:
        others = [span for other, spans in holds.items() if other != node for span in spans]
        assert any(overlap(ran[node][0], span) > 0 for span in others), (node, ran[node], holds)
    # Play 2 starts every node at once: two of them (one per peer) take a peer at once, every other one waits.
    assert len(waited) >= len(ran) - 2, (waited, ran, holds)


def test_every_one_of_ten_nodes_gets_its_report_bucket_and_named_cause(mixed_run):
    summary, reports, _evidence = mixed_run
    buckets = dict((name, entry['bucket']) for name, entry in summary['nodes'].items())
    assert sorted(buckets) == sorted(PATTERNS)
    expected = {'node01': 'A', 'node02': 'C', 'node04': 'C', 'node05': 'C', 'node06': 'C', 'node07': 'B', 'node08': 'C',
                'node09': 'B', 'node10': 'B', 'node11': 'B', 'node12': 'B', 'node13': 'C'}
    assert dict((n, b) for n, b in buckets.items() if n != 'node03') == expected
    assert buckets['node03'] in ('B', 'C')
    first_causes = {'node02': 'pcie_link', 'node03': 'platform_tuning', 'node04': 'gpu_hardware', 'node05': 'nccl_socket_fallback',
                    'node06': 'gpu_diagnostics', 'node07': 'ib_link_errors', 'node08': 'link_instability',
                    'node09': 'measurement_incomplete', 'node10': 'host_configuration', 'node13': 'single_nic_slow'}
    for node, cause in first_causes.items():
        assert cause in causes(node_result(reports, node)), (node, causes(node_result(reports, node)))
    assert len(set(first_causes.values())) == 10  # ten failure patterns besides the healthy node, each its own cause
    for name, entry in summary['nodes'].items():
        assert entry['peer'] in ('peer01', 'peer02') or name in BROKEN, (name, entry['peer'])
        assert isinstance(entry['causes'], list)
        assert (reports / 'latest' / 'nodes' / ('%s.md' % name)).exists()
        if entry['bucket'] != 'A':
            assert entry['causes'], name  # never a marginal or reject without a named cause
    assert (reports / 'latest' / 'junit.xml').exists() and (reports / 'latest' / 'summary.txt').exists()
    letters = set(os.path.basename(p) for p in glob.glob(str(reports / 'latest' / 'letters' / '*.txt')))
    assert letters == set('%s.txt' % n for n, b in buckets.items() if b == 'C')
    assert not {'node01.txt', 'node09.txt', 'node10.txt'} & letters


def test_a_node_that_cannot_be_reached_and_one_whose_module_raises_are_in_every_report_as_ours(mixed_run):
    summary, reports, _evidence = mixed_run
    latest = reports / 'latest'
    first = (latest / 'summary.txt').read_text().splitlines()[0]
    assert first.startswith('%d of %d nodes reported: ' % (len(PATTERNS), len(PATTERNS))), first
    junit = (latest / 'junit.xml').read_text()
    page = (latest / 'index.html').read_text()
    prom = (latest / 'netval.prom').read_text()
    for node, why in BROKEN.items():
        result = node_result(reports, node)
        assert summary['nodes'][node]['bucket'] == 'B' and causes(result)[0] == 'run_incomplete', (node, causes(result))
        assert why in result['run_incomplete']['why'] and result['run_incomplete']['where'].startswith('preflight'), result
        assert not (latest / 'letters' / ('%s.txt' % node)).exists()
        assert node in junit and node in page and node in (latest / 'summary.md').read_text()
        assert 'netval_validation_run_incomplete{node="%s"} 1' % node in prom
        assert 'netval_node_bucket{node="%s",bucket="B"} 1' % node in prom
    assert 'netval_validation_nodes %d' % len(PATTERNS) in prom
    assert 'netval_validation_run_incomplete{node="node01"} 0' in prom


def test_dcgmi_memory_failure_names_the_test_and_the_gpu(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node06')
    detail = [c['detail'] for c in result['causes'] if c['cause'] == 'gpu_diagnostics'][0]
    assert 'GPU Memory' in detail and 'GPU 7' in detail, detail
    assert [t for t in result['tests'] if t['metric'].startswith('ib_') and t['status'] != 'healthy'] == []


def test_an_infiniband_cable_corrupting_symbols_is_read_from_the_port_counters_not_pause_frames(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node07')
    # InfiniBand has no pause frames: no pause figure; the port error counters over the sustained test instead.
    assert [t for t in result['tests'] if t['metric'] == 'pause_per_s'] == []
    errors = dict((t['subject'], t) for t in result['tests'] if t['metric'] == 'ib_port_errors')
    assert sorted(errors) == ['mlx5_%d' % i for i in range(8)]
    bad = errors.pop('mlx5_2')
    # Past the reject line this project took from ibqueryerrors (neither the runbook's nor the contract's): marginal,
    # investigated, not returned; every other figure is healthy, so the node is B.
    assert bad['status'] == 'marginal' and bad.get('reject_line') == 'project', bad
    assert bad['value'] >= 40 and 'grew on: node' in bad['as_printed'], bad
    assert all(t['status'] == 'healthy' and t['value'] == 0 for t in errors.values()), errors
    assert causes(result)[0] == 'ib_link_errors' and 'project_line' in causes(result) and result['bucket'] == 'B'
    # PortXmitWait is read on both ends and recorded beside the errors.
    assert {t['status'] for t in result['tests'] if t['metric'] == 'ib_xmit_wait_per_s'} == {'info'}


def test_a_flapping_cable_is_named_with_the_runbooks_module_events(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node08')
    detail = [c['detail'] for c in result['causes'] if c['cause'] == 'link_instability'][0]
    assert 'Cable error' in detail or 'unplugged' in detail or 'down' in detail.lower(), detail
    letter = (reports / 'latest' / 'letters' / 'node08.txt').read_text()
    assert 'Port module event' in letter or 'Link down' in letter
    # The kernel log is read once over all of the node's passes: each link's events are one finding, never counted twice.
    flaps = [(f['subject'], f['actual']) for f in result['findings'] if f['check'] == 'link_flap']
    assert flaps and len(flaps) == len(set(flaps)) == len(set(subject for subject, _events in flaps)), flaps


def test_missing_dcgmi_is_our_gap_bucket_b_without_a_letter(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node09')
    # Preflight names the missing DCGM first (issue 31's prerequisite, ours), then what could not be measured.
    named = causes(result)
    assert result['bucket'] == 'B' and named[0] == 'dcgm_hostengine' and 'measurement_incomplete' in named, result['causes']
    assert not any(c.get('returns_node') for c in result['causes']), result['causes']
    dcgmi = [t for t in result['tests'] if t['status'] == 'unknown']
    assert dcgmi and all(t.get('error_side') != 'node' for t in dcgmi), dcgmi
    assert any('dcgmi' in c['detail'] for c in result['causes'] if c['cause'] == 'measurement_incomplete'), result['causes']


def test_one_nic_on_older_firmware_is_a_spec_mismatch_not_a_return(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node10')
    assert result['bucket'] == 'B' and causes(result) == ['host_configuration'], result['causes']
    assert '28.36.1010' in result['causes'][0]['detail'] and 'mlx5_5' in result['causes'][0]['detail']
    assert [t for t in result['tests'] if t['status'] not in ('healthy', 'info')] == []


def test_docker0_on_node_and_peer_is_harmless_nccl_rides_net_ib(mixed_run):
    _summary, reports, _evidence = mixed_run
    from tests.lab.conftest import nsrun
    for host in ('node01', 'peer01'):
        assert '172.17.0.1/16' in nsrun(host, ['ip', '-4', '-o', 'addr', 'show', 'dev', 'docker0']).stdout
    result = node_result(reports, 'node01')
    nccl = [t for t in result['tests'] if t['metric'].startswith('nccl') and t['status'] != 'info']
    assert sorted(t['metric'] for t in nccl) == ['nccl_busbw_gbs', 'nccl_gdr', 'nccl_hcas_used', 'nccl_transport', 'nccl_wrong']
    assert all(t['status'] == 'healthy' for t in nccl), nccl
    transport = [t for t in nccl if t['metric'] == 'nccl_transport']
    assert transport and transport[0]['as_printed'].startswith('NET/IB'), transport


def test_the_runs_page_shows_every_node_with_its_bucket_and_charts_in_a_real_browser(mixed_run):
    from tests.quality.report_browser import check_report_in_browser
    summary, reports, _evidence = mixed_run
    found = check_report_in_browser(str(reports / 'latest'), screenshot=os.path.join(ROOT, 'tests', 'output', 'lab-mixed-report.png'))
    assert found['problems'] == [], found['problems']
    assert sorted(found['nodes']) == sorted(summary['nodes'])
    assert (reports / 'latest' / 'summary.md').exists()


def test_healthy_node_is_accepted_with_a_verified_baseline(mixed_run):
    _summary, reports, evidence = mixed_run
    result = node_result(reports, 'node01')
    assert result['bucket'] == 'A' and result['causes'] == []
    assert_every_enabled_test_has_its_figures(result, ['mlx5_%d' % i for i in range(8)])
    errors = [t for t in result['tests'] if t['metric'] == 'ib_port_errors']
    assert len(errors) == 8 and all(t['status'] == 'healthy' for t in errors)
    # Every figure on the eight compute rails, each against the peer's port of the same rail.
    rails = set(t['subject'] for t in result['tests'] if t['metric'] in ('ib_send_bw_gbs', 'gdr_bw_gbs', 'ib_port_errors'))
    assert rails == set('mlx5_%d' % i for i in range(8))
    assert set((t['subject'], t['peer_device']) for t in result['tests'] if t['metric'] == 'ib_send_bw_gbs') == set(
        ('mlx5_%d' % i, 'mlx5_%d' % i) for i in range(8))
    # The storage card's uncabled port and the front-end NIC are recorded, never graded: they change nothing.
    others = dict((f['subject'], f) for f in result['findings'] if f['check'] in ('rail_selection', 'port_state') and f['status'] == 'info')
    assert 'mlx5_11/1' in others and 'mlx5_8/1' in others and 'mlx5_10/1' in others, sorted(others)
    # The IP tests ran over the node's first addressed rail, bound to its address, at the IPoIB MTU.
    ping = [t for t in result['tests'] if t['metric'] == 'jumbo_ping_loss_pct'][0]
    assert ping['value'] == 0.0 and '-s 4064' in ping['cmd'] and '-I ibp59s0' in ping['cmd'], ping['cmd']
    iperf = [t for t in result['tests'] if t['metric'] == 'iperf3_gbps'][0]
    assert iperf['status'] == 'info' and '-B ' in iperf['cmd'] and 'over IPoIB' in iperf['expected'], iperf
    bundle = evidence / 'node01' / result['timestamp']
    check = subprocess.run(['sha256sum', '-c', 'MANIFEST.sha256'], cwd=str(bundle), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert check.returncode == 0, check.stdout
    assert (bundle / ('node01-%s.tar.gz' % result['timestamp'])).exists()
    assert (bundle / 'commands' / 'ibstat.txt').exists() and (bundle / 'results.json').exists()
    assert os.readlink(str(evidence / 'node01' / 'baseline')) == result['timestamp']
    # The tests play keeps only what its tests read of the preflight facts; the bundle and the baseline still have the
    # whole reads (validate.yml keeps them packed until the evidence).
    reads = json.loads((bundle / 'preflight.json').read_text())
    assert set(reads) >= {'rdma', 'pcie', 'nic', 'firmware', 'gpu', 'host'}, sorted(reads)
    assert reads['pcie']['devices'] and reads['firmware']['devices'] and reads['nic']['nics'] and reads['host']['irq_placement']
    facts = json.loads((bundle / 'baseline.json').read_text())['facts']
    assert facts['captured'] == dict((section, True) for section in ('rdma', 'pcie', 'nic', 'firmware', 'gpu', 'host')), facts['captured']
    rails = [nic for nic in facts['nics'] if nic['name'] in set('mlx5_%d' % i for i in range(8))]
    assert len(rails) == 8 and all(nic['present'] and nic['pcie'] and nic['firmware']['version'] for nic in rails), facts['nics']


def test_gen4_nic0_letter_names_the_nic_its_link_and_the_second_finding(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node02')
    assert result['bucket'] == 'C'
    slow = dict((t['subject'], t) for t in result['tests'] if t['metric'] == 'ib_send_bw_gbs' and t['status'] != 'healthy')
    assert sorted(slow) == ['mlx5_0', 'mlx5_3']
    pcie = [f for f in result['findings'] if f['check'] == 'pcie_link' and f['status'] == 'reject']
    assert [f['subject'] for f in pcie] == ['mlx5_0']
    bdf = result['nic_pci']['mlx5_0']
    letter = (reports / 'latest' / 'letters' / 'node02.txt').read_text()
    assert 'mlx5_0' in letter and bdf in letter and 'mlx5_3' in letter
    assert '16GT/s' in letter and '32GT/s' in letter
    assert '38 GB/s (perftest printed 36239.62 MB/sec)' in letter or '36239.62' in letter
    assert '39100.65' in letter  # mlx5_3's 41 GB/s, pasted as perftest printed it
    assert not [line for line in letter.splitlines() if line.startswith('#') and not line.startswith(' #bytes')]


def test_platform_slow_points_at_platform_tuning(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node03')
    assert 'platform_tuning' in causes(result)
    detail = [c['detail'] for c in result['causes'] if c['cause'] == 'platform_tuning'][0]
    assert 'powersave' in detail and 'HugePages_Total 0' in detail
    assert 'single_nic_slow' not in causes(result)


def test_gpu_missing_is_returned_for_hardware_without_throughput_tests(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node04')
    assert result['bucket'] == 'C' and causes(result)[0] == 'gpu_hardware'
    assert 'Xid' in result['causes'][0]['detail'] and '7 of 8' in result['causes'][0]['detail']
    assert result['tests_skipped'].startswith('preflight found blocking problems')


def test_nccl_socket_fallback_and_a_slow_cable_of_the_node_confirmed_on_a_second_peer(mixed_run):
    _summary, reports, _evidence = mixed_run
    fallback = node_result(reports, 'node05')
    # Every HCA of node05 passed, and NCCL still rode NET/Socket: the node's fault, with its letter.
    assert fallback['bucket'] == 'C' and 'nccl_socket_fallback' in causes(fallback), fallback['causes']
    assert {t['status'] for t in fallback['tests'] if t['metric'] == 'ib_send_bw_gbs'} == {'healthy'}
    letter = (reports / 'latest' / 'letters' / 'node05.txt').read_text()
    assert 'NET/Socket' in letter
    result = node_result(reports, 'node13')
    # tc throttles node13's own cable on rail 1 (mlx5_1): its RDMA on that rail is slow against its first peer ...
    first = [t for t in result['first_peer_tests'] if t['metric'] == 'ib_send_bw_gbs' and t['subject'] == 'mlx5_1']
    assert result['first_peer'] in ('peer01', 'peer02') and first and first[0]['status'] == 'reject', first
    # ... and against the other peer too: the re-test over another peer's port shows the cable is the node's, its other
    # rails fine.
    second = ({'peer01', 'peer02'} - {result['first_peer']}).pop()
    assert result['retested_against'] == second
    again = dict((t['subject'], t) for t in result['tests'] if t['metric'] == 'ib_send_bw_gbs')
    assert again['mlx5_1']['status'] == 'reject' and again['mlx5_1']['peer'] == second
    assert all(again['mlx5_%d' % i]['status'] == 'healthy' for i in (0, 2, 3, 4, 5, 6, 7))
    assert 'single_nic_slow' in causes(result)
    # TCP over IPoIB is recorded, never graded: it neither hides nor makes a fault.
    assert {t['status'] for t in result['tests'] if t['metric'] == 'iperf3_gbps'} == {'info'}


def test_a_rejected_node_is_retested_and_nothing_is_left_running(mixed_run):
    _summary, reports, _evidence = mixed_run
    result = node_result(reports, 'node02')
    assert result['retested_against'] == 'peer01' and result['first_peer'] == 'peer02'
    assert result['bucket'] == 'C'
    leftovers = subprocess.run(['pgrep', '-af', r'/run/netval-lab/nodes/.*/bin/(ib_|iperf3|all_reduce)|^/usr/bin/mpirun |(^|/)orted '],
                               stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout
    assert leftovers == '', leftovers
    assert subprocess.run(['pgrep', '-x', 'iperf3'], stdout=subprocess.PIPE, check=False).stdout == b''


def test_a_roce_site_runs_its_rails_in_the_sites_traffic_class_at_mtu_9000_and_grades_pause_frames(lab_session, tmp_path):  # pylint: disable=unused-argument
    """RoCE rails, one subnet and switch each: node01 healthy, node02 paused by a switch that does not drain the RoCE priority."""
    cli('up', '--profile', 'healthy-400g-roce', '--nodes', '2', '--peers', '2', '--node-profiles', 'node02=pfc-pause-storm', check=True)
    rc, out, reports, _evidence = validate(tmp_path, '-e', 'netval_roce_tclass=106')
    assert rc == 0, out[-6000:]
    healthy = node_result(reports, 'node01')
    assert healthy['bucket'] == 'A', healthy['causes']
    assert_every_enabled_test_has_its_figures(healthy, ['mlx5_%d' % i for i in range(8)], link_layer='Ethernet')
    sends = [t for t in healthy['tests'] if t['metric'] == 'ib_send_bw_gbs']
    assert all('--tclass=106' in t['cmd'] and '-q 4' in t['cmd'] and '-x 3' in t['cmd'] and '-D 1' in t['cmd'] for t in sends), sends[0]['cmd']
    ping = [t for t in healthy['tests'] if t['metric'] == 'jumbo_ping_loss_pct'][0]
    assert ping['value'] == 0.0 and '-s 8972' in ping['cmd'], ping['cmd']  # a RoCE rail's netdev runs MTU 9000
    iperf = [t for t in healthy['tests'] if t['metric'] == 'iperf3_gbps'][0]
    processes = tier_profile(healthy['tier'])['tests']['iperf3']['processes']
    assert iperf['status'] == 'healthy' and 'over %d process(es)' % processes in iperf['as_printed'], iperf  # graded on RoCE
    paused = node_result(reports, 'node02')
    pause = [t for t in paused['tests'] if t['metric'] == 'pause_per_s']
    # Past the project's own reject line (the runbook only calls it suspicious): marginal; RDMA's slowness, below the
    # runbook's line, is what returns the node.
    assert len(pause) == 8 and all(t['status'] == 'marginal' and t.get('reject_line') == 'project' for t in pause), pause
    assert paused['bucket'] == 'C' and 'project_line' in causes(paused)
    assert [t for t in paused['tests'] if t['metric'] == 'ib_send_bw_gbs' and t['status'] == 'reject']
    # 150,000 pause frames a second per netdev; the peer's paired netdev, read over the same run, did not grow.
    assert all(140000 <= t['value'] <= 160000 for t in pause), [t['value'] for t in pause]
    assert all(' 0 pause frames/s' in t['as_printed'].split(';')[1] for t in pause), pause[0]['as_printed']
    assert causes(paused)[0] == 'pfc_pause' and 'rdma_specific' in causes(paused)


def test_a_node_without_fabric_addresses_and_one_routed_through_management_are_ours_never_returned(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-400g', '--nodes', '2', '--peers', '2', check=True)
    cli('fault', 'fabric-unaddressed', '--node', 'node01', check=True)
    cli('fault', 'fabric-route-mgmt', '--node', 'node02', check=True)
    try:
        rc, out, reports, _evidence = validate(tmp_path)
    finally:
        cli('fault', 'clear')
    assert rc == 0, out[-6000:]
    unaddressed, misrouted = node_result(reports, 'node01'), node_result(reports, 'node02')
    for result in (unaddressed, misrouted):
        assert result['bucket'] == 'B', (result['node'], result['causes'])
        assert not (reports / 'latest' / 'letters' / ('%s.txt' % result['node'])).exists()
        # The RDMA tests do not need an address: every rail was still measured, healthy.
        assert {t['status'] for t in result['tests'] if t['metric'] in ('ib_send_bw_gbs', 'gdr_bw_gbs', 'all_nics_gbs')} == {'healthy'}
    ip = [t for t in unaddressed['tests'] if t['metric'] in ('jumbo_ping_loss_pct', 'iperf3_gbps')]
    assert ip and all(t['status'] == 'unknown' and t['error'].startswith('no fabric address for node01 on mlx5_0, mlx5_1') for t in ip), ip
    assert causes(unaddressed) == ['measurement_incomplete'] and 'no fabric address for node01' in unaddressed['causes'][0]['detail']
    # Caught before iperf3 ran: the route check's failure stands for the ping and iperf3 figures, nothing measured mgmt0.
    ip = [t for t in misrouted['tests'] if t['metric'] in ('jumbo_ping_loss_pct', 'iperf3_gbps')]
    assert ip and all(t['status'] == 'unknown' and t['error_class'] == 'wrong_route' for t in ip), ip
    assert 'through mgmt0 via 10.251.0.254, not ibp59s0' in ip[0]['error'] and 'route get 10.252.1.14 from 10.252.1.12' in ip[0]['cmd']
    # NCCL's launcher talks over the fabric subnet too: with no way back to the node it would only wait out its timeout.
    nccl = dict((t['metric'], t) for t in misrouted['tests'] if t['metric'].startswith('nccl_'))
    assert nccl['nccl_busbw_gbs']['status'] == 'unknown' and nccl['nccl_busbw_gbs']['error_class'] == 'wrong_route', nccl
    assert {t['status'] for t in nccl.values()} == {'unknown'}, nccl
    assert [t['status'] for t in unaddressed['tests'] if t['metric'] == 'nccl_busbw_gbs'] == ['healthy']
    # The route is the node's to fix (ours to report, never a return); what it kept from being measured is named after it.
    assert causes(misrouted)[0] == 'node_side_failure' and set(causes(misrouted)[1:]) <= {'measurement_incomplete'}


def test_roce_pair_throttle_each_box_its_own_device_and_evidence_never_overwritten(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'spark-pair-throttled', '--nodes', '1', '--peers', '1', check=True)
    rc, out, reports, evidence = validate(tmp_path)
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['bucket'] == 'C' and 'firmware_throttle' in causes(result)
    rails = [t for t in result['tests'] if t['metric'] == 'ib_write_bw_gbps']
    assert rails and all(t['status'] == 'reject' for t in rails)
    # Both PCIe functions of the one throttled port measure its ~14 Gb/s (firmware), never the 1 Gbit/s management network
    # their handshake crosses.
    assert len(rails) == 2 and all(10 < t['value'] < 20 for t in rails), [(t['subject'], t['value']) for t in rails]
    assert rails[0]['subject'] != rails[0]['peer_device']  # the live port is named differently on each box
    assert rails[0]['subject'].endswith('f0') and rails[0]['peer_device'].endswith('f1')
    first = evidence / 'node01' / result['timestamp']
    tarball = first / ('node01-%s.tar.gz' % result['timestamp'])
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    rc, out, reports, evidence = validate(tmp_path)
    assert rc == 0, out[-6000:]
    second = node_result(reports, 'node01')['timestamp']
    assert second != result['timestamp']
    assert hashlib.sha256(tarball.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in (evidence / 'node01').iterdir() if p.name != 'baseline') == sorted([result['timestamp'], second])


def test_check_mode_runs_preflight_only(lab_session, tmp_path):  # pylint: disable=unused-argument
    cli('up', '--profile', 'spark-pair-throttled', '--nodes', '1', '--peers', '1', check=True)
    rc, out, reports, _evidence = validate(tmp_path, '--check')
    assert rc == 0, out[-6000:]
    assert 'Run the ib_write_bw client' not in out or 'skipping' in out
    assert not (reports / 'latest').exists()
