"""No module documents (or, through the module harness, returns) a result key that Ansible reserves for itself.

Ansible reads ``unreachable: true`` in any task result as "this host cannot be reached" and takes the host out of the run;
``skipped``, ``failed``, ``results``, ``ansible_facts`` and the rest change how a result is handled just as silently.
jumbo_ping once returned ``unreachable`` for a ping that lost every frame, and the node vanished from its own report.
"""
import glob
import os

import pytest
import yaml

from tests.unit.fixtures import ROOT
from tests.unit.plugins.modules.utils import RESERVED_RESULT_KEYS, reserved_keys


MODULES = sorted(glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py')))


def documented_return(path):
    namespace = {}
    with open(path, encoding='utf-8') as handle:
        source = handle.read()
    # The documentation blocks are plain assignments of raw strings at the top of the file.
    start = source.index("RETURN = r'''")
    exec(source[start:source.index("'''", start + 13) + 3], namespace)  # pylint: disable=exec-used
    return yaml.safe_load(namespace['RETURN']) or {}


@pytest.mark.parametrize('path', MODULES, ids=[os.path.basename(p) for p in MODULES])
def test_no_module_documents_a_reserved_result_key(path):
    keys = documented_return(path)
    assert reserved_keys(keys) == [], '%s documents keys Ansible reserves: %s' % (os.path.basename(path), reserved_keys(keys))
    # msg is Ansible's message of a failed task; a module may document it only as that.
    if 'msg' in keys:
        assert 'fail' in str(keys['msg'].get('description')).lower(), '%s documents msg with another meaning' % path


def test_the_check_itself_catches_the_keys_that_lost_nodes():
    assert len(MODULES) >= 15, MODULES
    assert reserved_keys({'dest_unreachable': True, 'passed': False}) == []
    assert reserved_keys({'unreachable': True, 'skipped': False, '_ansible_no_log': True}) == ['_ansible_no_log', 'skipped', 'unreachable']
    assert {'unreachable', 'failed', 'skipped', 'ansible_facts'} <= RESERVED_RESULT_KEYS
