"""nccl_tests builds one mpirun command, writes and removes its hostfile, and grades nothing itself."""
import os
import sys

import pytest

from ansible_collections.gpufleet.netval.plugins.modules import nccl_tests
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

IB_LOG = fixtures.local('nccl/all_reduce_perf_2node_h100_roce_net_ib_gdrdma_info_synthetic.txt')
SOCKET_LOG = fixtures.local('nccl/all_reduce_perf_2node_net_socket_fallback_info_synthetic.txt')

ARGS = {
    'binary': '/opt/nccl-tests/build/all_reduce_perf',
    'hosts': [{'name': 'gpu-a', 'slots': 8}, {'name': '10.0.0.12', 'slots': 8}],
    'min_bytes': '1G', 'max_bytes': '8G', 'step_factor': 2, 'iters': 20,
    'ib_hca': ['mlx5_0:1', 'mlx5_1:1'], 'gid_index': 3, 'fabric_subnet': '10.0.0.0/24', 'allow_run_as_root': True,
}


@pytest.fixture
def tmpdir_path(tmp_path, monkeypatch):
    path = str(tmp_path / 'netval-nccl-test')

    def fake_mkdtemp(prefix=None):
        os.mkdir(path)
        return path
    monkeypatch.setattr(nccl_tests.tempfile, 'mkdtemp', fake_mkdtemp)
    return path


def argv(hostfile, timeout=1800):
    return ['/usr/bin/timeout', '--kill-after=5', str(timeout), '/usr/bin/mpirun', '-np', '16', '--hostfile', hostfile,
            '--allow-run-as-root', '--mca', 'oob_tcp_if_include', '10.0.0.0/24', '--mca', 'btl_tcp_if_include', '10.0.0.0/24',
            '-x', 'NCCL_DEBUG=INFO', '-x', 'NCCL_IB_GID_INDEX=3', '-x', 'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1',
            '/opt/nccl-tests/build/all_reduce_perf', '-b', '1G', '-e', '8G', '-f', '2', '-n', '20']


def test_success_over_ib_and_hostfile_removed(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out=IB_LOG)])
    assert not failed, result
    assert result['hostfile'] == 'gpu-a slots=8\n10.0.0.12 slots=8\n'
    assert result['transport'] == 'IB' and result['gdr'] is True
    assert result['avg_busbw_gbs'] == 45.5775 and result['busbw_at_max_size'] == 46.21
    assert len(result['rows']) == 4 and result['data_errors'] == [] and result['advice'] == [] and 'warnings' not in result and result['error_class'] is None
    assert result['cmd'].startswith('/usr/bin/mpirun -np 16 --hostfile ')
    assert not os.path.exists(tmpdir_path), 'the temporary hostfile directory must be removed'


def test_socket_fallback_is_returned_with_a_warning(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out=SOCKET_LOG)])
    assert not failed
    assert result['transport'] == 'Socket' and result['gdr'] is False
    assert any('NET/Socket' in w and 'NCCL_IB_HCA' in w for w in result['advice'])


def test_check_mode_runs_nothing_and_writes_nothing(tmpdir_path):
    result, failed = run_module(nccl_tests.main, dict(ARGS, hosts=['gpu-a', 'gpu-b']), check_mode=True)
    assert not failed and result['_ran'] == []
    assert result['hostfile'] == 'gpu-a slots=1\ngpu-b slots=1\n'
    assert '-np 2 --hostfile \'<tmpdir>/hostfile\'' in result['cmd']
    assert not os.path.exists(tmpdir_path)


def test_missing_mpirun_names_the_package(tmpdir_path):
    result, failed = run_module(nccl_tests.main, ARGS, missing=('mpirun',))
    assert failed and 'mpirun' in result['msg'] and 'openmpi-bin' in result['msg'] and hostname() in result['msg']
    assert (result['error_class'], result['error_side']) == ('tool_missing', 'ours')
    assert not os.path.exists(tmpdir_path)


