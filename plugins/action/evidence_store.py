# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""evidence_store: the controller's half of the evidence chain in one task, inside the worker process.

It replaces ansible.builtin.fetch (whose remote stat is a module run of its own: the capture already returned the
bundle's sha256) and five controller-side module runs per node (folder, unarchive, sha256sum -c, the baseline copy, the
baseline link).  It reaches the node only to copy the bundle: over the connection's own transfer, or under become with
the slurp module, as fetch does.  The task's options and result are module_utils/evidence_store.py's, its
documentation plugins/modules/evidence_store.py's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii

from ansible.errors import AnsibleConnectionFailure, AnsibleError

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence, evidence_store
from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    NAME = 'evidence_store'
    ARGUMENT_SPEC = evidence_store.ARGUMENT_SPEC
    # It copies the bundle from the node: the task's own connection, never the local one ansible substitutes otherwise.
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        self._fetch_vars = task_vars or {}
        return super(ActionModule, self).run(tmp, task_vars)

    def task_result(self, params, check_mode):
        # Relative paths mean what they mean to ansible.builtin.fetch: the playbook's folder.
        for name in ('tarball', 'dest', 'baseline_link'):
            if params[name]:
                params[name] = self._loader.path_dwim(params[name])
        return evidence_store.store(params, check_mode, fetch=self._fetch)

    def _fetch(self, src, local_path, max_bytes):
        """Copy the node's ``src`` to ``local_path`` over the task's connection, as ansible.builtin.fetch does: slurp
        under become (the bundle belongs to the become user), the connection's own transfer otherwise.  A slurped copy
        of more than ``max_bytes`` is refused before it is decoded (the transfer's copy is measured by the caller)."""
        try:
            if self._connection.become:
                slurped = self._execute_module(module_name='ansible.legacy.slurp', module_args={'src': src},
                                               task_vars=self._fetch_vars)
                if slurped.get('failed') or 'content' not in slurped:
                    raise evidence.EvidenceError('slurp could not read it: %s' % slurped.get('msg', 'no content'))
                if slurped.get('encoding') != 'base64':
                    raise evidence.EvidenceError('slurp returned it as %r, not base64' % (slurped.get('encoding'),))
                if len(slurped['content']) > (max_bytes + 2) // 3 * 4:
                    raise evidence.EvidenceError('slurp returned %d base64 characters, more than a bundle of %d bytes '
                                                 '(max_bundle_bytes)' % (len(slurped['content']), max_bytes))
                try:
                    data = base64.b64decode(slurped['content'], validate=True)
                except (binascii.Error, TypeError, ValueError) as exc:
                    raise evidence.EvidenceError('slurp returned content that is not base64: %s' % exc)
                evidence.write_new_file(local_path, data)
            else:
                self._connection.fetch_file(src, local_path)
        except AnsibleConnectionFailure:
            raise   # the node is unreachable: the task says so, as fetch's would
        except AnsibleError as exc:
            raise evidence.EvidenceError('the transfer failed: %s' % exc)
