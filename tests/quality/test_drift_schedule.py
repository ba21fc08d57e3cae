"""The drift_schedule role, rendered for real (ansible-playbook -c local into a temporary root, never /etc).

The service and timer must pass ``systemd-analyze verify``; ExecStart must be an argument vector with no shell,
flock --nonblock on the lock around ansible-playbook <project>/playbooks/drift.yml; the cron entry must run the very
same words; both are run (with a stand-in ansible-playbook that records what it was given) with and without the lock
held.  The molecule scenario (molecule/drift_schedule) is run too: it needs neither root nor the lab.
"""
import json
import os
import re
import shlex
import stat
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze'
UNIT = 'gpufleet-netval-drift'
SHELLS = {'sh', 'bash', 'dash', 'zsh', 'ksh', 'csh', 'tcsh', 'fish', 'busybox'}
# What the extra vars must survive: systemd's specifiers and variables, cron's %, both quotes, a backslash.
NOTE = '100% $HOME ${USER} "double" \'single\' back\\slash %n'

# Records the argument vector, folder and ANSIBLE_CONFIG it was started with, one JSON line a call.
STANDIN = '''#!%(python)s
import json, os, sys
with open(%(calls)r, 'a') as handle:
    handle.write(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'config': os.environ.get('ANSIBLE_CONFIG'),
                             'extra': os.environ.get('DRIFT_TEST_EXTRA')}) + '\\n')
'''

PLAY = '''- name: Apply the drift_schedule role
  hosts: localhost
  connection: local
  gather_facts: false
  environment:
    PATH: "%(path)s"
  roles:
    - role: gpufleet.netval.drift_schedule
'''


def env():
    out = dict(os.environ)
    out['PATH'] = BIN + os.pathsep + out.get('PATH', '')
    out['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, '.cache', 'collections')
    out['ANSIBLE_CONFIG'] = os.path.join(ROOT, 'ansible.cfg')
    out['ANSIBLE_NOCOLOR'] = '1'
    return out


class Root(object):
    """A temporary root: a stand-in project and ansible-playbook, a stand-in crontab, unit and cron folders."""

    def __init__(self, base):
        self.base = str(base)
        self.project = os.path.join(self.base, 'project')
        self.units = os.path.join(self.base, 'etc', 'systemd', 'system')
        self.cron_file = os.path.join(self.base, 'etc', 'cron.d', 'gpufleet-netval-drift')
        self.lock = os.path.join(self.base, 'run', 'lock', 'drift.lock')
        self.calls = os.path.join(self.base, 'calls.jsonl')
        self.bin = os.path.join(self.base, 'bin')
        self.ansible_playbook = os.path.join(self.bin, 'ansible-playbook')
        for folder in (os.path.join(self.project, 'playbooks'), self.units, os.path.dirname(self.cron_file), self.bin):
            os.makedirs(folder)
        for name, text in (('playbooks/drift.yml', '- hosts: all\n'), ('inventory.yml', 'all: {}\n'), ('ansible.cfg', '[defaults]\n')):
            with open(os.path.join(self.project, name), 'w', encoding='utf-8') as handle:
                handle.write(text)
        self._script(self.ansible_playbook, STANDIN % {'python': sys.executable, 'calls': self.calls})
        # ansible.builtin.cron insists crontab exists; with a cron_file it must never call it.
        self._script(os.path.join(self.bin, 'crontab'), '#!/bin/sh\necho "stand-in crontab called: $*" >&2\nexit 1\n')

    @staticmethod
    def _script(path, text):
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(text)
        os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)

    def settings(self, **extra):
        out = {
            'ansible_python_interpreter': sys.executable,
            'drift_schedule_project_dir': self.project,
            'drift_schedule_inventory': ['inventory.yml'],
            'drift_schedule_limit': 'accepted:!quarantine',
            'drift_schedule_extra_vars': {'report_root': os.path.join(self.base, 'reports'), 'note': NOTE},
            'drift_schedule_extra_args': ['--forks=5', '-v'],
            'drift_schedule_environment': {'DRIFT_TEST_EXTRA': NOTE},
            'drift_schedule_ansible_playbook': self.ansible_playbook,
            'drift_schedule_unit_dir': self.units,
            'drift_schedule_cron_file': self.cron_file,
            'drift_schedule_lock_file': self.lock,
        }
        out.update(extra)
        return out

    def apply(self, **extra):
        """Run the role with these settings; returns (rc, output, changed count)."""
        playbook = os.path.join(self.base, 'play.yml')
        with open(playbook, 'w', encoding='utf-8') as handle:
            handle.write(PLAY % {'path': self.bin + os.pathsep + os.environ.get('PATH', '')})
        variables = os.path.join(self.base, 'vars.json')
        with open(variables, 'w', encoding='utf-8') as handle:
            json.dump(self.settings(**extra), handle)
        proc = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', 'localhost,', playbook, '-e', '@' + variables],
                              cwd=self.base, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=600, check=False)
        recap = re.search(r'localhost\s+: ok=\d+\s+changed=(\d+)', proc.stdout)
        return proc.returncode, proc.stdout, int(recap.group(1)) if recap else None

    def recorded(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls, encoding='utf-8') as handle:
            calls = [json.loads(line) for line in handle]
        os.unlink(self.calls)
        return calls

    def unit(self, suffix):
        return os.path.join(self.units, '%s.%s' % (UNIT, suffix))

    def read(self, path):
        with open(path, encoding='utf-8') as handle:
            return handle.read()


