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

import errno
import json
import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence, validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname

ARGUMENT_SPEC = dict(
    tarball=dict(type='path'),
    src=dict(type='str'),
    src_sha256=dict(type='str'),
    dest=dict(type='path', required=True),
    baseline=dict(type='dict'),
    baseline_link=dict(type='path'),
    # What one node's bundle may be (evidence.BUNDLE_LIMITS; the evidence role passes its evidence_max_* defaults).
    max_bundle_bytes=dict(type='int', default=evidence.BUNDLE_LIMITS['max_bundle_bytes']),
    max_unpacked_bytes=dict(type='int', default=evidence.BUNDLE_LIMITS['max_unpacked_bytes']),
    max_members=dict(type='int', default=evidence.BUNDLE_LIMITS['max_members']),
)
LIMIT_OPTIONS = ('max_bundle_bytes', 'max_unpacked_bytes', 'max_members')

SHA256_RE = re.compile(r'[0-9a-f]{64}')
BASELINE = 'baseline.json'
# Where a file system has no hard links, the copy takes its name by an exclusive create and a rename instead.
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV)


def option_problems(params, can_fetch):
    """What is wrong with ``params`` (through ARGUMENT_SPEC); ``can_fetch``: whether this runner can bring ``src``."""
    dest, tarball, src = params['dest'], params['tarball'], params['src']
    problems = validate.control_characters(params, skip=('baseline',))
    if (tarball is None) == (src is None):
        problems.append('give either tarball (a bundle already on the controller) or src (the bundle on the node), '
                        'not %s' % ('both' if tarball else 'neither'))
    if tarball is not None and os.path.dirname(os.path.abspath(tarball)) != os.path.abspath(dest):
        problems.append('tarball must be a file in dest (%s), got %r' % (dest, tarball))
    if src is not None:
        if not can_fetch:
            problems.append('src is fetched over the node\'s connection by the evidence_store action plugin; '
                            'as a module, give tarball (fetched with ansible.builtin.fetch)')
        if not os.path.isabs(src) or not _bundle_name(os.path.basename(src)):
            problems.append('src must be the absolute path of a .tar.gz bundle on the node (a name of letters, digits and '
                            '. _ @ + -, not starting with a dot), got %r' % (src,))
        if SHA256_RE.fullmatch(params['src_sha256'] or '') is None:
            problems.append('src needs src_sha256, the bundle\'s sha256 as evidence_bundle returned it '
                            '(64 lowercase hex digits), got %r' % (params['src_sha256'],))
    elif params['src_sha256'] is not None:
        problems.append('src_sha256 needs src')
    if params['baseline_link'] and params['baseline'] is None:
        problems.append('baseline_link needs baseline')
    problems.extend(validate.problems_of(validate.check_number(name, params[name], 1, 1 << 50) for name in LIMIT_OPTIONS))
    return problems


def _bundle_name(name):
    """Whether the name the node gives its bundle may name a file on the controller: one safe evidence file name
    (evidence.safe_relpath: no dot-name, no path) ending in .tar.gz, so never baseline.json or MANIFEST.sha256."""
    try:
        return '/' not in name and name.endswith('.tar.gz') and bool(evidence.safe_relpath(name))
    except evidence.EvidenceError:
        return False


def fetch_bundle(fetch, src, dest, sha256, max_bytes=evidence.BUNDLE_LIMITS['max_bundle_bytes']):
    """Bring the node's bundle ``src`` into ``dest`` (made with its parents) under its own name through
    ``fetch(src, local_path, max_bytes)``, which writes ``local_path`` (and may refuse more than ``max_bytes``); returns the
    bundle's path in ``dest``.  The copy lands under a hidden name; one of more than ``max_bytes`` is refused before it is
    hashed, and it is linked into place only when its sha256 is the one the node's capture reported: a half-fetched or
    altered bundle never takes the name, and nothing is written over.  Raises EvidenceError."""
    try:
        os.makedirs(dest, 0o755, exist_ok=True)
    except OSError as exc:
        raise evidence.EvidenceError('cannot make the folder %s: %s' % (dest, exc))
    evidence.real_dir(dest)
    name = os.path.basename(src)
    final = os.path.join(dest, name)
    if os.path.lexists(final):
        raise evidence.EvidenceError('%s is already there: evidence is never overwritten' % final)
    partial = os.path.join(dest, '.%s.%s.partial' % (name, os.urandom(6).hex()))
    try:
        fetch(src, partial, max_bytes)
        size = os.path.getsize(partial)
        if size > max_bytes:
            raise evidence.EvidenceError('the copy of %s is %d bytes (limit %d, max_bundle_bytes)' % (src, size, max_bytes))
        got = evidence.sha256_file(partial)
        if got != sha256:
            raise evidence.EvidenceError('the copy of %s has sha256 %s, not the %s the node\'s capture reported '
                                         '(a damaged transfer, or the bundle changed on the node)' % (src, got, sha256))
        _take_name(partial, final)
    except OSError as exc:
        raise evidence.EvidenceError('cannot fetch %s into %s: %s' % (src, final, exc))
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)
    evidence.fsync_dir(dest)
    return final


def _take_name(partial, final):
    """Give the checked copy ``partial`` its name ``final``, never over a file: a hard link where the file system has
    them, else an exclusive create of ``final`` (it is ours from then on) and a rename over it."""
    try:
        os.link(partial, final)
        return
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    evidence.write_new_file(final, b'')
    os.rename(partial, final)


def store(params, check_mode=False, fetch=None):
    """The task's result for ``params`` (through ARGUMENT_SPEC): the bundle fetched (``src``, with ``fetch``: see
    fetch_bundle), unpacked and verified within the limits, the baseline written by the controller from ``baseline``
    (never a file of the bundle's: one that lists baseline.json is refused)."""
    dest, tarball, link = params['dest'], params['tarball'], params['baseline_link']
    problems = option_problems(params, fetch is not None)
    if problems:
        return validate.invalid_result('evidence_store', problems)
    limits = dict((name, params[name]) for name in LIMIT_OPTIONS)
    if params['src'] is not None:
        tarball = os.path.join(dest, os.path.basename(params['src']))
    baseline_path = os.path.join(dest, BASELINE) if params['baseline'] is not None else None
    if check_mode:
        return dict(changed=False, location=dest, tarball=tarball, files=[], ignored=[], baseline=baseline_path,
                    baseline_written=False, **SUCCESS)
    try:
        if params['src'] is not None:
            fetch_bundle(fetch, params['src'], dest, params['src_sha256'], limits['max_bundle_bytes'])
        files, ignored = evidence.unpack_bundle(tarball, dest, limits, reserved=(BASELINE,))
        if baseline_path:
            text = json.dumps(params['baseline'], indent=4, sort_keys=True, default=str) + '\n'
            try:
                evidence.write_new_file(baseline_path, text.encode('utf-8'))
            except FileExistsError:
                raise evidence.EvidenceError('%s is already there and is not the controller\'s; the baseline link was left alone'
                                             % baseline_path)
            if link:
                evidence.replace_symlink(link, os.path.basename(os.path.normpath(dest)))
    except (evidence.EvidenceError, OSError) as exc:
        return dict(failed=True, msg='%s: cannot keep the evidence bundle %s: %s' % (hostname(), tarball, validate.one_line(exc)),
                    **failure('evidence_error'))
    return dict(changed=True, location=dest, tarball=tarball, files=files, ignored=[validate.one_line(rel) for rel in ignored],
                baseline=baseline_path, baseline_written=baseline_path is not None, **SUCCESS)
