# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""validation_report on the controller, in the worker process: no module process (AnsiballZ, a new interpreter, every
node's result sent to it as JSON) for the run's reports.  The work is module_utils/reporting/report_task.py's, the documentation
plugins/modules/validation_report.py's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report_task
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    NAME = 'validation_report'
    ARGUMENT_SPEC = report_task.ARGUMENT_SPEC
    NODE_DATA = ('nodes',)

    def task_result(self, params, check_mode):
        # A relative root is relative to the working folder, as it was for the module (the local connection's).
        return report_task.write(params, check_mode)
