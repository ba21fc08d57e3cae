# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""evidence_store: the controller's half of the evidence chain in one task, inside the worker process.

It replaces five controller-side module runs per node (folder, unarchive, sha256sum -c, the baseline copy, the
baseline link), each a module process of its own.  The task's options and result are module_utils/evidence_store.py's,
its documentation plugins/modules/evidence_store.py's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence_store
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    NAME = 'evidence_store'
    ARGUMENT_SPEC = evidence_store.ARGUMENT_SPEC

    def task_result(self, params, check_mode):
        # Relative paths mean what they mean to ansible.builtin.fetch, which brought the tarball: the playbook's folder.
        for name in ('tarball', 'dest', 'baseline_link'):
            if params[name]:
                params[name] = self._loader.path_dwim(params[name])
        return evidence_store.store(params, check_mode)
