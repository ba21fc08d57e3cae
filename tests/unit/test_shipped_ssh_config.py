"""Shipped defaults fit a real fleet: ansible.cfg checks host keys and names no inventory, the built collection has no
ansible.cfg, and the lab's generated inventory carries the lab's own SSH settings (generated here into a temp dir).
ansible-lint over a tree with a generated lab inventory: tests/quality/test_lab_inventory_lint.py."""
import configparser
import os
import yaml

from lab.netval_lab import SSH_DIR
from lab.netval_lab import __main__ as lab_cli
from lab.netval_lab import inventory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_cfg():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, 'ansible.cfg'))
    return parser


def test_repository_ansible_cfg_names_no_inventory_and_keeps_host_key_checking():
    cfg = read_cfg()
    assert not cfg.has_option('defaults', 'inventory')
    assert cfg.getboolean('defaults', 'host_key_checking', fallback=True) is True
    ssh_args = cfg.get('ssh_connection', 'ssh_args', fallback='')
    assert 'StrictHostKeyChecking=no' not in ssh_args and '/dev/null' not in ssh_args


def test_the_built_collection_ships_no_ansible_cfg():
    with open(os.path.join(ROOT, 'galaxy.yml'), encoding='utf-8') as handle:
        galaxy = yaml.safe_load(handle)
    assert 'ansible.cfg' in galaxy['build_ignore'] and 'inventories/lab' in galaxy['build_ignore']


def lab_plan(nodes=2, peers=1):
    return lab_cli.plan('healthy-400g', {'path': 'lab/profiles/healthy-400g.yml', 'tier': '400g'}, nodes, peers)


def test_generated_lab_inventory_carries_its_own_strict_ssh_settings(tmp_path):
    folder = inventory.write(lab_plan(), str(tmp_path / 'lab'))
    with open(os.path.join(folder, 'hosts.yml'), encoding='utf-8') as handle:
        hosts_yml = yaml.safe_load(handle)
    groups = hosts_yml['all']['children']['lab']['children']
    hosts = dict(groups['new_nodes']['hosts'], **groups['known_good_peers']['hosts'])
    assert sorted(hosts) == ['node01', 'node02', 'peer01']
    for name, hvars in hosts.items():
        args = hvars['ansible_ssh_common_args'].split()
        assert 'StrictHostKeyChecking=yes' in args, name
        assert 'UserKnownHostsFile=%s' % os.path.join(SSH_DIR, 'known_hosts') in args, name
        assert '/dev/null' not in hvars['ansible_ssh_common_args'] and 'StrictHostKeyChecking=no' not in args
        assert hvars['ansible_ssh_pipelining'] is True and hvars['ansible_python_interpreter'] == '/usr/bin/python3'
        assert hvars['ansible_ssh_private_key_file'] == os.path.join(SSH_DIR, 'id_ed25519')
    assert os.path.isfile(os.path.join(folder, 'group_vars', 'all.yml'))
