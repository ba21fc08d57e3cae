"""Ansible against the lab over real SSH: every host answers as itself, and an info module reads its profile."""
import json
import os
import shutil
import tempfile

import pytest

from tests.lab.conftest import BIN, PROFILE, ROOT, run

pytestmark = pytest.mark.lab


def adhoc(*args):
    """``ansible -i inventories/lab all ARGS``; returns {host: result} (from the tree callback's per-host JSON files)."""
    tree = tempfile.mkdtemp(prefix='netval-lab-tree-')
    try:
        proc = run([os.path.join(BIN, 'ansible'), '-i', 'inventories/lab', 'all', '--tree', tree] + list(args), timeout=120)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
        results = {}
        for name in os.listdir(tree):
            with open(os.path.join(tree, name), encoding='utf-8') as handle:
                results[name] = json.load(handle)
        return results
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def profile_host(role):
    import sys  # pylint: disable=import-outside-toplevel
    sys.path.insert(0, os.path.join(ROOT, 'lab'))
    try:
        from netval_lab import profiles  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.remove(os.path.join(ROOT, 'lab'))
    return profiles.resolve_role(profiles.load_profile(PROFILE), role)['host']


def test_ping_every_host(lab):
    hosts = adhoc('-m', 'ansible.builtin.ping')
    assert sorted(hosts) == sorted(lab['order'])
    assert all(result.get('ping') == 'pong' for result in hosts.values()), hosts


def test_each_host_answers_with_its_own_hostname(lab):
    hosts = adhoc('-m', 'ansible.builtin.command', '-a', 'hostname')
    assert {host: result['stdout'] for host, result in hosts.items()} == {host: host for host in lab['order']}
    facts = adhoc('-m', 'ansible.builtin.setup', '-a', 'gather_subset=!all,!min,network filter=ansible_hostname')
    assert {host: result['ansible_facts']['ansible_hostname'] for host, result in facts.items()} == {h: h for h in lab['order']}


def test_host_tuning_info_reads_the_profile(lab):
    hosts = adhoc('-m', 'gpufleet.netval.host_tuning_info',
                  '-a', 'procfs_root={{ netval_procfs_root }} sysfs_root={{ netval_sysfs_root }}')
    assert sorted(hosts) == sorted(lab['order'])
    for host, result in hosts.items():
        expected = profile_host(lab['hosts'][host]['role'])
        assert not result.get('failed'), result
        assert result['hugepages']['total'] == expected['hugepages_total'], (host, result['hugepages'])
        assert result['cpu_governor']['uniform'] == expected['governor']
        assert 'iommu=pt' in result['cmdline']['tokens']
