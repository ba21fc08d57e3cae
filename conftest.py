"""pytest bootstrap: make this checkout importable as ansible_collections.gpufleet.netval.

The repository root *is* the collection.  Python needs it under an
``ansible_collections/gpufleet/netval`` path, so we point a symlink there
from a private folder and put that folder on sys.path before any test
module is imported.
"""
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
_COLLECTIONS = os.path.join(ROOT, '.cache', 'collections')
_LINK = os.path.join(_COLLECTIONS, 'ansible_collections', 'gpufleet', 'netval')

if os.path.basename(os.path.dirname(os.path.dirname(ROOT))) != 'ansible_collections':
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    if not os.path.islink(_LINK):
        os.symlink(ROOT, _LINK)
    if _COLLECTIONS not in sys.path:
        sys.path.insert(0, _COLLECTIONS)

collect_ignore_glob = ['.cache/*', 'build/*', '.venv/*', 'lab/*', 'molecule/*']


def pytest_collection_modifyitems(config, items):
    """Pin tests that share one resource to one xdist worker (``--dist loadgroup``).

    The lab tests share the namespaces, sshd and /run/netval-lab; the quality
    gates share ansible-test's caches.  Everything else spreads freely.
    """
    import pytest
    for item in items:
        path = str(item.fspath)
        if '/tests/lab/' in path or '/tests/e2e/' in path:
            item.add_marker(pytest.mark.xdist_group(name='lab'))
        elif '/tests/quality/' in path:
            item.add_marker(pytest.mark.xdist_group(name='quality'))
