"""The one failure shape: every class a module can emit has a side and a hint, and the sides mean what the verdict needs."""
import ast
import glob
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import failures
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import iperf3, perftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def emitted_classes():
    """Every string literal passed as error_class=... or to failure(...) / fail(...) / fail_classified(...) in the modules and the runner."""
    found = set()
    paths = glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py'))
    paths += [os.path.join(ROOT, 'plugins', 'module_utils', name) for name in ('runner.py', 'validate.py')]
    for path in paths:
        with open(path) as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == 'error_class' and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                    found.add(keyword.value.value)
            name = getattr(node.func, 'id', getattr(node.func, 'attr', None))
            if name in ('failure', 'fail', 'fail_classified'):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.islower() and ' ' not in arg.value:
                        found.add(arg.value)
    return found


def test_every_emitted_class_is_in_the_table():
    emitted = emitted_classes() | set(perftest.ERROR_HINTS)
    emitted |= set(iperf3.classify_iperf3_error(text) for text in ('Connection refused', 'No route to host', 'the server is busy',
                                                                   'timed out', 'something else'))
    assert {'tool_missing', 'timeout', 'parse_error', 'port_in_use', 'invalid_options', 'diag_failed'} <= emitted
    assert emitted - set(failures.ERROR_CLASSES) == set()


@pytest.mark.parametrize('error_class', ['tool_missing', 'timeout', 'port_in_use', 'connect_failed', 'connect_refused', 'parse_error',
                                         'invalid_options', 'hostengine_unreachable', 'server_busy'])
def test_our_own_failures_are_never_the_providers(error_class):
    assert failures.failure(error_class)['error_side'] == failures.SIDE_OURS


def test_the_shape():
    assert failures.SUCCESS == {'error_class': None, 'error_hint': None, 'error_side': None}
    shaped = failures.failure('no_rdma_device', 'custom hint')
    assert shaped == {'error_class': 'no_rdma_device', 'error_hint': 'custom hint', 'error_side': 'host'}
    for side, hint in failures.ERROR_CLASSES.values():
        assert side in (failures.SIDE_OURS, failures.SIDE_HOST, failures.SIDE_UNKNOWN) and hint
