"""The task_timeline callback under a real ansible-playbook: two localhost aliases (local connection) under strategy
free, a throwaway role through include_role, include_tasks, a loop, a skip, an ignored failure and a retry; then the
document is read back.  Also: a second run never overwrites, and a callback that cannot write warns and the play
still succeeds.
"""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.unit import fixtures

BIN = os.path.dirname(sys.executable)

PLAYBOOK = '''
- name: Timeline probe
  hosts: all
  gather_facts: false
  strategy: ansible.builtin.free
  tasks:
    - name: Slow on alpha only
      ansible.builtin.command: "sleep {{ '3' if inventory_hostname == 'alpha' else '0' }}"
      changed_when: false
    - name: Quick after the slow one
      ansible.builtin.debug:
        msg: "{{ inventory_hostname }}"
    - name: Include the throwaway role
      ansible.builtin.include_role:
        name: throwaway
    - name: Include a task file
      ansible.builtin.include_tasks: included.yml
    - name: Skipped on beta
      ansible.builtin.debug:
        msg: alpha only
      when: inventory_hostname == 'alpha'
    - name: Fails, ignored
      ansible.builtin.command: "false"
      ignore_errors: true
      changed_when: false
    - name: Delegated in a loop
      ansible.builtin.command: "true"
      delegate_to: "{{ item }}"
      loop: [beta, alpha]
      changed_when: false
    - name: Retried once
      ansible.builtin.command: "true"
      register: probe_retry
      until: probe_retry.attempts | default(0) > 1
      retries: 2
      delay: 0
      changed_when: false
'''

ROLE_TASKS = '''
- name: Role debug
  ansible.builtin.debug:
    msg: in the role
- name: Role loop
  ansible.builtin.command: "echo {{ item }}"
  loop: [one, two, three]
  changed_when: false
'''

INCLUDED = '''
- name: Included for {{ inventory_hostname }}
  ansible.builtin.command: "true"
  changed_when: true
'''

TINY = '''
- name: Tiny
  hosts: alpha
  gather_facts: false
  tasks:
    - name: One task
      ansible.builtin.debug:
        msg: tiny
'''


def inventory():
    host = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    return json.dumps({'all': {'hosts': {'alpha': dict(host, ansible_host='127.0.0.11'), 'beta': dict(host, ansible_host='127.0.0.12')}}})


@pytest.fixture(name='project')
def project_fixture(tmp_path):
    (tmp_path / 'roles' / 'throwaway' / 'tasks').mkdir(parents=True)
    (tmp_path / 'roles' / 'throwaway' / 'tasks' / 'main.yml').write_text(ROLE_TASKS)
    (tmp_path / 'included.yml').write_text(INCLUDED)
    (tmp_path / 'probe.yml').write_text(PLAYBOOK)
    (tmp_path / 'tiny.yml').write_text(TINY)
    (tmp_path / 'hosts.json').write_text(inventory())
    (tmp_path / 'ansible.cfg').write_text('[defaults]\nretry_files_enabled = False\n')
    return tmp_path


def playbook(project, name, path):
    env = dict(os.environ)
    env.update({
        'PATH': BIN + os.pathsep + env.get('PATH', ''),
        'ANSIBLE_CONFIG': str(project / 'ansible.cfg'),
        'ANSIBLE_COLLECTIONS_PATH': os.path.join(fixtures.ROOT, '.cache', 'collections'),
        'ANSIBLE_CALLBACKS_ENABLED': 'gpufleet.netval.task_timeline',
        'ANSIBLE_LOCAL_TEMP': str(project / 'tmp-local'),
        'ANSIBLE_REMOTE_TEMP': str(project / 'tmp-remote'),
        'ANSIBLE_NOCOLOR': '1',
        'NETVAL_TASK_TIMELINE': str(path),
    })
    proc = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', str(project / 'hosts.json'), str(project / name)],
                          cwd=str(project), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=600, check=False)
    return proc.returncode, proc.stdout


def squeeze(text):
    """Text without whitespace: ansible wraps warnings, anywhere in a path."""
    return ''.join(text.split())


def records_of(doc, task):
    found = dict((record['host'], record) for record in doc['records'] if (record['task_template'] or record['task']) == task)
    assert sorted(found) == ['alpha', 'beta'], (task, doc['records'])
    return found


