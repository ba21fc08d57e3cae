"""Print what every task cost in a run recorded by the gpufleet.netval.task_timeline callback, and compare two runs.

    .venv/bin/python scripts/task_costs.py TIMELINE.json [--before EARLIER.json] [--top N]

Prints the run (playbooks, wall time, controller peak RSS), the per-task table (task as ``role : name``, count of
host-task records, total, mean and max seconds, sorted by total) and the per-host table (wall time, seconds in test
tasks, in the peer lease, and the overhead = wall - test).  With --before, a before/after table per task
(before s, after s, delta = after - before), largest change first, and the totals.  Exit status 2 for a file that is
not a task timeline.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _importable():
    """Make this checkout importable as ansible_collections.gpufleet.netval (as conftest.py does)."""
    if os.path.basename(os.path.dirname(os.path.dirname(ROOT))) == 'ansible_collections':
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(ROOT))))
        return
    collections = os.path.join(ROOT, '.cache', 'collections')
    link = os.path.join(collections, 'ansible_collections', 'gpufleet', 'netval')
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    sys.path.insert(0, collections)


_importable()

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import task_timeline  # noqa: E402  pylint: disable=wrong-import-position


def table(headers, rows, numeric):
    """Plain-text table: text columns left-aligned, the ``numeric`` column indexes right-aligned."""
    cells = [list(headers)] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[index]) for row in cells) for index in range(len(headers))]
    lines = []
    for number, row in enumerate(cells):
        parts = [cell.rjust(widths[index]) if index in numeric else cell.ljust(widths[index]) for index, cell in enumerate(row)]
        lines.append('  '.join(parts).rstrip())
        if number == 0:
            lines.append('  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def seconds(value):
    return '%.3f' % value


def signed(value):
    return '%+.3f' % value


def run_lines(doc, name):
    rss = doc.get('peak_rss_mib') or {}
    wall = float(doc.get('playbook_end', 0)) - float(doc.get('playbook_start', 0))
    return ['%s: %s, wall %.3f s, %d host-task records, controller peak RSS %s MiB (self %s + children %s)'
            % (name, ', '.join(doc.get('playbooks') or []) or '?', wall, len(doc['records']),
               rss.get('total', '?'), rss.get('self', '?'), rss.get('children', '?'))]


def task_table(doc, top=None):
    rows = task_timeline.task_costs(doc)[:top]
    return table(('task', 'count', 'total s', 'mean s', 'max s'),
                 [(row['task'], row['count'], seconds(row['total_s']), seconds(row['mean_s']), seconds(row['max_s'])) for row in rows],
                 numeric=(1, 2, 3, 4))


def host_table(doc):
    rows = task_timeline.host_costs(doc)
    return table(('host', 'tasks', 'wall s', 'test s', 'lease s', 'overhead s'),
                 [(row['host'], row['tasks'], seconds(row['wall_s']), seconds(row['test_s']), seconds(row['lease_s']),
                   seconds(row['overhead_s'])) for row in rows],
                 numeric=(1, 2, 3, 4, 5))


def comparison_table(before, after, top=None):
    rows = task_timeline.compare_task_costs(before, after)
    total_before = sum(row['before_s'] for row in rows)
    total_after = sum(row['after_s'] for row in rows)
    body = [(row['task'], seconds(row['before_s']), seconds(row['after_s']), signed(row['delta_s'])) for row in rows[:top]]
    body.append(('(all tasks)', seconds(total_before), seconds(total_after), signed(total_after - total_before)))
    return table(('task', 'before s', 'after s', 'delta s'), body, numeric=(1, 2, 3))


def main(argv=None):
    parser = argparse.ArgumentParser(description='Per-task costs of a gpufleet.netval.task_timeline document; --before compares two.')
    parser.add_argument('timeline', help='the task timeline JSON of the run to report (the "after" run with --before)')
    parser.add_argument('--before', metavar='TIMELINE', help='an earlier run\'s task timeline to compare with')
    parser.add_argument('--top', type=int, default=None, metavar='N', help='only the N costliest tasks (N largest changes with --before)')
    args = parser.parse_args(argv)
    try:
        after = task_timeline.read_timeline(args.timeline)
        before = task_timeline.read_timeline(args.before) if args.before else None
    except (OSError, task_timeline.TimelineError) as exc:
        sys.stderr.write('task_costs: %s\n' % exc)
        return 2
    out = []
    if before is not None:
        out += run_lines(before, 'before') + run_lines(after, 'after') + ['']
    else:
        out += run_lines(after, 'run') + ['']
    out += ['Per task (seconds summed over hosts)', task_table(after, args.top), '',
            'Per host (overhead = wall - test)', host_table(after)]
    if before is not None:
        out += ['', 'Before / after per task (total seconds)', comparison_table(before, after, args.top)]
    sys.stdout.write('\n'.join(out) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
