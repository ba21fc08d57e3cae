# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One evidence_store task: its options and its result, whoever runs it.

The action plugin (plugins/action/evidence_store.py) runs it inside the controller's worker process; the module of
the same name runs it where it is executed as a module.  ``store`` returns the task's result: ``failed: true`` and
``msg`` on failure, in the one failure shape of the collection.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence, validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname

ARGUMENT_SPEC = dict(
    tarball=dict(type='path', required=True),
    dest=dict(type='path', required=True),
    baseline=dict(type='dict'),
    baseline_link=dict(type='path'),
)


def store(params, check_mode=False):
    """The task's result for ``params`` (through ARGUMENT_SPEC): the bundle unpacked and verified, the baseline kept."""
    dest, tarball, link = params['dest'], params['tarball'], params['baseline_link']
    problems = validate.control_characters(params, skip=('baseline',))
    if os.path.dirname(os.path.abspath(tarball)) != os.path.abspath(dest):
        problems.append('tarball must be a file in dest (%s), got %r' % (dest, tarball))
    if link and params['baseline'] is None:
        problems.append('baseline_link needs baseline')
    if problems:
        return validate.invalid_result('evidence_store', problems)
    baseline_path = os.path.join(dest, 'baseline.json') if params['baseline'] is not None else None
    if check_mode:
        return dict(changed=False, location=dest, files=[], baseline=baseline_path, baseline_written=False, **SUCCESS)
    written = False
    try:
        files = evidence.unpack_bundle(tarball, dest)
        if baseline_path:
            if not os.path.lexists(baseline_path):
                text = json.dumps(params['baseline'], indent=4, sort_keys=True, default=str) + '\n'
                evidence.write_new_file(baseline_path, text.encode('utf-8'))
                written = True
            if link:
                evidence.replace_symlink(link, os.path.basename(os.path.normpath(dest)))
    except (evidence.EvidenceError, OSError) as exc:
        return dict(failed=True, msg='%s: cannot keep the evidence bundle %s: %s' % (hostname(), tarball, exc), **failure('evidence_error'))
    return dict(changed=True, location=dest, files=files, baseline=baseline_path, baseline_written=written, **SUCCESS)
