# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of the collection's controller-side action plugins (peer_lease, evidence_store, validation_report).

They do their work in the worker process that runs the task, with no module process on the controller: a module run
there costs AnsiballZ and a new interpreter, seconds under a fleet's load (evidence_store reaches the node only to copy
its bundle, and says so with _requires_connection).  The options are checked against the same
argument spec the module of the same name uses, and bad ones fail in the collection's one failure shape.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.netval.plugins.module_utils import validate


class ControllerAction(ActionBase):
    """Subclasses set NAME and ARGUMENT_SPEC and give task_result(params, check_mode) -> the task's result.

    NODE_DATA names the dict options that carry what nodes returned (validation_report's ``nodes``): the validator
    checks them as a dict but never copies them (its deep copy is recursive, and a node's data may be nested deeper
    than the interpreter's recursion limit); task_result gets them as they are, for the trust boundary to bound.
    """
    TRANSFERS_FILES = False
    _requires_connection = False
    NAME = None
    ARGUMENT_SPEC = None
    NODE_DATA = ()

    def task_result(self, params, check_mode):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        super(ControllerAction, self).run(tmp, task_vars)
        args = dict(self._task.args)
        node_data = dict((name, args[name]) for name in self.NODE_DATA if isinstance(args.get(name), Mapping))
        args.update((name, {}) for name in node_data)
        validated = ArgumentSpecValidator(self.ARGUMENT_SPEC).validate(args)
        if validated.error_messages:
            # The module's failure shape for bad options, not ansible's own.
            return validate.invalid_result(self.NAME, validated.error_messages)
        params = validated.validated_parameters
        params.update(node_data)
        return self.task_result(params, bool(self._task.check_mode))
