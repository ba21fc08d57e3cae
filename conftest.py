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
