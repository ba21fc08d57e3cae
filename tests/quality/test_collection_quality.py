"""The collection-level gates: ansible-test sanity, ansible-lint (production
profile), ansible-doc for every module, filter and callback, and a galaxy build
that installs.  Each runs the real tool; a failure shows the tool's own output.
"""
import glob
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
MODULES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py')))
FILTER_FILES = sorted(glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.py')))
CALLBACKS = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'plugins', 'callback', '*.py')))
ACTIONS = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'plugins', 'action', '*.py')))
# The plugin folders whose plugins ansible-doc renders here, and the shared-code folders it has nothing to render for.
# An action plugin is documented by the module of its name (test_every_action_plugin_is_documented_by_its_module).
# The collection has no strategy plugin (peer_queue is gone: it overrode private ansible-core internals): a plugins/strategy
# folder fails test_every_plugin_type_is_checked_by_ansible_doc until its ansible-doc test is back.
DOCUMENTED_PLUGIN_TYPES = ('modules', 'filter', 'callback', 'action')
SHARED_CODE = ('module_utils', 'plugin_utils')


def run(argv, timeout=900, env=None, **kwargs):
    env = dict(os.environ if env is None else env)
    env['PATH'] = BIN + os.pathsep + env.get('PATH', '')
    env['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, '.cache', 'collections')
    env.setdefault('ANSIBLE_CONFIG', os.path.join(ROOT, 'ansible.cfg'))
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False, **kwargs)
    return proc.returncode, proc.stdout


def test_ansible_test_sanity():
    rc, out = run([os.path.join(ROOT, 'scripts', 'ansible_test.sh'), 'sanity', '--venv', '--python', '%d.%d' % sys.version_info[:2]])
    assert rc == 0, out[-20000:]
    # A sanity test ansible-test skipped for a missing program (shellcheck) is not a pass.
    assert 'Required program' not in out, [line for line in out.splitlines() if 'Required program' in line]


def test_ansible_lint_production_profile(tmp_path):
    # An Ansible home of its own: ansible-lint also resolves modules from ~/.ansible/collections, where a stale copy of
    # this collection (another checkout's molecule prerun) hid newer modules.
    rc, out = run([os.path.join(BIN, 'ansible-lint'), '--profile', 'production', '--offline'],
                  env=dict(os.environ, ANSIBLE_HOME=str(tmp_path)))
    assert rc == 0, out[-20000:]


def test_no_blanket_sanity_ignores():
    for path in glob.glob(os.path.join(ROOT, 'tests', 'sanity', 'ignore-*.txt')):
        with open(path, encoding='utf-8') as handle:
            for line in handle:
                line = line.strip()
                if line and not line.startswith('#'):
                    assert ' # ' in line, '%s: every ignore needs a reason: %s' % (path, line)


def test_six_inventory_modules_exist():
    for name in ('rdma_info', 'pcie_info', 'nic_info', 'mlx_fw_info', 'gpu_info', 'host_tuning_info'):
        assert name in MODULES


@pytest.mark.parametrize('module', MODULES)
def test_ansible_doc_renders_module(module):
    rc, out = run([os.path.join(BIN, 'ansible-doc'), 'gpufleet.netval.%s' % module])
    assert rc == 0, out
    assert 'OPTIONS' in out and 'RETURN VALUES' in out and 'EXAMPLES' in out, out
    assert '[WARNING]' not in out and 'ERROR' not in out, out


def test_ansible_doc_lists_every_module():
    rc, out = run([os.path.join(BIN, 'ansible-doc'), '-l', 'gpufleet.netval'])
    assert rc == 0, out
    for module in MODULES:
        assert 'gpufleet.netval.%s' % module in out


def test_every_action_plugin_is_documented_by_its_module():
    assert ACTIONS, 'no action plugins found'
    assert sorted(set(ACTIONS) - set(MODULES)) == [], 'an action plugin without a module of its name has no documentation'


