"""Load tool outputs for parser tests.

Two sources, both with a provenance header of ``# `` lines closed by ``# ---``:

* ``shared(relpath)``: outputs captured by others on real hardware, read in
  place from ``../shared/fixtures/`` (never copied into this project).  If
  that folder is missing the test fails: CI must not silently skip them.
* ``local(relpath)``: outputs captured for this project (this machine, the
  lab, a lent GPU machine) or marked synthetic, under ``tests/fixtures/``.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_FIXTURES = os.path.normpath(os.path.join(ROOT, '..', 'shared', 'fixtures'))
LOCAL_FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')


def strip_header(raw):
    """Return (header_lines, body) of a fixture file with a ``# ---`` separated header."""
    lines = raw.splitlines(True)
    for index, line in enumerate(lines):
        if line.rstrip('\r\n') == '# ---':
            return [entry.rstrip('\n') for entry in lines[:index]], ''.join(lines[index + 1:])
    raise AssertionError('fixture has no "# ---" line ending its provenance header')


def _read(base, relpath):
    path = os.path.join(base, relpath)
    if not os.path.exists(path):
        raise AssertionError('fixture %s is missing (looked in %s)' % (relpath, base))
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def shared(relpath):
    """Body of a real output from ../shared/fixtures (header stripped)."""
    if not os.path.isdir(SHARED_FIXTURES):
        raise AssertionError('../shared/fixtures is missing: real-output tests cannot run')
    return strip_header(_read(SHARED_FIXTURES, relpath))[1]


def shared_path(relpath):
    """Absolute path inside ../shared/fixtures (for sysfs trees)."""
    path = os.path.join(SHARED_FIXTURES, relpath)
    if not os.path.exists(path):
        raise AssertionError('fixture %s is missing (looked in %s)' % (relpath, SHARED_FIXTURES))
    return path


def local(relpath):
    """Body of one of this project's own captured (or synthetic) outputs."""
    return strip_header(_read(LOCAL_FIXTURES, relpath))[1]


def local_path(relpath):
    return os.path.join(LOCAL_FIXTURES, relpath)


def local_tree(relpath, dest):
    """Rebuild a file tree stored as one fixture (JSON {relative path: content} after the header) under ``dest``.

    Real sysfs paths contain ':' which ansible-test forbids in file names, so
    captured trees are stored flat and rebuilt in a temporary folder.
    """
    import json
    tree = json.loads(local(relpath))
    for rel, content in tree.items():
        path = os.path.join(str(dest), rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(content)
    return str(dest)
