# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parallel_reads: several of this collection's read-only fact modules on the host in one task, side by side.

Ansible runs one task per host at a time, each module a round trip of its own (about 0.3-0.5 s on a loaded lab, more
behind a bastion): preflight's six reads one after another cost their sum.  Here each read is a module run as the task
would run it (_execute_module), each on its own copy of this action's connection, shell and become plugin, so that what
a run keeps on them (the become prompt and success marker, the remote tmpdir) stays its own; over SSH they are sessions
of one ControlMaster connection.  Connection plugins other than ssh and local run the reads one after another.
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
        """This action with its own connection, shell and become plugin, for one read in a thread of its own."""
        action = copy.copy(self)
        connection = copy.copy(self._connection)
        connection._shell = copy.copy(self._connection._shell)
        if getattr(connection, 'become', None) is not None:
            connection.become = copy.copy(connection.become)
        action._connection = connection
        return action

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
        for name in sorted(reads):
            module = (reads[name] or {}).get('module') if isinstance(reads[name], dict) else None
            if isinstance(module, str) and not self._shared_loader_obj.module_loader.find_plugin_with_context(module).resolved:
                problems.append('reads.%s.module %s is not installed on the controller' % (name, module))
        if problems:
            return validate.invalid_result('parallel_reads', problems)
        names = sorted(reads)
        if getattr(self._connection, 'transport', None) in SIDE_BY_SIDE and len(names) > 1:
            with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as pool:
                running = [(name, pool.submit(self._read, self._own_copy(), reads[name], task_vars)) for name in names]
                # A connection failure is raised here, as a module run's would be: the host is unreachable.
                raw = dict((name, future.result()) for name, future in running)
        else:
            raw = dict((name, self._read(self, reads[name], task_vars)) for name in names)
        return parallel_reads.combine(host, reads, raw, required)
