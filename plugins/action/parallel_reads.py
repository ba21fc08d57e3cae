# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parallel_reads: several of this collection's read-only fact modules on the host in one task, side by side.

Ansible runs one task per host at a time, each module a round trip of its own (about 0.3-0.5 s on a loaded lab, more
behind a bastion): preflight's six reads one after another cost their sum.  Here each read is a module run
(_execute_module), each on its own copy of this action with its own connection, shell, become plugin, templar and
discovery warnings, so that what a run keeps on them (the become prompt and success marker, the templar's context)
stays its own; over SSH they are sessions of one ControlMaster connection.  The reads go side by side only over ssh
or local with pipelining on (no remote tmpdir: without pipelining each copy would make one that only the task's own
cleanup, on this action, knows of); otherwise they run one after another.  While the host's Python is still to be
discovered, the first read runs alone: it discovers it once, for the others.
The options and the result are module_utils/parallel_reads.py's, the documentation plugins/modules/parallel_reads.py's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import concurrent.futures
import copy

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.netval.plugins.module_utils import parallel_reads, validate

# Connection plugins whose runs are separate processes (ssh, local): copies of them run side by side safely.
SIDE_BY_SIDE = ('ssh', 'local')


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    # Every read is an *_info module of this collection (parallel_reads.check_reads), and they all support check mode.
    _supports_check_mode = True

    def _own_copy(self):
        """This action with its own connection, shell, become plugin, templar and discovery warnings, for one read in a
        thread of its own."""
        action = copy.copy(self)
        connection = copy.copy(self._connection)
        connection._shell = copy.copy(self._connection._shell)
        if getattr(connection, 'become', None) is not None:
            connection.become = copy.copy(connection.become)
        action._connection = connection
        if self._templar is not None:
            action._templar = self._templar.copy_with_new_env()
        action._discovery_warnings = []
        action._discovery_deprecation_warnings = []
        return action

    def _side_by_side(self):
        """Whether the reads may run at once: a connection plugin whose runs are processes of their own, pipelining on."""
        return getattr(self._connection, 'transport', None) in SIDE_BY_SIDE and self._is_pipelining_enabled('new')

    @staticmethod
    def _interpreter_known(task_vars):
        """Whether the host's Python is set or already discovered (no read will run the discovery)."""
        task_vars = task_vars or {}
        facts = task_vars.get('ansible_facts') or {}
        interpreter = str(task_vars.get('ansible_python_interpreter') or '')
        return bool((interpreter and not interpreter.startswith('auto')) or facts.get('discovered_interpreter_python'))

    def _read(self, action, spec, task_vars):
        return action._execute_module(module_name=spec['module'], module_args=dict(spec.get('args') or {}),
                                      task_vars=task_vars, wrap_async=False)

    def run(self, tmp=None, task_vars=None):
        super(ActionModule, self).run(tmp, task_vars)
        host = (task_vars or {}).get('inventory_hostname') or self._play_context.remote_addr
        validated = ArgumentSpecValidator(parallel_reads.ARGUMENT_SPEC).validate(dict(self._task.args))
        if validated.error_messages:
            return validate.invalid_result('parallel_reads', validated.error_messages)
        params = validated.validated_parameters
        reads, required = params['reads'], params['required']
        problems = parallel_reads.check_reads(reads, required)
        names = sorted(reads)
        if not problems:
            problems = ['reads.%s.module %s is not installed on the controller' % (name, reads[name]['module']) for name in names
                        if not self._shared_loader_obj.module_loader.find_plugin_with_context(reads[name]['module']).resolved]
        if problems:
            return validate.invalid_result('parallel_reads', problems)
        raw = {}
        if len(names) > 1 and self._side_by_side():
            if not self._interpreter_known(task_vars):
                # Its discovery writes the interpreter into task_vars' facts, where the other reads find it.
                raw[names[0]] = self._read(self, reads[names[0]], task_vars)
            rest = [name for name in names if name not in raw]
            with concurrent.futures.ThreadPoolExecutor(max_workers=len(rest)) as pool:
                running = [(name, pool.submit(self._read, self._own_copy(), reads[name], task_vars)) for name in rest]
                # A connection failure is raised here, as a module run's would be: the host is unreachable.
                raw.update((name, future.result()) for name, future in running)
        else:
            raw = dict((name, self._read(self, reads[name], task_vars)) for name in names)
        return parallel_reads.combine(host, reads, raw, required)
