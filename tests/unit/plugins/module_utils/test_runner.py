"""Tests for the shared command runner."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import runner


class FakeModule(object):
    def __init__(self, results, paths=None):
        self.results = list(results)
        self.paths = paths if paths is not None else {}
        self.calls = []

    def get_bin_path(self, tool, required=False, opt_dirs=None):
        return self.paths.get(tool, '/usr/bin/%s' % tool)

    def run_command(self, argv, check_rc=False, environ_update=None, data=None):
        self.calls.append((argv, environ_update))
        return self.results.pop(0)

    def fail_json(self, **kwargs):
        raise RuntimeError(kwargs)


def test_runs_argument_list_with_c_locale():
    module = FakeModule([(0, 'out', '')])
    result = runner.ToolRunner(module).run('ibstat', ['-l'])
    assert module.calls[0][0] == ['/usr/bin/ibstat', '-l']
    assert module.calls[0][1]['LC_ALL'] == 'C'
    assert result.stdout == 'out' and result.rc == 0 and not result.timed_out


def test_timeout_wraps_with_coreutils_timeout_and_reports_it():
    module = FakeModule([(124, '', '')])
    with pytest.raises(RuntimeError) as exc:
        runner.ToolRunner(module).run('iperf3', ['-c', '10.0.0.2'], timeout=30)
    assert module.calls[0][0] == ['/usr/bin/timeout', '--kill-after=5', '30', '/usr/bin/iperf3', '-c', '10.0.0.2']
    fields = exc.value.args[0]
    assert 'timed out' in fields['msg'] and '/usr/bin/iperf3 -c 10.0.0.2' in fields['msg']
    assert fields['timed_out'] is True and fields['rc'] == 124


def test_failure_names_host_command_rc_and_stderr():
    module = FakeModule([(1, '', 'Failed to get IB devices list: Function not implemented\n')])
    with pytest.raises(RuntimeError) as exc:
        runner.ToolRunner(module).run('ibstat', [])
    fields = exc.value.args[0]
    assert fields['msg'].startswith(runner.hostname() + ': `/usr/bin/ibstat` exited with rc=1')
    assert 'Function not implemented' in fields['msg']
    assert fields['stderr'].startswith('Failed to get IB devices')


def test_missing_tool_names_package():
    module = FakeModule([], paths={'mlxconfig': None})
    with pytest.raises(RuntimeError) as exc:
        runner.ToolRunner(module).run('mlxconfig', ['-d', 'mlx5_0', 'q'])
    fields = exc.value.args[0]
    assert "'mlxconfig' was not found" in fields['msg'] and 'mft' in fields['msg']
    assert fields['missing_tool'] is True


def test_string_args_are_refused():
    with pytest.raises(TypeError):
        runner.ToolRunner(FakeModule([])).run('ibstat', 'mlx5_0 1')


def test_first_available_falls_back():
    module = FakeModule([], paths={'flint': None})
    assert runner.ToolRunner(module).first_available(['flint', 'mstflint']) == 'mstflint'


def test_unchecked_run_returns_failure_without_failing():
    module = FakeModule([(2, '', 'boom')])
    result = runner.ToolRunner(module).run('ethtool', ['-g', 'eth0'], check=False)
    assert result.rc == 2 and result.stderr == 'boom'
