"""fabric_subnet: the subnet Open MPI's own traffic is pinned to, derived from both ends' fabric addresses."""
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.fabric_subnet import fabric_subnet
from ansible_collections.gpufleet.netval.plugins.modules import nccl_tests, rdma_info
from tests.unit.plugins.modules.test_rdma_info import IP, ip_line, spark_box
from tests.unit.plugins.modules.utils import Call, run_module


def port(address, prefixlen, device='mlx5_0'):
    return {'device': device, 'ipv4': address, 'ipv4_prefixlen': prefixlen}


@pytest.mark.parametrize('node,peer,subnet', [
    ([port('10.0.0.1', 30)], [port('10.0.0.2', 30)], '10.0.0.0/30'),
    # one /24 per rail: the covering block of every rail on both ends
    ([port('10.0.1.1', 24), port('10.0.2.1', 24, 'mlx5_1')], [port('10.0.1.2', 24), port('10.0.2.2', 24, 'mlx5_1')], '10.0.0.0/22'),
    # routed rails, node and peer in different /31s of one block
    ([port('192.168.50.0', 31)], [port('192.168.50.6', 31)], '192.168.50.0/29'),
    # no prefix known: the two hosts themselves
    ([port('10.0.0.1', None)], [port('10.0.0.2', None)], '10.0.0.0/30'),
    # an unaddressed live port is left out; the rdma_info result itself is accepted
    ([port(None, None), port('10.0.0.1', 30)], {'live_ports': [port('10.0.0.2', 30)]}, '10.0.0.0/30'),
])
def test_covering_subnet(node, peer, subnet):
    result = fabric_subnet(node, peer)
    assert result == subnet and isinstance(result, str)


def test_nothing_to_derive_is_none():
    assert fabric_subnet([port(None, None)], [port('10.0.0.2', 30)]) is None
    assert fabric_subnet([], None) is None


def test_unrelated_networks_are_listed_not_covered_by_one_that_takes_docker0_too():
    assert fabric_subnet([port('10.0.0.1', 30)], [port('192.168.0.2', 30)]) == '10.0.0.0/30,192.168.0.0/30'
    # within one /8 a covering subnet is still one
    assert fabric_subnet([port('10.0.0.1', 30)], [port('10.200.0.2', 30)]) == '10.0.0.0/8'


@pytest.mark.parametrize('node,peer,words', [
    ([port('10.0.0.1', 99)], [port('10.0.0.2', 30)], 'node port mlx5_0'),
    ([port('10.0.0.1', 30)], 'mlx5_0', 'peer live ports must be a list'),
])
def test_unusable_input_is_a_filter_error(node, peer, words):
    with pytest.raises(AnsibleFilterError, match=words):
        fabric_subnet(node, peer)


def test_docker0_on_both_boxes_cannot_be_picked(tmp_path, monkeypatch):
    """The docker0 trap: both boxes have 172.17.0.1/16; the derived subnet and NCCL's interfaces leave it out."""
    docker0 = ip_line(3, 'docker0', '172.17.0.1', 16)
    box_a = spark_box(tmp_path / 'a', 'f0', '10.0.0.1')
    box_b = spark_box(tmp_path / 'b', 'f1', '10.0.0.2')
    node, _failed = run_module(rdma_info.main, {'sysfs_root': box_a},
                               calls=[Call(IP, out=ip_line(1, 'lo', '127.0.0.1', 8) + docker0 + ip_line(5, 'enp1s0f0np0', '10.0.0.1'))])
    peer, _failed = run_module(rdma_info.main, {'sysfs_root': box_b},
                               calls=[Call(IP, out=ip_line(1, 'lo', '127.0.0.1', 8) + docker0 + ip_line(6, 'enp1s0f1np1', '10.0.0.2'))])
    subnet = fabric_subnet(node['live_ports'], peer['live_ports'])
    assert subnet == '10.0.0.0/30'

    workdir = str(tmp_path / 'nccl')
    monkeypatch.setattr(nccl_tests.tempfile, 'mkdtemp', lambda prefix=None: os.mkdir(workdir) or workdir)
    netdevs = sorted(set(p['netdev'] for p in node['live_ports'][:1] + peer['live_ports'][:1]))
    args = {'binary': 'all_reduce_perf', 'hosts': [{'name': '10.0.0.1', 'slots': 1}, {'name': '10.0.0.2', 'slots': 1}],
            'ib_hca': ['rocep1s0f0', 'rocep1s0f1'], 'socket_ifname': netdevs, 'fabric_subnet': subnet}
    hostfile = os.path.join(workdir, 'hostfile')
    expected = ['/usr/bin/timeout', '--kill-after=5', '1800', '/usr/bin/mpirun', '-np', '2', '--hostfile', hostfile,
                '--mca', 'oob_tcp_if_include', '10.0.0.0/30', '--mca', 'btl_tcp_if_include', '10.0.0.0/30',
                '-x', 'NCCL_DEBUG=INFO', '-x', 'NCCL_IB_HCA==rocep1s0f0,rocep1s0f1', '-x', 'NCCL_SOCKET_IFNAME==enp1s0f0np0,enp1s0f1np1',
                'all_reduce_perf']
    result, _failed = run_module(nccl_tests.main, args, calls=[Call(expected, rc=1, err='stopped here')])
    words = [word for word in result['cmd'].split() if word != hostfile]
    assert words[words.index('oob_tcp_if_include') + 1] == words[words.index('btl_tcp_if_include') + 1] == '10.0.0.0/30'
    assert not [word for word in words if '172.17' in word or 'docker0' in word]


def test_two_unrelated_subnets_reach_mpirun_as_one_list(tmp_path, monkeypatch):
    workdir = str(tmp_path / 'nccl')
    monkeypatch.setattr(nccl_tests.tempfile, 'mkdtemp', lambda prefix=None: os.mkdir(workdir) or workdir)
    subnets = fabric_subnet([port('10.0.0.1', 30)], [port('192.168.7.2', 30)])
    expected = ['/usr/bin/timeout', '--kill-after=5', '1800', '/usr/bin/mpirun', '-np', '2', '--hostfile', os.path.join(workdir, 'hostfile'),
                '--mca', 'oob_tcp_if_include', '10.0.0.0/30,192.168.7.0/30', '--mca', 'btl_tcp_if_include', '10.0.0.0/30,192.168.7.0/30',
                '-x', 'NCCL_DEBUG=INFO', 'all_reduce_perf']
    result, failed = run_module(nccl_tests.main, {'binary': 'all_reduce_perf', 'hosts': [{'name': 'a', 'slots': 1}, {'name': 'b', 'slots': 1}],
                                                  'fabric_subnet': subnets}, calls=[Call(expected, rc=1, err='stopped here')])
    assert result['_ran'] == [expected]
