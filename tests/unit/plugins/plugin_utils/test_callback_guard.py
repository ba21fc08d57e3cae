"""What the callbacks share, on real ansible-core objects: a task's role from the name ansible-core prints (never its
private attributes), and a failing hook that is one warning, never a broken playbook."""
import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.manager import VariableManager

from ansible_collections.gpufleet.netval.plugins.plugin_utils.callback_guard import role_of, soft


@pytest.fixture(scope='module', autouse=True)
def plugin_loader():
    init_plugin_loader()  # what ansible-playbook does first, once: it resolves the tasks' actions


@pytest.fixture
def tasks(tmp_path):
    """Every task of a play loaded the way ansible-playbook loads it: a role's tasks, then the play's own."""
    role_tasks = tmp_path / 'roles' / 'throwaway' / 'tasks'
    role_tasks.mkdir(parents=True)
    role_tasks.joinpath('main.yml').write_text('- name: Say hello\n  ansible.builtin.debug: {}\n'
                                               '- ansible.builtin.debug: {}\n')
    loader = DataLoader()
    loader.set_basedir(str(tmp_path))
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
                found.append(task)

    for block in play.compile():
        walk(block)
    return found


def test_a_roles_tasks_name_their_role_named_or_not(tasks):
    named, unnamed = tasks[0], tasks[1]
    assert (named.name, unnamed.name) == ('Say hello', '')
    assert role_of(named) == 'throwaway' and role_of(unnamed) == 'throwaway'


def test_a_plays_own_task_has_no_role_even_when_its_name_looks_like_one(tasks):
    look_alike, unnamed, include = tasks[2], tasks[3], tasks[4]
    assert look_alike.get_name() == 'alpha : beta'  # what a role's task would print for role 'alpha'
    assert include.get_name() == 'ansible.builtin.include_role : throwaway'  # the role it includes, not one it is in
    assert [role_of(task) for task in (look_alike, unnamed, include)] == [None, None, None]


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
