# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller reads back from its evidence folder: the accepted fleet's baselines and the bundles to re-grade.

The evidence folder is ``<evidence_dir>/<node>/<UTC stamp>/`` (one bundle: the fetched ``.tar.gz``, its files unpacked
and ``MANIFEST.sha256``; ``baseline.json`` beside them on acceptance, the controller's own) with
``<evidence_dir>/<node>/baseline`` pointing at the newest accepted one (evidence_store, validation_report).

A bundle's files came from the node under test: nothing of a bundle is read before its checksums verify
(``verify_bundle``: the manifest parses, every file it lists is there with its sha256, and the fetched ``.tar.gz``
beside them holds the same manifest and files), only files the manifest lists are read, each within a size limit, and
what is read passes the trust boundary (node_input).  A bundle that does not verify is reported, never read further.
No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline as baseline_doc
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import node_input

BASELINE = 'baseline.json'
BASELINE_LINK = 'baseline'
# What a re-grade reads of a bundle (the evidence plan writes them: evidence.evidence_plan).
RESULTS, PREFLIGHT, PROFILE = 'results.json', 'preflight.json', 'thresholds.json'
# A real 8-GPU node's results.json is about 1 MB with every raw output; a baseline a few hundred KB.
JSON_MAX_BYTES = 64 * 1024 * 1024
_DATE = re.compile(r'(\d{4})-?(\d{2})-?(\d{2})(?:[T ]?(\d{2}):?(\d{2}):?(\d{2})Z?)?')


class BundleError(Exception):
    """A bundle cannot be read; the message names the folder and what is wrong."""


def _read_json(path, what):
    size = os.path.getsize(path)
    if size > JSON_MAX_BYTES:
        raise BundleError('%s is %d bytes (limit %d)' % (what, size, JSON_MAX_BYTES))
    with open(path, 'rb') as handle:
        data = handle.read()
    try:
        return json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError('%s is not JSON: %s' % (what, exc))


def _node_folders(evidence_dir):
    try:
        names = sorted(os.listdir(evidence_dir))
    except OSError:
        return []
    return [name for name in names if not name.startswith('.') and os.path.isdir(os.path.join(evidence_dir, name))
            and not os.path.islink(os.path.join(evidence_dir, name))]


def accepted_baselines(evidence_dir, skip=()):
    """({node: baseline document}, problems) of every node under ``evidence_dir`` whose ``baseline`` link leads to a
    ``baseline.json`` (an accepted node), except the nodes in ``skip``; a baseline that cannot be read is a problem
    (a sentence naming its path), never an error."""
    docs, problems = {}, []
    if not evidence_dir or not os.path.isdir(evidence_dir):
        return docs, problems
    for name in _node_folders(evidence_dir):
        if name in skip:
            continue
        path = os.path.join(evidence_dir, name, BASELINE_LINK, BASELINE)
        if not os.path.isfile(path):
            continue
        try:
            doc = baseline_doc.check_document(_read_json(path, path))
        except (BundleError, baseline_doc.BaselineError, OSError) as exc:
            problems.append('%s: %s' % (path, exc))
            continue
        if doc.get('node') != name:
            problems.append('%s: its node is %r, not %r (the folder it is in)' % (path, doc.get('node'), name))
            continue
        docs[name] = doc
    return docs, problems


def link_baseline(evidence_dir, node, stamp):
    """Point ``<evidence_dir>/<node>/baseline`` at the run folder ``stamp`` when that folder holds the controller's
    ``baseline.json``: the node's acceptance, confirmed once the run's report is known.  Returns the link's path, or None
    when the folder has no baseline.  Raises EvidenceError (a link of that name that is not ours)."""
    folder = os.path.join(evidence_dir, node, stamp)
    if not os.path.isfile(os.path.join(folder, BASELINE)) or os.path.islink(folder):
        return None
    link = os.path.join(evidence_dir, node, BASELINE_LINK)
    evidence.replace_symlink(link, stamp)
    return link


# ---------------------------------------------------------------------------------------------------------------
# Bundles


def since_seconds(text):
    """Seconds since the epoch of a date or time an operator gives (2026-11-01, 20261101, 2026-11-01T10:00:00Z,
    20261101T100000Z: UTC), or None when it is not one."""
    match = _DATE.fullmatch(str(text or '').strip())
    if not match:
        return None
    parts = [part or '00' for part in match.groups()]
    return baseline_doc.stamp_seconds('%s%s%sT%s%s%sZ' % tuple(parts))


def _is_bundle(folder):
    return os.path.isfile(os.path.join(folder, evidence.MANIFEST)) and not os.path.islink(folder)


def find_bundles(evidence_dir=None, nodes=None, folders=None, since=None):
    """[(node, stamp, folder)] of the bundles to re-grade, oldest first, and the problems (sentences) of what was asked
    and not found.

    ``folders``: each a bundle folder (``<node>/<stamp>``, holding MANIFEST.sha256), a node's folder (its stamps) or an
    evidence folder (its nodes' stamps); else every bundle under ``evidence_dir``.  ``nodes`` keeps those nodes'
    bundles, ``since`` (seconds) those stamped then or later.
    """
    found, problems = [], []
    roots = list(folders or []) if folders else ([evidence_dir] if evidence_dir else [])
    if not roots:
        return found, ['no evidence folder and no bundle folder to re-grade']
    for root in roots:
        root = os.path.abspath(root)
        if not os.path.isdir(root):
            problems.append('%s is not a folder' % root)
            continue
        if _is_bundle(root):
            candidates = [root]
        else:
            candidates = []
            for name in _node_folders(root):
                inner = os.path.join(root, name)
                if evidence.STAMP_RE.fullmatch(name) and _is_bundle(inner):
                    candidates.append(inner)
                else:
                    candidates.extend(os.path.join(inner, stamp) for stamp in _node_folders(inner)
                                      if evidence.STAMP_RE.fullmatch(stamp) and _is_bundle(os.path.join(inner, stamp)))
        if not candidates:
            problems.append('%s holds no evidence bundle (a <node>/<UTC stamp> folder with %s)' % (root, evidence.MANIFEST))
        for folder in candidates:
            stamp, node = os.path.basename(folder), os.path.basename(os.path.dirname(folder))
            if nodes and node not in nodes:
                continue
            if since is not None and (baseline_doc.stamp_seconds(stamp) or 0) < since:
                continue
            if (node, stamp, folder) not in found:
                found.append((node, stamp, folder))
    if nodes:
        missing = sorted(set(nodes) - set(node for node, _stamp, _folder in found))
        if missing:
            problems.append('no bundle of %s%s' % (', '.join(missing), ' since the date given' if since is not None else ''))
    found.sort(key=lambda item: (item[1], item[0]))
    return found, problems


def _tarballs(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith('.tar.gz') and not name.startswith('.')
                  and os.path.isfile(os.path.join(folder, name)) and not os.path.islink(os.path.join(folder, name)))


def verify_bundle(folder, limits=None):
    """(the manifest's relative paths, problems): nothing of the bundle may be read unless ``problems`` is empty.  The
    manifest must parse (names inside the folder, none twice), every file it lists must be there, a regular file, with
    its sha256, and the fetched ``.tar.gz`` beside them must hold the same manifest and the same files (the copy the
    controller checked against the node's capture when it fetched it)."""
    limits = dict(evidence.BUNDLE_LIMITS, **(limits or {}))
    try:
        entries = evidence.read_manifest(folder)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return [], ['its %s cannot be read: %s' % (evidence.MANIFEST, exc)]
    problems = []
    listed = []
    total = 0
    for digest, rel in entries:
        path = os.path.join(folder, rel)
        if os.path.islink(path) or not os.path.isfile(path):
            problems.append('%s is listed but %s' % (rel, 'a link' if os.path.islink(path) else 'missing'))
            continue
        total += os.path.getsize(path)
        if total > limits['max_unpacked_bytes']:
            return [], ['its files hold more than %d bytes (max_unpacked_bytes)' % limits['max_unpacked_bytes']]
        if evidence.sha256_file(path) != digest:
            problems.append('%s does not match its checksum' % rel)
        listed.append(rel)
    tarballs = _tarballs(folder)
    if len(tarballs) != 1:
        problems.append('it holds %s, not the one fetched .tar.gz its files were unpacked from'
                        % ('no .tar.gz' if not tarballs else '%d of them (%s)' % (len(tarballs), ', '.join(tarballs))))
    else:
        try:
            digests, manifest = evidence.bundle_contents(os.path.join(folder, tarballs[0]), limits)
            with open(os.path.join(folder, evidence.MANIFEST), 'r', encoding='utf-8') as handle:
                mine = handle.read()
        except (evidence.EvidenceError, OSError, UnicodeDecodeError) as exc:
            problems.append(str(exc))
        else:
            if manifest != mine:
                problems.append('its %s differs from the one in %s' % (evidence.MANIFEST, tarballs[0]))
            differ = [rel for digest, rel in entries if digests.get(rel) != digest]
            if differ:
                problems.append('%s: %s differ from the files of the fetched bundle' % (tarballs[0], ', '.join(differ[:10])))
    return listed, problems


def _text_file(folder, rel, limit):
    path = os.path.join(folder, rel)
    size = os.path.getsize(path)
    if size > limit:
        raise BundleError('%s is %d bytes (limit %d)' % (rel, size, limit))
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


def read_bundle(folder, node, limits=None):
    """A verified bundle's results (``results.json``), preflight facts (``preflight.json``), profile (``thresholds.json``)
    and raw test outputs ({index in results' tests: text, the ``$ cmd`` line removed}), each through the trust boundary;
    ``problems`` are the node_data sentences of what the boundary had to change.  Raises BundleError naming what is
    wrong: a bundle that does not verify, a file the re-grade needs that the manifest does not list or that is not JSON."""
    listed, problems = verify_bundle(folder, limits)
    if problems:
        raise BundleError('checksums do not verify: %s' % '; '.join(problems))
    listed = set(listed)
    data = {}
    for key, rel in (('results', RESULTS), ('preflight', PREFLIGHT), ('profile', PROFILE)):
        if rel not in listed:
            raise BundleError('its manifest does not list %s' % rel)
        data[key] = _read_json(os.path.join(folder, rel), rel)
    results, cleaned = node_input.clean_node(node, data['results'])
    if not isinstance(results, dict) or not isinstance(results.get('tests'), list):
        raise BundleError('%s is not a node result (a dict with its tests)' % RESULTS)
    facts, facts_cleaner = node_input.clean_value('%s.%s' % (node, PREFLIGHT), data['preflight'])
    profile, profile_cleaner = node_input.clean_value('%s.%s' % (node, PROFILE), data['profile'])
    outputs = {}
    # The paths are the evidence plan's, from the tests as they were written (before the boundary made any text visible).
    written = data['results'].get('tests') if isinstance(data['results'], dict) else None
    for index, rel in sorted(evidence.test_output_paths(written if isinstance(written, list) else []).items()):
        if index >= len(results['tests']) or not isinstance(results['tests'][index], dict):
            continue
        if rel not in listed:
            continue
        text = _text_file(folder, rel, node_input.LIMITS['raw_chars'])
        cmd = results['tests'][index].get('cmd')
        head = '$ %s\n' % cmd if isinstance(cmd, str) and cmd else ''
        outputs[index] = text[len(head):] if head and text.startswith(head) else text
    return {'results': results, 'preflight': facts if isinstance(facts, dict) else {}, 'profile': profile if isinstance(profile, dict) else {},
            'outputs': outputs, 'problems': cleaned + facts_cleaner.problems + profile_cleaner.problems}
