"""The execution environment (ee/execution-environment.yml, ansible-builder 3).

`ansible-builder create` runs for real on a copy of ee/ next to a freshly built
collection tarball, as `make ee-context` lays them out; the tests read the
build context it writes: the Containerfile installs the pinned ansible-core
and ansible-runner, the collection (the tarball of this checkout, at galaxy.yml's
version) and the controller-side Python libraries, pinned as requirements-dev.txt
pins them.  No image is built (that needs a container runtime and the network).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
EE_DIR = os.path.join(ROOT, 'ee')
# What validation_report (matplotlib) and fabric_subnet (netaddr) import on the controller, and jmespath for json_query.
CONTROLLER_LIBRARIES = ('matplotlib', 'netaddr', 'jmespath')


def run(argv, cwd=ROOT, timeout=600):
    env = dict(os.environ)
    env['PATH'] = BIN + os.pathsep + env.get('PATH', '')
    env['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, '.cache', 'collections')
    env.setdefault('ANSIBLE_CONFIG', os.path.join(ROOT, 'ansible.cfg'))
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout


def pins(path):
    """{lower-case name: version} of the `name==version` lines of a pip requirements file (and the files it names with
    `-r`); other lines are refused."""
    found = {}
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            if line.startswith('-r '):
                found.update(pins(os.path.join(os.path.dirname(path), line[3:].strip())))
                continue
            match = re.fullmatch(r'([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)', line)
            assert match, '%s: not pinned with ==: %r' % (path, line)
            found[match.group(1).lower().replace('_', '-')] = match.group(2)
    return found


def load_yaml(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


DEV_PINS = pins(os.path.join(ROOT, 'requirements-dev.txt'))
GALAXY = load_yaml(os.path.join(ROOT, 'galaxy.yml'))
DEFINITION = load_yaml(os.path.join(EE_DIR, 'execution-environment.yml'))


@pytest.fixture(scope='module')
def context(tmp_path_factory):
    """The build context `ansible-builder create` writes from a copy of ee/ and a fresh tarball beside it."""
    work = tmp_path_factory.mktemp('ee')
    shutil.copytree(EE_DIR, str(work / 'ee'))
    collection_dir = work / 'build' / 'ee' / 'collection'
    collection_dir.mkdir(parents=True)
    rc, out = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force',
                   '--output-path', str(collection_dir), ROOT])
    assert rc == 0, out
    out_dir = work / 'context'
    rc, out = run([os.path.join(BIN, 'ansible-builder'), 'create', '-f', str(work / 'ee' / 'execution-environment.yml'),
                   '-c', str(out_dir), '--output-filename', 'Containerfile', '-v3'], cwd=str(work))
    assert rc == 0, out
    # A missing additional_build_files source is only a warning to ansible-builder: make it an error here.
    assert 'No matches for' not in out and 'does not exist' not in out, out
    return out_dir


def containerfile(context):
    path = context / 'Containerfile'
    assert path.is_file(), sorted(str(p) for p in context.rglob('*'))
    return path.read_text(encoding='utf-8')


def build_arg(text, name):
    match = re.search(r'^ARG %s="([^"]*)"$' % re.escape(name), text, re.MULTILINE)
    assert match, 'no ARG %s in the Containerfile:\n%s' % (name, text)
    return match.group(1)


def test_definition_is_schema_version_3():
    assert DEFINITION['version'] == 3
    assert DEFINITION['images']['base_image']['name']


def test_ansible_builder_is_the_pinned_one():
    rc, out = run([os.path.join(BIN, 'ansible-builder'), '--version'])
    assert rc == 0, out
    assert out.strip() == DEV_PINS['ansible-builder'], out


def test_containerfile_installs_ansible_core_as_pinned_for_development(context):
    text = containerfile(context)
    refs = build_arg(text, 'ANSIBLE_INSTALL_REFS').split()
    assert 'ansible-core==%s' % DEV_PINS['ansible-core'] in refs, refs
    assert any(ref.startswith('ansible-runner==') for ref in refs), refs
    assert 'RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS' in text
    assert build_arg(text, 'EE_BASE_IMAGE') == DEFINITION['images']['base_image']['name']
    assert 'RUN /output/scripts/check_ansible $PYCMD' in text


def test_containerfile_installs_the_collection_from_this_checkout(context):
    text = containerfile(context)
    assert re.search(r'^RUN .*ansible-galaxy collection install .*-r requirements\.yml', text, re.MULTILINE), text
    assert 'COPY _build /build' in text and 'WORKDIR /build' in text, text
    requirements = load_yaml(str(context / '_build' / 'requirements.yml'))
    entries = requirements['collections']
    assert len(entries) == 1, entries
    entry = entries[0]
    assert entry['type'] == 'file', entry
    expected = 'gpufleet-netval-%s.tar.gz' % GALAXY['version']
    # The galaxy stage copies _build to /build and installs from there.
    assert entry['name'] == '/build/collection/%s' % expected, 'ee/requirements.yml must name %s' % expected
    tarball = context / '_build' / entry['name'][len('/build/'):]
    assert tarball.is_file(), sorted(str(p) for p in (context / '_build').rglob('*'))
    with tarfile.open(str(tarball)) as archive:
        manifest = json.load(archive.extractfile('MANIFEST.json'))
        names = archive.getnames()
    info = manifest['collection_info']
    assert (info['namespace'], info['name'], info['version']) == (GALAXY['namespace'], GALAXY['name'], GALAXY['version'])
    assert 'plugins/modules/peer_lease.py' in names
    assert 'playbooks/validate.yml' in names
    # The EE definition is build tooling, not collection content (galaxy.yml build_ignore).
    assert not [name for name in names if name == 'ee' or name.startswith('ee/')]


def test_the_collection_declares_its_controller_requirements_the_galaxy_way():
    declared = load_yaml(os.path.join(ROOT, 'meta', 'execution-environment.yml'))
    assert declared['version'] == 1
    assert declared['dependencies'] == {'python': 'requirements.txt', 'system': 'bindep.txt'}
    collection_pins = pins(os.path.join(ROOT, 'requirements.txt'))
    assert set(CONTROLLER_LIBRARIES) - {'jmespath'} <= set(collection_pins), collection_pins
    for name, version in collection_pins.items():
        assert version == DEV_PINS[name], '%s: requirements.txt pins %s, requirements-dev.txt %s' % (name, version, DEV_PINS[name])
    assert 'jmespath' in pins(os.path.join(EE_DIR, 'requirements.txt'))


def test_ansible_builder_finds_them_in_the_installed_collection(tmp_path):
    """What an EE that installs this collection gets: ansible-builder's introspection of the installed tarball."""
    rc, out = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path', str(tmp_path), ROOT])
    assert rc == 0, out
    (tarball,) = glob.glob(str(tmp_path / '*.tar.gz'))
    installed = tmp_path / 'collections'
    rc, out = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--offline', '--force', '-p', str(installed), tarball])
    assert rc == 0, out
    rc, out = run([os.path.join(BIN, 'ansible-builder'), 'introspect', str(installed)])
    assert rc == 0, out
    found = yaml.safe_load(out[out.index('python:'):]) if 'python:' in out else {}
    python = ' '.join(found.get('python') or [])
    system = ' '.join(found.get('system') or [])
    assert 'matplotlib==%s' % DEV_PINS['matplotlib'] in python and 'netaddr==%s' % DEV_PINS['netaddr'] in python, out
    assert 'openssh-clients [platform:rpm]' in system, out


def test_containerfile_installs_the_ee_s_own_python_libraries(context):
    text = containerfile(context)
    assert 'COPY _build/requirements.txt requirements.txt' in text, text
    assert re.search(r'introspect\.py introspect --user-pip=requirements\.txt', text), text
    assert 'RUN /output/scripts/assemble' in text and 'RUN /output/scripts/install-from-bindep' in text, text
    ee_pins = pins(str(context / '_build' / 'requirements.txt'))
    assert 'jmespath' in ee_pins, ee_pins


def test_python_interpreter_is_the_one_the_ee_installs(context):
    text = containerfile(context)
    interpreter = DEFINITION['dependencies']['python_interpreter']
    assert build_arg(text, 'PYCMD') == interpreter['python_path']
    assert build_arg(text, 'PYPKG') == interpreter['package_system']
    assert glob.glob(str(context / '_build' / 'scripts' / 'introspect.py'))
