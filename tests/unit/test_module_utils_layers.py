"""plugins/module_utils is in layers (docs/DEVELOPING.md): a file imports from its own layer, the layers below it and
the machinery at the top, never from a layer above."""
import ast
import glob
import os

from tests.unit.fixtures import ROOT

MODULE_UTILS = os.path.join(ROOT, 'plugins', 'module_utils')
PREFIX = 'ansible_collections.gpufleet.netval.plugins.module_utils'
# What each layer may import from besides itself and the machinery (the files at the top).
BELOW = {
    'parsers': set(),
    'reads': {'parsers'},
    'policy': {'parsers'},
    'reporting': {'policy', 'parsers'},
    None: set(),
}


def layer_of(path):
    rel = os.path.relpath(path, MODULE_UTILS).split(os.sep)
    return rel[0] if len(rel) > 1 else None


def imported_layers(path):
    """(line, layer) of every import of a module_utils layer in ``path``; None for the machinery."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            rest = node.module[len(PREFIX):].lstrip('.').split('.')
            if rest and rest[0] in BELOW:
                found.append((node.lineno, rest[0]))
            elif rest == ['']:
                # from ...module_utils import X: X is a module of the machinery, or a layer package.
                found.extend((node.lineno, alias.name) for alias in node.names if alias.name in BELOW)
    return found


def test_every_module_utils_file_imports_only_its_own_layer_the_layers_below_and_the_machinery():
    paths = sorted(glob.glob(os.path.join(MODULE_UTILS, '**', '*.py'), recursive=True))
    assert len(paths) > 40
    wrong = []
    for path in paths:
        own = layer_of(path)
        allowed = BELOW[own] | {own}
        for line, layer in imported_layers(path):
            if layer not in allowed:
                wrong.append('%s:%d imports from %s/' % (os.path.relpath(path, ROOT), line, layer))
    assert wrong == []


def test_the_check_sees_an_import_from_above(tmp_path):
    path = tmp_path / 'x.py'
    path.write_text('from %s.reporting import report\nfrom %s import runner\n' % (PREFIX, PREFIX))
    assert imported_layers(str(path)) == [(1, 'reporting')]
