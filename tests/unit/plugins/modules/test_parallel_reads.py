"""parallel_reads: reads run side by side, each on its own copy of the connection, with the results under their names;
a required read's failure fails the task in the one failure shape; bad options run nothing.

The action plugin is run with its module runs replaced (_execute_module): what is tested is the scheduling and the
result, not the modules (each has its own tests, and the lab runs them through this action in every preflight).
"""
import threading
import time
from unittest import mock

import pytest

from ansible_collections.gpufleet.netval.plugins.action import parallel_reads as action_plugin
from ansible_collections.gpufleet.netval.plugins.module_utils import parallel_reads
from ansible_collections.gpufleet.netval.plugins.modules import parallel_reads as parallel_reads_module
from tests.unit.plugins.modules.utils import run_module

READS = {
    'rdma': {'module': 'gpufleet.netval.rdma_info', 'args': {'ipv4': True}},
    'pcie': {'module': 'gpufleet.netval.pcie_info'},
    'host': {'module': 'gpufleet.netval.host_tuning_info', 'args': {'irq_rdma_devices': True}},
}


class Connection(object):
    """What _own_copy copies: a transport name, a shell with a tmpdir, a become plugin with its own state; and what
    ActionBase._is_pipelining_enabled reads."""
    has_pipelining = True
    always_pipeline_modules = False

    def __init__(self, transport, pipelining=True):
        self.transport = transport
        self.pipelining = pipelining
        self._shell = mock.MagicMock(tmpdir=None)
        self.become = mock.MagicMock(success=None)
        self.become.name = 'sudo'

    def get_option(self, name):
        assert name == 'pipelining'
        return self.pipelining


KNOWN_PYTHON = {'inventory_hostname': 'node01', 'ansible_python_interpreter': '/usr/bin/python3'}


def run_action(task_args, transport='ssh', results=None, seconds=0.3, check_mode=False, installed=True, own_state=True,
               pipelining=True, task_vars=None):
    """(task result, [(module, args, connection, thread, templar, start)] of every module run, the task's connection)."""
    task = mock.MagicMock(async_val=0, check_mode=check_mode, args=dict(task_args))
    loader = mock.MagicMock()
    loader.module_loader.find_plugin_with_context.return_value = mock.MagicMock(resolved=installed)
    connection = Connection(transport, pipelining)
    templar = mock.MagicMock()
    templar.copy_with_new_env.side_effect = mock.MagicMock   # a new templar each call
    action = action_plugin.ActionModule(task, connection, mock.MagicMock(remote_addr='10.0.0.1'), loader=None,
                                        templar=templar, shared_loader_obj=loader)
    runs = []
    lock = threading.Lock()

    def execute_module(self, module_name=None, module_args=None, task_vars=None, wrap_async=False):
        with lock:
            runs.append((module_name, module_args, self._connection, threading.current_thread().name, self._templar, time.time()))
        if own_state:
            # What a run keeps on its connection must stay its own: another read's copy would see it here.
            assert self._connection._shell.tmpdir is None
            self._connection._shell.tmpdir = '/tmp/ansible-%s' % module_name
        time.sleep(seconds)
        return dict((results or {}).get(module_name, {'changed': False, 'found': module_name}), _ansible_parsed=True)

    with mock.patch.object(action_plugin.ActionModule, '_execute_module', execute_module):
        begin = time.time()
        result = action.run(task_vars=dict(KNOWN_PYTHON) if task_vars is None else task_vars)
        result['_elapsed'] = time.time() - begin
    return result, runs, connection


def test_reads_run_side_by_side_each_on_its_own_connection_copy():
    result, runs, connection = run_action({'reads': READS, 'required': ['rdma']})
    assert not result.get('failed'), result
    assert result['_elapsed'] < 0.6, result['_elapsed']   # three 0.3-s reads at once, not 0.9 s one after another
    assert sorted(result['reads']) == ['host', 'pcie', 'rdma']
    assert result['reads']['pcie'] == {'changed': False, 'found': 'gpufleet.netval.pcie_info'}   # no _ansible_* key
    assert result['changed'] is False and result['error_class'] is None
    connections = [run[2] for run in runs]
    assert len(set(map(id, connections))) == 3 and connection not in connections
    assert len(set(id(c.become) for c in connections)) == 3 and connection._shell.tmpdir is None
    assert len(set(id(run[4]) for run in runs)) == 3   # a templar each: its context is saved and restored per template
    assert dict((run[0], run[1]) for run in runs)['gpufleet.netval.rdma_info'] == {'ipv4': True}
    assert dict((run[0], run[1]) for run in runs)['gpufleet.netval.pcie_info'] == {}


def test_other_connection_plugins_read_one_after_another_on_the_tasks_connection():
    result, runs, connection = run_action({'reads': READS}, transport='paramiko', seconds=0.1, own_state=False)
    assert not result.get('failed') and sorted(result['reads']) == ['host', 'pcie', 'rdma']
    assert result['_elapsed'] >= 0.3 and all(run[2] is connection for run in runs)
    assert len(set(run[3] for run in runs)) == 1