def test_a_real_run_under_strategy_free_with_includes(project):
    path = project / 'out' / 'timeline.json'
    rc, out = playbook(project, 'probe.yml', path)
    assert rc == 0, out
    assert 'WARNING' not in out, out
    doc = task_timeline.read_timeline(str(path))
    assert doc['format'] == 'gpufleet.netval.task_timeline/1' and doc['loop_timing'] == 'per task'
    assert doc['playbooks'] == [str(project / 'probe.yml')]
    start, end = doc['playbook_start'], doc['playbook_end']
    for record in doc['records']:
        assert start <= record['start'] <= record['end'] <= end, record
        assert abs(record['duration_s'] - (record['end'] - record['start'])) < 1e-6
        assert record['play'] == 'Timeline probe' and record['status'] in task_timeline.STATUSES
        assert isinstance(record['start'], float) and record['task_uuid']
    assert [record['start'] for record in doc['records']] == sorted(record['start'] for record in doc['records'])

    # Every (host, task) once: 8 play tasks + 2 role tasks + 1 included task, on both hosts.
    assert len(doc['records']) == 22
    assert len(set((record['host'], record['task_uuid']) for record in doc['records'])) == 22

    slow = records_of(doc, 'Slow on alpha only')
    quick = records_of(doc, 'Quick after the slow one')
    assert slow['alpha']['duration_s'] >= 3.0 and slow['alpha']['action'] == 'ansible.builtin.command'
    # strategy free: beta went on while alpha slept, and each host has its own start for the same task
    assert quick['beta']['start'] < slow['alpha']['end'] < quick['alpha']['start']
    assert quick['alpha']['task_uuid'] == quick['beta']['task_uuid']

    include = records_of(doc, 'Include the throwaway role')
    assert include['alpha']['action'] == 'ansible.builtin.include_role' and include['alpha']['role'] is None
    role_debug = records_of(doc, 'Role debug')
    assert role_debug['alpha']['role'] == 'throwaway' and role_debug['alpha']['action'] == 'ansible.builtin.debug'
    loop = records_of(doc, 'Role loop')
    assert loop['beta']['loop'] is True and loop['beta']['items'] == 3 and loop['beta']['role'] == 'throwaway'
    assert records_of(doc, 'Include a task file')['beta']['action'] == 'ansible.builtin.include_tasks'

    included = records_of(doc, 'Included for {{ inventory_hostname }}')
    assert included['alpha']['task'] == 'Included for alpha' and included['beta']['task'] == 'Included for beta'
    assert included['alpha']['status'] == 'changed'

    skipped = records_of(doc, 'Skipped on beta')
    assert skipped['beta']['status'] == 'skipped' and skipped['alpha']['status'] == 'ok'
    failed = records_of(doc, 'Fails, ignored')
    assert failed['alpha']['status'] == 'failed' and failed['alpha']['ignored'] is True
    retried = records_of(doc, 'Retried once')
    assert retried['alpha']['retries'] == 1 and retried['alpha']['status'] == 'ok'

    delegated = records_of(doc, 'Delegated in a loop')
    assert delegated['alpha']['delegated_to'] == ['beta', 'alpha'] and delegated['alpha']['items'] == 2
    assert slow['alpha']['delegated_to'] == []

    rss = doc['peak_rss_mib']
    assert rss['self'] > 10 and rss['children'] > 0 and abs(rss['total'] - rss['self'] - rss['children']) < 0.01
    assert doc['controller']['pid'] > 0 and doc['controller']['ansible_version']

    # The summaries read the real document.
    costs = dict((row['task'], row) for row in task_timeline.task_costs(doc))
    assert costs['throwaway : Role loop']['count'] == 2
    assert costs['Included for {{ inventory_hostname }}']['count'] == 2
    assert costs['Slow on alpha only']['total_s'] >= 3.0
    hosts = dict((row['host'], row) for row in task_timeline.host_costs(doc))
    assert hosts['alpha']['wall_s'] >= 3.0 and hosts['alpha']['wall_s'] >= hosts['beta']['wall_s'] - 1.0
    assert hosts['alpha']['test_s'] == 0.0 and hosts['alpha']['overhead_s'] == hosts['alpha']['wall_s']
    assert hosts['alpha']['tasks'] == hosts['beta']['tasks'] == 11


def test_a_second_run_to_the_same_path_goes_to_a_suffixed_file_and_a_failed_write_only_warns(project):
    path = project / 't.json'
    rc, out = playbook(project, 'tiny.yml', path)
    assert rc == 0 and path.exists(), out
    first = path.read_text()
    rc, out = playbook(project, 'tiny.yml', path)
    assert rc == 0, out
    assert path.read_text() == first
    assert squeeze('exists; wrote the task timeline to %s' % (project / 't.1.json')) in squeeze(out), out
    assert [record['task'] for record in task_timeline.read_timeline(str(project / 't.1.json'))['records']] == ['One task']

    blocker = project / 'a-file'
    blocker.write_text('not a folder')
    rc, out = playbook(project, 'tiny.yml', blocker / 't.json')
    assert rc == 0, out
    assert squeeze('gpufleet.netval.task_timeline: v2_playbook_on_stats failed') in squeeze(out), out
    assert 'ok=1' in out


def test_an_error_in_a_hook_is_one_warning_per_hook_and_nothing_raised():
    from ansible_collections.gpufleet.netval.plugins.callback.task_timeline import CallbackModule

    class Display(object):
        verbosity = 0

        def __init__(self):
            self.warnings = []

        def warning(self, msg):
            self.warnings.append(msg)

    display = Display()
    callback = CallbackModule(display=display)
    assert callback.v2_runner_on_start(None, None) is None
    assert callback.v2_runner_on_start(None, None) is None
    assert callback.v2_runner_on_ok(None) is None
    assert len(display.warnings) == 2
    assert 'v2_runner_on_start failed (AttributeError' in display.warnings[0]
    assert 'v2_runner_on_ok failed' in display.warnings[1]
