"""The molecule scenarios (default driver, the lab as the platform): create = lab up, destroy = lab down."""
import os

import pytest

from tests.lab.conftest import BIN, run

pytestmark = pytest.mark.lab


@pytest.mark.parametrize('scenario', ['default', 'fault-slow-link'])
def test_molecule_scenario(scenario, lab_session):  # pylint: disable=unused-argument
    # playbooks/validate.yml is exercised on its own (make demo); here converge runs the info modules only.
    proc = run(['env', 'NETVAL_LAB_RUN_VALIDATE=0', os.path.join(BIN, 'molecule'), 'test', '-s', scenario], timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-15000:]
    assert 'verify' in out and 'Executed: Successful' in out
    assert 'nvlab-' not in run(['ip', 'netns', 'list']).stdout  # destroy took the lab down
