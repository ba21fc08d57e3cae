# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write evidence and reports so that nothing is lost: atomically, never over an existing bundle.

A bundle is built in a hidden sibling folder and renamed into place in one
step; if the final folder already exists the write is refused.  Every file is
created with O_EXCL and O_NOFOLLOW and fsynced, and so are the folders, before
the rename.  The manifest is in ``sha256sum`` format so ``sha256sum -c
MANIFEST.sha256`` verifies it from inside the folder.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import gzip
import hashlib
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib

MANIFEST = 'MANIFEST.sha256'
# What one bundle from a node may hold, unless the caller says otherwise (evidence_store's options, the evidence role's
# defaults): the .tar.gz as fetched, the tar stream it unpacks to (files and headers), its members (files and folders).
# A real 8-GPU node's bundle is tens of MB and a few hundred members.
BUNDLE_LIMITS = {'max_bundle_bytes': 256 * 1024 * 1024, 'max_unpacked_bytes': 1024 * 1024 * 1024, 'max_members': 4096}
# The manifest is read into memory: a real one is some tens of KB.
MANIFEST_MAX_BYTES = 4 * 1024 * 1024
# A tar header's own data (a long name, pax records) is read into memory by tarfile: a real one is a few hundred bytes.
_TAR_HEADER_MAX_BYTES = 64 * 1024
_CHUNK = 1024 * 1024
_SHA256_LINE = re.compile(r'([0-9a-f]{64})  (.*)')
_SAFE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._@+-]{0,254}')
STAMP_RE = re.compile(r'\d{8}T\d{6}Z')
_NOFOLLOW = getattr(os, 'O_NOFOLLOW', 0)


class EvidenceError(Exception):
    """The bundle could not be written; the message says where and why."""


def safe_relpath(name):
    """A relative path made of safe components (no '..', no absolute paths, no empty components)."""
    text = name if isinstance(name, str) else ''
    parts = text.split('/')
    if not text or any(_SAFE_NAME.fullmatch(part) is None for part in parts):
        raise EvidenceError('unsafe evidence file name %r (relative path of letters, digits, . _ @ + - components)' % (name,))
    return os.path.join(*parts)


def claim_names(entries):
    """Check that ``entries`` ([(relpath, what)]) name distinct files and no file is another's folder.

    Returns the problems (empty when every entry gets a file of its own).
    """
    problems = []
    owner = {}
    for rel, what in entries:
        try:
            rel = safe_relpath(rel)
        except EvidenceError as exc:
            problems.append('%s: %s' % (what, exc))
            continue
        if rel in owner:
            problems.append('%s and %s would both be written to %s' % (owner[rel], what, rel))
            continue
        owner[rel] = what
    for rel, what in sorted(owner.items()):
        parent = os.path.dirname(rel)
        while parent:
            if parent in owner:
                problems.append('%s is written to %s, which %s needs as a folder' % (owner[parent], parent, what))
            parent = os.path.dirname(parent)
    return problems


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b''):
            digest.update(block)
    return digest.hexdigest()


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new_file(path, data, mode=0o644):
    """Create ``path`` (never over anything, never through a symlink), write ``data`` (bytes, or a file object read in
    chunks) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    with os.fdopen(fd, 'wb') as handle:
        if hasattr(data, 'read'):
            shutil.copyfileobj(data, handle, _CHUNK)
        else:
            handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_manifest(folder):
    """Write MANIFEST.sha256 for every file under ``folder`` (sorted, relative paths).  Returns the entries."""
    entries = []
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            rel = os.path.relpath(path, folder)
            if rel == MANIFEST:
                continue
            entries.append((sha256_file(path), rel))
    entries.sort(key=lambda entry: entry[1])
    write_new_file(os.path.join(folder, MANIFEST), ''.join('%s  %s\n' % (digest, rel) for digest, rel in entries).encode('utf-8'))
    return entries


def manifest_entries(text):
    """[(digest, relative path)] of a MANIFEST.sha256's text, in its order.  ValueError naming the line for one that is
    not ``<64 hex>  <name>``, a name that is not a path inside the bundle's folder (safe_relpath: no absolute path, no
    '..', letters, digits and . _ @ + - components), the manifest itself, or a name listed twice."""
    entries = []
    seen = set()
    for number, line in enumerate(text.split('\n'), 1):
        if not line:
            continue
        match = _SHA256_LINE.fullmatch(line)
        if match is None:
            raise ValueError('line %d is not "<sha256>  <name>": %r' % (number, line[:200]))
        try:
            rel = safe_relpath(match.group(2))
        except EvidenceError as exc:
            raise ValueError('line %d: %s' % (number, exc))
        if rel == MANIFEST or rel in seen:
            raise ValueError('line %d lists %s %s' % (number, rel, 'again' if rel in seen else ', the manifest itself'))
        seen.add(rel)
        entries.append((match.group(1), rel))
    return entries


def read_manifest(folder):
    """[(digest, relative path)] of the folder's MANIFEST.sha256 (manifest_entries); ValueError for a line it refuses."""
    with open(os.path.join(folder, MANIFEST), 'r', encoding='utf-8') as handle:
        return manifest_entries(handle.read())


