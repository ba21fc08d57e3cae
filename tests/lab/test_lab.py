"""The lab's real parts: namespaces, links, sshd, inventory, idempotent up, status, real faults.

The default lab is a real site (lab/netval_lab/site.py): eight IPoIB rails at MTU 4092 on a switch each, a front-end and
a storage NIC beside them (the storage card's second port not cabled), new nodes addressed on some rails, peers on
every rail, and a management network that is the default route at 1 Gbit/s and MTU 1500.  The ideal boxes stay
available with --site ideal.
"""
import json
import os
import subprocess
import time

import pytest
import yaml

from tests.lab.conftest import LAB_ARGS, LAB_ROOT, ROOT, cli, lab_json, node_rail, nsrun, run

pytestmark = pytest.mark.lab

KEY = os.path.join(LAB_ROOT, 'ssh', 'id_ed25519')


def ssh(address, command, timeout=30):
    return run(['ssh', '-i', KEY, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=3', 'root@' + address, command], timeout=timeout)


def link(lab, node='node01'):
    return node_rail(lab, node)


def df_ping(lab, size, node='node01'):
    """One ping with Don't Fragment from the node's rail netdev to the peer's port on that rail; True when it got through."""
    entry = link(lab, node)
    return nsrun(node, ['ping', '-c', '1', '-W', '1', '-M', 'do', '-s', str(size), '-I', entry['node_if'], entry['peer_ip']]).returncode == 0


def iperf3_gbits(lab, node='node01', seconds=2, server_ip=None, client_ip=None):
    entry = link(lab, node)
    server_ip, client_ip = server_ip or entry['peer_ip'], client_ip or entry['node_ip']
    server = subprocess.Popen(['ip', 'netns', 'exec', 'nvlab-' + entry['peer'], 'iperf3', '-s', '-1', '-B', server_ip, '-p', '5301'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _attempt in range(50):
            if ':5301 ' in nsrun(entry['peer'], ['ss', '-Htln']).stdout:
                break
            time.sleep(0.1)
        proc = nsrun(node, ['iperf3', '-c', server_ip, '-B', client_ip, '-p', '5301', '-t', str(seconds), '-J'], timeout=30)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)['end']['sum_received']['bits_per_second'] / 1e9
    finally:
        server.kill()
        server.wait()


def test_namespaces_rails_ports_and_mtu_of_a_real_site(lab):
    names = run(['ip', 'netns', 'list']).stdout
    for host in lab['order']:
        assert 'nvlab-%s' % host in names
    assert lab['order'] == ['node01', 'node02', 'peer01'] and lab['site'] == 'real' and lab['links'] == []
    for host in lab['order']:
        ports = dict((p['name'], p) for p in lab['hosts'][host]['ports'])
        # Eight rails, a dual-port front-end NIC and a dual-port storage NIC: twelve RDMA devices, as a DGX has.
        assert sorted(ports) == sorted(['mlx5_%d' % i for i in range(12)])
        for name, port in ports.items():
            info = json.loads(run(['ip', '-n', 'nvlab-' + host, '-j', 'link', 'show', 'dev', port['netdev']]).stdout)[0]
            assert info['mtu'] == port['mtu'], (host, name)
            assert ('LOWER_UP' in info['flags']) == (name != 'mlx5_11'), (host, name, info['flags'])  # not cabled
        assert {ports['mlx5_%d' % i]['mtu'] for i in range(8)} == {4092}  # IPoIB datagram mode
        addressed = [i for i in range(8) if ports['mlx5_%d' % i]['ip']]
        # A peer on every rail, a new node on some (never its first): the order of addressed ports differs per box.
        assert addressed == (list(range(8)) if host.startswith('peer') else [1, 3, 5, 7]), (host, addressed)
        assert ports['mlx5_10']['ip'] and not ports['mlx5_11']['ip']
    # A full IPoIB frame crosses a rail without fragmentation, a byte more does not leave the interface; nothing leaves the lab.
    assert df_ping(lab, 4092 - 28) and not df_ping(lab, 4092 - 27)
    route = run(['ip', 'route', 'get', link(lab)['peer_ip']]).stdout
    assert 'nvlab' not in route and 'ibp' not in route


def test_the_management_network_is_the_default_route_at_1_gbits_and_mtu_1500(lab):
    routes = nsrun('node01', ['ip', 'route', 'show', 'default']).stdout
    assert routes.startswith('default via 10.251.0.254 dev mgmt0'), routes
    assert json.loads(nsrun('node01', ['ip', '-j', 'link', 'show', 'dev', 'mgmt0']).stdout)[0]['mtu'] == 1500
    # A test that fell back to the management addresses would measure 1 Gbit/s, not a rail.
    assert iperf3_gbits(lab, server_ip=lab['hosts']['peer01']['mgmt_ip'], client_ip=lab['hosts']['node01']['mgmt_ip']) < 1.1
    # A fabric address the node has no route for leaves through the management network, where no gateway answers.
    assert 'dev mgmt0' in nsrun('node01', ['ip', 'route', 'get', '10.252.9.9']).stdout
    assert nsrun('node01', ['ping', '-c', '1', '-W', '1', '10.252.9.9']).returncode != 0


def test_the_ideal_site_keeps_the_first_boxes(lab_session):  # pylint: disable=unused-argument
    cli('up', '--profile', 'healthy-400g', '--nodes', '1', '--peers', '1', '--site', 'ideal', check=True)
    ideal = lab_json()
    assert ideal['site'] == 'ideal' and [entry['node_if'] for entry in ideal['links']] == ['fab-peer01']
    info = json.loads(run(['ip', '-n', 'nvlab-node01', '-j', 'link', 'show', 'dev', 'fab-peer01']).stdout)[0]
    assert info['mtu'] == 9000 and 'LOWER_UP' in info['flags']
    assert nsrun('node01', ['ip', 'route', 'show', 'default']).stdout.strip() == ''
    with open(os.path.join(ROOT, 'inventories', 'lab', 'hosts.yml'), encoding='utf-8') as handle:
        node = yaml.safe_load(handle)['all']['children']['lab']['children']['new_nodes']['hosts']['node01']
    assert node['netval_fabric_ip'] == '10.252.0.1'


def test_sshd_per_host_answers_with_its_own_hostname_and_path(lab):
    for host in lab['order']:
        proc = ssh(lab['hosts'][host]['mgmt_ip'], 'hostname; echo $NETVAL_LAB_NODE; echo $PATH; command -v ip')
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == host and lines[1] == host
        path = lines[2].split(':')
        lab_bin = '/run/netval-lab/nodes/%s/bin' % host
        assert lab_bin in path and path.index(lab_bin) < path.index('/usr/bin')
    # The node's network view is its own namespace: mgmt0 and its own ports only.
    out = ssh(lab['hosts']['node01']['mgmt_ip'], 'ip -o link show').stdout
    assert 'mgmt0' in out and 'ibp26s0' in out and 'enp41s0f1np1' in out and 'eth0' not in out and 'fab-' not in out


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
    assert node['netval_peer'] == 'peer01' and node['netval_tier'] == '400G'
    # A real site's inventory names no fabric address: the rails carry their own, as the collection reads them.
    peer = groups['known_good_peers']['hosts']['peer01']
    assert not [key for key in list(node) + list(peer) if key.startswith('netval_fabric') or key == 'netval_peer_fabric_ip']
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
    assert 'node01' in proc.stdout and 'peer01' in proc.stdout and 'ibp59s0:up/4092' in proc.stdout and 'real site' in proc.stdout
    data = json.loads(cli('status', '--json', check=True).stdout)
    assert data['up'] and all(row['sshd'] for row in data['hosts'])


def test_fault_slow_link_is_real_and_clears(lab):
    # The node's cable on its first addressed rail: both directions, whichever peer; its other rails are untouched.
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
    rail = link(lab)
    node_mtu = os.path.join(LAB_ROOT, 'nodes', 'node01', 'sys', 'class', 'net', rail['node_if'], 'mtu')
    cli('fault', 'mtu-mismatch', '--side', side, check=True)
    try:
        assert not df_ping(lab, 4064)
        assert df_ping(lab, 1472)
        # The emulated sysfs follows the veth it stands for: what the node's own tools read.
        assert open(node_mtu, encoding='utf-8').read().strip() == ('1500' if side == 'node' else '4092')
    finally:
        cli('fault', 'clear', check=True)
    assert df_ping(lab, 4064)
    assert open(node_mtu, encoding='utf-8').read().strip() == '4092'


@pytest.mark.parametrize('fault', ['fabric-unaddressed', 'fabric-route-mgmt'])
def test_site_faults_take_the_nodes_rail_addresses_or_their_on_link_routes(lab, fault):
    rail = link(lab)
    cli('fault', fault, check=True)
    try:
        addresses = nsrun('node01', ['ip', '-4', '-o', 'addr', 'show', 'dev', rail['node_if']]).stdout
        route = nsrun('node01', ['ip', 'route', 'get', rail['peer_ip']]).stdout
        if fault == 'fabric-unaddressed':
            assert addresses.strip() == '', addresses
        else:
            # Addressed as a /32: no on-link route, so the peer's rail address falls back to the management network.
            assert '%s/32' % rail['node_ip'] in addresses and 'dev mgmt0' in route, (addresses, route)
    finally:
        cli('fault', 'clear', check=True)
    assert '%s/24' % rail['node_ip'] in nsrun('node01', ['ip', '-4', '-o', 'addr', 'show', 'dev', rail['node_if']]).stdout
    assert 'dev %s' % rail['node_if'] in nsrun('node01', ['ip', 'route', 'get', rail['peer_ip']]).stdout


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
    assert df_ping(lab, 4092 - 28)  # the rail is back at its IPoIB MTU


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


def test_rdma_moves_on_the_rail_of_the_device_not_of_the_handshake(lab):
    """A slow cable on the node's rail 1: a session on mlx5_1 is slow, one on mlx5_0 is not, both handshaking over the
    management network; a client whose options differ from its server's is refused, as perftest 6.28+ does."""
    peer_ip, node_ip = lab['hosts']['peer01']['mgmt_ip'], lab['hosts']['node01']['mgmt_ip']

    def session(device, client_extra=(), port=18750):
        server = subprocess.Popen(['ssh', '-i', KEY, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o',
                                   'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', 'root@' + peer_ip,
                                   'ib_send_bw -d %s -p %d -D 1' % (device, port)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        client = ssh(node_ip, 'ib_send_bw -d %s -p %d -D 1 %s %s' % (device, port, ' '.join(client_extra), peer_ip))
        return client, server.communicate(timeout=30)[0]

    cli('fault', 'slow-link', check=True)
    try:
        slow, _server = session('mlx5_1')
        fast, _server = session('mlx5_0')
        refused, server_out = session('mlx5_0', ('-s', '4096'))
    finally:
        cli('fault', 'clear', check=True)
    assert slow.returncode == 0 and fast.returncode == 0, (slow.stderr, fast.stderr)
    slow_mib, fast_mib = (float(proc.stdout.splitlines()[-2].split()[3]) for proc in (slow, fast))
    assert slow_mib < 150 < 40000 < fast_mib, (slow_mib, fast_mib)  # 1 Gbit/s is ~119 MiB/s; the rail alone ~45,000
    assert refused.returncode != 0 and ' size mismatch: local=4096, remote=65536' in refused.stderr
    assert 'Failed to negotiate parameters' in refused.stderr and ' size mismatch: local=65536, remote=4096' in server_out


def test_fault_rejects_unknown_name_and_node(lab):  # pylint: disable=unused-argument
    proc = cli('fault', 'no-such-fault')
    assert proc.returncode != 0 and 'unknown fault' in proc.stderr and 'Traceback' not in proc.stderr
    proc = cli('fault', 'slow-link', '--node', 'node99')
    assert proc.returncode != 0 and 'node99' in proc.stderr and 'Traceback' not in proc.stderr


def test_sshd_listens_only_on_mgmt_address(lab):
    out = nsrun('node01', ['ss', '-Htln']).stdout
    assert '%s:22 ' % lab['hosts']['node01']['mgmt_ip'] in out
    assert '0.0.0.0:22 ' not in out and '%s:22 ' % link(lab)['node_ip'] not in out
