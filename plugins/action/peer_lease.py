# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""peer_lease on the controller, in the worker process: no module process (AnsiballZ, a new interpreter) per lease.

A run calls it three to five times per node (take at once, wait, give back, suspect, promote); as a module each call
cost about 0.6 s of the controller's CPU.  The lease is the same file either way (module_utils/lease.py); the
documentation is the module's (plugins/modules/peer_lease.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.netval.plugins.module_utils import lease_task


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        super(ActionModule, self).run(tmp, task_vars)
        validated = ArgumentSpecValidator(lease_task.ARGUMENT_SPEC).validate(dict(self._task.args))
        if validated.error_messages:
            # The module's failure shape for bad options, not ansible's own.
            return lease_task.invalid('peer_lease', validated.error_messages)
        return lease_task.run(validated.validated_parameters, bool(self._task.check_mode))