def test_without_pipelining_the_reads_run_one_after_another():
    # Each copy would make a remote tmpdir of its own that the task's cleanup never sees.
    result, runs, connection = run_action({'reads': READS}, seconds=0.1, own_state=False, pipelining=False)
    assert not result.get('failed') and result['_elapsed'] >= 0.3 and all(run[2] is connection for run in runs)


def test_a_python_still_to_discover_is_discovered_by_the_first_read_alone():
    result, runs, _connection = run_action({'reads': READS}, seconds=0.2, own_state=False, task_vars={'inventory_hostname': 'node01'})
    assert not result.get('failed') and sorted(result['reads']) == ['host', 'pcie', 'rdma']
    first = min(runs, key=lambda run: run[5])
    assert first[0] == 'gpufleet.netval.host_tuning_info'   # names in order: host, pcie, rdma
    others = [run for run in runs if run is not first]
    # The others start once the first has ended, together.
    assert all(run[5] >= first[5] + 0.2 for run in others) and abs(others[0][5] - others[1][5]) < 0.15
    assert 0.4 <= result['_elapsed'] < 0.6, result['_elapsed']
    assert action_plugin.ActionModule._interpreter_known({'ansible_python_interpreter': 'auto_silent'}) is False
    assert action_plugin.ActionModule._interpreter_known({'ansible_facts': {'discovered_interpreter_python': '/usr/bin/python3'}})


def test_a_required_read_that_failed_fails_the_task_with_its_message_and_class():
    failed_rdma = {'failed': True, 'msg': 'node01: cannot read /sys/class/infiniband', 'error_class': 'no_rdma_device',
                   'error_hint': 'load mlx5_ib', 'error_side': 'provider'}
    result, _runs, _connection = run_action({'reads': READS, 'required': ['rdma', 'host']},
                                            results={'gpufleet.netval.rdma_info': failed_rdma}, seconds=0.0)
    assert result['failed'] and result['error_class'] == 'no_rdma_device' and result['error_side'] == 'provider'
    assert result['msg'] == 'node01: the rdma read (gpufleet.netval.rdma_info) failed: node01: cannot read /sys/class/infiniband'
    assert result['reads']['rdma']['failed'] and not result['reads']['pcie'].get('failed')


def test_a_read_that_is_not_required_fails_nothing_and_warnings_are_named():
    results = {'gpufleet.netval.pcie_info': {'failed': True, 'msg': 'lspci missing'},
               'gpufleet.netval.rdma_info': {'changed': False, 'warnings': ['port 2 is Down'],
                                             'ansible_facts': {'discovered_interpreter_python': '/usr/bin/python3'}}}
    result, _runs, _connection = run_action({'reads': READS, 'required': ['rdma']}, results=results, seconds=0.0)
    assert not result.get('failed') and result['reads']['pcie']['failed']
    assert result['warnings'] == ['rdma (gpufleet.netval.rdma_info): port 2 is Down']
    assert result['ansible_facts'] == {'discovered_interpreter_python': '/usr/bin/python3'}
    assert 'ansible_facts' not in result['reads']['rdma']


@pytest.mark.parametrize('args,needle', [
    ({'reads': {'rdma': {'module': 'ansible.builtin.shell', 'args': {'cmd': 'reboot'}}}}, "read-only modules (gpufleet.netval.<name>_info)"),
    ({'reads': {'rdma': {'module': 'gpufleet.netval.perftest'}}}, 'read-only modules'),
    ({'reads': {'Bad Name': READS['rdma']}}, "reads key 'Bad Name' must be a name"),
    ({'reads': {'rdma': dict(READS['rdma'], when='x')}}, 'reads.rdma has keys when'),
    ({'reads': {'rdma': {'module': 'gpufleet.netval.rdma_info', 'args': 'ipv4=true'}}}, 'reads.rdma.args must be a dict'),
    ({'reads': READS, 'required': ['gpu']}, "required names 'gpu', which is not a read"),
    ({'reads': {}}, 'reads must name at least one read'),
    ({'reads': READS, 'workers': 3}, 'workers'),
])
def test_bad_options_run_nothing_and_fail_in_the_one_shape(args, needle):
    result, runs, _connection = run_action(args, seconds=0.0)
    assert result['failed'] and result['error_class'] == 'invalid_options' and needle in result['msg'], result['msg']
    assert runs == []


def test_a_module_that_is_not_installed_is_named():
    result, runs, _connection = run_action({'reads': READS}, installed=False, seconds=0.0)
    assert result['failed'] and 'reads.host.module gpufleet.netval.host_tuning_info is not installed' in result['msg'] and runs == []


def test_check_reads_and_combine_are_pure():
    assert parallel_reads.check_reads(READS, ['rdma']) == []
    combined = parallel_reads.combine('node01', READS, {'rdma': {'changed': False}}, [])
    assert combined == {'changed': False, 'reads': {'rdma': {'changed': False}}, 'error_class': None, 'error_hint': None,
                        'error_side': None}


def test_as_a_module_on_a_host_it_says_it_runs_on_the_controller():
    result, failed = run_module(parallel_reads_module.main, {'reads': READS})
    assert failed and 'runs on the controller as an action plugin' in result['msg'] and result['_ran'] == []
