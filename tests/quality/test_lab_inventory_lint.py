"""ansible-lint (production) passes on a copy of the tree right after the lab wrote its inventory (as after `make lab-up`)."""
import os
import shutil
import subprocess
import sys

from lab.netval_lab import __main__ as lab_cli
from lab.netval_lab import inventory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def test_ansible_lint_passes_with_a_generated_lab_inventory_in_the_tree(tmp_path):
    lint = os.path.join(BIN, 'ansible-lint')
    tree = tmp_path / 'tree'
    files = subprocess.run(['git', '-C', ROOT, 'ls-files', '-co', '--exclude-standard', '-z'], check=True,
                           capture_output=True).stdout.decode().split('\0')
    for rel in filter(None, files):
        source = os.path.join(ROOT, rel)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(str(tree / rel)), exist_ok=True)
            shutil.copy2(source, str(tree / rel))
    subprocess.run(['git', 'init', '-q', str(tree)], check=True)
    lab = lab_cli.plan('healthy-400g', {'path': 'lab/profiles/healthy-400g.yml', 'tier': '400g'}, 2, 1)
    inventory.write(lab, str(tree / 'inventories' / 'lab'))
    # ANSIBLE_HOME: ansible-lint also resolves modules from ~/.ansible/collections, where a stale copy may hide new ones.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.cache', 'collections'), ANSIBLE_HOME=str(tmp_path / 'home'),
               ANSIBLE_CONFIG=str(tree / 'ansible.cfg'), PATH='%s:%s' % (BIN, os.environ.get('PATH', '')))
    proc = subprocess.run([lint, '--profile', 'production', '--offline'], cwd=str(tree), env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
