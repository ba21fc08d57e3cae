"""The molecule scenarios (default driver, the lab as the platform): create = lab up, destroy = lab down."""
import os
import re

import pytest

from tests.lab.conftest import BIN, run

pytestmark = pytest.mark.lab


def validate_ran(out):
    """True when converge's 'Run validate.yml' task ran (ok/changed) rather than being skipped."""
    plain = re.sub(r'\x1b\[[0-9;]*m', '', out).splitlines()
    for index, line in enumerate(plain):
        if 'TASK [Run validate.yml on the new nodes]' in line:
            results = [entry for entry in plain[index + 1:] if '[localhost]' in entry]
            return bool(results) and re.search(r'\b(ok|changed): \[localhost\]', results[0]) is not None
    return False


@pytest.mark.parametrize('scenario', ['default', 'fault-slow-link'])
def test_molecule_scenario(scenario, lab_session):  # pylint: disable=unused-argument
    # The full validate.yml runs in tests/lab/test_validate.py; here the default scenario's converge runs it in
    # --check mode (preflight only, seconds) and the fault scenario runs the info modules only.
    env = ['NETVAL_LAB_RUN_VALIDATE=1', 'NETVAL_LAB_VALIDATE_CHECK=1'] if scenario == 'default' else ['NETVAL_LAB_RUN_VALIDATE=0']
    proc = run(['env'] + env + [os.path.join(BIN, 'molecule'), 'test', '-s', scenario], timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-15000:]
    assert 'verify' in out and 'Executed: Successful' in out
    if scenario == 'default':
        assert validate_ran(out), out[-15000:]
    assert 'nvlab-' not in run(['ip', 'netns', 'list']).stdout  # destroy took the lab down
