# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""peer_lease on the controller, in the worker process: no module process (AnsiballZ, a new interpreter) per lease.

A run calls it three to five times per node (take at once, wait, give back, suspect, promote); as a module each call
cost 2-3.5 s of a node's time under sixteen nodes' load.  The lease is the same either way (module_utils/lease.py); here
a lease taken also starts the run's renewer (module_utils/lease_renewer.py) unless it runs, so the run holds its leases
for as long as its ansible-playbook lives.  The documentation is the module's (plugins/modules/peer_lease.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils import lease_renewer, lease_task
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    NAME = 'peer_lease'
    ARGUMENT_SPEC = lease_task.ARGUMENT_SPEC

    def task_result(self, params, check_mode):
        return lease_task.run(params, check_mode, keep_alive=self.keep_alive)

    @staticmethod
    def keep_alive(folder, backend, run, ttl):
        lease_renewer.ensure(folder, backend, run, ttl)