def mismatches(folder, entries):
    """The relative paths of ``entries`` whose file is missing or whose checksum does not match."""
    return [rel for digest, rel in entries
            if not os.path.isfile(os.path.join(folder, rel)) or sha256_file(os.path.join(folder, rel)) != digest]


def verify_manifest(folder):
    """Return the list of relative paths whose checksum does not match (empty when all verify)."""
    return mismatches(folder, read_manifest(folder))


def real_dir(path, create=False):
    """Make sure ``path`` is a directory and not a symlink (created with mode 0755 when ``create``)."""
    try:
        info = os.lstat(path)
    except OSError:
        if not create:
            raise EvidenceError('%s does not exist' % path)
        os.mkdir(path, 0o755)
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise EvidenceError('%s is a symlink; evidence is never written through a symlink' % path)
    if not stat.S_ISDIR(info.st_mode):
        raise EvidenceError('%s exists and is not a directory' % path)
    return path


def build_bundle(final_dir, files):
    """Create ``final_dir`` holding ``files`` ({relpath: text or bytes}) and a manifest, atomically.

    Refuses to replace an existing folder (or anything else of that name) and refuses names that
    collide.  Returns the manifest entries.
    """
    problems = claim_names([(rel, repr(rel)) for rel in files] + [(MANIFEST, 'the manifest')])
    if problems:
        raise EvidenceError('; '.join(problems))
    if os.path.lexists(final_dir):
        raise EvidenceError('%s already exists; evidence is never overwritten' % final_dir)
    parent = os.path.dirname(final_dir.rstrip('/'))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix='.%s.' % os.path.basename(final_dir), dir=parent)
    try:
        for rel, content in sorted(files.items()):
            path = os.path.join(staging, safe_relpath(rel))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = content if isinstance(content, bytes) else (content or '').encode('utf-8')
            write_new_file(path, data)
        entries = write_manifest(staging)
        for base, dirs, _files in os.walk(staging, topdown=False):
            fsync_dir(base)
        os.chmod(staging, 0o755)
        if os.path.lexists(final_dir):
            raise EvidenceError('%s appeared while writing; evidence is never overwritten' % final_dir)
        os.rename(staging, final_dir)
        fsync_dir(parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return entries


def tar_folder(folder, tarball):
    """Tar the contents of ``folder`` (flat, no top directory) into ``tarball`` atomically; refuses to overwrite."""
    if os.path.lexists(tarball):
        raise EvidenceError('%s already exists; evidence is never overwritten' % tarball)
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(tarball), dir=os.path.dirname(tarball))
    try:
        with os.fdopen(handle, 'wb') as raw:
            with tarfile.open(fileobj=raw, mode='w:gz') as archive:
                for name in sorted(os.listdir(folder)):
                    archive.add(os.path.join(folder, name), arcname=name)
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, 0o644)
        if os.path.lexists(tarball):
            raise EvidenceError('%s appeared while writing; evidence is never overwritten' % tarball)
        os.rename(tmp, tarball)
        fsync_dir(os.path.dirname(tarball) or '.')
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return sha256_file(tarball)


