# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: progress
type: aggregate
short_description: Show each node's stage of a validation run and the time it and the run have left
version_added: 0.1.0
description:
  - Once validate.yml has predicted the run (the fact C(netval_run_prediction), set when every node's preflight is done),
    prints a line whenever a node enters another stage - waiting for a free known-good peer, its peer-independent tests,
    its tests against a named peer, verdict, evidence, report - with the time left for the node and for the run's tests
    by the prediction, and how many nodes are measured.
  - With O(path) set it also keeps a JSON document of every node's stage there, replaced atomically at each change, for a
    dashboard or an AWX job's artifact.
  - Prints nothing for a playbook that makes no prediction (drift.yml, evidence.yml); it never breaks the playbook, an
    error of its own is a warning.
  - When the playbook starts it imports the collection's filters in the controller's main process, so the worker Ansible
    forks for every task inherits them instead of compiling them again, and has each of those workers freeze the Python
    objects it inherits (C(gc.freeze)), so that the worker's garbage collections never copy the main process's memory
    (the C(gpufleet.netval.task_timeline) callback does the same).
author:
  - gpufleet.netval maintainers (@gpufleet)
requirements:
  - Enabled explicitly, for example C(ANSIBLE_CALLBACKS_ENABLED=gpufleet.netval.progress), or in C(callbacks_enabled) in
    ansible.cfg (the repository's ansible.cfg enables it).
options:
  path:
    description: A file to keep every node's stage in (JSON, replaced atomically); unset keeps none.
    type: path
    env:
      - name: NETVAL_PROGRESS_FILE
    ini:
      - section: callback_progress
        key: path
'''

EXAMPLES = r'''
# In ansible.cfg:
#   [defaults]
#   callbacks_enabled = gpufleet.netval.progress
# A line per stage change, for example:
#   netval progress +1m35s node03: tests against peer01 | ~38 s left for it, ~3m30s for the run's tests | 4 of 10 nodes measured
'''

import json
import os
import tempfile
import time

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import progress
from ansible_collections.gpufleet.netval.plugins.plugin_utils.callback_guard import role_of, soft
from ansible_collections.gpufleet.netval.plugins.plugin_utils.warm_up import freeze_inherited_objects_in_workers, warm_up

# A failing hook is a warning, never a broken playbook.
_soft = soft('gpufleet.netval.progress')


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'gpufleet.netval.progress'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._warned = set()
        self._started = None
        self._prediction = None
        self._tracker = progress.Tracker()

    @_soft
    def v2_playbook_on_start(self, playbook):
        if self._started is None:
            self._started = time.time()
        warm_up()
        freeze_inherited_objects_in_workers()

    @_soft
    def v2_runner_on_start(self, host, task):
        name = to_text(host.get_name())
        if self._tracker.start(name, role_of(task), task.action, run_once=bool(task.run_once)):
            self._show(name)

    def _result(self, result):
        facts = result.result.get('ansible_facts') or {}
        prediction = facts.get('netval_run_prediction')
        if self._prediction is None and isinstance(prediction, dict) and 'nodes' in prediction:
            self._prediction = prediction
        name = to_text(result.host.get_name())
        if self._tracker.result(name, result.task.action, result.task.args, result.result):
            self._show(name)

    @_soft
    def v2_runner_on_ok(self, result):
        self._result(result)

    @_soft
    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result)

    def _show(self, host):
        if self._prediction is None or host not in self._prediction.get('nodes', {}):
            return
        now = time.time()
        stages = self._tracker.stages
        node_left, run_left = progress.seconds_left(self._prediction, self._tracker, host, now)
        names = self._prediction['nodes']
        measured = sum(1 for name in names if stages.get(name) in progress.MEASURED)
        self._display.display(progress.line(host, stages[host], self._tracker.peers.get(host), now - (self._started or now),
                                            node_left, run_left, measured, len(names)))
        self._write(now)

    def _write(self, now):
        path = self.get_option('path')
        if not path:
            return
        path = os.path.abspath(os.path.expanduser(path))
        folder = os.path.dirname(path)
        doc = {'updated': now, 'started': self._started, 'prediction': self._prediction,
               'nodes': dict((host, {'stage': stage, 'peer': self._tracker.peers.get(host)}) for host, stage in self._tracker.stages.items())}
        handle, tmp = tempfile.mkstemp(prefix='.progress.', dir=folder)
        try:
            with os.fdopen(handle, 'w') as out:
                json.dump(doc, out, sort_keys=True)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