def unit_settings(text):
    """A unit file's settings as (key, value) pairs, comments and section headers left out."""
    pairs = []
    for line in text.splitlines():
        if line and not line.startswith(('#', ';', '[')):
            key, value = line.split('=', 1) if '=' in line else (line, '')
            pairs.append((key, value))
    return pairs


def systemd_unescape(word, command):
    """One word after systemd's quoting: %% is %, any other % starts a specifier (systemd would replace it); in a
    command line $$ is $, any other $ starts a variable (systemd would expand it).  Either unescaped fails."""
    out, index = [], 0
    while index < len(word):
        char = word[index]
        if char == '%' or (command and char == '$'):
            assert word[index + 1:index + 2] == char, 'systemd would expand %r in %r' % (word[index:index + 2], word)
            index += 1
        out.append(char)
        index += 1
    return ''.join(out)


def systemd_words(value, command=True):
    """Split a systemd command line (or a quoted setting) as systemd does for what the role writes: double-quoted
    words with \\\\ and \\" escapes (shlex reads those alike), then specifiers and variables."""
    return [systemd_unescape(word, command) for word in shlex.split(value, posix=True)]


def cron_entry(text):
    """The role's entry in a cron.d file: (five time fields, user, command with cron's \\% undone)."""
    lines = text.splitlines()
    entry = lines[lines.index('#Ansible: gpufleet.netval drift check') + 1]
    fields = entry.split(' ', 6)
    assert not re.search(r'(?<!\\)%', fields[6]), 'an unescaped %% would end the command for cron: ' + fields[6]
    return fields[:5], fields[5], fields[6].replace('\\%', '%')


def complaints(proc, root):
    return [line for line in (proc.stdout + proc.stderr).splitlines() if UNIT in line or root.base in line]


@pytest.fixture(scope='module')
def systemd_root(tmp_path_factory):
    root = Root(tmp_path_factory.mktemp('systemd'))
    rc, out = root.apply(drift_schedule_method='systemd')[:2]
    assert rc == 0, out[-8000:]
    root.output = out
    return root


@pytest.fixture(scope='module')
def cron_root(tmp_path_factory):
    root = Root(tmp_path_factory.mktemp('cron'))
    rc, out = root.apply(drift_schedule_method='cron')[:2]
    assert rc == 0, out[-8000:]
    return root


def exec_start(root):
    settings = unit_settings(root.read(root.unit('service')))
    lines = [value for key, value in settings if key == 'ExecStart']
    assert len(lines) == 1, settings
    return systemd_words(lines[0])


def expected_playbook_argv(root):
    return [
        '--inventory=%s/inventory.yml' % root.project,
        '--limit=accepted:!quarantine',
        '--extra-vars=' + json.dumps({'note': NOTE, 'report_root': os.path.join(root.base, 'reports')}, sort_keys=True),
        '--forks=5', '-v',
        '%s/playbooks/drift.yml' % root.project,
    ]


