"""validate.yml on a simulated fleet (lab/netval_lab/sim.py, `scripts/bench.py --simulate`): the real playbooks, strategy,
leases, filters and reports for more waiting nodes than forks, with no root and no lab, in under a minute; then drift.yml
over the nodes it accepted.  The hosts
answer from the lab's recording (lab/sim/healthy-400g.json); a recording that no longer fits the modules' arguments or
results fails here (record again: `python -m lab.netval_lab sim-record`)."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.unit import fixtures

ROOT = fixtures.ROOT
LAST_LINE = re.compile(r'^ratio_to_ideal=\d+\.\d\d overhead_per_node_s=\d+\.\d\d controller_peak_mib=\d+\.\d\d '
                       r'peer_overlap_s=(?P<overlap>\d+\.\d\d) ratio_to_bound=(?P<ratio>\d+\.\d\d) forks=(?P<forks>\d+)$')
NODES, PEERS, FORKS = 5, 1, 3
TESTS_PLAY = 'Measure each node against a known-good peer it has to itself'
ROLE_LOADS = ('ansible.builtin.import_role', 'ansible.builtin.include_role')


def role_loads(tasks, folder):
    """Every role load a play's tasks can reach, as (action, folder of the file that names it): import_tasks and
    include_tasks followed (relative to the file that names them, as validate.yml's are); a role loaded in a file an
    include_tasks reaches is reported as ansible.builtin.include_tasks (it is loaded again at each include)."""
    found = []
    for task in tasks or []:
        for key in ('block', 'rescue', 'always'):
            found += role_loads(task.get(key), folder)
        found += [(action, folder) for action in ROLE_LOADS if action in task]
        for action in ('ansible.builtin.import_tasks', 'ansible.builtin.include_tasks'):
            if action in task:
                path = os.path.join(folder, task[action])
                with open(path, encoding='utf-8') as handle:
                    found += [(kind if action.endswith('import_tasks') else action, where)
                              for kind, where in role_loads(yaml.safe_load(handle), os.path.dirname(path))]
    return found


def bench_script():
    """scripts/bench.py as a module (its sim_env: the simulated hosts' environment for another playbook)."""
    spec = importlib.util.spec_from_file_location('netval_bench_e2e', os.path.join(ROOT, 'scripts', 'bench.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def simulated_fleet(tmp_path_factory):
    """One simulated validate run for this module's tests: bench.py's output and the cell's folder."""
    work = tmp_path_factory.mktemp('simulated-fleet')
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'bench.py'), '--simulate', '--nodes', str(NODES),
                           '--peers', str(PEERS), '--forks', str(FORKS), '--scale', '0.002', '--work-dir', str(work)],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
    return proc, work / ('sim-n%d-p%d' % (NODES, PEERS))


def test_a_simulated_fleet_with_fewer_forks_than_waiting_nodes_is_measured_and_reported_in_full(simulated_fleet):
    proc, cell = simulated_fleet
    assert proc.returncode == 0, proc.stdout[-8000:]
    last = LAST_LINE.match(proc.stdout.strip().splitlines()[-1])
    assert last, proc.stdout[-3000:]
    assert last.group('forks') == str(FORKS) and float(last.group('overlap')) == 0.0 and float(last.group('ratio')) > 0
    summary = (cell / 'reports' / 'latest' / 'summary.txt').read_text().splitlines()[0]
    assert summary == '%d of %d nodes reported: %d A (accept), 0 B (investigate), 0 C (return to provider)' % (NODES, NODES, NODES)
    figures = json.loads((cell / 'cell.json').read_text())['figures']
    assert figures['peer_sessions'] > NODES and figures['forks'] == FORKS
    # Every test the tier enables has its figure in every node's report: the recording answered them all.
    tier = json.loads((cell / 'reports' / 'latest' / 'nodes' / 'node01.json').read_text())['tier']
    timeline = json.loads((cell / 'timeline.json').read_text())
    for node in ['node%02d' % i for i in range(1, NODES + 1)]:
        result = json.loads((cell / 'reports' / 'latest' / 'nodes' / ('%s.json' % node)).read_text())
        metrics = set(t['metric'] for t in result['tests'] if t.get('value') is not None or t.get('preset_status'))
        assert result['bucket'] == 'A' and not [t for t in result['tests'] if t['status'] == 'unknown'], result['causes']
        assert metrics, node
        # Once its bundle was stored the controller let go of the node's raw outputs: the report names each one's file
        # in the bundle in its place (the simulated bundle is the recording's, so the lab's tests open the files).
        assert not [t['id'] for t in result['tests'] if 'raw' in t], node
        with_output = set(t['metric'] for t in result['tests'] if t.get('raw_file'))
        assert with_output >= {'jumbo_ping_loss_pct', 'iperf3_gbps', 'ib_send_bw_gbs', 'gdr_bw_gbs', 'nccl_busbw_gbs', 'dcgmi_diag'}, node
    assert tier == '400G'
    # The catalogue's metrics and the graded entries of NCCL's log that are not catalogue metrics.
    wanted = set(metric for entry in catalogue.TESTS for metric in entry['metrics']) | {verdict.NCCL_TRANSPORT, verdict.NCCL_GDR}
    assert metrics <= wanted
    # Each role of the tests play is loaded once for the play where a pass or a verdict may run (imported), never per
    # node: include_role adds the role to the play each time a node runs it, and every task of every node walks the
    # play's roles (the first 1,024-node cell, docs/BENCH.md).  An include_role there, or a role imported in a file the
    # play includes (loaded again each time), fails the first check; any growth the second.
    with open(os.path.join(ROOT, 'playbooks', 'validate.yml'), encoding='utf-8') as handle:
        tests_play = [play for play in yaml.safe_load(handle) if play['name'] == TESTS_PLAY][0]
    loads = role_loads(tests_play['tasks'], os.path.join(ROOT, 'playbooks'))
    assert loads and set(action for action, where in loads) == {'ansible.builtin.import_role'}, loads
    plays = json.loads((cell / 'sim' / 'plays.json').read_text())
    assert [play['role_entries'] for play in plays if play['name'] == TESTS_PLAY] == [len(loads)], plays
    # The report role runs once for the play, its argument checks too (per node they templated the run's prediction, which
    # grows with the nodes), and its result reaches every node: each takes its final bucket from it.
    report_play = [r for r in timeline['records'] if r['play'] == 'Report the run']
    assert len([r for r in report_play if r['action'] == 'ansible.builtin.validate_argument_spec']) == 1, report_play
    final = [r['host'] for r in report_play if r['task'] == "Take the node's final bucket and causes from the report" and r['status'] == 'ok']
    assert sorted(final) == ['node%02d' % i for i in range(1, NODES + 1)], report_play
    # validate.yml's tests play (host_pinned) never held more nodes than forks, and nodes did wait for the peer there.
    assert task_timeline.hosts_in_play_peak(timeline, TESTS_PLAY) == FORKS
    waits = [r for r in timeline['records'] if r['task'] == 'Wait for a free known-good peer and lease it' and r['status'] == 'changed']
    assert len(waits) >= FORKS - PEERS


def test_drift_over_the_simulated_fleet_compares_every_node_with_the_baseline_its_acceptance_kept(simulated_fleet, tmp_path):
    """drift.yml over the fleet the run above accepted: every node's current state against its baseline, clean.  The nodes
    send their reads packed and the comparison unpacks them in its worker; a node whose packed reads were missing or
    unreadable would have a red run_incomplete finding instead."""
    proc, cell = simulated_fleet
    assert proc.returncode == 0, proc.stdout[-3000:]
    env = bench_script().sim_env(str(tmp_path / 'timeline.json'), str(cell / 'sim'), FORKS)
    # -v: the default callback prints each module's result, the read task's among them.
    drift = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-v', '-i', str(cell / 'sim' / 'hosts.yml'),
                            'playbooks/drift.yml', '-l', 'new_nodes', '-e', 'netval_nodes=new_nodes', '-e', 'report_root=%s' % (tmp_path / 'reports'),
                            '-e', 'evidence_controller_dir=%s' % (cell / 'evidence')],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
    assert drift.returncode == 0, drift.stdout[-8000:]
    nodes = json.loads((tmp_path / 'reports' / 'latest' / 'drift.json').read_text())['nodes']
    assert sorted(nodes) == ['node%02d' % i for i in range(1, NODES + 1)]
    for name, node in nodes.items():
        assert node['status'] == 'clean' and node['findings'] == [] and node['bucket'] == 'A', (name, node)
        assert node['baseline_timestamp'], (name, node)
    # What the comparison read came packed: preflight_info's reads never reached the main process whole.
    read_task = drift.stdout.split('TASK [gpufleet.netval.preflight : Read RDMA ports')[1].split('\nTASK [')[0]
    answers = [line for line in read_task.splitlines() if line.startswith('ok: [')]
    assert len(answers) == NODES and all('"reads_packed": "' in line and '"reads": {' not in line for line in answers), read_task[:3000]