def _member_path(name):
    """The relative path of a tarball member, refused when it is absolute or climbs out ('..') of the folder."""
    parts = [part for part in name.split('/') if part not in ('', '.')]
    if name.startswith('/') or not parts or '..' in parts or '\0' in name:
        raise EvidenceError('the bundle holds %r, which is not a path inside it' % (name,))
    return os.path.join(*parts)


class _TarHeader(tarfile.TarInfo):
    """A tar header that tarfile reads on: not a sparse file, and no header data (long name, pax records) that would
    have it read more than _TAR_HEADER_MAX_BYTES into memory."""

    def _proc_member(self, archive):  # pylint: disable=arguments-renamed
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise EvidenceError('the bundle holds %r, a sparse file; a bundle holds plain files' % (self.name,))
        if self.type in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                         tarfile.SOLARIS_XHDTYPE) and self.size > _TAR_HEADER_MAX_BYTES:
            raise EvidenceError('the bundle holds a tar header of %d bytes (limit %d)' % (self.size, _TAR_HEADER_MAX_BYTES))
        return super(_TarHeader, self)._proc_member(archive)


class _Bounded(object):
    """The decompressed tar stream, read by tarfile in stream mode (small reads, forward only): past ``limit`` bytes in
    all it raises EvidenceError, before a gzip bomb costs memory or disk."""

    def __init__(self, raw, limit, tarball):
        self.raw, self.limit, self.tarball, self.count = raw, limit, tarball, 0

    def read(self, size=-1):
        size = self.limit + 1 - self.count if size is None or size < 0 else min(size, self.limit + 1 - self.count)
        data = self.raw.read(max(size, 0))
        self.count += len(data)
        if self.count > self.limit:
            raise EvidenceError('the bundle %s unpacks to more than %d bytes (max_unpacked_bytes)' % (self.tarball, self.limit))
        return data


def _members(tarball, limits):
    """Iterate (relative path, TarInfo, archive) over the bundle in one forward pass (the caller reads a regular
    member's data with archive.extractfile while it is the current one).  Every limit and every member is checked as
    it comes: neither a file nor a folder, a path outside the folder, a name twice, too many members or bytes."""
    size = os.path.getsize(tarball)
    if size > limits['max_bundle_bytes']:
        raise EvidenceError('the bundle %s is %d bytes (limit %d, max_bundle_bytes)' % (tarball, size, limits['max_bundle_bytes']))
    seen = set()
    declared = 0
    with gzip.open(tarball, 'rb') as raw:
        with tarfile.open(fileobj=_Bounded(raw, limits['max_unpacked_bytes'], tarball), mode='r|', tarinfo=_TarHeader) as archive:
            for member in archive:
                if len(seen) >= limits['max_members']:
                    raise EvidenceError('the bundle %s holds more than %d members (max_members)' % (tarball, limits['max_members']))
                if member.issparse() or not (member.isdir() or member.isreg()):
                    raise EvidenceError('the bundle %s holds %r, which is neither a file nor a folder' % (tarball, member.name))
                rel = _member_path(member.name)
                if rel in seen:
                    raise EvidenceError('the bundle %s holds %s twice; evidence is never overwritten' % (tarball, rel))
                seen.add(rel)
                declared += member.size if member.isreg() else 0
                if declared > limits['max_unpacked_bytes']:
                    raise EvidenceError('the bundle %s declares more than %d bytes of files (max_unpacked_bytes)'
                                        % (tarball, limits['max_unpacked_bytes']))
                yield rel, member, archive


def _read_bundle(tarball, limits):
    """One pass over the bundle, nothing written: ({relative path: sha256} of its regular files, each hashed once,
    the manifest's text)."""
    digests = {}
    manifest = None
    for rel, member, archive in _members(tarball, limits):
        if not member.isreg():
            continue
        if rel == MANIFEST:
            if member.size > MANIFEST_MAX_BYTES:
                raise EvidenceError('the manifest of %s is %d bytes (limit %d)' % (tarball, member.size, MANIFEST_MAX_BYTES))
            manifest = archive.extractfile(member).read()
            continue
        digest = hashlib.sha256()
        source = archive.extractfile(member)
        for block in iter(lambda: source.read(_CHUNK), b''):
            digest.update(block)
        digests[rel] = digest.hexdigest()
    return digests, manifest


