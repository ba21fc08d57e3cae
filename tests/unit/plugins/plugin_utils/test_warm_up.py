"""warm_up: the controller's main process imports the filters once, so the workers forked for each task inherit them."""
import gc
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.netval.plugins.plugin_utils import warm_up as warm


def test_imports_every_filter_of_the_collection_once_per_process(monkeypatch):
    monkeypatch.setattr(warm, '_WARMED', set())
    names = warm.warm_up()
    ours = [n for n in names if n.startswith('ansible_collections.gpufleet.netval.plugins.filter.')]
    assert 'ansible_collections.gpufleet.netval.plugins.filter.node_verdict' in ours
    assert 'ansible.plugins.filter.core' in names and 'ansible.plugins.test.core' in names
    assert all(n in sys.modules for n in names)
    # the second call (the other callback) imports nothing again
    assert warm.warm_up() == []


def test_a_package_or_module_that_fails_to_import_is_left_to_the_plugin_loader(monkeypatch):
    monkeypatch.setattr(warm, '_WARMED', set())
    seen = []

    def importer(name):
        seen.append(name)
        if name in ('missing.package', 'ansible.plugins.test.core'):
            raise ImportError(name)
        return __import__(name, fromlist=['*'])

    names = warm.warm_up(packages=('missing.package', 'ansible.plugins.test'), importer=importer)
    assert 'missing.package' in seen and 'ansible.plugins.test.core' in seen
    assert 'ansible.plugins.test.core' not in names and 'ansible.plugins.test.files' in names


def test_the_freeze_is_registered_once_per_process_for_the_forked_child(monkeypatch):
    monkeypatch.setattr(warm, '_FREEZE_REGISTERED', [])
    registered = []
    assert warm.freeze_inherited_objects_in_workers(register=lambda **hooks: registered.append(hooks)) is True
    assert registered == [{'after_in_child': gc.freeze}]
    # the second callback asks again: nothing more is registered
    assert warm.freeze_inherited_objects_in_workers(register=lambda **hooks: registered.append(hooks)) is False
    assert len(registered) == 1


# A parent with about 60 MiB of dicts forks a child that runs a full collection; the child says how much of the
# parent's memory it copied (its private dirty memory grew by) and how many objects it holds frozen beyond those the
# interpreter freezes itself.
_CHILD_COPIES = r'''
import gc, json, os, sys
from ansible_collections.gpufleet.netval.plugins.plugin_utils import warm_up
# What the interpreter froze itself at its start (Python 3.12 freezes a few hundred objects), so only ours count.
FROZEN_AT_START = gc.get_freeze_count()
def private_dirty_kib():
    with open('/proc/self/smaps_rollup') as handle:
        return sum(int(line.split()[1]) for line in handle if line.startswith('Private_Dirty:'))
heap = [{'n': i, 'tags': [i, str(i)]} for i in range(300000)]
if sys.argv[1] == 'freeze':
    warm_up.freeze_inherited_objects_in_workers()
gc.collect()
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    before = private_dirty_kib()
    gc.collect()
    os.write(write, json.dumps({'copied_kib': private_dirty_kib() - before, 'frozen': gc.get_freeze_count() - FROZEN_AT_START}).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read, 4096).decode())
'''


def _child_after_a_full_collection(mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, '-c', _CHILD_COPIES, mode], env=env, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


@pytest.mark.skipif(not os.path.exists('/proc/self/smaps_rollup'), reason='needs Linux smaps_rollup')
def test_a_worker_frozen_at_its_fork_collects_without_copying_the_parents_memory():
    unfrozen, frozen = _child_after_a_full_collection('plain'), _child_after_a_full_collection('freeze')
    # without the freeze the child's collection writes to every inherited dict and copies their pages
    assert unfrozen['frozen'] == 0 and unfrozen['copied_kib'] > 20 * 1024
    assert frozen['frozen'] > 300000 and frozen['copied_kib'] < 4 * 1024