@pytest.mark.skipif(not os.access(SYSTEMD_ANALYZE, os.X_OK), reason='systemd-analyze is not installed')
def test_service_and_timer_pass_systemd_analyze_verify(systemd_root):
    proc = subprocess.run([SYSTEMD_ANALYZE, 'verify', systemd_root.unit('service'), systemd_root.unit('timer')],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    # verify exits 0 on an unknown key or a value it cannot parse and only says so: any word about our units fails.
    assert proc.returncode == 0 and not complaints(proc, systemd_root), proc.stdout + proc.stderr


@pytest.mark.skipif(not os.access(SYSTEMD_ANALYZE, os.X_OK), reason='systemd-analyze is not installed')
def test_systemd_analyze_verify_catches_a_broken_unit(systemd_root, tmp_path):
    # The check above can fail: the same service with a misspelt key and a program that does not exist.
    broken = tmp_path / (UNIT + '.service')
    text = systemd_root.read(systemd_root.unit('service'))
    broken.write_text(text.replace('Nice=', 'Nicety=').replace(systemd_root.ansible_playbook, systemd_root.ansible_playbook + '-gone'))
    (tmp_path / (UNIT + '.timer')).write_text(systemd_root.read(systemd_root.unit('timer')))
    proc = subprocess.run([SYSTEMD_ANALYZE, 'verify', str(broken), str(tmp_path / (UNIT + '.timer'))],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    out = proc.stdout + proc.stderr
    assert "Unknown key 'Nicety'" in out or 'Unknown key name' in out, out
    broken.write_text(text.replace('ExecStart="/usr/bin/flock"', 'ExecStart="/usr/bin/flock-gone"'))
    proc = subprocess.run([SYSTEMD_ANALYZE, 'verify', str(broken), str(tmp_path / (UNIT + '.timer'))],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode != 0, proc.stdout + proc.stderr


def test_service_settings(systemd_root):
    settings = dict(unit_settings(systemd_root.read(systemd_root.unit('service'))))
    assert settings['Type'] == 'oneshot'
    assert settings['User'] == 'root'
    assert settings['WorkingDirectory'] == systemd_root.project
    assert settings['Nice'] == '10'
    assert settings['IOSchedulingClass'] == 'best-effort' and settings['IOSchedulingPriority'] == '7'
    assert settings['TimeoutStartSec'] == '2700'
    assert settings['SuccessExitStatus'] == '75'
    environment = [systemd_words(value, command=False)[0] for key, value in unit_settings(systemd_root.read(systemd_root.unit('service')))
                   if key == 'Environment']
    assert environment == ['ANSIBLE_CONFIG=%s/ansible.cfg' % systemd_root.project, 'DRIFT_TEST_EXTRA=' + NOTE]


def test_timer_settings(systemd_root):
    settings = dict(unit_settings(systemd_root.read(systemd_root.unit('timer'))))
    assert settings['OnCalendar'] == 'hourly'
    assert settings['RandomizedDelaySec'] == '600'
    assert settings['Persistent'] == 'true'
    assert settings['Unit'] == UNIT + '.service'
    assert settings['WantedBy'] == 'timers.target'


def test_exec_start_is_flock_around_the_drift_playbook_with_no_shell(systemd_root):
    argv = exec_start(systemd_root)
    assert argv[:5] == ['/usr/bin/flock', '--nonblock', '--conflict-exit-code', '75', systemd_root.lock]
    assert argv[5] == systemd_root.ansible_playbook
    assert argv[6:] == expected_playbook_argv(systemd_root)
    assert not {os.path.basename(word) for word in argv} & SHELLS, argv
    assert '-c' not in argv
    # after ansible-playbook, every word is an option but the last: no second playbook
    assert [word for word in argv[6:] if not word.startswith('-')] == ['%s/playbooks/drift.yml' % systemd_root.project]


def test_the_units_only_went_to_the_temporary_root(systemd_root):
    assert sorted(os.listdir(systemd_root.units)) == [UNIT + '.service', UNIT + '.timer']
    assert not os.path.exists(systemd_root.cron_file)
    # daemon-reload and enabling the timer are skipped for a unit folder that is not the system's (this machine
    # may have no systemd at all: a call would have failed the run).
    out = systemd_root.output
    task = out.index('Enable and start the timer')
    assert out[task:].split('TASK [', 1)[0].count('skipping: [localhost]') == 1, out[task:task + 400]


def run_exec_start(root, argv):
    settings = unit_settings(root.read(root.unit('service')))
    environment = dict(os.environ)
    for key, value in settings:
        if key == 'Environment':
            name, content = systemd_words(value, command=False)[0].split('=', 1)
            environment[name] = content
    return subprocess.run(argv, cwd=dict(settings)['WorkingDirectory'], env=environment, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)


def test_exec_start_runs_the_playbook_with_every_word_intact(systemd_root):
    systemd_root.recorded()
    proc = run_exec_start(systemd_root, exec_start(systemd_root))
    assert proc.returncode == 0, proc.stdout
    calls = systemd_root.recorded()
    assert len(calls) == 1
    assert calls[0]['argv'] == expected_playbook_argv(systemd_root)
    assert json.loads(calls[0]['argv'][2].split('=', 1)[1])['note'] == NOTE
    assert calls[0]['cwd'] == systemd_root.project
    assert calls[0]['config'] == '%s/ansible.cfg' % systemd_root.project
    assert calls[0]['extra'] == NOTE


def test_exec_start_while_another_run_holds_the_lock_exits_75_without_running(systemd_root):
    systemd_root.recorded()
    proc = run_exec_start(systemd_root, ['/usr/bin/flock', systemd_root.lock] + exec_start(systemd_root))
    assert proc.returncode == 75, proc.stdout
    assert systemd_root.recorded() == []


def test_cron_entry_runs_the_same_flock_command(cron_root):
    times, user, command = cron_entry(cron_root.read(cron_root.cron_file))
    assert re.match(r'^[0-9]+$', times[0]) and 0 <= int(times[0]) < 60
    assert times[1:] == ['*', '*', '*', '*'] and user == 'root'
    words = shlex.split(command)
    flocked = ['/usr/bin/flock', '--nonblock', '--conflict-exit-code', '75', cron_root.lock, cron_root.ansible_playbook]
    assert words[-len(flocked) - 6:] == flocked + expected_playbook_argv(cron_root)
    assert words[:4] == ['/usr/bin/env', '--chdir=' + cron_root.project, 'ANSIBLE_CONFIG=%s/ansible.cfg' % cron_root.project,
                         'DRIFT_TEST_EXTRA=' + NOTE]
    assert words[4:-len(flocked) - 6] == ['/usr/bin/nice', '-n', '10', '/usr/bin/ionice', '-c', '2', '-n', '7',
                                          '/usr/bin/timeout', '--kill-after=60', '2700']
    assert os.listdir(cron_root.units) == []


def test_cron_and_systemd_run_the_same_words(systemd_root, cron_root):
    command = cron_entry(cron_root.read(cron_root.cron_file))[2]
    as_systemd = [word.replace(systemd_root.base, '<root>') for word in exec_start(systemd_root)]
    as_cron = [word.replace(cron_root.base, '<root>') for word in shlex.split(command)]
    assert as_cron[-len(as_systemd):] == as_systemd


def test_cron_command_runs_through_sh_with_every_word_intact(cron_root):
    command = cron_entry(cron_root.read(cron_root.cron_file))[2]
    cron_root.recorded()
    proc = subprocess.run(['/bin/sh', '-c', command], cwd='/', stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    calls = cron_root.recorded()
    assert len(calls) == 1
    assert calls[0]['argv'] == expected_playbook_argv(cron_root)
    assert calls[0]['cwd'] == cron_root.project
    assert calls[0]['config'] == '%s/ansible.cfg' % cron_root.project
    assert calls[0]['extra'] == NOTE
    proc = subprocess.run(['/usr/bin/flock', cron_root.lock, '/bin/sh', '-c', command], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 75, proc.stdout
    assert cron_root.recorded() == []


def test_switching_method_idempotence_and_absent(tmp_path):
    root = Root(tmp_path)
    rc, out, changed = root.apply(drift_schedule_method='systemd')
    assert rc == 0 and changed and os.path.exists(root.unit('timer')), out[-8000:]
    rc, out, changed = root.apply(drift_schedule_method='systemd')
    assert rc == 0 and changed == 0, out[-8000:]
    rc, out, changed = root.apply(drift_schedule_method='cron')
    assert rc == 0 and changed, out[-8000:]
    assert os.listdir(root.units) == [] and os.path.exists(root.cron_file)
    rc, out, changed = root.apply(drift_schedule_method='cron')
    assert rc == 0 and changed == 0, out[-8000:]
    rc, out, changed = root.apply(drift_schedule_state='absent')
    assert rc == 0 and changed, out[-8000:]
    assert os.listdir(root.units) == [] and not os.path.exists(root.cron_file)
    rc, out, changed = root.apply(drift_schedule_state='absent')
    assert rc == 0 and changed == 0, out[-8000:]


@pytest.mark.parametrize('settings, says', [
    ({'drift_schedule_extra_args': ['--forks=5', 'playbooks/validate.yml']}, 'extra args options only'),
    ({'drift_schedule_extra_args': ['--', 'playbooks/validate.yml']}, 'extra args options only'),
    ({'drift_schedule_inventory': []}, 'an inventory is required'),
    ({'drift_schedule_limit': 'nodes\nrm -rf /'}, 'no control characters'),
    ({'drift_schedule_cron_file': '<root>/etc/cron.d/drift.cron'}, "the cron file's name"),
    ({'drift_schedule_project_dir': 'relative/project'}, 'paths must be absolute'),
], ids=['second-playbook', 'double-dash', 'no-inventory', 'newline', 'cron-file-name', 'relative-project'])
def test_refuses_settings_that_could_run_something_else(tmp_path, settings, says):
    root = Root(tmp_path)
    settings = {key: value.replace('<root>', root.base) if isinstance(value, str) else value for key, value in settings.items()}
    rc, out = root.apply(**settings)[:2]
    assert rc != 0 and says in out, out[-8000:]
    assert os.listdir(root.units) == [] and not os.path.exists(root.cron_file)


def test_refuses_a_project_without_playbooks_drift_yml(tmp_path):
    root = Root(tmp_path)
    os.unlink(os.path.join(root.project, 'playbooks', 'drift.yml'))
    rc, out = root.apply()[:2]
    assert rc != 0 and 'missing on localhost: %s/playbooks/drift.yml' % root.project in out, out[-8000:]
    assert os.listdir(root.units) == []


def test_manage_service_defaults_to_system_unit_folders_only(tmp_path):
    # The role's own defaults and vars, evaluated for a few unit folders (nothing is installed).
    role = os.path.join(ROOT, 'roles', 'drift_schedule')
    playbook = tmp_path / 'defaults.yml'
    playbook.write_text('''- name: Evaluate drift_schedule_manage_service
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Load the role's defaults and vars
      ansible.builtin.include_vars: {file: "%s/{{ item }}/main.yml"}
      loop: [defaults, vars]
    - name: Show it
      ansible.builtin.debug:
        msg: "MANAGE {{ drift_schedule_unit_dir }} {{ drift_schedule_manage_service | bool }}"
''' % role)
    for folder, manage in (('/etc/systemd/system', True), ('/etc/systemd/system/', True), ('/run/systemd/system', True),
                           (str(tmp_path / 'etc/systemd/system'), False), ('/etc/systemd/system-generators', False)):
        proc = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', 'localhost,', str(playbook),
                               '-e', 'ansible_python_interpreter=' + sys.executable, '-e', 'drift_schedule_unit_dir=' + folder],
                              cwd=str(tmp_path), env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout
        assert 'MANAGE %s %s' % (folder, manage) in proc.stdout, proc.stdout


def test_every_variable_is_declared_with_a_default_and_a_description():
    role = os.path.join(ROOT, 'roles', 'drift_schedule')
    with open(os.path.join(role, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(role, 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    assert sorted(defaults) == sorted(options)
    assert all(name.startswith('drift_schedule_') and spec.get('description') for name, spec in options.items())
    used = set()
    for entry in os.walk(role):
        folder, files = entry[0], entry[2]
        for name in files:
            with open(os.path.join(folder, name), encoding='utf-8') as handle:
                used.update(re.findall(r'(?<![_a-z])drift_schedule_[a-z_]+', handle.read()))
    assert used - set(options) == set(), 'used but not declared'


def test_molecule_scenario_drift_schedule():
    # The scenario needs no root and no lab; tests/lab/test_molecule.py runs the lab scenarios only.
    proc = subprocess.run([os.path.join(BIN, 'molecule'), 'test', '-s', 'drift_schedule'], cwd=ROOT, env=env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=1200, check=False)
    assert proc.returncode == 0, proc.stdout[-15000:]
    assert 'idempotence' in proc.stdout and 'verify' in proc.stdout, proc.stdout[-15000:]
