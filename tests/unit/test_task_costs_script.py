"""scripts/task_costs.py on synthetic task timelines: the per-task and per-host tables, the before/after table, the
refusal of a file that is not a timeline."""
import json
import os
import subprocess
import sys

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline
from tests.unit import fixtures

SCRIPT = os.path.join(fixtures.ROOT, 'scripts', 'task_costs.py')


def rec(host, task, start, end, action='ansible.builtin.set_fact', role=None):
    return {'host': host, 'play': 'p', 'task': task, 'task_template': None, 'task_uuid': task, 'role': role, 'action': action,
            'start': start, 'end': end, 'duration_s': end - start, 'status': 'ok'}


def write(tmp_path, name, records):
    # synthetic: hand-written records shaped like the callback's
    path = tmp_path / name
    path.write_text(json.dumps({'format': task_timeline.FORMAT, 'playbooks': ['validate.yml'], 'playbook_start': 0.0,
                                'playbook_end': 30.0, 'peak_rss_mib': {'self': 60.5, 'children': 40.25, 'total': 100.75},
                                'records': records}))
    return str(path)


def run(*args):
    proc = subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def section(out, title):
    lines = out.split('\n')
    start = lines.index(title) + 1
    end = lines.index('', start) if '' in lines[start:] else len(lines)
    return lines[start:end]


def test_per_task_and_per_host_tables_are_aligned_and_sorted(tmp_path):
    after = write(tmp_path, 'after.json', [
        rec('node01', 'Plan the runs', 0.0, 2.0, role='gpufleet.netval.tier_tests'),
        rec('node01', 'Run the clients', 2.0, 12.0, action='gpufleet.netval.perftest', role='gpufleet.netval.tier_tests'),
        rec('node02', 'Plan the runs', 0.0, 4.0, role='gpufleet.netval.tier_tests'),
    ])
    rc, out, err = run(after)
    assert rc == 0, err
    assert out.startswith('run: validate.yml, wall 30.000 s, 3 host-task records, controller peak RSS 100.75 MiB')
    tasks = section(out, 'Per task (seconds summed over hosts)')
    assert tasks[0].split() == ['task', 'count', 'total', 's', 'mean', 's', 'max', 's']
    assert set(tasks[1]) <= {'-', ' '}
    assert tasks[2].startswith('gpufleet.netval.tier_tests : Run the clients') and tasks[2].split()[-4:] == ['1', '10.000', '10.000', '10.000']
    assert tasks[3].split()[-4:] == ['2', '6.000', '3.000', '4.000']
    assert len(set(len(line) for line in tasks)) == 1   # right-aligned numbers: every row as wide as the header
    hosts = section(out, 'Per host (overhead = wall - test)')
    assert hosts[2].split() == ['node01', '2', '12.000', '10.000', '0.000', '2.000']
    assert hosts[3].split() == ['node02', '1', '4.000', '0.000', '0.000', '4.000']


def test_before_after_table(tmp_path):
    before = write(tmp_path, 'before.json', [rec('n1', 'Start servers', 0.0, 9.0), rec('n1', 'Old task', 9.0, 10.0)])
    after = write(tmp_path, 'after.json', [rec('n1', 'Start servers', 0.0, 3.0), rec('n1', 'New task', 3.0, 3.5)])
    rc, out, err = run(after, '--before', before)
    assert rc == 0, err
    assert out.startswith('before: validate.yml') and '\nafter: validate.yml' in out
    rows = section(out, 'Before / after per task (total seconds)')
    assert rows[0].split() == ['task', 'before', 's', 'after', 's', 'delta', 's']
    assert [row.split()[-3:] for row in rows[2:]] == [['9.000', '3.000', '-6.000'], ['1.000', '0.000', '-1.000'],
                                                      ['0.000', '0.500', '+0.500'], ['10.000', '3.500', '-6.500']]
    assert rows[2].startswith('Start servers') and rows[-1].startswith('(all tasks)')
    rc, out, err = run(after, '--before', before, '--top', '1')
    assert rc == 0, err
    assert len(section(out, 'Before / after per task (total seconds)')) == 4   # header, rule, one task, the totals


def test_a_file_that_is_not_a_timeline_is_refused(tmp_path):
    other = tmp_path / 'other.json'
    other.write_text('{"records": []}')
    rc, out, err = run(str(other))
    assert rc == 2 and out == '' and 'not a task timeline' in err
    rc, out, err = run(str(tmp_path / 'missing.json'))
    assert rc == 2 and 'missing.json' in err