def bundle_contents(tarball, limits=None):
    """({relative path: sha256} of the fetched bundle's regular files, its manifest's text or None), read in one pass
    within ``limits`` (BUNDLE_LIMITS), nothing written.  Raises EvidenceError naming what is wrong."""
    limits = dict(BUNDLE_LIMITS, **(limits or {}))
    try:
        digests, manifest = _read_bundle(tarball, limits)
    except (OSError, EOFError, tarfile.TarError, zlib.error) as exc:
        raise EvidenceError('the bundle %s cannot be read as a .tar.gz: %s' % (tarball, exc))
    try:
        return digests, None if manifest is None else manifest.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise EvidenceError('the manifest of %s is not UTF-8 text: %s' % (tarball, exc))


def unpack_bundle(tarball, folder, limits=None, reserved=()):
    """Unpack the fetched bundle ``tarball`` into ``folder`` (the folder it was fetched to), verified against its manifest.

    First one pass that writes nothing: every member must be a folder or a regular file at a path inside ``folder``,
    named once, within ``limits`` (BUNDLE_LIMITS: the .tar.gz's bytes, the bytes it unpacks to, its members; checked
    as the bundle is read, so a bomb costs neither memory nor disk); every file is hashed once and the manifest read
    (manifest_entries: names inside the folder, none twice, none of ``reserved``) and compared.  Then only the files the
    manifest lists are written (the manifest with them), never over a file and never through a symlink, each fsynced.
    Returns (the manifest's relative paths, the files it does not list, which were not written).  Raises EvidenceError
    naming what is wrong, every file whose checksum does not match included; what the first pass finds leaves nothing
    written (a file already there, or a full disk, is found while writing).
    """
    real_dir(folder)
    limits = dict(BUNDLE_LIMITS, **(limits or {}))
    try:
        digests, manifest = _read_bundle(tarball, limits)
    except (OSError, EOFError, tarfile.TarError, zlib.error) as exc:
        raise EvidenceError('the bundle %s cannot be read as a .tar.gz: %s' % (tarball, exc))
    if manifest is None:
        raise EvidenceError('the bundle %s has no %s' % (tarball, MANIFEST))
    try:
        entries = manifest_entries(manifest.decode('utf-8'))
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvidenceError('the manifest of %s cannot be read as sha256sum lines: %s' % (tarball, exc))
    taken = [rel for _digest, rel in entries if rel in reserved]
    if taken:
        raise EvidenceError('the bundle %s lists a %s of its own: that name is the controller\'s to write; nothing was written '
                            'and no link was changed' % (tarball, ', '.join(taken)))
    bad = [rel for digest, rel in entries if digests.get(rel) != digest]
    if bad:
        raise EvidenceError('checksums do not match in %s: %s' % (folder, ', '.join(
            '%s%s' % (rel, '' if rel in digests else ' (not in the bundle)') for rel in bad)))
    listed = set(rel for _digest, rel in entries) | set([MANIFEST])
    problems = claim_names([(rel, rel) for rel in listed])
    if problems:
        raise EvidenceError('the manifest of %s: %s' % (tarball, '; '.join(problems)))
    try:
        for rel, member, archive in _members(tarball, limits):
            if rel not in listed or not member.isreg():
                continue
            path = os.path.join(folder, rel)
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            try:
                write_new_file(path, archive.extractfile(member))
            except FileExistsError:
                raise EvidenceError('%s already exists; evidence is never overwritten' % path)
    except (OSError, EOFError, tarfile.TarError, zlib.error) as exc:
        raise EvidenceError('the bundle %s cannot be unpacked into %s: %s' % (tarball, folder, exc))
    for base, _dirs, _files in os.walk(folder, topdown=False):
        fsync_dir(base)
    ignored = sorted(rel for rel in digests if rel not in listed)
    return [rel for _digest, rel in entries], ignored


