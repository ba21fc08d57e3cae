"""testinfra checks of a lab new node, reached through Ansible (molecule's verifier).

The lab's layout (/run/netval-lab/lab.json, on this controller) says which rails the node has and which of them are
addressed: on the real site (the default) a rail is a switch with every host's port on it, IPoIB at MTU 4092, the new
node addressed on its odd rails only; on the ideal site one veth per node-peer pair at MTU 9000.
"""

import json

LAB_JSON = '/run/netval-lab/lab.json'


def _lab():
    with open(LAB_JSON, encoding='utf-8') as handle:
        return json.load(handle)


def _first_addressed_rail(name):
    """(node's netdev, its MTU, the peer's address on the same rail) of the node's first addressed rail."""
    lab = _lab()
    info = lab['hosts'][name]
    if not lab.get('rails'):
        link = [link for link in lab['links'] if link['node'] == name][0]
        return link['node_if'], 9000, link['peer_ip']
    port = [port for port in info['ports'] if port['kind'] == 'rail' and port['ip']][0]
    peer = [p for p in lab['hosts'][info['peer']]['ports'] if p['rail'] == port['rail']][0]
    return port['netdev'], port['mtu'], peer['ip']


def test_hostname_is_the_inventory_name(host):
    assert host.check_output('hostname') == host.backend.get_hostname()


def test_sshd_runs_in_the_node(host):
    address = host.ansible.get_variables()['ansible_host']
    assert host.socket('tcp://%s:22' % address).is_listening
    assert host.process.filter(comm='sshd')


def test_lab_tools_come_first_on_path(host):
    name = host.backend.get_hostname()
    assert host.check_output('command -v lspci') == '/run/netval-lab/nodes/%s/bin/lspci' % name


def test_rail_is_up_at_its_mtu(host):
    netdev, mtu, _peer_ip = _first_addressed_rail(host.backend.get_hostname())
    assert host.interface(netdev).exists
    assert host.file('/sys/class/net/%s/mtu' % netdev).content_string.strip() == str(mtu)


def test_node_reaches_its_peer_over_its_rail_not_the_management_network(host):
    netdev, mtu, peer_ip = _first_addressed_rail(host.backend.get_hostname())
    assert ' dev %s ' % netdev in host.check_output('ip -o route get %s' % peer_ip)
    assert host.run('ping -c 1 -W 2 -M do -s %d -I %s %s' % (mtu - 28, netdev, peer_ip)).rc == 0
