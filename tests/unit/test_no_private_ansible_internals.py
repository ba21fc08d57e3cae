"""The collection's plugins never reach into another object's private attributes ("runs on the Ansible operators run":
a private name can change in any ansible-core release), except the few ansible-core's own callbacks read, so a release
that renamed them would break ansible-core first."""
import ast
import glob
import os

from tests.unit.fixtures import ROOT

# name -> why reading it is as safe as a public one
ALLOWED = {
    '_uuid': "ansible-core's default and junit callbacks key tasks and results on Task._uuid",
    '_file_name': "ansible-core's default callback prints Playbook._file_name in its PLAYBOOK banner",
    '_replace': 'a namedtuple method, public despite its underscore',
    '_proc_member': 'tarfile.TarInfo hook (the standard library, not Ansible), overridden to refuse links and devices',
}


def private_reads(path):
    """(line, name) of every read of a private attribute of an object other than self/cls, getattr's included."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id in ('self', 'cls')):
            name = node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ('getattr', 'hasattr')
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ('self', 'cls'))):
            name = node.args[1].value
        if name and name.startswith('_') and not name.startswith('__'):
            found.append((node.lineno, name))
    return found


def test_no_plugin_reads_a_private_attribute_beyond_those_ansible_cores_callbacks_read():
    paths = sorted(glob.glob(os.path.join(ROOT, 'plugins', '**', '*.py'), recursive=True))
    assert len(paths) > 60
    wrong = ['%s:%d reads %s' % (os.path.relpath(path, ROOT), line, name)
             for path in paths for line, name in private_reads(path) if name not in ALLOWED]
    assert wrong == []


def test_the_check_sees_a_private_read_and_a_getattr_of_one(tmp_path):
    path = tmp_path / 'x.py'
    path.write_text("role = task._role\nname = getattr(role, '_role_name', None)\nown = self._display\nok = task._uuid\n")
    assert private_reads(str(path)) == [(1, '_role'), (2, '_role_name'), (4, '_uuid')]
