# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: task_timeline
type: aggregate
short_description: Record when every task started and ended on every host, to measure orchestration overhead
version_added: 0.1.0
description:
  - Records, for every (host, task) pair a worker ran, the host, play, task name (C(task) as the worker templated it for
    that host, C(task_template) as the playbook writes it), task uuid, role, action (the resolved
    module or action plugin), start and end (epoch seconds, float, as the controller saw them) and the status
    (V(ok), V(changed), V(failed), V(skipped) or V(unreachable); V(unfinished), ending with the run, for a task that
    had no result when the run reported its stats).  A failure that C(ignore_errors) let pass has C(ignored) true.
  - The start is the moment the controller hands the task to a worker for that host (V(v2_runner_on_start)), so it is
    per host under P(ansible.builtin.free#strategy) and with a full fork pool; the end is the moment the controller
    processes that host's result.  A task's cost therefore includes forking the worker, the connection, templating
    and result handling, which is the orchestration overhead this callback is for.
  - A loop task is one record for the whole task (its start to its last item's result), with the number of item
    results in C(items); items are not timed separately.  A task retried by C(until) is one record, with the number
    of retries in C(retries).  Tasks of C(include_tasks) and C(include_role) are recorded like any other task, with the
    included role in C(role); the include itself is a record too.  Meta tasks (C(meta), implicit handler flushes)
    never reach a worker and are not recorded.
  - C(delegated_to) lists the inventory name of every host the task or its items were delegated to; it is empty when
    the task was not delegated.
  - When the playbook starts it imports the collection's filters in the controller's main process, as
    C(gpufleet.netval.progress) does, so the task workers inherit them instead of compiling them again, and has each
    worker freeze the Python objects it inherits, so that its garbage collections never copy the main process's memory.
  - Also records the run's playbook files, its start (first playbook start) and end (the final stats), and the
    controller's peak resident memory in MiB, C(peak_rss_mib) with C(self) (C(ru_maxrss) of RUSAGE_SELF, the
    ansible-playbook main process), C(children) (C(ru_maxrss) of RUSAGE_CHILDREN, the largest single finished and
    reaped child, a worker fork or an ssh or module process it waited for, not the sum of the workers) and C(total)
    (their sum, an upper bound of the controller's peak when one worker peaks with the main process; it is not the
    sum over concurrent workers).
  - Writes one JSON document (format V(gpufleet.netval.task_timeline/1)) when the run reports its stats, atomically
    (a temporary file in the same folder, then linked or renamed into place) and never over an existing file. If
    O(path) exists, the document goes to the first free name with V(.1), V(.2), ... inserted before the extension
    (V(t.json) becomes V(t.1.json)) and a warning names it.  A run that is interrupted before its stats writes
    nothing.
  - It never breaks the playbook, any error of its own becomes a warning.
  - C(scripts/task_costs.py) in the source repository prints the per-task cost table of a document and compares two;
    the summaries are in C(plugins/module_utils/reporting/task_timeline.py).
author:
  - gpufleet.netval maintainers (@gpufleet)
requirements:
  - Enabled explicitly, for example C(ANSIBLE_CALLBACKS_ENABLED=gpufleet.netval.task_timeline), or in C(callbacks_enabled) in ansible.cfg.
options:
  path:
    description:
      - The file to write the JSON document to (its folder is created if missing).  A relative path is relative to the
        current directory (environment) or to the folder of the ansible.cfg that sets it (ini).
      - If it exists, the first free of V(stem.1.ext), V(stem.2.ext), ... is written instead; nothing is overwritten.
    type: path
    default: task_timeline.json
    env:
      - name: NETVAL_TASK_TIMELINE
    ini:
      - section: callback_task_timeline
        key: path
notes:
  - Times come from the controller's clock (Python's C(time.time)), not the hosts'.
  - C(controller) names the C(ansible-playbook) process, its ansible-core and Python, and its C(forks) (the run's worker limit).
  - A host's records are in the order its tasks started; hosts interleave under P(ansible.builtin.free#strategy).
'''

EXAMPLES = r'''
# Record the validation run's task costs, then print them (and compare with an earlier run):
#   ANSIBLE_CALLBACKS_ENABLED=gpufleet.netval.task_timeline NETVAL_TASK_TIMELINE=/tmp/t.json \
#     ansible-playbook -i inventory playbooks/validate.yml -l new_nodes
#   python scripts/task_costs.py /tmp/t.json --before /tmp/before.json
#
# Or in ansible.cfg:
#   [defaults]
#   callbacks_enabled = gpufleet.netval.task_timeline
#   [callback_task_timeline]
#   path = timelines/validate.json
'''

import os
import platform
import resource
import sys
import time

from ansible import __version__ as ANSIBLE_VERSION
from ansible import context
from ansible.module_utils.common.text.converters import to_text
from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting.task_timeline import FORMAT, write_document
from ansible_collections.gpufleet.netval.plugins.plugin_utils.callback_guard import role_of, soft
from ansible_collections.gpufleet.netval.plugins.plugin_utils.warm_up import freeze_inherited_objects_in_workers, warm_up

# A failing hook is a warning, never a broken playbook.
_soft = soft('gpufleet.netval.task_timeline', 'the timeline may be incomplete')


def _name_as_written(task):
    """The task's name as the playbook or role writes it, before templating (None for an unnamed task)."""
    data = task.get_ds() if hasattr(task, 'get_ds') else None
    name = data.get('name') if isinstance(data, dict) else None
    return (to_text(name).strip() or None) if name is not None else None


def _mib(maxrss):
    """ru_maxrss in MiB: Linux reports KiB, macOS bytes."""
    return maxrss / (1024.0 * 1024.0) if sys.platform == 'darwin' else maxrss / 1024.0


def peak_rss_mib():
    own = _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    children = _mib(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {'self': round(own, 3), 'children': round(children, 3), 'total': round(own + children, 3)}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'gpufleet.netval.task_timeline'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._warned = set()
        self._playbooks = []
        self._playbook_start = None
        self._play = None
        self._running = {}   # (host, task uuid) -> the record being timed
        self._records = []
        self._written = False

    # The run --------------------------------------------------------------------------------------------------

    @_soft
    def v2_playbook_on_start(self, playbook):
        if self._playbook_start is None:
            self._playbook_start = time.time()
        warm_up()
        freeze_inherited_objects_in_workers()
        self._playbooks.append(to_text(getattr(playbook, '_file_name', None) or ''))

    @_soft
    def v2_playbook_on_play_start(self, play):
        self._play = to_text(play.get_name()).strip()

    @_soft
    def v2_playbook_on_stats(self, stats):
        if self._written:
            return
        self._written = True
        end = time.time()
        for record in list(self._running.values()):
            # A task with no result by the end of the run (there should be none): kept, ending with the run.
            record['status'] = 'unfinished'
            self._records.append(record)
        self._running = {}
        records = sorted(self._records, key=lambda record: (record['start'], record['host']))
        doc = {
            'format': FORMAT,
            'playbooks': self._playbooks,
            'playbook_start': self._playbook_start if self._playbook_start is not None else end,
            'playbook_end': end,
            'controller': {'pid': os.getpid(), 'ansible_version': ANSIBLE_VERSION, 'python': platform.python_version(),
                           'forks': context.CLIARGS.get('forks')},
            'peak_rss_mib': peak_rss_mib(),
            'loop_timing': 'per task',
            'records': records,
        }
        for record in records:
            if record.get('end') is None:
                record['end'] = end
                record['duration_s'] = end - record['start']
        path = self.get_option('path')
        written = write_document(path, doc)
        if os.path.abspath(os.path.expanduser(path)) != written:
            self._display.warning('gpufleet.netval.task_timeline: %s exists; wrote the task timeline to %s' % (path, written))
        else:
            self._display.vv('gpufleet.netval.task_timeline: wrote %s (%d records)' % (written, len(records)))

    # Tasks ----------------------------------------------------------------------------------------------------

    @_soft
    def v2_runner_on_start(self, host, task):
        host_name = to_text(host.get_name())
        self._running[(host_name, task._uuid)] = {
            'host': host_name,
            'play': self._play,
            'task': to_text(task.name or '').strip() or None,
            'task_template': _name_as_written(task),
            'task_uuid': to_text(task._uuid),
            'role': role_of(task),
            'action': to_text(getattr(task, 'resolved_action', None) or task.action),
            'start': time.time(),
            'end': None,
            'duration_s': None,
            'status': None,
            'ignored': False,
            'loop': bool(task.loop),
            'items': 0,
            'retries': 0,
            'delegated_to': [],
            'handler': isinstance(task, Handler),
        }

    def _record(self, result):
        return self._running.get((to_text(result.host.get_name()), result.task._uuid))

    @staticmethod
    def _delegated(record, result):
        # The worker sets the task's delegate_to to the delegated host's inventory name (each item's own, in a loop: the
        # loop's own result still holds the template).
        host = result.task.delegate_to
        if host and '{{' not in to_text(host) and to_text(host) not in record['delegated_to']:
            record['delegated_to'].append(to_text(host))

    def _finish(self, result, status, ignored=False):
        end = time.time()
        key = (to_text(result.host.get_name()), result.task._uuid)
        record = self._running.pop(key, None)
        if record is None:
            return  # a meta task, run by the strategy itself: no worker, no start
        if status == 'ok' and (result.result or {}).get('changed'):
            status = 'changed'
        name = to_text(result.task.name or '').strip()
        if name:
            record['task'] = name  # as the worker templated it
        if not record['task']:
            record['task'] = record['action']
        record['end'] = end
        record['duration_s'] = end - record['start']
        record['status'] = status
        record['ignored'] = bool(ignored)
        self._delegated(record, result)
        self._records.append(record)

    @_soft
    def v2_runner_on_ok(self, result):
        self._finish(result, 'ok')

    @_soft
    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._finish(result, 'failed', ignored=ignore_errors)

    @_soft
    def v2_runner_on_skipped(self, result):
        self._finish(result, 'skipped')

    @_soft
    def v2_runner_on_unreachable(self, result):
        self._finish(result, 'unreachable', ignored=bool(getattr(result.task, 'ignore_unreachable', False)))

    def _item(self, result):
        record = self._record(result)
        if record is not None:
            record['items'] += 1
            self._delegated(record, result)

    @_soft
    def v2_runner_item_on_ok(self, result):
        self._item(result)

    @_soft
    def v2_runner_item_on_failed(self, result):
        self._item(result)

    @_soft
    def v2_runner_item_on_skipped(self, result):
        self._item(result)

    @_soft
    def v2_runner_retry(self, result):
        record = self._record(result)
        if record is not None:
            record['retries'] += 1
