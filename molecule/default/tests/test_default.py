"""testinfra checks of a lab new node, reached through Ansible (molecule's verifier)."""


def test_hostname_is_the_inventory_name(host):
    assert host.check_output('hostname') == host.backend.get_hostname()


def test_sshd_runs_in_the_node(host):
    address = host.ansible.get_variables()['ansible_host']
    assert host.socket('tcp://%s:22' % address).is_listening
    assert host.process.filter(comm='sshd')


def test_lab_tools_come_first_on_path(host):
    name = host.backend.get_hostname()
    assert host.check_output('command -v lspci') == '/run/netval-lab/nodes/%s/bin/lspci' % name


def test_fabric_link_is_up_with_mtu_9000(host):
    link = host.interface('fab-peer01')
    assert link.exists
    assert host.file('/sys/class/net/fab-peer01/mtu').content_string.strip() == '9000'


def test_node_reaches_its_peer_over_the_fabric(host):
    assert host.run('ping -c 1 -W 2 -M do -s 8972 10.252.%d.2' % (int(host.backend.get_hostname()[4:]) - 1)).rc == 0
