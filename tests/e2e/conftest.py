"""Two network namespaces joined by a veth pair (MTU 9000), and a way to run a module inside one.

Needs root and iproute2; skipped (with the reason) only when either is missing.
Everything is torn down by the fixture's finalizer, on success and on failure.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, '.cache', 'collections')
MODULES = 'ansible_collections.gpufleet.netval.plugins.modules'


def _ip(*args, check=True):
    return subprocess.run(['ip'] + list(args), check=check, capture_output=True, text=True, timeout=30)


class NetnsPair(object):
    """Namespaces ``a`` and ``b`` with veths ``va``/``vb``, addresses ``ip_a``/``ip_b`` in 10.213.<x>.0/24."""

    def __init__(self, tag):
        self.a = 'nv-e2e-%s-a' % tag
        self.b = 'nv-e2e-%s-b' % tag
        short = str(tag)[-5:]
        self.va = 'nve%sa' % short
        self.vb = 'nve%sb' % short
        self.subnet = 100 + int(tag) % 100
        self.ip_a = '10.213.%d.1' % self.subnet
        self.ip_b = '10.213.%d.2' % self.subnet
        self.unused_ip = '10.213.%d.99' % self.subnet
        self.created = []

    def create(self):
        for name in (self.a, self.b):
            _ip('netns', 'add', name)
            self.created.append(name)
        _ip('link', 'add', self.va, 'netns', self.a, 'type', 'veth', 'peer', 'name', self.vb, 'netns', self.b)
        for ns, dev, addr in ((self.a, self.va, self.ip_a), (self.b, self.vb, self.ip_b)):
            _ip('-n', ns, 'addr', 'add', addr + '/24', 'dev', dev)
            _ip('-n', ns, 'link', 'set', dev, 'mtu', '9000', 'up')
            _ip('-n', ns, 'link', 'set', 'lo', 'up')

    def set_mtu(self, ns, dev, mtu):
        _ip('-n', ns, 'link', 'set', dev, 'mtu', str(mtu))

    def pids(self, ns):
        listed = _ip('netns', 'pids', ns, check=False).stdout.split()
        return [int(pid) for pid in listed if pid.isdigit()]

    def destroy(self):
        for name in reversed(self.created):
            for pid in self.pids(name):
                try:
                    os.kill(pid, 9)  # only processes inside our own namespace, which this test started
                except OSError:
                    pass
            _ip('netns', 'del', name, check=False)
        self.created = []

    def run_module(self, ns, module, args, tmp_path, timeout=60):
        """Run gpufleet.netval.<module> with ``args`` inside namespace ``ns``; returns (result dict, rc)."""
        args_file = tmp_path / ('%s-%s-args.json' % (module, len(os.listdir(str(tmp_path)))))
        args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
        env = dict(os.environ, PYTHONPATH=COLLECTIONS, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
        proc = subprocess.run(['ip', 'netns', 'exec', ns, sys.executable, '-m', '%s.%s' % (MODULES, module), str(args_file)],
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=str(tmp_path), check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
        assert lines, 'module %s printed no JSON (rc=%s)\nstdout: %s\nstderr: %s' % (module, proc.returncode, proc.stdout, proc.stderr)
        return json.loads(lines[-1]), proc.returncode


@pytest.fixture(scope='module')
def netns_pair():
    if os.geteuid() != 0:
        pytest.skip('needs root to create network namespaces')
    if shutil.which('ip') is None:
        pytest.skip('needs the ip command (iproute2) to create network namespaces')
    if not os.path.isdir(os.path.join(COLLECTIONS, 'ansible_collections', 'gpufleet', 'netval')):
        pytest.fail('%s does not hold gpufleet.netval; run `make collection` (the root conftest.py also creates it)' % COLLECTIONS)
    pair = NetnsPair(os.getpid())
    try:
        pair.create()
        yield pair
    finally:
        pair.destroy()