def test_tool_failure_names_host_command_rc_and_nccl_warn(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    out = ('# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 '
           'validation: 1 graph: 0\n'
           'gpu-a:40211:40230 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.12<38553> with '
           'status=12 opcode=0 len=0 vendor err 129 (Recv)\n'
           'gpu-a: Test NCCL failure common.cu:1005 \'remote process exited or there was a network error\'\n')
    calls = [Call(argv(hostfile), rc=1, out=out, err='mpirun detected that one or more processes exited\n')]
    result, failed = run_module(nccl_tests.main, ARGS, calls=calls)
    assert failed
    assert hostname() in result['msg'] and '/usr/bin/mpirun -np 16' in result['msg'] and 'rc=1' in result['msg']
    assert 'NCCL WARN NET/IB : Got completion' in result['msg'] and 'Test NCCL failure' in result['msg']
    assert result['error_class'] == 'tool_failed' and result['error_side'] == 'unknown'
    assert not os.path.exists(tmpdir_path)


def test_timeout(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    result, failed = run_module(nccl_tests.main, dict(ARGS, timeout=60), calls=[Call(argv(hostfile, 60), rc=124)])
    assert failed and 'timed out' in result['msg'] and result['timed_out'] is True
    assert (result['error_class'], result['error_side']) == ('timeout', 'ours')


def test_garbage_output_fails_cleanly(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out='Segmentation fault\n')])
    assert failed and 'could not be parsed' in result['msg'] and hostname() in result['msg']
    assert (result['error_class'], result['error_side']) == ('parse_error', 'ours')


def test_two_independent_jobs_fail(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    out = fixtures.shared('nccl-tests/all_reduce_perf_2node_A100_pcie_nccl2.19.3_header_nccltests182_truncated.txt')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out=out)])
    assert failed and 'independent jobs' in result['msg'] and result['multiple_jobs'] is True
    assert result['error_class'] == 'multiple_jobs'


WRONG_LOG = IB_LOG.replace('44.53   44.53      0    24090', '44.53   44.53      7    24090')
assert WRONG_LOG != IB_LOG


def test_wrong_results_returned_then_failed_on_request(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out=WRONG_LOG)])
    assert not failed and result['data_errors'] == [{'size_bytes': 1073741824, 'oop_wrong': 7, 'ip_wrong': 0}]
    result, failed = run_module(nccl_tests.main, dict(ARGS, fail_on_wrong=True), calls=[Call(argv(hostfile), out=WRONG_LOG)])
    assert failed and '#wrong' in result['msg'] and (result['error_class'], result['error_side']) == ('wrong_results', 'host')


def test_nccl_env_and_options_become_x_flags(tmpdir_path):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    args = {'binary': 'all_reduce_perf', 'hosts': ['gpu-a'], 'nccl_env': {'NCCL_DEBUG': 'WARN', 'UCX_TLS': 'tcp'},
            'net_plugin': 'none', 'ib_merge_nics': False, 'ib_tc': 106, 'socket_ifname': ['eth0'], 'gpus_per_rank': 8,
            'warmup_iters': 1, 'check': 1, 'np': 1, 'mpirun_args': ['--bind-to', 'none'], 'timeout': 30}
    expected = ['/usr/bin/timeout', '--kill-after=5', '30', '/usr/bin/mpirun', '-np', '1', '--hostfile', hostfile,
                '--bind-to', 'none', '-x', 'NCCL_DEBUG=WARN', '-x', 'NCCL_IB_MERGE_NICS=0', '-x', 'NCCL_IB_TC=106',
                '-x', 'NCCL_NET_PLUGIN=none', '-x', 'NCCL_SOCKET_IFNAME==eth0', '-x', 'UCX_TLS=tcp',
                'all_reduce_perf', '-g', '8', '-w', '1', '-c', '1']
    result, failed = run_module(nccl_tests.main, args, calls=[Call(expected, out=IB_LOG)])
    assert not failed, result


@pytest.mark.parametrize('override,needle', [
    ({'binary': 'rm -rf /'}, 'binary'),
    ({'binary': 'ib_write_bw'}, 'binary'),
    ({'hosts': ['gpu a']}, 'hosts[0]'),
    ({'hosts': [{'name': 'gpu-a', 'slots': 0}]}, 'slots'),
    ({'hosts': []}, 'hosts'),
    ({'nccl_env': {'PATH': '/tmp'}}, 'nccl_env'),
    ({'nccl_env': {'NCCL_IB_HCA': 'mlx5_0'}}, 'both option ib_hca'),
    ({'fabric_subnet': '10.0.0.0/33'}, 'fabric_subnet'),
    ({'fabric_subnet': '10.0.0.0/30,'}, 'fabric_subnet'),
    ({'fabric_subnet': '10.0.0.0/30,eth0'}, 'fabric_subnet'),
    ({'gid_index': 300}, 'gid_index'),
    ({'ib_hca': ['mlx5_0;reboot']}, 'ib_hca'),
    ({'ib_hca': ['mlx5_0:x']}, 'ib_hca'),
    ({'ib_hca': ['^mlx5_2']}, 'nccl_env'),
    ({'ib_hca': []}, 'ib_hca'),
    ({'socket_ifname': ['=eth0']}, 'nccl_env'),
    ({'min_bytes': '1 G'}, 'min_bytes'),
    ({'mpirun': 'mpirun; id'}, 'mpirun'),
    ({'binary': '-all_reduce_perf'}, 'binary'),
    ({'binary': '/opt/--x/all_reduce_perf'}, 'binary'),
    ({'binary': 'all_reduce_perf\n'}, 'binary'),
    ({'hosts': ['gpu-a\n']}, 'hosts[0]'),
    ({'timeout': 10 ** 6}, 'timeout'),
])
def test_bad_input_fails_clearly(tmpdir_path, override, needle):
    result, failed = run_module(nccl_tests.main, dict(ARGS, **override))
    assert failed and needle in result['msg'] and hostname() in result['msg']
    assert result['_ran'] == [] and (result['error_class'], result['error_side']) == ('invalid_options', 'ours')


