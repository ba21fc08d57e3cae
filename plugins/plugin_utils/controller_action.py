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

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.netval.plugins.module_utils import validate


class ControllerAction(ActionBase):
    """Subclasses set NAME and ARGUMENT_SPEC and give task_result(params, check_mode) -> the task's result."""
    TRANSFERS_FILES = False
    _requires_connection = False
    NAME = None
    ARGUMENT_SPEC = None

    def task_result(self, params, check_mode):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        super(ControllerAction, self).run(tmp, task_vars)
        validated = ArgumentSpecValidator(self.ARGUMENT_SPEC).validate(dict(self._task.args))
        if validated.error_messages:
            # The module's failure shape for bad options, not ansible's own.
            return validate.invalid_result(self.NAME, validated.error_messages)
        return self.task_result(validated.validated_parameters, bool(self._task.check_mode))