def replace_file(path, data, mode=0o644):
    """Write ``data`` (text or bytes) to ``path`` atomically, replacing a regular file of that name.

    For files that are meant to change in place (a node_exporter ``.prom`` textfile, a latest drift report): a
    reader sees the old file or the new one, never a half-written one.  The new content goes to a hidden file in the
    same folder (O_EXCL, O_NOFOLLOW, fsynced), which is then renamed over ``path``, and the folder is fsynced.  A
    symlink, a directory or anything else that is not a regular file at ``path`` is refused with EvidenceError, and so
    is a folder that does not exist.
    """
    folder = os.path.dirname(path) or '.'
    if os.path.lexists(path):
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise EvidenceError('%s exists and is not a regular file (%s); it is never replaced'
                                % (path, 'a symlink' if stat.S_ISLNK(info.st_mode) else 'a directory' if stat.S_ISDIR(info.st_mode) else 'special'))
    if not os.path.isdir(folder):
        raise EvidenceError('%s is not a directory; the file is written next to where it lands' % folder)
    payload = data if isinstance(data, bytes) else (data or '').encode('utf-8')
    for _attempt in range(100):
        tmp = os.path.join(folder, '.%s.%s' % (os.path.basename(path), os.urandom(6).hex()))
        try:
            write_new_file(tmp, payload, mode)
            break
        except FileExistsError:
            continue
    else:
        raise EvidenceError('cannot create a temporary file next to %s' % path)
    try:
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def foreign_link_problem(link):
    """Why ``link`` may not be replaced (it exists and is not our symlink to a run folder), or None."""
    if not os.path.lexists(link):
        return None
    if os.path.islink(link):
        target = os.readlink(link)
        if STAMP_RE.fullmatch(target):
            return None
        return '%s is a symlink to %s, not to a run folder of ours; move it away' % (link, target)
    return '%s exists and is not a symlink (a %s); move it away' % (link, 'directory' if os.path.isdir(link) else 'file')


def replace_symlink(link, target):
    """Point ``link`` at ``target`` (a run folder name) atomically.

    Only our own symlink is replaced: one that points at a run timestamp. A regular file, a
    directory or a symlink elsewhere of that name is refused with EvidenceError.
    """
    problem = foreign_link_problem(link)
    if problem:
        raise EvidenceError(problem)
    folder = os.path.dirname(link) or '.'
    for _attempt in range(100):
        tmp = os.path.join(folder, '.%s.%s' % (os.path.basename(link), os.urandom(6).hex()))
        try:
            os.symlink(target, tmp)
            break
        except FileExistsError:
            continue
    else:
        raise EvidenceError('cannot create a temporary symlink next to %s' % link)
    try:
        os.rename(tmp, link)
    except BaseException:
        os.unlink(tmp)
        raise
    fsync_dir(folder)


def _evidence_name(text):
    return re.sub(r'[^A-Za-z0-9._@+-]+', '_', str(text)).strip('_') or 'item'


class _Namer(object):
    """File-name-safe names that stay one-to-one: a second text that flattens to a taken name gets -2, -3..."""

    def __init__(self):
        self.owner = {}

    def __call__(self, text, key=None):
        """The name for ``text``; ``key`` (default: the text) says which calls are for the same thing."""
        key = text if key is None else key
        base = name = _evidence_name(text)
        number = 2
        while self.owner.get(name, key) != key:
            name = '%s-%d' % (base, number)
            number += 1
        self.owner[name] = key
        return name


def test_output_paths(tests):
    """{index in ``tests``: the bundle path of that test's raw output} for every test entry with a raw output: each under
    ``tests/`` named after its id, one file per entry (an id that flattens to a taken name gets -2, -3...).  The evidence
    plan writes them there; a re-grade reads them back from there."""
    namer = _Namer()
    paths = {}
    for index, test in enumerate(tests or []):
        if isinstance(test, dict) and test.get('raw') and isinstance(test['raw'], str):
            paths[index] = 'tests/%s.txt' % namer(test.get('id'), key=index)
    return paths


