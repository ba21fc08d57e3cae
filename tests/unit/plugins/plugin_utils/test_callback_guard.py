"""What the callbacks share, on real ansible-core objects: a task's role from the name ansible-core prints (never its
private attributes), and a failing hook that is one warning, never a broken playbook."""
import json
import os
import subprocess
import sys

import ansible_collections

import pytest

from ansible_collections.gpufleet.netval.plugins.plugin_utils.callback_guard import soft

# Loading a play sets up ansible-core's plugin loader for the whole process (as ansible-playbook does first), which the
# other callback tests must not inherit: the play is loaded in a process of its own, which prints what role_of says.
LOAD_PLAY = r"""
import json, sys
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.manager import VariableManager
from ansible_collections.gpufleet.netval.plugins.plugin_utils.callback_guard import role_of

init_plugin_loader()
loader = DataLoader()
loader.set_basedir(sys.argv[1])
play = Play.load({'hosts': 'localhost', 'gather_facts': False, 'roles': ['throwaway'],
                  'tasks': [{'name': 'alpha : beta', 'ansible.builtin.debug': {}}, {'ansible.builtin.debug': {}},
                            {'ansible.builtin.include_role': {'name': 'throwaway'}}]},
                 variable_manager=VariableManager(loader=loader), loader=loader)
found = []

def walk(block):
    for task in block.block:
        if hasattr(task, 'block'):
            walk(task)
        elif task.action not in ('meta', 'ansible.builtin.meta'):
            found.append({'name': task.name, 'shown': task.get_name(), 'role': role_of(task)})

for block in play.compile():
    walk(block)
print(json.dumps(found))
"""


@pytest.fixture
def tasks(tmp_path):
    """Every task of a play loaded the way ansible-playbook loads it (a role's tasks, then the play's own): its name,
    the name ansible-core prints and what role_of reads from it."""
    role_tasks = tmp_path / 'roles' / 'throwaway' / 'tasks'
    role_tasks.mkdir(parents=True)
    role_tasks.joinpath('main.yml').write_text('- name: Say hello\n  ansible.builtin.debug: {}\n'
                                               '- ansible.builtin.debug: {}\n')
    # The collection as this process imports it.
    collections = os.pathsep.join(os.path.dirname(path) for path in ansible_collections.__path__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [collections, os.environ.get('PYTHONPATH')])))
    proc = subprocess.run([sys.executable, '-c', LOAD_PLAY, str(tmp_path)], stdout=subprocess.PIPE, env=env,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_roles_tasks_name_their_role_named_or_not(tasks):
    named, unnamed = tasks[0], tasks[1]
    assert (named['name'], unnamed['name']) == ('Say hello', '')
    assert named['role'] == 'throwaway' and unnamed['role'] == 'throwaway'


def test_a_plays_own_task_has_no_role_even_when_its_name_looks_like_one(tasks):
    look_alike, unnamed, include = tasks[2], tasks[3], tasks[4]
    assert look_alike['shown'] == 'alpha : beta'  # what a role's task would print for role 'alpha'
    assert include['shown'] == 'ansible.builtin.include_role : throwaway'  # the role it includes, not one it is in
    assert [task['role'] for task in (look_alike, unnamed, include)] == [None, None, None]


class Display(object):
    def __init__(self):
        self.warnings = []

    def warning(self, msg):
        self.warnings.append(msg)


class Plugin(object):
    def __init__(self):
        self._warned, self._display = set(), Display()

    @soft('gpufleet.netval.example', 'the example is incomplete')
    def v2_hook(self, fail):
        if fail:
            raise KeyError('boom')
        return 'done'


def test_a_failing_hook_warns_once_and_the_others_go_on():
    plugin = Plugin()
    assert plugin.v2_hook(False) == 'done'
    assert plugin.v2_hook(True) is None and plugin.v2_hook(True) is None
    assert plugin._display.warnings == [
        "gpufleet.netval.example: v2_hook failed (KeyError: 'boom'); the example is incomplete"]
