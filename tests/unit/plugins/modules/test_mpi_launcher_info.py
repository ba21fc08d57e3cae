"""mpi_launcher_info: mpirun, Open MPI's daemon under its prefix and the nccl-tests binary resolve on each box as the
launcher will look for them, or the module names the variable to set; the MPI address's interface; the host keys."""
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.modules import mpi_launcher_info
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

IP_ADDR = fixtures.local('sysfs_ib/ip_4_o_addr_show_netns_veth_roce_names.txt')


@pytest.fixture
def prefix(tmp_path, monkeypatch):
    """An Open MPI install (bin/mpirun, bin/orted) with an nccl-tests binary beside it; PATH without it."""
    root = tmp_path / 'hpcx' / 'ompi'
    (root / 'bin').mkdir(parents=True)
    for name in ('mpirun', 'orted', 'all_reduce_perf', 'timeout', 'ip'):
        path = root / 'bin' / name
        path.write_text('#!/bin/sh\n')
        path.chmod(0o755)
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    return root


def ip_call(root):
    return Call(['%s/bin/timeout' % root, '--kill-after=5', '30', '%s/bin/ip' % root, '-o', 'addr', 'show'], out=IP_ADDR)


def run(root, args, calls=()):
    return run_module(mpi_launcher_info.main, args, calls=calls, bin_dir='%s/bin' % root)


def test_on_the_node_the_prefix_the_daemon_and_the_binary_resolve(prefix):
    result, failed = run(prefix, {'binary': 'all_reduce_perf', 'address': '10.0.0.5'}, calls=[ip_call(prefix)])
    assert not failed, result
    assert result['mpirun'] == '%s/bin/mpirun' % prefix and result['prefix'] == str(prefix)
    assert (result['daemon'], result['daemon_path']) == ('orted', '%s/bin/orted' % prefix)
    assert result['binary_path'] == '%s/bin/all_reduce_perf' % prefix
    # The interface NCCL bootstraps on: the one holding the MPI address (here an aliased second address).
    assert (result['interface'], result['interface_address']) == ('enp1s0f0np0', '10.0.0.5') and result['problems'] == []


def test_open_mpi_5_has_prted_instead_of_orted(prefix):
    (prefix / 'bin' / 'orted').unlink()
    (prefix / 'bin' / 'prted').write_text('#!/bin/sh\n')
    (prefix / 'bin' / 'prted').chmod(0o755)
    result, failed = run(prefix, {'binary': 'all_reduce_perf'})
    assert not failed and result['daemon'] == 'prted'


def test_an_mpirun_without_its_daemon_names_netval_mpirun(prefix):
    (prefix / 'bin' / 'orted').unlink()
    result, failed = run(prefix, {'binary': 'all_reduce_perf'})
    assert failed and (result['error_class'], result['error_side']) == ('launcher_missing', 'ours')
    assert 'neither orted nor prted' in result['msg'] and 'netval_mpirun' in result['msg'] and hostname() in result['msg']


def test_on_the_peer_the_daemon_must_be_under_the_nodes_prefix(prefix, tmp_path):
    elsewhere = tmp_path / 'usr'
    result, failed = run(prefix, {'prefix': str(elsewhere), 'daemon': 'orted', 'binary': '%s/bin/all_reduce_perf' % prefix})
    assert failed and result['error_class'] == 'launcher_missing'
    assert '%s/bin/orted is not on' % elsewhere in result['msg'] and 'netval_mpirun' in result['msg']
    ok, failed = run(prefix, {'prefix': str(prefix), 'daemon': 'orted', 'binary': 'all_reduce_perf'})
    assert not failed and ok['daemon_path'] == '%s/bin/orted' % prefix and ok['mpirun'] is None


def test_a_missing_binary_names_netval_nccl_binary(prefix):
    result, failed = run(prefix, {'binary': '/opt/nccl-tests/build/all_reduce_perf'})
    assert failed and 'netval_nccl_binary' in result['msg'] and '/opt/nccl-tests/build/all_reduce_perf' in result['msg']


def test_an_address_no_interface_holds_names_netval_mpi_address(prefix):
    result, failed = run(prefix, {'binary': 'all_reduce_perf', 'address': '10.9.9.9'}, calls=[ip_call(prefix)])
    assert failed and (result['error_class'], result['error_side']) == ('no_interface', 'ours')
    assert 'netval_mpi_address' in result['msg'] and '10.9.9.9' in result['msg']


def test_the_peers_host_keys_are_read(prefix, tmp_path):
    key = tmp_path / 'ssh_host_ed25519_key.pub'
    key.write_text('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBlZXIwMidzIGhvc3Qga2V5IGZvciB0aGUgdGVzdA== root@peer02\n')
    result, failed = run(prefix, {'prefix': str(prefix), 'daemon': 'orted', 'binary': 'all_reduce_perf', 'host_keys': [str(key)]})
    assert not failed and result['host_keys'] == ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBlZXIwMidzIGhvc3Qga2V5IGZvciB0aGUgdGVzdA==']
    missing, failed = run(prefix, {'prefix': str(prefix), 'daemon': 'orted', 'binary': 'all_reduce_perf',
                                   'host_keys': [str(tmp_path / 'nope.pub')]})
    assert failed and 'netval_ssh_host_keys' in missing['msg']


@pytest.mark.parametrize('override, needle', [
    ({'binary': 'rm -rf /'}, 'binary'),
    ({'binary': 'ib_write_bw'}, 'binary'),
    ({'mpirun': 'mpirun; id'}, 'mpirun'),
    ({'address': 'a b'}, 'address'),
])
def test_bad_input_fails_clearly(prefix, override, needle):
    result, failed = run(prefix, dict({'binary': 'all_reduce_perf'}, **override))
    assert failed and needle in result['msg'] and result['error_class'] == 'invalid_options' and result['_ran'] == []


def test_prefix_needs_its_daemon(prefix):
    result, failed = run(prefix, {'binary': 'all_reduce_perf', 'prefix': str(prefix)})
    assert failed and 'daemon' in result['msg']
    assert os.path.isdir(str(prefix))