def nccl_selects():
    """NCCL's own list rules, as the lab emulates them (lab/netval_lab/tools_nccl.py): prefix unless '=', '^' excludes."""
    lab = os.path.join(fixtures.ROOT, 'lab')
    sys.path.insert(0, lab)
    try:
        from netval_lab import tools_nccl  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.remove(lab)
    return tools_nccl.nccl_list_selects


DGX = ['mlx5_%d' % i for i in range(12)]  # a DGX H100: mlx5_0..7 compute, mlx5_8..11 storage and in-band


def test_ib_hca_is_written_exactly_so_mlx5_1_never_selects_mlx5_10_or_mlx5_11(tmpdir_path):
    selects = nccl_selects()
    tested = ['mlx5_%d:1' % i for i in range(8)]
    result, failed = run_module(nccl_tests.main, dict(ARGS, ib_hca=tested, hosts=['gpu-a', 'gpu-b']), check_mode=True)
    assert not failed
    value = [part for part in result['cmd'].split() if part.startswith('NCCL_IB_HCA=')][0].split('=', 1)[1]
    assert value == '=' + ','.join(tested)
    assert [dev for dev in DGX if selects(value, dev, 1)] == DGX[:8]
    # What the tier wrote before: NCCL reads each bare name as a prefix, and mlx5_1 took the storage ports along.
    assert [dev for dev in DGX if selects(','.join(DGX[:8]), dev, 1)] == DGX[:8] + ['mlx5_10', 'mlx5_11']
    # A rail's port is part of the match: the other port of a dual-port storage NIC stays out.
    assert not selects(value, 'mlx5_0', 2)


def test_the_hcas_nccl_used_on_this_host_are_returned(tmpdir_path, monkeypatch):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    monkeypatch.setattr(nccl_tests, 'hostname', lambda: 'gpu-b.cluster.example')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out=IB_LOG.replace(
        'gpu-b:38876:38890 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE',
        'gpu-b:38876:38890 [0] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE'))])
    assert not failed
    assert result['local_host'] == 'gpu-b' and result['local_ib_hcas'] == ['mlx5_1']
    assert result['ib_hcas_by_host'] == {'gpu-a': ['mlx5_0', 'mlx5_1'], 'gpu-b': ['mlx5_1']}
    # A host name NCCL does not print (NCCL_HOSTID, a renamed box): the host of rank 0, mpirun's first host, this one.
    monkeypatch.setattr(nccl_tests, 'hostname', lambda: 'node17')
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), out=IB_LOG)])
    assert not failed and result['local_ib_hcas'] == ['mlx5_0', 'mlx5_1']


@pytest.mark.parametrize('name, error_class', [
    ('mpirun/mpirun_4.1.4_ssh_host_key_verification_failed_no_trust_debian12_lab.txt', 'launcher_failed'),
    ('mpirun/mpirun_4.1.4_orted_not_at_prefix_on_peer_debian12_lab.txt', 'launcher_missing'),
])
def test_a_job_the_launcher_could_not_start_is_ours(tmpdir_path, name, error_class):
    hostfile = os.path.join(tmpdir_path, 'hostfile')
    out = fixtures.local(name)
    rc = int(out.strip().splitlines()[-1].split('=')[1])
    result, failed = run_module(nccl_tests.main, ARGS, calls=[Call(argv(hostfile), rc=rc, err=out)])
    assert failed and (result['error_class'], result['error_side']) == (error_class, 'ours')
    assert 'could not start the job on every host' in result['msg'] and hostname() in result['msg']
