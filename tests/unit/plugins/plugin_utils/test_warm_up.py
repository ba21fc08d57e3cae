"""warm_up: the controller's main process imports the filters once, so the workers forked for each task inherit them."""
import sys

from ansible_collections.gpufleet.netval.plugins.plugin_utils import warm_up as warm


def test_imports_every_filter_of_the_collection_once_per_process(monkeypatch):
    monkeypatch.setattr(warm, '_WARMED', set())
    names = warm.warm_up()
    ours = [n for n in names if n.startswith('ansible_collections.gpufleet.netval.plugins.filter.')]
    assert 'ansible_collections.gpufleet.netval.plugins.filter.node_verdict' in ours
    assert 'ansible.plugins.filter.core' in names and 'ansible.plugins.test.core' in names
    assert all(n in sys.modules for n in names)
    # the second call (the other callback) imports nothing again
    assert warm.warm_up() == []


def test_a_package_or_module_that_fails_to_import_is_left_to_the_plugin_loader(monkeypatch):
    monkeypatch.setattr(warm, '_WARMED', set())
    seen = []

    def importer(name):
        seen.append(name)
        if name in ('missing.package', 'ansible.plugins.test.core'):
            raise ImportError(name)
        return __import__(name, fromlist=['*'])

    names = warm.warm_up(packages=('missing.package', 'ansible.plugins.test'), importer=importer)
    assert 'missing.package' in seen and 'ansible.plugins.test.core' in seen
    assert 'ansible.plugins.test.core' not in names and 'ansible.plugins.test.files' in names
