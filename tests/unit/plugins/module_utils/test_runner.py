"""Tests for the shared command runner."""
import os
import sys

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import runner


# runner.capture as shipped: the autouse fixture below replaces it in every test.
REAL_CAPTURE = runner.capture


@pytest.fixture(autouse=True)
def fake_commands(monkeypatch):
    """Every FakeModule made in a test answers the runner's commands (the last one made)."""
    made = []
    original = FakeModule.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)
        monkeypatch.setattr(runner, 'capture', self.capture)

    monkeypatch.setattr(FakeModule, '__init__', init)
    return made


class FakeModule(object):
    """A module for the runner, and the commands' results: runner.capture is replaced by ``capture`` while it lives."""

    def __init__(self, results, paths=None):
        self.results = list(results)
        self.paths = paths if paths is not None else {}
        self.calls = []

    def get_bin_path(self, tool, required=False, opt_dirs=None):
        return self.paths.get(tool, '/usr/bin/%s' % tool)

    def capture(self, argv, environ_update=None, data=None):  # pylint: disable=unused-argument
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


# ------------------------------------------------------------------ capture: the real command, every byte it wrote

def test_capture_reads_what_a_command_writes_after_a_silent_second_then_exits_at_once():
    # The pattern that lost output in AnsibleModule.run_command: silence longer than its 1-second select, then the
    # output and the exit together.
    script = 'import sys, time; time.sleep(1.3); sys.stdout.write("Settings for fab0:\\n"); sys.stderr.write("e")'
    rc, out, err = REAL_CAPTURE([sys.executable, '-c', script])
    assert (rc, out, err) == (0, 'Settings for fab0:\n', 'e')


def test_capture_sets_the_locale_per_call_never_in_os_environ(monkeypatch):
    monkeypatch.delenv('LC_ALL', raising=False)
    monkeypatch.setenv('PYTHONPATH', '/tmp/x/ansible_modlib.zip:/opt/keep')
    script = 'import os; print(os.environ.get("LC_ALL"), os.environ.get("PYTHONPATH"))'
    rc, out, _err = REAL_CAPTURE([sys.executable, '-c', script], environ_update=dict(runner.C_LOCALE))
    assert rc == 0 and out.split() == ['C', '/opt/keep']
    assert 'LC_ALL' not in os.environ


def test_capture_passes_arguments_and_stdin_as_they_are():
    argv = [sys.executable, '-c', 'import sys; print(sys.argv[1:], sys.stdin.read())', '~', '$HOME']
    rc, out, _err = REAL_CAPTURE(argv, data='in')
    assert rc == 0 and out.strip() == "['~', '$HOME'] in"


def test_capture_of_a_command_that_cannot_start_is_rc_127_with_the_reason():
    rc, out, err = REAL_CAPTURE(['/nonexistent/netval-tool', '-x'])
    assert rc == runner.NOT_STARTED_RC and out == '' and '/nonexistent/netval-tool' in err and 'No such file' in err
