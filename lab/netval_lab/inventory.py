"""Write (and remove) the Ansible inventory of the lab: inventories/lab/hosts.yml and group_vars/all.yml.

Only variables a real operator could set appear here (where the node's sysfs and
procfs are, its fabric address, its known-good peer, the tier); the collection
never learns that it talks to a lab.

Each new node is pinned to a peer (``netval_peer``, round-robin over the peers)
unless the inventory is written ``unpinned`` (``up --unpinned``): then no node
names a peer and each takes whichever healthy peer frees first (the playbook's
peer_order / first_peers with an empty netval_peer), as a fleet benchmark wants.

The lab's SSH settings live here and nowhere else (the repository's ansible.cfg
checks host keys and names no inventory): the lab hosts' keys are checked
strictly against the known_hosts the lab writes next to its key (netns.write_known_hosts).
"""
import os
import shutil

import yaml

from . import REPO_ROOT, SSH_DIR

INVENTORY_DIR = os.path.join(REPO_ROOT, 'inventories', 'lab')

# Shorter tests so one lab node validates in well under two minutes; these are
# the same knobs an operator would use for a smoke run on real nodes.  They
# shorten durations only: every test the tier enables runs, at the tier's
# dcgmi level, against the tier's thresholds (iperf3 over veth excepted).
SHORT_TESTS = {
    # Every node-peer link of the lab is a /30 inside this range; mpirun's out-of-band traffic stays on it.
    'netval_fabric_subnet': '10.252.0.0/16',
    'tier_tests_duration_override': 1,
    'tier_tests_timeout_margin': 30,
    'netval_contract': {
        # TCP in the lab runs over a veth pair, not a 400G NIC: the lab's
        # contract for iperf3 is what a veth delivers on a small VM while the
        # lab's other hosts share its CPUs, so a tc rate limit (fault
        # slow-link, 1 Gbit/s) is a reject.  4 streams for 1 s measured
        # 10.7 Gb/s alone on this 2-core machine, 5.3 and 9.0 with a second
        # node's test and two busy cores beside them, and 3.96 in a suite run
        # with two nodes' tests and Ansible at once: healthy from 2.
        'thresholds': {
            # Its source, as every line's: regrade.yml resolves every tier with the contract, and the tiers without an
            # iperf3 line of their own (800G, the RoCE pair) take this one whole.
            'iperf3_gbps': {'healthy': [2, None], 'reject_below': 1.5, 'unit': 'Gb/s', 'direction': 'one-way',
                            'source': "contract: the lab's TCP path, a veth pair on a shared 2-core VM"},
        },
        'tests': {
            'iperf3': {'parallel': 4},
            'nccl': {'iters': 2},
        },
        # A lab's drift window is minutes, not the hours between scheduled runs: counter growth is divided by
        # the real time since the baseline (at least 36 s), so a pause storm of a few minutes reads as what it is.
        'drift_rules': {'min_window_hours': 0.01},
        # TCP over the lab's veth pairs swings with the machine's load (the figures above), not with the node: it is not
        # compared with the siblings' (policy/fleet.py); every RDMA, GPUDirect and NCCL figure is.
        'fleet_rules': {'exclude_metrics': ['iperf3_gbps']},
    },
}


# What a vendor letter closes with (the runbook: "Cluster identifier and support contract attached"): the lab's own.
SITE = {'netval_cluster_id': 'netval-lab', 'netval_support_contract': 'LAB-SUPPORT-0001'}


def prediction_costs(lab):
    """validate.yml's prediction costs on this lab (netval_prediction_costs): measured here, with its dcgmi's set time.

    Calibrated on this 2-core machine from `make demo` (2 nodes, 1 peer) under the task_timeline callback
    (scripts/task_costs.py): each node held the peer 35.6 s for 24.7 s of planned test time in 17 module calls and 21
    sessions (a call ~0.5 s, a session's start ~0.1 s beyond its duration), and the run took 18.6 s beyond its tests
    (a node's preflight, verdict, evidence and report ~15 s, the play's own ~4 s).

    The lab runs every host's modules and emulated tools on this machine's cores beside the controller, so it carries
    about one node per core at full speed (parallel_nodes): with 2 it predicted the 2026-12-04 N=16 matrix on this
    machine at 689, 406 and 308 s against 703, 407 and 288-301 s taken on 1, 2 and 4 peers (160-584 s without).

    2026-12-05: validate.yml runs 98 tasks per node instead of 124 and the report needs no module process; one node alone
    spends about 10-11 s outside its tests, so a node's fixed work is 11 s, not 15 (the mixed lab run was predicted at
    259 s and took 228 s with 15).  Later that day the evidence fetch, the post-test kernel-log read and three tasks
    less brought one node alone to 9.7-9.9 s outside its tests: 10 s.
    """
    dcgmi = float(lab.get('dcgmi_seconds') or 0)
    return {'call_s': 0.5, 'session_s': 0.1, 'node_fixed_s': 10, 'run_fixed_s': 4, 'parallel_nodes': os.cpu_count() or 1,
            'untimed_s': {'perftest': 1, 'jumbo_ping': 5, 'nccl_tests': 3, 'dcgmi_diag': dict((level, dcgmi) for level in (1, 2, 3, 4))}}


