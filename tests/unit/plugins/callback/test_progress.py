"""The progress callback fed the events of a validation as Ansible gives them: silent before the prediction, then one
line per stage change with the time left, a JSON file of every node's stage, and an error of its own only a warning."""
import json

from ansible_collections.gpufleet.netval.plugins.callback.progress import CallbackModule
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import prediction

COSTS = {'call_s': 1, 'session_s': 0, 'node_fixed_s': 0, 'run_fixed_s': 0, 'untimed_s': {}}


class Display(object):
    verbosity = 0

    def __init__(self):
        self.lines, self.warnings = [], []

    def display(self, msg, **_kwargs):
        self.lines.append(msg)

    def warning(self, msg):
        self.warnings.append(msg)


class Host(object):
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class Task(object):
    """What the callback reads of a task; get_name() as ansible-core prints it ('ROLE : NAME' for a role's task)."""

    def __init__(self, action, role=None, args=None, run_once=False):
        self.action, self.role, self.args, self.run_once, self.name = action, role, args or {}, run_once, None

    def get_name(self, include_role_fqcn=True):
        return '%s : %s' % (self.role, self.name or self.action) if self.role else (self.name or self.action)


class Result(object):
    def __init__(self, host, task, result):
        self.host, self.task, self.result = Host(host), task, result


def callback(tmp_path):
    display = Display()
    plugin = CallbackModule(display=display)
    path = str(tmp_path / 'progress.json')
    plugin.get_option = lambda name: path if name == 'path' else None  # what ansible.cfg or NETVAL_PROGRESS_FILE would give
    plugin.v2_playbook_on_start(None)
    return plugin, display


def test_lines_start_with_the_prediction_and_follow_each_stage(tmp_path):
    plugin, display = callback(tmp_path)
    plugin.v2_runner_on_start(Host('node01'), Task('gpufleet.netval.rdma_info', 'gpufleet.netval.preflight'))
    assert display.lines == []  # no prediction yet: nothing to say how long
    run = prediction.predict_run([{'node': 'node01', 'peer_s': 40, 'local_s': 0}, {'node': 'node02', 'peer_s': 40, 'local_s': 0}],
                                 ['peer01'], COSTS)
    plugin.v2_runner_on_ok(Result('node01', Task('ansible.builtin.set_fact'), {'ansible_facts': {'netval_run_prediction': run}}))
    lease = Task('gpufleet.netval.peer_lease', args={'wait': 0})
    plugin.v2_runner_on_ok(Result('node01', lease, {'peer': 'peer01', 'waited_s': 0.0}))
    plugin.v2_runner_on_ok(Result('node02', lease, {'peer': None, 'failed': True, 'error_class': 'peer_busy'}))
    plugin.v2_runner_on_start(Host('node01'), Task('gpufleet.netval.perftest', 'gpufleet.netval.tier_tests'))  # still on its peer
    plugin.v2_runner_on_start(Host('node01'), Task('ansible.builtin.set_fact', 'gpufleet.netval.verdict'))
    assert len(display.lines) == 3, display.lines
    assert ' node01: tests against peer01 | ~40 s left for it, ~80 s for the run\'s tests | 0 of 2 nodes measured' in display.lines[0]
    assert ' node02: waiting for a free known-good peer | ~80 s left for it' in display.lines[1]
    assert display.lines[2].endswith(' node01: verdict | ~' + display.lines[2].split('~')[1].split(' | ')[0] + ' | 1 of 2 nodes measured')
    with open(str(tmp_path / 'progress.json'), encoding='utf-8') as handle:
        doc = json.load(handle)
    assert doc['nodes'] == {'node01': {'stage': 'verdict', 'peer': 'peer01'}, 'node02': {'stage': 'waiting', 'peer': None}}
    assert display.warnings == []


def test_an_error_in_a_hook_is_one_warning_and_nothing_raised(tmp_path):
    plugin, display = callback(tmp_path)
    assert plugin.v2_runner_on_start(None, None) is None
    assert plugin.v2_runner_on_start(None, None) is None
    assert plugin.v2_runner_on_ok(None) is None
    assert len(display.warnings) == 2 and 'gpufleet.netval.progress: v2_runner_on_start failed (AttributeError' in display.warnings[0]
