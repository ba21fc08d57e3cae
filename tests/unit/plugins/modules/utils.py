"""Harness for module tests, in the style of community.general's unit tests.

Each case lists the exact argv the module must run and what the command
returns; the harness fails the test if the module runs anything else, runs
the commands in another order, or leaves an expected command unrun.
"""
import threading
import time
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.netval.plugins.module_utils import runner


class AnsibleExitJson(Exception):
    """Raised in place of exit_json; carries the module result."""


class AnsibleFailJson(Exception):
    """Raised in place of fail_json; carries the module result."""


# Keys of a task result that Ansible reads as its own (the host is unreachable, the task was skipped, a loop's items,
# facts to set...): a module that returns one changes how Ansible treats the host.  ``changed`` is the module's to set;
# ``failed`` only fail_json's.
RESERVED_RESULT_KEYS = frozenset(('unreachable', 'skipped', 'skip_reason', 'failed', 'invocation', 'ansible_facts', 'results',
                                  'item', 'attempts', 'retries', 'exception', 'warnings', 'deprecations', 'module_stdout',
                                  'module_stderr', 'ansible_job_id', 'finished', 'started', 'diff'))


def reserved_keys(result):
    return sorted(key for key in result if key in RESERVED_RESULT_KEYS or key.startswith('_ansible'))


def _exit_json(self, **kwargs):
    assert not reserved_keys(kwargs), 'the module returned keys Ansible reserves: %s' % reserved_keys(kwargs)
    kwargs.setdefault('changed', False)
    raise AnsibleExitJson(kwargs)


def _fail_json(self, **kwargs):
    reserved = [key for key in reserved_keys(kwargs) if key != 'failed']
    assert not reserved, 'the module failed with keys Ansible reserves: %s' % reserved
    kwargs['failed'] = True
    raise AnsibleFailJson(kwargs)


def module_args(args):
    """The context in which an AnsibleModule reads ``args`` as its task's (ansible-core's own test helper)."""
    args = dict(args)
    args.setdefault('_ansible_remote_tmp', '/tmp')
    args.setdefault('_ansible_keep_remote_files', False)
    return patch_module_args(args)


class Call(object):
    """One expected command: exact argv and what it returns."""

    def __init__(self, argv, rc=0, out='', err='', seconds=0.0):
        self.argv = list(argv)
        self.rc = rc
        self.out = out
        self.err = err
        self.seconds = seconds  # how long the command takes (concurrent runs: in any order, see run_module)


def _no_run_command(self, argv, *args, **kwargs):  # pylint: disable=unused-argument
    pytest.fail('module ran %r through AnsibleModule.run_command, not the runner' % (argv,))


def run_module(main, args, calls=(), missing=(), bin_dir='/usr/bin', check_mode=False, any_order=False):
    """Run a module's ``main`` with ``args``.

    ``calls`` are the Call objects expected in order (``any_order``: each exactly once, in any order, possibly at
    once from several threads; ``_spans`` then holds each command's (argv, start, end)); ``missing`` names tools
    that get_bin_path must not find.  Returns ``(result, failed)``.
    """
    expected = list(calls)
    ran = []
    environs = []
    spans = []
    lock = threading.Lock()

    def fake_capture(argv, environ_update=None, data=None):  # pylint: disable=unused-argument
        with lock:
            ran.append(list(argv))
            environs.append(dict(environ_update or {}))
            if not expected:
                pytest.fail('module ran an unexpected command: %r' % (argv,))
            if any_order:
                matching = [c for c in expected if c.argv == list(argv)]
                assert matching, 'unexpected argv %r; expected one of %r' % (argv, [c.argv for c in expected])
                call = matching[0]
                expected.remove(call)
            else:
                call = expected.pop(0)
        assert list(argv) == call.argv, 'argv mismatch:\n  ran      %r\n  expected %r' % (argv, call.argv)
        if environ_update is not None:
            assert environ_update.get('LC_ALL') == 'C'
        start = time.time()
        time.sleep(call.seconds)
        with lock:
            spans.append((list(argv), start, time.time()))
        return call.rc, call.out, call.err

    def fake_get_bin_path(self, arg, required=False, opt_dirs=None):
        if arg in missing:
            if required:
                self.fail_json(msg='Failed to find required executable %s' % arg)
            return None
        return '%s/%s' % (bin_dir, arg)

    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    # Commands go through runner.capture; AnsibleModule.run_command must not be used (it would fail the test).
    with module_args(args), mock.patch.multiple(basic.AnsibleModule, exit_json=_exit_json, fail_json=_fail_json,
                                                run_command=_no_run_command, get_bin_path=fake_get_bin_path), \
            mock.patch.object(runner, 'capture', fake_capture):
        outcome = None
        try:
            main()
        except AnsibleExitJson as exc:
            outcome = (exc.args[0], False)
        except AnsibleFailJson as exc:
            outcome = (exc.args[0], True)
        if outcome is None:
            pytest.fail('module returned without calling exit_json or fail_json')
        result, failed = outcome
    if not failed:
        assert not expected, 'module did not run expected commands: %r' % ([c.argv for c in expected],)
    result['_ran'] = ran
    # What each command had set in its own environment besides the locale, in the order they ran (only when one had any).
    extra = [dict((k, v) for k, v in env.items() if k not in ('LC_ALL', 'LANG', 'LANGUAGE')) for env in environs]
    if any(extra):
        result['_environ'] = extra
    if any_order:
        result['_spans'] = spans
    return result, failed
