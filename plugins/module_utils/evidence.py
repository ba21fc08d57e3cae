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

import hashlib
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile

MANIFEST = 'MANIFEST.sha256'
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
    """Create ``path`` (never over anything, never through a symlink), write ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    with os.fdopen(fd, 'wb') as handle:
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


def read_manifest(folder):
    """[(digest, relative path)] of the folder's MANIFEST.sha256; ValueError for a line that is not sha256sum's."""
    entries = []
    with open(os.path.join(folder, MANIFEST), 'r') as handle:
        for line in handle:
            line = line.rstrip('\n')
            if line:
                digest, rel = line.split('  ', 1)
                entries.append((digest, rel))
    return entries


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


def unpack_bundle(tarball, folder):
    """Unpack the fetched bundle ``tarball`` into ``folder`` (the folder it was fetched to) and verify its manifest.

    Only folders and regular files at paths inside ``folder`` are taken; a link, a device or a path that leaves the
    folder is refused, and so is a file that is already there (nothing is overwritten, never through a symlink).
    Every file is fsynced.  Returns the manifest's relative paths; raises EvidenceError naming what is wrong, every file
    whose checksum does not match included.
    """
    real_dir(folder)
    try:
        archive = tarfile.open(tarball, mode='r:*')
    except (OSError, tarfile.TarError) as exc:
        raise EvidenceError('cannot open the bundle %s: %s' % (tarball, exc))
    with archive:
        try:
            members = archive.getmembers()
        except (OSError, tarfile.TarError, EOFError) as exc:
            raise EvidenceError('the bundle %s is damaged: %s' % (tarball, exc))
        for member in members:
            if not (member.isdir() or member.isreg()):
                raise EvidenceError('the bundle %s holds %r, which is neither a file nor a folder' % (tarball, member.name))
        # Every path is checked before anything is written.
        targets = sorted(((os.path.join(folder, _member_path(member.name)), member) for member in members), key=lambda target: target[0])
        for path, member in targets:
            if member.isdir():
                os.makedirs(path, 0o755, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            try:
                write_new_file(path, archive.extractfile(member).read())
            except FileExistsError:
                raise EvidenceError('%s already exists; evidence is never overwritten' % path)
    for base, _dirs, _files in os.walk(folder, topdown=False):
        fsync_dir(base)
    if not os.path.isfile(os.path.join(folder, MANIFEST)):
        raise EvidenceError('the bundle %s has no %s' % (tarball, MANIFEST))
    try:
        entries = read_manifest(folder)
        bad = mismatches(folder, entries)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise EvidenceError('the manifest of %s cannot be read as sha256sum lines: %s' % (folder, exc))
    if bad:
        raise EvidenceError('checksums do not match in %s: %s' % (folder, ', '.join(bad)))
    return [rel for _digest, rel in entries]


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
    netdev_name, device_name, test_name = _Namer(), _Namer(), _Namer()
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
    for index, test in enumerate(node_result.get('tests') or []):
        raw = test.get('raw')
        if raw:
            files['tests/%s.txt' % test_name(test.get('id'), key=index)] = ('$ %s\n' % test['cmd'] if test.get('cmd') else '') + raw
    mapped = []
    for path in paths or []:
        if procfs_root and path.startswith('/proc/'):
            path = os.path.join(procfs_root, path[len('/proc/'):])
        mapped.append(path)
    return {'commands': commands, 'files': files, 'paths': mapped}
