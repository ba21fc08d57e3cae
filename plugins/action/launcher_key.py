# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""launcher_key on the controller, in the worker process: the key pair is made in memory, nothing is written to disk.

The documentation is the module's (plugins/modules/launcher_key.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils import launcher
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    NAME = 'launcher_key'
    ARGUMENT_SPEC = launcher.KEY_ARGUMENT_SPEC

    def task_result(self, params, check_mode):
        return launcher.key_result(params, check_mode)
