"""nccl-tests parser on real outputs (shared and found-public), synthetic INFO logs and foreign input."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import nccl
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

GB10 = 'nccl-tests/all_gather_perf_2xGB10_single_16G_size_2.17.6_dgxspark25_truncated.txt'
A100_TWO_JOBS = 'nccl-tests/all_reduce_perf_2node_A100_pcie_nccl2.19.3_header_nccltests182_truncated.txt'


def test_gb10_all_gather_new_header_single_row_cut_avg():
    result = nccl.parse_nccl_tests(fixtures.shared(GB10))
    assert result['test'] == 'all_gather_perf'
    assert result['nccl_tests_version'] == '2.17.6'
    assert result['nccl_version'] == '2.28.3'  # from nccl-library=22803
    assert len(result['rows']) == 1
    row = result['rows'][0]
    assert row['size_bytes'] == 17179869184 and row['count'] == 2147483648
    assert (row['type'], row['redop'], row['root']) == ('float', 'none', -1)
    assert (row['oop_time_us'], row['oop_algbw_gbs'], row['oop_busbw_gbs']) == (453650.0, 37.87, 18.94)
    assert (row['ip_time_us'], row['ip_algbw_gbs'], row['ip_busbw_gbs']) == (410049.0, 41.90, 20.95)
    assert row['wrong'] == 0 and row['oop_wrong'] == 0 and row['ip_wrong'] == 0
    assert result['out_of_bounds'] == 0 and result['out_of_bounds_ok'] is True
    # "# Avg" is cut: unknown, not 0.
    assert result['avg_busbw_gbs'] is None and result['truncated'] is True
    assert [(r['rank'], r['host'], r['bus_id'], r['name']) for r in result['ranks']] == [
        (0, 'spark', '000f:01:00', 'NVIDIA GB10'), (1, 'spark-3995', '000f:01:00', 'NVIDIA GB10')]
    assert result['transport'] is None and result['gdr'] is None
    assert result['multiple_jobs'] is False


def test_a100_two_headers_is_flagged_not_merged():
    result = nccl.parse_nccl_tests(fixtures.shared(A100_TWO_JOBS))
    assert result['multiple_jobs'] is True
    assert len(result['jobs']) == 2
    assert result['rows'] is None and result['avg_busbw_gbs'] is None
    assert result['test'] == 'all_reduce_perf'
    assert result['nccl_version'] == '2.19.3+cuda12.3'
    assert sorted({r['host'] for r in result['ranks']}) == ['testgpu1', 'testgpu2']
    assert [r['rank'] for r in result['ranks']] == [0, 1, 0, 1]


def test_old_layout_two_independent_jobs_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_old_layout_two_independent_jobs_nccltests107_truncated.txt'))
    assert result['multiple_jobs'] is True and result['rows'] is None
    assert [j['max_bytes'] for j in result['jobs']] == [1310720000, 1310720000]
    assert {r['host'] for r in result['ranks']} == {'ip-172-31-20-228', 'ip-172-31-22-230'}


def test_healthy_h100_table_with_avg_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_h100_ring_512M_8G_healthy_avg95_nccltests252.txt'))
    assert [r['size_bytes'] for r in result['rows']] == [536870912, 1073741824, 2147483648, 4294967296, 8589934592]
    assert result['rows'][0]['ip_time_us'] == 9676.9
    assert all(r['wrong'] == 0 for r in result['rows'])
    assert result['avg_busbw_gbs'] == 95.3009 and result['out_of_bounds'] == 0
    assert result['truncated'] is False
    assert nccl.max_busbw(result) == 97.54
    assert nccl.busbw_at_max_size(result) == 95.10
    assert nccl.busbw_at(result, 3 * 1024 ** 3)['size_bytes'] == 2147483648
    assert nccl.busbw_at(result, 1024) is None
    assert result['transport'] is None  # no INFO lines: unknown, not IB


def test_old_error_column_na_is_unknown_not_zero_and_warn_lines():
    result = nccl.parse_nccl_tests(
        fixtures.local('nccl/broadcast_perf_old_error_column_na_socket_2node_v100_nccltests82_truncated.txt'))
    assert result['test'] == 'broadcast_perf'
    assert len(result['rows']) == 1  # the cut second row is dropped
    row = result['rows'][0]
    assert row['root'] == 0 and row['redop'] is None
    assert row['oop_time_us'] == 45.82 and row['ip_time_us'] == 38.17
    assert row['oop_wrong'] is None and row['wrong'] is None
    assert result['nccl_version'] == '2.9.6+cuda11.2'
    assert len(result['errors']) == 2 and all('NCCL WARN Failed to open libibverbs' in e for e in result['errors'])
    assert [r['host'] for r in result['ranks']] == ['v100-gpu-1', 'v100-gpu-5']
    assert result['ranks'][0]['group'] is None
    assert result['transport'] is None and result['truncated'] is True


def test_net_socket_info_log_with_warnings_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_2gpu_net_socket_info_warn_nccltests131_truncated.txt'))
    assert result['transport'] == 'Socket' and result['gdr'] is False
    assert result['socket_ifaces'] == ['eth0', 'virbr0']
    assert result['nccl_version'] == '2.16.5+cuda11.8'
    assert result['test'] == 'all_reduce_perf'
    assert len(result['errors']) == 2 and 'Could not find a path' in result['errors'][0]
    assert result['rows'] == []


def test_net_ib_gdrdma_ring_lines_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/nccl_info_ring_net_ib_gdrdma_2node_azure_nccltests36_truncated.txt'))
    assert result['transport'] == 'IB' and result['gdr'] is True
    assert result['rows'] == [] and result['avg_busbw_gbs'] is None


def test_ibext_plugin_channels_are_ib_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/nccl_info_channel_net_ibext_gdrdma_2node_h100_nccl1357_truncated.txt'))
    assert result['transport'] == 'IB' and result['network'] == 'IBext' and result['gdr'] is True
    assert result['channels'] == 12


def test_synthetic_ib_log_with_info_inside_the_table():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_2node_h100_roce_net_ib_gdrdma_info_synthetic.txt'))
    assert len(result['rows']) == 4
    assert result['transport'] == 'IB' and result['gdr'] is True
    assert result['net_devices'] == ['mlx5_0:1/RoCE', 'mlx5_1:1/RoCE'] and result['ib_hcas'] == ['mlx5_0', 'mlx5_1']
    assert result['channels'] == 4 and result['avg_busbw_gbs'] == 45.5775
    assert nccl.busbw_at_max_size(result) == 46.21


def test_synthetic_socket_fallback():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_2node_net_socket_fallback_info_synthetic.txt'))
    assert result['transport'] == 'Socket' and result['gdr'] is False
    assert result['avg_busbw_gbs'] == 2.1 and 'NCCL_IB_HCA=mlx5_9' in result['errors'][0]


def test_tagged_output_and_wrong_values():
    text = ('[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 '
            'validation: 1 graph: 0\n'
            '[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n'
            '[1,0]<stdout>:           8             2     float     sum      -1    17.08    0.00    0.00      3    16.76    0.00    0.00      1\n'
            '[1,0]<stdout>:          16             4     float     sum      -1    16.72    0.00    0.00      0    16.66    0.00    0.00      0\n'
            '[1,0]<stdout>:# Out of bounds values : 4 FAILED\n'
            '[1,0]<stdout>:# Avg bus bandwidth    : 0.001\n')
    result = nccl.parse_nccl_tests(text)
    assert [r['wrong'] for r in result['rows']] == [4, 0]
    assert result['out_of_bounds'] == 4 and result['out_of_bounds_ok'] is False
    assert nccl.data_errors(result) == [{'size_bytes': 8, 'oop_wrong': 3, 'ip_wrong': 1}]


def test_in_place_only_table():
    text = ('#  size  in-place  time(us)  busbw(GB/s)  #wrong\n'
            '   1048576   52.1   20.13   0\n')
    row = nccl.parse_nccl_tests(text)['rows'][0]
    assert row['size_bytes'] == 1048576 and row['ip_time_us'] == 52.1 and row['ip_busbw_gbs'] == 20.13
    assert row['oop_busbw_gbs'] is None and row['ip_wrong'] == 0


def test_nccl_failure_lines_are_errors():
    text = ('# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n'
            'gpu-a: Test NCCL failure common.cu:1005 \'unhandled system error (run with NCCL_DEBUG=INFO for details)\'\n')
    result = nccl.parse_nccl_tests(text)
    assert result['errors'] and 'Test NCCL failure' in result['errors'][0]
    assert result['rows'] == []


@pytest.mark.parametrize('text', ['', 'hello world\n', 'hca_id: mlx5_0\n\ttransport: InfiniBand (0)\n', 'a\x00b'])
def test_foreign_text_is_a_parse_error(text):
    with pytest.raises(ParseError):
        nccl.parse_nccl_tests(text)


H100 = 'nccl/all_reduce_perf_h100_ring_512M_8G_healthy_avg95_nccltests252.txt'
H100_LAST_ROW = ('  8589934592    2147483648     float     sum      -1   158070   54.34   95.10      0   '
                 '158561   54.17   94.80      0')


def test_infinite_busbw_is_dropped_and_its_row_marked_invalid():
    """1e309 in the table reads as inf: never a figure to grade (issue 13 graded it healthy, bucket A)."""
    text = fixtures.local(H100).replace(H100_LAST_ROW, H100_LAST_ROW.replace('95.10', '1e309'))
    result = nccl.parse_nccl_tests(text)
    last = result['rows'][-1]
    assert last['oop_busbw_gbs'] is None and last['valid'] is False and last['ip_busbw_gbs'] == 94.80
    assert result['invalid_rows'] == 1 and all(row['valid'] for row in result['rows'][:-1])
    assert nccl.busbw_at_max_size(result) == 94.80 and nccl.max_busbw(result) == 97.54


@pytest.mark.parametrize('token', ['-95.10', 'nan', 'inf'])
def test_negative_or_non_finite_busbw_is_dropped(token):
    result = nccl.parse_nccl_tests(fixtures.local(H100).replace(H100_LAST_ROW, H100_LAST_ROW.replace('95.10', token)))
    assert result['rows'][-1]['oop_busbw_gbs'] is None and result['invalid_rows'] == 1


@pytest.mark.parametrize('average', ['1e309', 'inf', '95.', '95.3.1'])
def test_unusable_average_is_unknown_and_the_run_truncated(average):
    result = nccl.parse_nccl_tests(fixtures.local(H100).replace('95.3009', average))
    assert result['avg_busbw_gbs'] is None and result['truncated'] is True


def test_busbw_cut_mid_number_is_not_a_row():
    cut = H100_LAST_ROW[:H100_LAST_ROW.index('95.10') + 3]  # '... 54.34   95.'
    result = nccl.parse_nccl_tests(fixtures.local(H100).replace(H100_LAST_ROW, cut))
    assert [row['size_bytes'] for row in result['rows']][-1] == 4294967296 and result['truncated'] is True


@pytest.mark.parametrize('prompt', ['$ all_reduce_perf -b 8 -e 8G', 'root@gpu07:~# sudo all_reduce_perf -b 8 -e 8G',
                                    '[ops@gpu07 ~]$ mpirun -np 8 ./build/all_reduce_perf -b 8 -e 8G'])
def test_the_pasted_command_line_names_the_test(prompt):
    """The prompt is removed but the command stays: a table without 'Collective test' lines is named by its binary."""
    body = fixtures.local(H100)
    assert nccl.parse_nccl_tests(body)['test'] is None
    result = nccl.parse_nccl_tests(prompt + '\n' + body)
    assert result['test'] == 'all_reduce_perf' and result['rows'] == nccl.parse_nccl_tests(body)['rows']


def test_mpi_suffixed_binary_in_the_old_layout_names_the_test_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_mpi_srun_2node_h100_old_layout_no_collective_line_soperator428_truncated.txt'))
    assert (result['test'], result['binary']) == ('all_reduce_perf', 'all_reduce_perf_mpi')
    job = result['jobs'][0]
    assert (job['nthread'], job['ngpus'], job['min_bytes'], job['max_bytes']) == (1, 1, 536870912, 8589934592)
    assert [(r['rank'], r['host'], r['device']) for r in result['ranks']][7:9] == [(7, 'worker-1', 7), (8, 'worker-0', 0)]
    assert result['rows'] == [] and result['avg_busbw_gbs'] is None and result['multiple_jobs'] is False


def test_mpi_suffixed_binary_with_tag_output_rows_synthetic():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_mpi_tag_output_2node_h100_old_layout_synthetic.txt'))
    assert (result['test'], result['binary']) == ('all_reduce_perf', 'all_reduce_perf_mpi')
    assert len(result['rows']) == 5 and result['avg_busbw_gbs'] == 364.073 and nccl.busbw_at_max_size(result) == 372.07
    assert result['out_of_bounds_ok'] is True and result['truncated'] is False


@pytest.mark.parametrize('line,test,binary', [
    ('srun --mpi=pmix all_reduce_perf_mpi -b 8 -e 8G', 'all_reduce_perf', 'all_reduce_perf_mpi'),
    ('mpirun -np 16 /opt/nccl-tests/build/alltoall_perf_mpi -b 1G -e 1G -g 1', 'alltoall_perf', 'alltoall_perf_mpi'),
    ('mpirun -np 2 ./build/reduce_scatter_perf.mpi -b 8 -e 1G', 'reduce_scatter_perf', 'reduce_scatter_perf.mpi'),
    ('./all_gather_perf -b 8 -e 128M -g 8', 'all_gather_perf', 'all_gather_perf'),
])
def test_binary_names_with_and_without_a_build_suffix(line, test, binary):
    text = line + '\n# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n'
    result = nccl.parse_nccl_tests(text)
    assert (result['test'], result['binary']) == (test, binary)
    starting = '# Collective test starting: %s\n' % binary
    assert nccl.parse_nccl_tests(starting + text)['test'] == test


# --- nccl-tests of 2025-2026 (2.17+, Blackwell, NCCL 2.28+) ---------------------------------------------------

def test_gb300_all_reduce_nccl_2_28_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_gb300_4gpu_nvl72_nccl2.28.7_two_sizes_oci_quickstart.txt'))
    assert (result['test'], result['nccl_version']) == ('all_reduce_perf', '2.28.7+cuda13.0')
    assert [(r['rank'], r['host'], r['bus_id'], r['name']) for r in result['ranks']][3] == (3, 'GPU-3882', '0019:06:00', 'NVIDIA GB300')
    assert [row['size_bytes'] for row in result['rows']] == [8589934592, 17179869184]
    assert nccl.busbw_at_max_size(result) == 685.27 and result['avg_busbw_gbs'] == 446.673
    assert result['truncated'] is False and nccl.data_errors(result) == [] and result['out_of_bounds_ok'] is True


def test_gb300_alltoall_in_place_wrong_is_not_checked_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/alltoall_perf_gb300_2hosts_8gpu_nccl2.28.7_inplace_wrong_na_oci_quickstart.txt'))
    assert result['test'] == 'alltoall_perf' and [r['rank'] for r in result['ranks']] == [0, 1, 6, 7]
    last = result['rows'][-1]
    assert (last['redop'], last['root'], last['oop_busbw_gbs'], last['ip_busbw_gbs']) == ('none', -1, 685.06, 676.81)
    assert (last['oop_wrong'], last['ip_wrong'], last['wrong']) == (0, None, 0)
    assert result['avg_busbw_gbs'] == 407.955 and result['multiple_jobs'] is False


def test_nccl_tests_2_20_layout_with_unalign_found_public():
    result = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_2.20.0_2x_gb10_dgx_spark_unalign_dgxspark103_truncated.txt'))
    assert (result['nccl_tests_version'], result['nccl_version'], result['test']) == ('2.20.0', '2.31.2', 'all_reduce_perf')
    assert [r['host'] for r in result['ranks']] == ['spark-d708', 'spark-dbf4'] and result['jobs'][0]['min_bytes'] == 8192
    assert [row['ip_busbw_gbs'] for row in result['rows']] == [0.27, 0.53, 0.88, 1.01]
    assert result['avg_busbw_gbs'] is None and result['truncated'] is True


PER_ITERATION = 'nccl/all_reduce_perf_2.19.6_per_iteration_columns_timestamp_2node_b200_synthetic.txt'


def test_per_iteration_columns_and_timestamp_synthetic():
    result = nccl.parse_nccl_tests(fixtures.local(PER_ITERATION))
    assert result['nccl_tests_version'] == '2.19.6' and len(result['rows']) == 3 and result['avg_busbw_gbs'] == 696.365
    last = result['rows'][-1]
    assert (last['oop_time_us'], last['oop_busbw_gbs'], last['ip_busbw_gbs']) == (11469.0, 702.16, 702.53)
    assert (last['oop_i_p99_us'], last['ip_i_cv_pct'], last['timestamp']) == (12240.0, 1.69, '2026-07-10 14:22:13')
    assert result['truncated'] is False and nccl.busbw_at_max_size(result) == 702.53


def test_cputime_column_name_reads_as_time():
    text = fixtures.local(PER_ITERATION)
    header = next(line for line in text.splitlines() if 'i_min' in line and 'size' in line)
    result = nccl.parse_nccl_tests(text.replace(header, header.replace('     time   ', '  cputime   ')))
    assert len(result['rows']) == 3 and result['rows'][0]['oop_time_us'] == 2925.8
    # A row cut before its timestamp does not fit the columns: it is cut, not read.
    cut = text.replace('  2026-07-10 14:22:09', '')
    assert len(nccl.parse_nccl_tests(cut)['rows']) == 2 and nccl.parse_nccl_tests(cut)['truncated'] is True


# ------------------------------------------------------------------ the launcher's own failures (real Open MPI 4.1.4)

NO_TRUST = 'mpirun/mpirun_4.1.4_ssh_host_key_verification_failed_no_trust_debian12_lab.txt'
NO_ORTED = 'mpirun/mpirun_4.1.4_orted_not_at_prefix_on_peer_debian12_lab.txt'
OOB_WARN = 'mpirun/mpirun_4.1.4_oob_include_subnet_not_found_warns_and_runs_debian12_lab.txt'


def test_the_launcher_that_could_not_start_the_job_is_named_from_real_open_mpi_output():
    assert nccl.launcher_problem(fixtures.local(NO_TRUST)) == ('launcher_failed', 'Host key verification failed.')
    # As ssh wrote it: its one line ends in CR LF (the fixture stores a plain newline for sanity's line-endings test).
    as_written = fixtures.local(NO_TRUST).replace('Host key verification failed.\n', 'Host key verification failed.\r\n')
    assert nccl.launcher_problem(as_written) == ('launcher_failed', 'Host key verification failed.')
    assert nccl.launcher_problem(fixtures.local(NO_ORTED)) == ('launcher_missing', 'bash: line 1: /usr/bin/orted: No such file or directory')
    # Open MPI warns about an include subnet no interface has and runs the job: not a launcher failure.
    assert nccl.launcher_problem(fixtures.local(OOB_WARN)) is None
    assert nccl.parse_nccl_tests(fixtures.local(OOB_WARN))['rows']
    assert nccl.launcher_problem(fixtures.local('nccl/all_reduce_perf_2node_h100_roce_net_ib_gdrdma_info_synthetic.txt')) is None


def test_each_hosts_hcas_are_kept_apart():
    parsed = nccl.parse_nccl_tests(fixtures.local('nccl/all_reduce_perf_2node_h100_roce_net_ib_gdrdma_info_synthetic.txt'))
    assert parsed['ib_hcas_by_host'] == {'gpu-a': ['mlx5_0', 'mlx5_1'], 'gpu-b': ['mlx5_0', 'mlx5_1']}
    one = 'gpu-b:38876:38890 [0] NCCL INFO NET/IBext_v8 : Using [0]mlx5_3:1/IB [RO]; OOB eth0:10.0.0.12<0>\n'
    assert nccl.parse_nccl_tests(one)['ib_hcas_by_host'] == {'gpu-b': ['mlx5_3']}