class _LintCleanDumper(yaml.SafeDumper):
    """Indents list items under their key, as yamllint (and so ansible-lint) expects."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def ssh_vars():
    """The lab hosts' SSH settings: the lab's key, host keys checked against the lab's own known_hosts, pipelining."""
    return {
        'ansible_user': 'root',
        'ansible_ssh_private_key_file': os.path.join(SSH_DIR, 'id_ed25519'),
        'ansible_python_interpreter': '/usr/bin/python3',
        'ansible_ssh_common_args': ('-o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s '
                                    '-o ControlMaster=auto -o ControlPersist=60s' % os.path.join(SSH_DIR, 'known_hosts')),
        'ansible_ssh_pipelining': True,
    }


def host_vars(lab, host, unpinned=False):
    """One host's variables; ``unpinned`` leaves ``netval_peer`` out of a new node's (nothing else changes)."""
    info = lab['hosts'][host]
    ndir = info['node_dir']
    hvars = ssh_vars()
    hvars.update({
        'ansible_host': info['mgmt_ip'],
        'netval_sysfs_root': os.path.join(ndir, 'sys'),
        'netval_procfs_root': os.path.join(ndir, 'proc'),
        'netval_tier': lab['tier'],
        # The host's own sshd host key (netns.host_key_path), where a site's is /etc/ssh/ssh_host_*_key.pub.
        'netval_ssh_host_keys': [os.path.join(ndir, 'ssh', 'ssh_host_ed25519_key.pub')],
    })
    links = [link for link in lab['links'] if host in (link['node'], link['peer'])]
    if lab.get('rails'):
        # A real site: every box's rails carry their own addresses (a node's on some rails only), which the collection
        # reads; like most operators' inventories, this one names no fabric address.
        if info['role'] == 'new' and not unpinned:
            hvars['netval_peer'] = info['peer']
        if info['role'] == 'peer':
            # A site names its reference boxes' rails, as the example inventory does; the new nodes' rails are chosen by
            # the tier's selector (nics.select), so the lab shows both.
            hvars['netval_rdma_devices'] = [port['name'] for port in info.get('ports') or [] if port['kind'] == 'rail']
        return hvars
    if info['role'] == 'new':
        own = {link['peer']: link['node_ip'] for link in links}
        # On a meshed lab every other node is reachable too (its address on their link), for a promoted node's tests.
        for link in lab.get('mesh_links') or []:
            if host == link['node']:
                own[link['peer']] = link['node_ip']
            elif host == link['peer']:
                own[link['node']] = link['peer_ip']
        peer = info['peer']
        if not unpinned:
            hvars['netval_peer'] = peer
        # Boxes whose live ports are named differently (the two-box RoCE pair: f0 on the node, f1 on the peer) pair
        # them as their operator cabled them: netval_rails, node device to peer device.
        mine = (info.get('hardware') or {}).get('live') or []
        theirs = (lab['hosts'][peer].get('hardware') or {}).get('live') or []
        if mine and len(mine) == len(theirs) and mine != theirs:
            hvars['netval_rails'] = dict(zip(mine, theirs))
        hvars['netval_fabric_ip'] = own[peer]
        hvars['netval_fabric_ips'] = own
        hvars['netval_peer_fabric_ip'] = [link['peer_ip'] for link in links if link['peer'] == peer][0]
    else:
        own = {link['node']: link['peer_ip'] for link in links}
        hvars['netval_fabric_ip'] = links[0]['peer_ip'] if links else None
        hvars['netval_fabric_ips'] = own
    return hvars


def build(lab, unpinned=False):
    nodes = [h for h in lab['order'] if lab['hosts'][h]['role'] == 'new']
    peers = [h for h in lab['order'] if lab['hosts'][h]['role'] == 'peer']
    return {
        'all': {
            'children': {
                'lab': {
                    'children': {
                        'new_nodes': {'hosts': {h: host_vars(lab, h, unpinned) for h in nodes}},
                        'known_good_peers': {'hosts': {h: host_vars(lab, h) for h in peers}},
                    },
                },
            },
        },
    }


def write(lab, inventory_dir=INVENTORY_DIR, unpinned=None):
    """Write hosts.yml and group_vars/all.yml under ``inventory_dir``; returns it.

    ``unpinned`` None follows the lab (``lab['unpinned']``, False when absent: every node pinned to its peer).
    """
    if unpinned is None:
        unpinned = bool(lab.get('unpinned', False))
    os.makedirs(os.path.join(inventory_dir, 'group_vars'), exist_ok=True)
    command = 'python -m lab.netval_lab up --profile %s --nodes %d --peers %d --site %s%s' % (
        lab['profile'], lab['nodes'], lab['peers'], lab.get('site', 'ideal'), ' --unpinned' if unpinned else '')
    header = '# Generated by `%s`; removed by `down`.  Do not edit.\n' % command
    with open(os.path.join(inventory_dir, 'hosts.yml'), 'w', encoding='utf-8') as handle:
        handle.write('---\n' + header)
        yaml.dump(build(lab, unpinned), handle, Dumper=_LintCleanDumper, default_flow_style=False, sort_keys=False)
    with open(os.path.join(inventory_dir, 'group_vars', 'all.yml'), 'w', encoding='utf-8') as handle:
        handle.write('---\n# Lab: shorter test durations so one node validates in < 2 min.\n')
        yaml.dump(dict(SHORT_TESTS, netval_prediction_costs=prediction_costs(lab), **SITE), handle, Dumper=_LintCleanDumper,
                  default_flow_style=False, sort_keys=False)
    return inventory_dir


def remove():
    shutil.rmtree(INVENTORY_DIR, ignore_errors=True)
