"""Lab test fixtures: one small lab (healthy-400g, 2 new nodes, 1 peer) for the whole session, always torn down.

Tests that rebuild or remove the lab (down/cleanup, molecule) may run in between;
the autouse ``lab`` fixture brings it back with an idempotent ``up`` (quick when it is already up).
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
LAB_ROOT = '/run/netval-lab'
PROFILE, NODES, PEERS = 'healthy-400g', 2, 1
LAB_ARGS = ['up', '--profile', PROFILE, '--nodes', str(NODES), '--peers', str(PEERS)]


def lab_env():
    env = dict(os.environ)
    env['PATH'] = BIN + os.pathsep + env.get('PATH', '')
    env['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, '.cache', 'collections')
    env['ANSIBLE_CONFIG'] = os.path.join(ROOT, 'ansible.cfg')
    return env


def bench_script():
    """scripts/bench.py, whose LedgerPoller records every RDMA session's start and end while a playbook runs."""
    spec = importlib.util.spec_from_file_location('netval_bench', os.path.join(ROOT, 'scripts', 'bench.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli(*args, timeout=300, check=False):
    """Run ``python -m lab.netval_lab ARGS`` from the repo root; returns the CompletedProcess (text)."""
    proc = subprocess.run([sys.executable, '-m', 'lab.netval_lab'] + [str(a) for a in args], cwd=ROOT, env=lab_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError('lab %s failed rc=%d\nstdout:\n%s\nstderr:\n%s' % (' '.join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc


def run(argv, timeout=120, **kwargs):
    return subprocess.run(argv, cwd=ROOT, env=lab_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, check=False, **kwargs)


def nsrun(host, argv, timeout=60):
    return run(['ip', 'netns', 'exec', 'nvlab-' + host] + list(argv), timeout=timeout)


def lab_json():
    with open(os.path.join(LAB_ROOT, 'lab.json'), encoding='utf-8') as handle:
        return json.load(handle)


def node_rail(lab, node='node01'):
    """The node's link to its peer that the faults act on: on a real site its first addressed rail and the peer's port on
    that rail ({node, peer, node_if, peer_if, node_ip, peer_ip, rail}); on the ideal site their node-peer link."""
    peer = lab['hosts'][node]['peer']
    if not lab.get('rails'):
        return [entry for entry in lab['links'] if entry['node'] == node and entry['peer'] == peer][0]
    port = [p for p in lab['hosts'][node]['ports'] if p['kind'] == 'rail' and p['ip']][0]
    far = [p for p in lab['hosts'][peer]['ports'] if p['rail'] == port['rail']][0]
    return {'node': node, 'peer': peer, 'node_if': port['netdev'], 'peer_if': far['netdev'], 'node_ip': port['ip'],
            'peer_ip': far['ip'], 'rail': port['rail'], 'mtu': port['mtu']}


@pytest.fixture(scope='session')
def lab_session():
    if os.geteuid() != 0:
        pytest.fail('the lab tests need root (network namespaces, veth, sshd)')
    try:
        yield
    finally:
        cli('down', timeout=120)


@pytest.fixture
def lab(lab_session):  # pylint: disable=redefined-outer-name,unused-argument
    """The session lab, up (rebuilt if a previous test took it down); returns lab.json."""
    cli(*LAB_ARGS, check=True)
    return lab_json()
