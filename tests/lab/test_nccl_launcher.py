"""NCCL as on a real cluster, end to end on the lab (issue 30).

Debian's openmpi-bin mpirun on the node starts orted on the peer over the lab's real SSH; only the benchmark is emulated,
per rank.  No node can log in to a peer before the run (its own home, no key the peer trusts, no host key of it): the
collection's launcher trust gives it both for the NCCL test and takes them back, the peer's authorized_keys byte for byte.
One lab: healthy-400g with node02 whose NCCL opens one HCA of eight (nccl-one-rail), one known-good peer.
"""
import glob
import hashlib
import json
import os
import signal
import subprocess
import time

import pytest

from tests.lab.conftest import BIN, LAB_ROOT, ROOT, cli, lab_env, nsrun

pytestmark = pytest.mark.lab

LAB = ['up', '--profile', 'healthy-400g', '--nodes', '2', '--peers', '1', '--node-profiles', 'node02=nccl-one-rail']
PEER_HOME = os.path.join(LAB_ROOT, 'nodes', 'peer01', 'home', '.ssh')
NODE_HOME = os.path.join(LAB_ROOT, 'nodes', 'node01', 'home', '.ssh')


def digest(path):
    """sha256 of a file, or None when it does not exist."""
    try:
        with open(path, 'rb') as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except FileNotFoundError:
        return None


def traces():
    """What the launcher may leave: the peer's authorized_keys and known_hosts, the node's ~/.ssh, folders in /tmp."""
    return {'peer authorized_keys': digest(os.path.join(PEER_HOME, 'authorized_keys')),
            'peer known_hosts': digest(os.path.join(PEER_HOME, 'known_hosts')),
            'node authorized_keys': digest(os.path.join(NODE_HOME, 'authorized_keys')),
            'node known_hosts': digest(os.path.join(NODE_HOME, 'known_hosts')),
            'launcher folders': sorted(glob.glob('/tmp/netval-launcher-*'))}


def validate(tmp_path, limit, *extra, **popen):
    reports, evidence = tmp_path / 'reports', tmp_path / 'evidence'
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', 'inventories/lab', 'playbooks/validate.yml', '-l', limit,
            '-e', 'report_root=%s' % reports, '-e', 'evidence_controller_dir=%s' % evidence] + list(extra)
    if popen:
        return subprocess.Popen(argv, cwd=ROOT, env=lab_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, **popen), reports
    proc = subprocess.run(argv, cwd=ROOT, env=lab_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=1200, check=False)
    return proc.returncode, proc.stdout, reports


def node_result(reports, node):
    with open(str(reports / 'latest' / 'nodes' / ('%s.json' % node)), encoding='utf-8') as handle:
        return json.load(handle)


def bundle_output(result, test):
    """A test's whole output, from the node's evidence bundle (the report keeps its path there, raw_file)."""
    with open(os.path.join(result['evidence'], test['raw_file']), encoding='utf-8') as handle:
        return handle.read()


def nccl_tests(result):
    return dict((t['metric'], t) for t in result['tests'] if t['metric'].startswith('nccl'))


@pytest.fixture(scope='module')
def launcher_lab(lab_session):  # pylint: disable=unused-argument
    cli(*LAB, check=True)
    yield
    cli('fault', 'clear')


@pytest.fixture(scope='module')
def healthy_run(launcher_lab, tmp_path_factory):  # pylint: disable=unused-argument
    before = traces()
    rc, out, reports = validate(tmp_path_factory.mktemp('launch'), 'new_nodes')
    assert rc == 0, out[-6000:]
    return before, traces(), reports


