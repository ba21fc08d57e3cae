# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""regrade_report on the controller, in the worker process: no module process, no connection to any node.  The work is
module_utils/reporting/regrade_task.py's, the documentation plugins/modules/regrade_report.py's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import regrade_task
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    NAME = 'regrade_report'
    ARGUMENT_SPEC = regrade_task.ARGUMENT_SPEC

    def task_result(self, params, check_mode):
        # Relative folders are relative to the working folder, as for the module (the local connection's).
        return regrade_task.run(params, check_mode)
