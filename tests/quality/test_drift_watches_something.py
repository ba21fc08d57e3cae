"""playbooks/drift.yml run for real (ansible-playbook, a local connection, no lab): a run whose group has no host within its
limit fails with a message that names the group and writes netval_drift_hosts 0; the default group is the one the documented
schedule watches (accepted_nodes)."""
import os
import subprocess

from tests.unit.fixtures import ROOT

BIN = os.path.join(ROOT, '.venv', 'bin')
INVENTORY = """all:
  children:
    new_nodes:
      hosts:
        node07: {ansible_connection: local, ansible_python_interpreter: %s}
    accepted_nodes:
      hosts: {}
"""


def run_drift(tmp_path, *extra):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(INVENTORY % os.path.join(BIN, 'python'))
    textfiles = tmp_path / 'textfile'
    textfiles.mkdir()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.cache', 'collections'), ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    proc = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'drift.yml'),
                           '-l', 'node07', '-e', 'report_root=%s' % (tmp_path / 'reports'), '-e', 'netval_textfile_dir=%s' % textfiles]
                          + list(extra), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, check=False)
    prom = textfiles / 'netval_drift.prom'
    return proc.returncode, proc.stdout, prom.read_text() if prom.exists() else None


def test_a_drift_run_that_watches_no_node_fails_and_says_so_in_its_textfile(tmp_path):
    rc, out, prom = run_drift(tmp_path)
    assert rc != 0, out
    assert 'drift.yml matched no node: the group accepted_nodes (netval_nodes) has no host within this run\'s limit' in out, out
    assert prom is not None and 'netval_drift_hosts 0\n' in prom, prom
    # The capture plays never ran: nothing was read from the node.
    assert 'Capture and compare' not in out and 'Read the current state' not in out