def outputs_in_bundle(node_result):
    """The node's verdict once its bundle is stored: each test's whole output (``raw``) replaced by ``raw_file``, the
    bundle path that holds it (``test_output_paths``); figures, verbatim lines and commands stay.  The controller keeps
    every node's verdict until the report, and the raw outputs are most of it.  Anything but a verdict with a list of
    tests comes back as it is: letting go of memory never costs a node its report."""
    if not isinstance(node_result, dict) or not isinstance(node_result.get('tests'), list):
        return node_result
    paths = test_output_paths(node_result['tests'])
    tests = []
    for index, test in enumerate(node_result['tests']):
        if isinstance(test, dict) and 'raw' in test:
            test = dict((key, value) for key, value in test.items() if key != 'raw')
            if index in paths:
                test['raw_file'] = paths[index]
        tests.append(test)
    return dict(node_result, tests=tests)


def evidence_plan(node_result, profile, facts, procfs_root='/proc', paths=None):
    """What the evidence bundle of one node holds beyond the fixed checklist.

    Returns {commands: [...], files: {relpath: content}, paths: [...]}.  The commands cover every NIC the preflight
    facts know, Down and inactive ones included (a dead port is what the provider most needs to see): ethtool
    (settings, driver, rings, channels, features, pause, counters) for every netdev of every RDMA device and every
    netdev nic_info read, and flint, mlxconfig, lspci and mlxlink (module, counters, eye) for every RDMA device.
    """
    node_result = node_result or {}
    facts = facts or {}
    rdma = facts.get('rdma') or {}
    devices = rdma.get('devices') or {}
    commands = []
    netdevs = []
    netdev_name, device_name = _Namer(), _Namer()
    # Live ports first (the tested netdevs), then every RDMA device's netdevs, then whatever else nic_info read.
    candidates = [port.get('netdev') for port in rdma.get('live_ports') or []]
    for device in sorted(devices):
        info = devices[device] or {}
        candidates += list(info.get('netdevs') or [])
        candidates += [gid.get('netdev') for gid in info.get('gids') or []]
    candidates += sorted(((facts.get('nic') or {}).get('nics') or {}))
    for netdev in candidates:
        if netdev and netdev not in netdevs:
            netdevs.append(netdev)
    for netdev in netdevs:
        name = netdev_name(netdev)
        for flag, suffix in ((None, 'link'), ('-i', 'driver'), ('-g', 'ring'), ('-l', 'channels'), ('-k', 'features'),
                             ('-a', 'pause'), ('-S', 'counters')):
            argv = ['ethtool'] + ([flag] if flag else []) + [netdev]
            commands.append({'name': 'ethtool.%s.%s.txt' % (name, suffix), 'argv': argv})
    for device in sorted(devices):
        pci = devices[device].get('pci_address')
        if not pci:
            continue
        commands.append({'name': 'flint.%s.txt' % device_name(device), 'argv': ['flint', '-d', pci, 'q']})
        commands.append({'name': 'mlxconfig.%s.txt' % device_name(device), 'argv': ['mlxconfig', '-d', pci, 'q']})
        commands.append({'name': 'lspci-vvv.%s.txt' % device_name(device), 'argv': ['lspci', '-vvv', '-s', pci]})
        # The link's state, BER, FEC and cable facts, for the letter: a Down port's most of all.
        commands.append({'name': 'mlxlink.%s.txt' % device_name(device), 'argv': ['mlxlink', '-d', pci, '-m', '-c', '-e']})
    files = {
        'results.json': json.dumps(node_result, indent=2, sort_keys=True, default=str),
        'thresholds.json': json.dumps(profile or {}, indent=2, sort_keys=True, default=str),
        'preflight.json': json.dumps(facts, indent=2, sort_keys=True, default=str),
    }
    tests = node_result.get('tests') or []
    for index, path in sorted(test_output_paths(tests).items()):
        test = tests[index]
        files[path] = ('$ %s\n' % test['cmd'] if test.get('cmd') else '') + test['raw']
    mapped = []
    for path in paths or []:
        if procfs_root and path.startswith('/proc/'):
            path = os.path.join(procfs_root, path[len('/proc/'):])
        mapped.append(path)
    return {'commands': commands, 'files': files, 'paths': mapped}
