"""The lab's real parts: namespaces, links, sshd, inventory, idempotent up, status, real faults."""
import json
import os
import subprocess
import time

import pytest
import yaml

from tests.lab.conftest import LAB_ARGS, LAB_ROOT, ROOT, cli, lab_json, nsrun, run

pytestmark = pytest.mark.lab

KEY = os.path.join(LAB_ROOT, 'ssh', 'id_ed25519')


def ssh(address, command, timeout=30):
    return run(['ssh', '-i', KEY, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=3', 'root@' + address, command], timeout=timeout)


def link(lab, node='node01'):
    peer = lab['hosts'][node]['peer']
    return [entry for entry in lab['links'] if entry['node'] == node and entry['peer'] == peer][0]


def df_ping(lab, size, node='node01'):
    """One ping with Don't Fragment over the node's fabric link; True when it got through."""
    return nsrun(node, ['ping', '-c', '1', '-W', '1', '-M', 'do', '-s', str(size), link(lab, node)['peer_ip']]).returncode == 0


def iperf3_gbits(lab, node='node01', seconds=2):
    entry = link(lab, node)
    server = subprocess.Popen(['ip', 'netns', 'exec', 'nvlab-' + entry['peer'], 'iperf3', '-s', '-1', '-B', entry['peer_ip'], '-p', '5301'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _attempt in range(50):
            if ':5301 ' in nsrun(entry['peer'], ['ss', '-Htln']).stdout:
                break
            time.sleep(0.1)
        proc = nsrun(node, ['iperf3', '-c', entry['peer_ip'], '-p', '5301', '-t', str(seconds), '-J'], timeout=30)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)['end']['sum_received']['bits_per_second'] / 1e9
    finally:
        server.kill()
        server.wait()


def test_namespaces_links_and_mtu(lab):
    names = run(['ip', 'netns', 'list']).stdout
    for host in lab['order']:
        assert 'nvlab-%s' % host in names
    assert lab['order'] == ['node01', 'node02', 'peer01']
    for entry in lab['links']:
        for host, ifname in ((entry['node'], entry['node_if']), (entry['peer'], entry['peer_if'])):
            info = json.loads(run(['ip', '-n', 'nvlab-' + host, '-j', 'link', 'show', 'dev', ifname]).stdout)[0]
            assert info['mtu'] == 9000 and 'LOWER_UP' in info['flags']
    # A full 9000-byte frame crosses the fabric without fragmentation; nothing leaves the lab's namespaces.
    assert df_ping(lab, 8972)
    route = run(['ip', 'route', 'get', '10.252.0.2']).stdout
    assert 'nvlab' not in route and 'fab-' not in route


def test_sshd_per_host_answers_with_its_own_hostname_and_path(lab):
    for host in lab['order']:
        proc = ssh(lab['hosts'][host]['mgmt_ip'], 'hostname; echo $NETVAL_LAB_NODE; echo $PATH; command -v ip')
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == host and lines[1] == host
        path = lines[2].split(':')
        lab_bin = '/run/netval-lab/nodes/%s/bin' % host
        assert lab_bin in path and path.index(lab_bin) < path.index('/usr/bin')
    # The node's network view is its own namespace: mgmt0 + its fabric links only.
    out = ssh(lab['hosts']['node01']['mgmt_ip'], 'ip -o link show').stdout
    assert 'mgmt0' in out and 'fab-peer01' in out and 'eth0' not in out


def test_inventory_has_groups_and_operator_variables(lab):
    with open(os.path.join(ROOT, 'inventories', 'lab', 'hosts.yml'), encoding='utf-8') as handle:
        inv = yaml.safe_load(handle)
    groups = inv['all']['children']['lab']['children']
    assert sorted(groups['new_nodes']['hosts']) == ['node01', 'node02']
    assert sorted(groups['known_good_peers']['hosts']) == ['peer01']
    node = groups['new_nodes']['hosts']['node01']
    assert node['ansible_host'] == lab['hosts']['node01']['mgmt_ip']
    assert node['netval_sysfs_root'] == '/run/netval-lab/nodes/node01/sys'
    assert node['netval_procfs_root'] == '/run/netval-lab/nodes/node01/proc'
    assert node['netval_peer'] == 'peer01' and node['netval_fabric_ip'] == '10.252.0.1'
    assert node['netval_tier'] == '400G'
    peer = groups['known_good_peers']['hosts']['peer01']
    assert peer['netval_fabric_ips'] == {'node01': '10.252.0.2', 'node02': '10.252.1.2'}
    assert 'ControlPersist' in node['ansible_ssh_common_args']
    assert os.path.exists(os.path.join(ROOT, 'inventories', 'lab', 'group_vars', 'all.yml'))
    # Nothing lab-specific leaks into what the collection sees beyond operator variables.
    assert not [key for key in node if 'lab' in key]


def test_lab_json_records_layout(lab):
    for host in lab['order']:
        info = lab['hosts'][host]
        assert info['netns'] == 'nvlab-' + host and info['mgmt_ip'].startswith('10.251.0.')
        assert os.path.isfile(os.path.join(info['node_dir'], 'state.json'))
        for sub in ('sys', 'proc', 'bin', 'log'):
            assert os.path.isdir(os.path.join(info['node_dir'], sub)), sub
    assert lab['status'] == 'up' and lab['profile'] == 'healthy-400g'
    assert set(lab['pids']) == set(lab['order'])


def test_second_up_with_same_arguments_is_quick_and_harmless(lab):
    started = time.time()
    proc = cli(*LAB_ARGS, check=True)
    assert time.time() - started < 5
    assert 'already up' in proc.stdout
    assert lab_json()['pids'] == lab['pids']


def test_status_table(lab):
    proc = cli('status', check=True)
    assert 'node01' in proc.stdout and 'peer01' in proc.stdout and 'fab-peer01:up/9000' in proc.stdout
    data = json.loads(cli('status', '--json', check=True).stdout)
    assert data['up'] and all(row['sshd'] for row in data['hosts'])


def test_fault_slow_link_is_real_and_clears(lab):
    cli('fault', 'slow-link', check=True)
    try:
        slow = iperf3_gbits(lab)
        assert 0.5 < slow < 1.1, slow
        assert 'slow-link' in [f['name'] for f in lab_json()['faults']]
    finally:
        cli('fault', 'clear', check=True)
    fast = iperf3_gbits(lab)
    assert fast > 2 * slow, (fast, slow)


@pytest.mark.parametrize('side', ['node', 'peer'])
def test_fault_mtu_mismatch(lab, side):
    node_mtu = os.path.join(LAB_ROOT, 'nodes', 'node01', 'sys', 'class', 'net', 'fab-peer01', 'mtu')
    cli('fault', 'mtu-mismatch', '--side', side, check=True)
    try:
        assert not df_ping(lab, 8972)
        assert df_ping(lab, 1472)
        # The emulated sysfs follows the veth it stands for: what the node's own tools read.
        assert open(node_mtu, encoding='utf-8').read().strip() == ('1500' if side == 'node' else '9000')
    finally:
        cli('fault', 'clear', check=True)
    assert df_ping(lab, 8972)
    assert open(node_mtu, encoding='utf-8').read().strip() == '9000'


def test_fault_link_flap_logs_kernel_events(lab):
    events = os.path.join(LAB_ROOT, 'nodes', 'node01', 'log', 'kernel.log')
    cli('fault', 'link-flap', check=True)
    try:
        deadline = time.time() + 8
        text = ''
        while time.time() < deadline:
            text = open(events, encoding='utf-8').read() if os.path.exists(events) else ''
            if 'Link up' in text:
                break
            time.sleep(0.2)
        assert ': Link down' in text and ': Link up' in text, text
        assert text.splitlines()[0].split()[1] == 'mlx5_core'
    finally:
        cli('fault', 'clear', check=True)
    assert not os.path.exists(os.path.join(LAB_ROOT, 'nodes', 'node01', 'flap.pid'))
    assert df_ping(lab, 8972)


def test_fault_peer_down_takes_the_peers_management_link_down(lab):
    peer_ip = lab['hosts']['peer01']['mgmt_ip']
    cli('fault', 'peer-down', check=True)
    try:
        assert ssh(peer_ip, 'true').returncode != 0
        assert [line.split()[3:5] for line in cli('status').stdout.splitlines() if line.startswith('peer01')] == [['DOWN', 'up']]
    finally:
        cli('fault', 'clear', check=True)
    assert ssh(peer_ip, 'hostname').stdout.strip() == 'peer01'


def test_fault_peer_down_midrun_stops_the_peer_at_the_first_rdma_session(lab):
    """Armed, the peer still answers; the first RDMA session a node opens on it takes down its sshd and servers."""
    entry = link(lab)
    peer_ip = lab['hosts']['peer01']['mgmt_ip']
    node_ip = lab['hosts']['node01']['mgmt_ip']
    cli('fault', 'peer-down-midrun', check=True)
    try:
        assert ssh(peer_ip, 'hostname').stdout.strip() == 'peer01'  # armed, not fired
        server = subprocess.Popen(['ssh', '-i', KEY, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                                   '-o', 'LogLevel=ERROR', 'root@' + peer_ip, 'ib_send_bw -d mlx5_0 -p 18700 -D 1'],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        client = ssh(node_ip, 'ib_send_bw -d mlx5_0 -p 18700 -D 1 %s' % entry['peer_ip'])
        server.communicate(timeout=30)
        assert client.returncode != 0, client.stdout  # the server went away under it
        deadline = time.time() + 10
        while time.time() < deadline and ssh(peer_ip, 'true').returncode == 0:
            time.sleep(0.2)
        assert ssh(peer_ip, 'true').returncode != 0
        assert not any(line.strip() for line in nsrun('peer01', ['ss', '-Htlnp']).stdout.splitlines() if 'python' in line or 'sshd' in line)
        with open(os.path.join(LAB_ROOT, 'nodes', 'peer01', 'log', 'down-midrun.log'), encoding='utf-8') as handle:
            assert 'peer01 goes down during: ib_send_bw server port 18700' in handle.read()
    finally:
        cli('fault', 'clear', check=True)
    assert ssh(peer_ip, 'hostname').stdout.strip() == 'peer01'


def test_fault_port_busy(lab):
    entry = link(lab)
    cli('fault', 'port-busy', check=True)
    try:
        listening = nsrun('peer01', ['ss', '-Htln']).stdout
        assert ':18515 ' in listening and ':5201 ' in listening
        proc = nsrun('peer01', ['iperf3', '-s', '-1', '-p', '5201'], timeout=10)
        assert proc.returncode != 0 and 'in use' in (proc.stdout + proc.stderr).lower()
        # The node really reaches the busy port over the fabric.
        assert nsrun('node01', ['bash', '-c', 'exec 3<>/dev/tcp/%s/18515' % entry['peer_ip']]).returncode == 0
    finally:
        cli('fault', 'clear', check=True)
    assert ':18515 ' not in nsrun('peer01', ['ss', '-Htln']).stdout


def test_fault_rejects_unknown_name_and_node(lab):  # pylint: disable=unused-argument
    proc = cli('fault', 'no-such-fault')
    assert proc.returncode != 0 and 'unknown fault' in proc.stderr and 'Traceback' not in proc.stderr
    proc = cli('fault', 'slow-link', '--node', 'node99')
    assert proc.returncode != 0 and 'node99' in proc.stderr and 'Traceback' not in proc.stderr


def test_sshd_listens_only_on_mgmt_address(lab):
    out = nsrun('node01', ['ss', '-Htln']).stdout
    assert '%s:22 ' % lab['hosts']['node01']['mgmt_ip'] in out
    assert '0.0.0.0:22 ' not in out and '10.252.0.1:22 ' not in out
