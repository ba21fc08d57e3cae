"""Hostile arguments, generated from every module's argument_spec (issue 13 item 3).

For every text option (str, path, raw, and lists of them) of every module:
* the value with a trailing newline fails with a clear error naming the option, before anything runs;
* the value with a leading '-' never lands in argv (or in the MPI hostfile) as an element of its own, where
  it would be read as another option; only the free-form argument lists (extra_args, mpirun_args, an evidence
  command's argv) may carry options.
Commands are recorded, never run: run_command, the server start and the evidence runner are replaced.
"""
import importlib
import os
import pkgutil
from unittest import mock

import pytest
from ansible.module_utils import basic

from ansible_collections.gpufleet.netval.plugins import modules as modules_pkg
from ansible_collections.gpufleet.netval.plugins.module_utils import background, runner
from ansible_collections.gpufleet.netval.plugins.modules import evidence_bundle
from ansible_collections.gpufleet.netval.plugins.modules import perftest as perftest_module
from tests.unit.plugins.modules.utils import AnsibleExitJson, AnsibleFailJson, _exit_json, _fail_json, module_args

MODULE_NAMES = sorted(name for _finder, name, _pkg in pkgutil.iter_modules(modules_pkg.__path__))
LAUNCHER_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----'
TEXT_TYPES = ('str', 'path', 'raw')
# Options whose items are arguments by design.
FREE_ARGS = {('perftest', 'extra_args'), ('nccl_tests', 'mpirun_args')}