@pytest.mark.parametrize('path', FILTER_FILES, ids=[os.path.basename(p) for p in FILTER_FILES])
def test_ansible_doc_renders_filter(path):
    name = os.path.splitext(os.path.basename(path))[0]
    rc, out = run([os.path.join(BIN, 'ansible-doc'), '-t', 'filter', 'gpufleet.netval.%s' % name])
    assert rc == 0 and 'ERROR' not in out, out


def test_every_plugin_type_is_checked_by_ansible_doc():
    folders = sorted(name for name in os.listdir(os.path.join(ROOT, 'plugins')) if not name.startswith(('.', '_')))
    unchecked = [name for name in folders if name not in DOCUMENTED_PLUGIN_TYPES + SHARED_CODE]
    assert unchecked == [], 'plugins/%s: add an ansible-doc test for that plugin type' % ', plugins/'.join(unchecked)
    assert CALLBACKS, 'no callback plugins found'


@pytest.mark.parametrize('callback', CALLBACKS)
def test_ansible_doc_renders_callback(callback):
    rc, out = run([os.path.join(BIN, 'ansible-doc'), '-t', 'callback', 'gpufleet.netval.%s' % callback])
    assert rc == 0, out
    assert 'OPTIONS' in out, out
    assert '[WARNING]' not in out and 'ERROR' not in out, out


def test_ansible_doc_lists_every_callback():
    rc, out = run([os.path.join(BIN, 'ansible-doc'), '-t', 'callback', '-l', 'gpufleet.netval'])
    assert rc == 0, out
    for callback in CALLBACKS:
        assert 'gpufleet.netval.%s' % callback in out, out


def test_galaxy_build_and_install(tmp_path):
    rc, out = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path', str(tmp_path), '.'])
    assert rc == 0, out
    tarballs = glob.glob(str(tmp_path / 'gpufleet-netval-*.tar.gz'))
    assert len(tarballs) == 1, out
    dest = tmp_path / 'installed'
    rc, out = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--force', '-p', str(dest), tarballs[0]])
    assert rc == 0, out
    installed = dest / 'ansible_collections' / 'gpufleet' / 'netval'
    assert (installed / 'MANIFEST.json').exists()
    assert (installed / 'plugins' / 'modules' / 'host_tuning_info.py').exists()
    assert (installed / 'plugins' / 'callback' / 'task_timeline.py').exists()
    assert not (installed / 'lab').exists() and not (installed / '.venv').exists()


def test_requires_ansible_states_exactly_the_ansible_core_releases_ci_tests():
    """meta/runtime.yml against the matrix of `make test` (Makefile ANSIBLE_MATRIX) and the main venv's pin."""
    import re
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
    with open(os.path.join(ROOT, 'Makefile'), encoding='utf-8') as handle:
        matrix = re.search(r'^ANSIBLE_MATRIX := (.*)$', handle.read(), re.MULTILINE).group(1).split()
    with open(os.path.join(ROOT, 'requirements-dev.txt'), encoding='utf-8') as handle:
        main = re.search(r'^ansible-core==(\S+)$', handle.read(), re.MULTILINE).group(1)
    tested = sorted([Version(entry.split(':')[0]) for entry in matrix] + [Version(main)])
    with open(os.path.join(ROOT, 'meta', 'runtime.yml'), encoding='utf-8') as handle:
        spec = SpecifierSet(yaml.safe_load(handle)['requires_ansible'])
    assert all(version in spec for version in tested), (spec, tested)
    oldest, newest = tested[0], tested[-1]
    # Nothing older than the oldest tested minor release, nothing past the newest tested minor release.
    assert Version('%d.%d.0' % (oldest.major, oldest.minor)) in spec and Version('%d.%d.99' % (oldest.major, oldest.minor - 1)) not in spec
    assert Version('%d.%d.99' % (newest.major, newest.minor)) in spec and Version('%d.%d.0' % (newest.major, newest.minor + 1)) not in spec
    # Every minor release between them is tested.
    assert sorted(set((v.major, v.minor) for v in tested)) == [(2, minor) for minor in range(oldest.minor, newest.minor + 1)]