def test_no_node_can_reach_a_peer_before_the_run(launcher_lab):  # pylint: disable=unused-argument
    """As a new node: no key the peer trusts, no host key of the peer; the lab's own key is hidden from every host."""
    with open(os.path.join(LAB_ROOT, 'lab.json'), encoding='utf-8') as handle:
        peer_ip = json.load(handle)['hosts']['peer01']['mgmt_ip']
    key = os.path.join(LAB_ROOT, 'ssh', 'id_ed25519')
    proc = subprocess.run(['ssh', '-i', key, '-o', 'StrictHostKeyChecking=yes', '-o',
                           'UserKnownHostsFile=%s' % os.path.join(LAB_ROOT, 'ssh', 'known_hosts'), 'root@10.251.0.11',
                           'ls %s; ls ~/.ssh; ssh -o BatchMode=yes -o ConnectTimeout=5 %s true; echo rc=$?' % (key, peer_ip)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
    assert 'No such file or directory' in proc.stdout, proc.stdout  # the controller's key is not visible on the node
    assert 'Host key verification failed' in proc.stdout and 'rc=255' in proc.stdout, proc.stdout
    assert os.listdir(NODE_HOME) == ['authorized_keys']


def test_the_healthy_node_is_accepted_with_nccl_launched_by_the_real_mpirun_over_ssh(healthy_run):
    _before, _after, reports = healthy_run
    result = node_result(reports, 'node01')
    assert result['bucket'] == 'A', result['causes']
    nccl = nccl_tests(result)
    for metric in ('nccl_busbw_gbs', 'nccl_hcas_used', 'nccl_wrong', 'nccl_transport', 'nccl_gdr'):
        assert nccl[metric]['status'] == 'healthy', nccl[metric]
    assert nccl['nccl_hcas_used']['value'] == 8 and nccl['nccl_busbw_gbs']['value'] > 306
    assert '0.85 x 8 rails' in nccl['nccl_busbw_gbs']['expected']
    cmd = nccl['nccl_busbw_gbs']['cmd']
    assert cmd.startswith('/usr/bin/mpirun -np 16 --hostfile ') and '--mca plm_rsh_args' in cmd and 'StrictHostKeyChecking=yes' in cmd
    assert 'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,' in cmd and 'NCCL_SOCKET_IFNAME==mgmt0' in cmd
    assert 'raw' not in nccl['nccl_busbw_gbs']   # the bundle holds it; the controller let go of it
    raw = bundle_output(result, nccl['nccl_busbw_gbs'])
    # Ranks ran on both boxes: the peer's came from orted, started over SSH, and logged their own HCAs.
    assert 'node01:' in raw and 'peer01:' in raw and 'on     peer01 device' in raw
    assert len([line for line in raw.splitlines() if 'NET/IB : Using' in line]) == 16


def test_a_node_whose_nccl_rides_one_hca_is_not_accepted(healthy_run):
    _before, _after, reports = healthy_run
    result = node_result(reports, 'node02')
    nccl = nccl_tests(result)
    # Both lines it is past are the project's (the runbook gives one NIC's healthy busbw only): investigated, not returned,
    # until the operator's contract adopts them (issue 31: only a seeds' or contract line or a hardware fact returns a node).
    assert result['bucket'] == 'B' and nccl['nccl_hcas_used']['value'] == 1
    assert [(nccl[m]['status'], nccl[m]['reject_line']) for m in ('nccl_hcas_used', 'nccl_busbw_gbs')] == [('marginal', 'project')] * 2
    causes = [c['cause'] for c in result['causes']]
    assert 'nccl_rails' in causes and 'project_line' in causes and 'unexplained' not in causes
    # Its per-HCA figures are healthy: the one rail is NCCL's, not a slow NIC.
    assert all(t['status'] == 'healthy' for t in result['tests'] if t['metric'] == 'ib_send_bw_gbs')


def test_the_peer_and_the_node_are_as_they_were_after_the_run(healthy_run):
    before, after, _reports = healthy_run
    assert before['peer authorized_keys'] and after == before
    assert subprocess.run(['pgrep', '-f', 'def key_trace'], stdout=subprocess.PIPE, check=False).stdout == b''  # no watchdog left
    assert subprocess.run(['pgrep', '-f', '(^|/)orted |^/usr/bin/mpirun '], stdout=subprocess.PIPE, check=False).stdout == b''


def test_a_run_killed_during_the_nccl_test_leaves_nothing_once_its_deadline_passes(launcher_lab, tmp_path):  # pylint: disable=unused-argument
    before = traces()
    authorized = os.path.join(PEER_HOME, 'authorized_keys')
    # The trust outlives the NCCL timeout by 5 s here (600 by default), so the watchdogs' deadline is near.
    proc, _reports = validate(tmp_path, 'node01', '-e', 'netval_nccl_timeout=30', '-e', 'tier_tests_launcher_grace=5',
                              start_new_session=True)
    try:
        deadline = time.time() + 600
        while time.time() < deadline and digest(authorized) == before['peer authorized_keys']:
            assert proc.poll() is None, 'the run ended before the NCCL test'
            time.sleep(0.02)
        with open(authorized, encoding='utf-8') as handle:
            assert 'netval-launcher:' in handle.read()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole run, before its always section
        proc.communicate(timeout=60)
    deadline = time.time() + 120
    while time.time() < deadline and traces() != before:
        time.sleep(1)
    assert traces() == before


def test_a_broken_launcher_is_ours_not_the_nodes(launcher_lab, tmp_path):  # pylint: disable=unused-argument
    before = traces()
    cli('fault', 'orted-missing', '--node', 'node01', check=True)
    try:
        # The fault lives in the peer's sshd's mount namespace (what its sessions see), not in the lab's own.
        assert os.path.exists('/usr/bin/orted') and nsrun('peer01', ['test', '-x', '/usr/bin/orted']).returncode == 0
        rc, out, reports = validate(tmp_path, 'node01')
    finally:
        cli('fault', 'clear', check=True)
    assert rc == 0, out[-6000:]
    result = node_result(reports, 'node01')
    assert result['bucket'] == 'B', result['causes']
    busbw = nccl_tests(result)['nccl_busbw_gbs']
    assert (busbw['status'], busbw['error_class'], busbw['error_side']) == ('unknown', 'launcher_missing', 'ours')
    assert '/usr/bin/orted is not on peer01' in busbw['error']
    assert [c['cause'] for c in result['causes']] == ['measurement_incomplete']
    assert 'netval_mpirun' in result['causes'][0]['detail']
    assert traces() == before