# Valid arguments that take each module as far as its commands; {tmp} is the test's temporary folder.
BASE = {
    'perftest': {'test': 'ib_write_bw', 'role': 'client', 'server': 'peer-01', 'device': 'mlx5_0', 'extra_args': ['--cpu_util'],
                 'log_dir': '{tmp}', 'log_path': '{tmp}/server.log', 'exe': '/usr/bin/ib_write_bw'},
    'iperf3': {'role': 'client', 'server': 'peer-01', 'bind': '10.0.0.1', 'bandwidth': '10G', 'log_dir': '{tmp}',
               'exe': '/usr/bin/iperf3'},
    'jumbo_ping': {'dest': 'peer-01', 'interface': 'eth0', 'mtu': 9000, 'sysfs_root': '{tmp}'},
    'nccl_tests': {'binary': 'all_reduce_perf', 'hosts': ['gpu-a', 'gpu-b'], 'min_bytes': '1G', 'max_bytes': '8G',
                   'ib_hca': ['mlx5_0'], 'socket_ifname': ['eth0'], 'net_plugin': 'none', 'fabric_subnet': '10.0.0.0/24',
                   'mpirun_args': ['--bind-to', 'none'], 'mpirun': 'mpirun'},
    'dcgmi_diag': {},
    'evidence_bundle': {'dest': '{tmp}/ev', 'node': 'node01', 'timestamp': '20261130T014500Z',
                        'commands': [{'name': 'lspci.txt', 'argv': ['lspci', '-vvv']}], 'paths': ['{tmp}/cmdline']},
    'gpu_info': {'since': 'today'},
    'nic_info': {'netdevs': ['eth0'], 'include': ['eth1'], 'sysfs_root': '{tmp}'},
    'pcie_info': {'sysfs_root': '{tmp}', 'devices': ['0000:1b:00.0'], 'lspci': True},
    'host_tuning_info': {'sysfs_root': '{tmp}', 'procfs_root': '{tmp}', 'irq_devices': ['0000:1b:00.0']},
    'mlx_fw_info': {'devices': ['mlx5_0'], 'sysfs_root': '{tmp}'},
    'rdma_info': {'sysfs_root': '{tmp}', 'devices': ['mlx5_0']},
    'validation_report': {'root': '{tmp}/reports', 'timestamp': '20261130T014500Z', 'nodes': {}},
    'regrade_report': {'root': '{tmp}/regrade', 'timestamp': '20261130T014500Z', 'profiles': {}, 'evidence_dir': '{tmp}/evidence',
                       'bundles': ['{tmp}/evidence'], 'nodes': ['node01'], 'since': '2026-11-01', 'reports_dir': '{tmp}/reports'},
    'drift_report': {'root': '{tmp}/reports', 'timestamp': '20261130T014500Z', 'nodes': {}, 'textfile_dir': '{tmp}/prom'},
    'evidence_store': {'tarball': '{tmp}/ev/b.tar.gz', 'dest': '{tmp}/ev', 'baseline': {}, 'baseline_link': '{tmp}/baseline'},
    'peer_lease': {'peers': ['peer01'], 'node': 'node01', 'run': '20261130T014500Z', 'lease_dir': '{tmp}/leases', 'wait': 1},
    'preflight_info': {'rdma': {'sysfs_root': '{tmp}', 'devices': ['mlx5_0']}, 'required': ['rdma']},
    'fabric_route': {'dest': '10.0.0.2', 'source': '10.0.0.1', 'interface': 'eth0'},
    'mpi_launcher_info': {'binary': 'all_reduce_perf', 'mpirun': 'mpirun', 'address': '10.0.0.1', 'host_keys': ['{tmp}/key.pub']},
    'launcher_key': {'run': '20261130T014500Z', 'node': 'node01', 'peer': 'peer01'},
    'launcher_trust': {'state': 'present', 'peer_address': 'peer-01', 'private_key': LAUNCHER_KEY,
                       'peer_host_keys': ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBlZXIwMidzIGhvc3Qga2V5IGZvciB0aGUgdGVzdA=='],
                       'user': 'root', 'dir': '{tmp}/netval-launcher-x', 'from_addresses': ['10.0.0.1'],
                       'public_key': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBlZXIwMidzIGhvc3Qga2V5IGZvciB0aGUgdGVzdA== netval-launcher:r:n:p:x'},
}
# An OpenSSH private key is lines of text by its format: launcher_trust writes it to a 0600 file, it never reaches argv.
MULTILINE = {('launcher_trust', 'private_key')}


# Lists of dicts, covered with a sample of their own: every text value of the first item is made hostile, and the
# options the list stands in for (mutually exclusive with it) are left out of the base arguments.
DICT_LISTS = {
    ('perftest', 'sessions'): {
        'sample': [{'id': 'hca0', 'server': 'peer-01', 'device': 'mlx5_0', 'port': 18515},
                   {'id': 'hca1', 'server': 'peer-02', 'device': 'mlx5_1', 'port': 18516}],
        'replaces': ('server', 'device', 'log_path', 'exe'),
    },
    ('iperf3', 'sessions'): {
        'sample': [{'id': 'p1', 'port': 5201, 'bind': '10.0.0.1'}, {'id': 'p2', 'port': 5202, 'bind': '10.0.0.1'}],
        'replaces': ('bind',),
    },
    # preflight_info's reads take their modules' options (a dict each): every text value of one made hostile.
    ('preflight_info', 'rdma'): {'sample': {'sysfs_root': '{tmp}', 'devices': ['mlx5_0']}, 'replaces': ()},
    ('preflight_info', 'host'): {'sample': {'sysfs_root': '{tmp}', 'procfs_root': '{tmp}', 'memlock_user': 'root'}, 'replaces': ()},
}


def argument_spec(name):
    """The argument_spec a module's main() builds, captured at AnsibleModule()."""
    module = importlib.import_module('ansible_collections.gpufleet.netval.plugins.modules.%s' % name)
    seen = {}

    class Captured(Exception):
        pass

    def capture(self, argument_spec, **kwargs):
        seen.update(argument_spec)
        raise Captured()

    with mock.patch.object(basic.AnsibleModule, '__init__', capture):
        with pytest.raises(Captured):
            module.main()
    return module, seen


def text_options():
    cases = []
    for name in MODULE_NAMES:
        _module, spec = argument_spec(name)
        for option, info in sorted(spec.items()):
            kind = info.get('type', 'str')
            if info.get('choices'):
                continue  # Ansible's own choices check refuses anything else
            if kind in TEXT_TYPES or (kind == 'list' and info.get('elements', 'str') in TEXT_TYPES) or (name, option) in DICT_LISTS:
                cases.append((name, option))
    return cases


CASES = text_options()


def test_every_module_is_covered_and_has_text_options():
    assert sorted(set(name for name, _option in CASES)) == sorted(set(MODULE_NAMES) - {'dcgmi_diag'})
    assert sorted(BASE) == MODULE_NAMES
    assert len(CASES) >= 40


def sample(name, option, tmp):
    value = DICT_LISTS[(name, option)]['sample'] if (name, option) in DICT_LISTS else BASE[name].get(option)
    if value is None:
        value = {'str': 'sample', 'path': '%s/sample' % tmp}.get(argument_spec(name)[1][option].get('type', 'str'), 'sample')
    return fill(value, tmp)


def fill(value, tmp):
    if isinstance(value, str):
        return value.replace('{tmp}', tmp)
    if isinstance(value, list):
        return [fill(item, tmp) for item in value]
    if isinstance(value, dict):
        return dict((key, fill(item, tmp)) for key, item in value.items())
    return value


def mutate(value, change):
    """``change`` applied to the text (the first item of a list; every text value of a first item that is a dict)."""
    if isinstance(value, list):
        return [mutate(value[0], change)] + value[1:]
    if isinstance(value, dict):
        return dict((key, change(item) if isinstance(item, str) else item) for key, item in value.items())
    return change(value)


def first_text(value):
    """The text ``mutate`` changes first: the value, a list's first item, a dict's first text value."""
    if isinstance(value, list):
        return first_text(value[0])
    if isinstance(value, dict):
        return [first_text(item) for item in value.values() if isinstance(item, str)][0]
    return value


def run_recorded(name, args):
    """Run module ``name`` with ``args``; returns (result, failed, argvs, hostfiles) without running anything real."""
    module, _spec = argument_spec(name)
    argvs = []
    hostfiles = []

    def fake_capture(argv, environ_update=None, data=None):  # pylint: disable=unused-argument
        argvs.append([str(a) for a in argv])
        if '--hostfile' in argv:
            path = argv[argv.index('--hostfile') + 1]
            if os.path.exists(path):
                with open(path) as handle:
                    hostfiles.append(handle.read())
        return 1, '', 'recorded by the hostile argument test'

    def fake_start_server(argv, *args, **kwargs):
        argvs.append([str(a) for a in argv])
        raise background.ServerError('recorded by the hostile argument test')

    def fake_start_servers(specs):
        argvs.extend([str(a) for a in spec['argv']] for spec in specs)
        return [background.ServerError('recorded by the hostile argument test') for _spec in specs]

    def fake_run_with_deadline(argv, timeout, grace=2.0):
        argvs.append([str(a) for a in argv])
        return runner.CommandResult(argv, 0, '', '')

    with module_args(args), mock.patch.multiple(basic.AnsibleModule, exit_json=_exit_json, fail_json=_fail_json,
                                                get_bin_path=lambda self, arg, required=False, opt_dirs=None: '/usr/bin/%s' % os.path.basename(arg)):
        with mock.patch.object(background, 'start_server', fake_start_server), mock.patch.object(background, 'start_servers', fake_start_servers), \
                mock.patch.object(runner, 'capture', fake_capture), \
                mock.patch.object(evidence_bundle, 'run_with_deadline', fake_run_with_deadline):
            try:
                module.main()
            except AnsibleExitJson as exc:
                return exc.args[0], False, argvs, hostfiles
            except AnsibleFailJson as exc:
                return exc.args[0], True, argvs, hostfiles
    pytest.fail('%s returned without exit_json or fail_json' % name)


def base_args(name, tmp, option=None):
    """BASE[name] filled in; without the options that ``option`` (a DICT_LISTS option) replaces."""
    replaced = DICT_LISTS.get((name, option), {}).get('replaces', ())
    return dict((key, value) for key, value in fill(BASE[name], tmp).items() if key not in replaced)


SINGLE_LINE = [case for case in CASES if case not in MULTILINE]


@pytest.mark.parametrize('name,option', SINGLE_LINE, ids=['%s-%s' % case for case in SINGLE_LINE])
def test_a_trailing_newline_never_passes(tmp_path, name, option):
    tmp = str(tmp_path)
    args = dict(base_args(name, tmp, option))
    args[option] = mutate(sample(name, option, tmp), lambda text: text + '\n')
    result, failed, argvs, _hostfiles = run_recorded(name, args)
    assert failed, '%s accepted %s=%r' % (name, option, args[option])
    assert argvs == [], '%s ran %r with %s=%r' % (name, argvs, option, args[option])
    assert option in result['msg'] and 'Traceback' not in result['msg']
    assert result.get('error_class', 'invalid_options') == 'invalid_options'


@pytest.mark.parametrize('name,option', CASES, ids=['%s-%s' % case for case in CASES])
def test_a_leading_dash_never_lands_in_argv_as_an_element(tmp_path, monkeypatch, name, option):
    tmp = str(tmp_path)
    monkeypatch.chdir(tmp)  # a path option like '-x/tmp/...' is relative: keep what it creates in the test's folder
    args = dict(base_args(name, tmp, option))
    hostile = mutate(sample(name, option, tmp), lambda text: '-oProxyCommand=x' if not text.startswith('/') else '-x' + text)
    args[option] = hostile
    dashed = first_text(hostile)
    result, failed, argvs, hostfiles = run_recorded(name, args)
    if (name, option) in FREE_ARGS:
        return
    for argv in argvs:
        assert dashed not in argv, '%s put %s=%r into argv %r' % (name, option, dashed, argv)
    for hostfile in hostfiles:
        assert not any(line.startswith('-') for line in hostfile.splitlines()), hostfile
    if not failed:
        # Accepted only where it can never be read as an option (a --flag=VALUE form, a path, a dict key).
        assert all(dashed not in argv for argv in argvs)
    else:
        assert 'Traceback' not in result['msg']


def test_an_evidence_command_may_not_start_with_a_dash(tmp_path):
    args = base_args('evidence_bundle', str(tmp_path))
    args['commands'] = [{'name': 'x.txt', 'argv': ['--help']}]
    result, failed, argvs, _hostfiles = run_recorded('evidence_bundle', args)
    assert failed and argvs == [] and 'argv[0]' in result['msg']


@pytest.mark.parametrize('option,value', [('ready_timeout', float('inf')), ('ready_timeout', float('nan')), ('ready_timeout', 0),
                                          ('ready_timeout', 10 ** 9), ('timeout', 10 ** 9), ('timeout', -1)])
def test_perftest_timeouts_are_finite_positive_and_bounded(tmp_path, option, value):
    args = dict(base_args('perftest', str(tmp_path)), role='server', server=None)
    args[option] = value
    result, failed, argvs, _hostfiles = run_recorded('perftest', args)
    assert failed and argvs == [] and option in result['msg'] and result['error_class'] == 'invalid_options'


@pytest.mark.parametrize('name,args', [
    ('iperf3', {'role': 'client', 'server': 'peer-01', 'timeout': 10 ** 9}),
    ('iperf3', {'role': 'client', 'server': 'peer-01', 'interval': float('nan')}),
    ('jumbo_ping', {'dest': 'peer-01', 'mtu': 9000, 'interval': float('inf')}),
    ('jumbo_ping', {'dest': 'peer-01', 'mtu': 9000, 'timeout': 10 ** 9}),
    ('nccl_tests', {'binary': 'all_reduce_perf', 'hosts': ['gpu-a'], 'timeout': 10 ** 9}),
    ('dcgmi_diag', {'timeout': 10 ** 9}),
    ('gpu_info', {'timeout': 0}),
    ('nic_info', {'timeout': 10 ** 9}),
    ('mlx_fw_info', {'timeout': 10 ** 9}),
    ('rdma_info', {'timeout': 10 ** 9}),
    ('evidence_bundle', {'node': 'n1', 'timestamp': '20261130T014500Z', 'commands': [{'name': 'x', 'argv': ['ls'], 'timeout': 10 ** 9}]}),
])
def test_every_timeout_like_option_is_bounded(tmp_path, name, args):
    result, failed, argvs, _hostfiles = run_recorded(name, fill(args, str(tmp_path)))
    assert failed and argvs == [] and result['error_class'] == 'invalid_options' and 'must be' in result['msg']


def test_a_stop_with_a_non_finite_wait_exit_still_stops_and_never_fails(tmp_path):
    result, failed, argvs, _hostfiles = run_recorded('perftest', {'test': 'ib_write_bw', 'role': 'server', 'state': 'stopped',
                                                                  'pid': 2 ** 22 + 77, 'start_time': 5, 'wait_exit': float('inf')})
    assert not failed and result['stopped'] is True and result['server_state'] == 'exited'


# perftest sessions: every text key of every form, hostile in the second session only.
SESSION_FORMS = {
    'client': ({'test': 'ib_write_bw', 'role': 'client'},
               [{'id': 'a', 'server': 'peer-01', 'device': 'mlx5_0', 'port': 18515, 'use_cuda_bus_id': '0000:1b:00.0'},
                {'id': 'b', 'server': 'peer-02', 'device': 'mlx5_1', 'port': 18516, 'use_cuda_bus_id': '0000:3a:00.0'}]),
    'started': ({'test': 'ib_write_bw', 'role': 'server', 'log_dir': '{tmp}'},
                [{'id': 'a', 'device': 'mlx5_0', 'port': 18515, 'use_cuda_bus_id': '0000:1b:00.0'},
                 {'id': 'b', 'device': 'mlx5_1', 'port': 18516, 'use_cuda_bus_id': '0000:3a:00.0'}]),
    'stopped': ({'test': 'ib_write_bw', 'role': 'server', 'state': 'stopped', 'wait_exit': 0},
                [{'id': 'a', 'pid': 2 ** 22 + 77, 'start_time': 5, 'exe': '/usr/bin/ib_write_bw', 'log_path': '{tmp}/netval-a/server.log'},
                 {'id': 'b', 'pid': 2 ** 22 + 78, 'start_time': 5, 'exe': '/usr/bin/ib_write_bw', 'log_path': '{tmp}/netval-b/server.log'}]),
}
SESSION_TEXT_CASES = [(form, key) for form in sorted(SESSION_FORMS) for key in perftest_module.SESSION_KEYS[form]
                      if key not in perftest_module.INT_KEYS]


def session_args(form, key, change, tmp):
    shared, sessions = (fill(part, tmp) for part in SESSION_FORMS[form])
    sessions[1][key] = change(sessions[1][key])
    return dict(shared, sessions=sessions), sessions[1][key]


def test_every_session_form_and_text_key_is_covered():
    assert sorted(set(form for form, _key in SESSION_TEXT_CASES)) == ['client', 'started', 'stopped']
    assert ('client', 'server') in SESSION_TEXT_CASES and ('stopped', 'log_path') in SESSION_TEXT_CASES
    assert all(key in SESSION_FORMS[form][1][1] for form, key in SESSION_TEXT_CASES)


@pytest.mark.parametrize('form,key', SESSION_TEXT_CASES, ids=['%s-%s' % case for case in SESSION_TEXT_CASES])
def test_a_trailing_newline_in_a_session_never_passes(tmp_path, form, key):
    args, value = session_args(form, key, lambda text: text + '\n', str(tmp_path))
    result, failed, argvs, _hostfiles = run_recorded('perftest', args)
    assert argvs == [], 'perftest ran %r with sessions[1].%s=%r' % (argvs, key, value)
    if form == 'stopped':
        # A stop never fails the host: the value only ever identifies (it is compared, never run or followed).
        assert not failed and [entry['server_state'] for entry in result['stops']] == ['exited', 'exited']
        return
    assert failed and 'sessions[1].%s must not contain newlines' % key in result['msg'], result['msg']
    assert result['error_class'] == 'invalid_options' and 'Traceback' not in result['msg']


@pytest.mark.parametrize('form,key', SESSION_TEXT_CASES, ids=['%s-%s' % case for case in SESSION_TEXT_CASES])
def test_a_leading_dash_in_a_session_never_lands_in_argv_as_an_element(tmp_path, form, key):
    args, dashed = session_args(form, key, lambda text: '-oProxyCommand=x' if not text.startswith('/') else '-x' + text, str(tmp_path))
    result, failed, argvs, _hostfiles = run_recorded('perftest', args)
    for argv in argvs:
        assert dashed not in argv, 'perftest put sessions[1].%s=%r into argv %r' % (key, dashed, argv)
    if key in ('server', 'device'):
        assert failed and argvs == [] and 'sessions[1].%s must be' % key in result['msg'], result
    elif key == 'use_cuda_bus_id':
        assert failed and argvs == [] and 'sessions[1].use_cuda_bus_id %r is not a PCI address' % dashed in result['msg'], result
    else:
        # id is a label, exe and log_path only identify a server to stop: accepted, never an argument.
        assert not failed, result
