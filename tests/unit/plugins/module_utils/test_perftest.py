"""parse_perftest on real perftest outputs (shared, captured here, found in public issues) and on synthetic formats."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import perftest
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

MIB = 2 ** 20


def shared(name):
    return perftest.parse_perftest(fixtures.shared('perftest/' + name))


def local(name):
    return perftest.parse_perftest(fixtures.local('perftest/' + name))


# --- the ten shared real outputs -------------------------------------------------------------

def test_ib_read_lat_ib_sriov_vf_percentiles_and_cpu_warnings():
    result = shared('ib_read_lat_ib_mlx5_sriov_vf_pod_spiderpool_doc.txt')
    assert (result['test'], result['kind'], result['device'], result['link_type'], result['mtu']) == \
        ('RDMA_Read Latency', 'lat', 'mlx5_8', 'IB', 4096)
    assert result['gid_index'] is None and result['bw_unit'] is None and result['error_class'] is None
    assert result['results'] == [{'bytes': 2, 'iterations': 1000, 't_min_us': 1.84, 't_max_us': 12.20, 't_typical_us': 1.90,
                                  't_avg_us': 1.97, 't_stdev_us': 0.47, 'p99_us': 2.24, 'p999_us': 12.20, 'complete': True,
                                  'valid': True}]
    assert len(result['warnings']) == 2 and all('Conflicting CPU frequency' in w for w in result['warnings'])
    assert result['outstand_reads'] == 16 and result['data_ex_method'] == 'Ethernet' and result['rdma_cm'] is False
    assert result['complete'] is True and result['side'] == 'client'


def test_ib_read_lat_roce_gid12_spaces_instead_of_tabs():
    result = shared('ib_read_lat_roce_cx5_gid12_macvlan_pod_spiderpool_doc.txt')
    assert (result['device'], result['link_type'], result['gid_index'], result['mtu']) == ('mlx5_0', 'Ethernet', 12, 1024)
    row = result['results'][0]
    assert (row['bytes'], row['iterations'], row['t_min_us'], row['t_max_us'], row['t_typical_us']) == (2, 1000, 6.88, 16.81, 7.04)
    assert (row['t_avg_us'], row['t_stdev_us'], row['p99_us'], row['p999_us']) == (7.06, 0.31, 7.38, 16.81)
    assert result['qps'] == 1 and result['transport'] == 'IB' and result['connection_type'] == 'RC'


def test_ib_read_lat_libibverbs_warnings_are_not_errors():
    result = shared('ib_read_lat_roce_cx5_sriov_vf_libibverbs_warnings_spiderpool_doc.txt')
    assert result['error_class'] is None and result['error_hint'] is None
    assert (result['device'], result['gid_index']) == ('mlx5_5', 2)
    assert sum('libibverbs: Warning' in w for w in result['warnings']) == 5
    row = result['results'][0]
    assert (row['t_min_us'], row['t_max_us'], row['t_typical_us'], row['t_avg_us'], row['t_stdev_us'], row['p99_us'], row['p999_us']) == \
        (6.66, 20.37, 6.74, 6.82, 0.78, 7.15, 20.37)


def test_ngc_bidirectional_header_without_results_is_not_healthy():
    result = shared('ib_write_bw_bidir_D30_q2_ngc_multinode_issue108_truncated.txt')
    assert result['test'] == 'RDMA_Write Bidirectional BW' and result['bidirectional'] is True
    assert result['qps'] == 2 and result['device'] == 'mlx5_3' and result['mtu'] == 4096
    assert "WARNING: BW peak won't be measured in this run." in result['warnings']
    assert result['bw_peak_measured'] is False and result['duration_s'] == 30
    assert result['results'] == [] and result['complete'] is False and result['error_class'] is None


def test_ib_sweep_report_gbits_quote_prefixes_and_truncated_row():
    result = shared('ib_write_bw_ib_sweep_gbits_issue132_truncated.txt')
    assert result['bw_unit'] == 'Gb/sec' and result['link_type'] == 'IB' and result['cq_moderation'] == 100
    rows = result['results']
    assert [row['bytes'] for row in rows] == [2, 4, 8, 16]
    assert (rows[0]['bw_peak'], rows[0]['bw_avg'], rows[0]['msg_rate_mpps']) == (0.042350, 0.042185, 2.636533)
    assert rows[0]['bw_avg_gbps'] == 0.042185 and rows[0]['bw_avg_gbytes_s'] == pytest.approx(0.042185 / 8)
    assert (rows[2]['bw_peak'], rows[2]['bw_avg'], rows[2]['msg_rate_mpps']) == (0.17, 0.17, 2.641399)
    assert rows[3]['complete'] is False and rows[3]['bw_peak'] == 0.34 and rows[3]['bw_avg'] is None
    assert result['complete'] is False


def test_interleaved_server_and_client_are_not_double_counted():
    result = shared('ib_write_bw_loopback_8M_interleaved_server_client_superbench.txt')
    assert [(s['side'], len(s['results'])) for s in result['sections']] == [('client', 1), ('server', 1)]
    assert len(result['results']) == 1 and result['side'] == 'client'
    row = result['results'][0]
    assert (row['bytes'], row['iterations'], row['bw_peak'], row['bw_avg'], row['msg_rate_mpps']) == (8388608, 20000, 24056.74, 24056.72, 0.003007)
    assert row['bw_unit'] == 'MB/sec' and row['bw_avg_as_printed'] == 24056.72
    # perftest MB/sec is MiB/s: 24056.72 * 2^20 bytes/s
    assert row['bw_avg_gbytes_s'] == pytest.approx(24056.72 * MIB / 1e9) == pytest.approx(25.225299)
    assert row['bw_avg_gbps'] == pytest.approx(24056.72 * MIB * 8 / 1e9) == pytest.approx(201.802394)
    assert result['sections'][1]['results'][0]['bw_avg'] == 24056.72
    assert result['complete'] is True


def test_roce_duration_server_side_row_cut_off():
    result = shared('ib_write_bw_roce_D10_MBsec_issue234_truncated.txt')
    assert (result['link_type'], result['gid_index'], result['mtu'], result['bw_unit']) == ('Ethernet', 3, 4096, 'MB/sec')
    assert result['side'] == 'server' and result['waiting_for_client'] is True
    row = result['results'][0]
    assert (row['bytes'], row['iterations']) == (65536, 664644)
    assert row['bw_avg'] is None and row['bw_avg_gbps'] is None and row['complete'] is False
    assert result['complete'] is False


def test_rdma_cm_duration_gbits_peak_zero_means_not_measured():
    result = shared('ib_write_bw_roce_rdmacm_D_gbits_pr342_truncated.txt')
    assert result['rdma_cm'] is True and result['data_ex_method'] == 'rdma_cm' and result['gid_index'] == 0
    first, second = result['results']
    assert (first['bytes'], first['iterations'], first['bw_avg'], first['msg_rate_mpps']) == (65536, 403504, 42.31, 0.080701)
    assert first['bw_peak'] is None and second['bw_peak'] is None
    assert first['bw_avg_gbps'] == 42.31 and first['bw_avg_gbytes_s'] == pytest.approx(5.28875)
    assert second['complete'] is False and result['bw_peak_measured'] is False


def test_use_cuda_preamble_and_old_header():
    result = shared('ib_write_bw_use_cuda_v100_roce_mtu1024_pr21_truncated.txt')
    assert result['use_cuda'] is True and result['gpu'] == {'index': 0, 'name': 'Tesla V100-SXM2-32GB'}
    assert (result['link_type'], result['gid_index'], result['mtu'], result['cq_moderation']) == ('Ethernet', 3, 1024, 100)
    assert result['error_class'] is None and result['results'] == [] and result['complete'] is False


def test_cuda_dmabuf_parser_error_is_an_argument_error():
    result = shared('err_cuda_dmabuf_parser_error_issue336.txt')
    assert result['error_class'] == 'argument_error'
    assert 'CUDA DMA-BUF cannot be used without CUDA' in result['error_text']
    assert result['results'] == [] and result['use_cuda'] is True
    assert any('inline size set to 0' in w for w in result['warnings'])
    assert result['error_hint'] == perftest.ERROR_HINTS['argument_error']


# --- outputs captured on this project's machine (real perftest 6.06, no RDMA device) -------------

@pytest.mark.parametrize('name', ['ib_write_bw_no_rdma_device_debian12_perftest606.txt', 'ib_send_lat_no_rdma_device_debian12_perftest606.txt'])
def test_no_rdma_device_captured_here(name):
    result = local(name)
    assert result['error_class'] == 'no_rdma_device'
    assert 'Unable to find the Infiniband/RoCE device' in result['error_text']
    assert result['results'] == [] and result['test'] is None and result['complete'] is False


def test_use_cuda_on_a_build_without_cuda_captured_here():
    result = local('ib_read_bw_use_cuda_unsupported_build_debian12_perftest606.txt')
    assert result['error_class'] == 'cuda_unavailable'
    assert "unrecognized option '--use_cuda=0'" in result['error_text']


def test_unknown_flag_with_usage_text_captured_here():
    result = local('ib_write_bw_invalid_flag_usage_debian12_perftest606.txt')
    assert result['error_class'] == 'argument_error'
    assert result['results'] == [] and result['sections'] == []


# --- real outputs found in public issues -------------------------------------------------------

def test_post_list_duration_issue273():
    result = local('ib_write_bw_post_list_D60_8B_gbits_roce_issue273.txt')
    assert result['test'] == 'RDMA_Write Post List BW' and result['post_list'] == 128
    assert (result['tx_depth'], result['cq_moderation'], result['gid_index'], result['bw_unit']) == (256, 128, 2, 'Gb/sec')
    row = result['results'][0]
    assert (row['bytes'], row['iterations'], row['bw_peak'], row['bw_avg'], row['msg_rate_mpps']) == (8, 224958464, None, 0.48, 7.498617)
    assert row['bw_avg_gbytes_s'] == pytest.approx(0.06)
    assert result['complete'] is True


def test_connect_failed_pr228():
    result = local('ib_write_bw_connect_failed_pr228.txt')
    assert result['error_class'] == 'connect_failed'
    assert "Couldn't connect to 192.168.125.211:18515" in result['error_text']


def test_qp_modify_rtr_issue393_hint_mentions_gid_index():
    result = local('ib_write_bw_qp_rtr_grh_required_issue393.txt')
    assert result['error_class'] == 'qp_modify_failed'
    assert 'Failed to modify QP 122273 to RTR' in result['error_text']
    assert 'gid_index' in result['error_hint'] and 'show_gids' in result['error_hint']


def test_completion_error_softiwarp27():
    result = local('ib_send_bw_completion_error_status12_softiwarp27.txt')
    assert result['error_class'] == 'completion_error' and 'Failed status 12' in result['error_text']


# --- synthetic formats (no real sample found) ------------------------------------------------------

def test_newest_layout_mib_sweep_with_warnings_inside_the_table():
    result = local('ib_send_bw_sweep_MiBsec_newest_layout_synthetic.txt')
    assert result['test'] == 'Send BW' and result['bw_unit'] == 'MiB/sec' and result['rx_depth'] == 512
    rows = result['results']
    assert len(rows) == 23 and rows[0]['bytes'] == 2 and rows[-1]['bytes'] == 8388608
    assert rows[-1]['bw_avg'] == 46557.03
    assert rows[-1]['bw_avg_gbytes_s'] == pytest.approx(48.818584, abs=1e-6)
    assert rows[-1]['bw_avg_gbps'] == pytest.approx(390.548674, abs=1e-6)
    assert any('Requested mtu is higher than active mtu' in w for w in result['warnings'])
    assert any('Conflicting CPU frequency' in w for w in result['warnings'])
    assert result['complete'] is True
    assert perftest.summarize_perftest(result)['bw_avg_gbps'] == pytest.approx(390.548674, abs=1e-6)


def test_old_latency_format_reports_missing_columns_as_none():
    rows = local('ib_write_lat_old_format_no_avg_synthetic.txt')['results']
    assert [(r['bytes'], r['t_min_us'], r['t_max_us'], r['t_typical_us']) for r in rows] == \
        [(2, 0.79, 4.31, 0.83), (4, 0.79, 3.02, 0.83), (8, 0.80, 2.95, 0.84)]
    assert all(r['t_avg_us'] is None and r['p99_us'] is None and r['complete'] for r in rows)


def test_latency_duration_mode():
    row = local('ib_send_lat_duration_mode_synthetic.txt')['results'][0]
    assert (row['bytes'], row['iterations'], row['t_avg_us'], row['tps_avg']) == (2, 3629040, 1.38, 362904.0)
    assert row['t_typical_us'] is None and row['p99_us'] is None


# --- classification and refusal -------------------------------------------------------------------

@pytest.mark.parametrize('text,error_class', [
    ('No IB devices found\n', 'no_rdma_device'),
    ('Failed to get IB devices list\n', 'no_rdma_device'),
    ('Unable to open file descriptor for socket connection\n', 'connect_failed'),
    (' Failed to exchange data between server and clients\n', 'connect_failed'),
    ('Failed to modify QP to RTS\n', 'qp_modify_failed'),
    ('initializing CUDA\nThere are no available device(s) that support CUDA\n', 'cuda_unavailable'),
    ('initializing CUDA\ncuMemAlloc error=2\n', 'cuda_unavailable'),
    ('allocated GPU buffer address at 0x1\nCouldn\'t allocate MR\n', 'cuda_unavailable'),
    (' Completion with error at server\n Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81\n', 'completion_error'),
    ("Couldn't listen to port 18515\n", 'port_in_use'),
    ('bind: Address already in use\n', 'port_in_use'),
    ('\n************************************\n* Waiting for client to connect... *\n************************************\n'
     ' Unable to create the resources needed by comm struct\n', 'unknown_error'),
])
def test_error_classes(text, error_class):
    result = perftest.parse_perftest(text)
    assert result['error_class'] == error_class
    assert result['error_hint'] == perftest.ERROR_HINTS[error_class]


def test_reg_mr_failure_without_cuda_is_not_a_cuda_error():
    with pytest.raises(ParseError):
        perftest.parse_perftest("Couldn't allocate MR\n")


@pytest.mark.parametrize('text', ['', 'hello\n', 'PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.\n', 'x\x00y'])
def test_foreign_text_is_refused(text):
    with pytest.raises(ParseError):
        perftest.parse_perftest(text)


def test_every_error_class_has_a_hint():
    for error_class in ('no_rdma_device', 'connect_failed', 'qp_modify_failed', 'cuda_unavailable', 'completion_error',
                        'argument_error', 'port_in_use', 'timeout', 'unknown_error'):
        assert perftest.ERROR_HINTS[error_class]


# --- argv ---------------------------------------------------------------------------------------------

def test_build_argv_client_full():
    params = {'test': 'ib_write_bw', 'role': 'client', 'server': '10.0.0.2', 'device': 'mlx5_0', 'ib_port': 1, 'gid_index': 3,
              'size': 65536, 'all_sizes': False, 'duration': 10, 'iterations': None, 'tx_depth': 128, 'qps': 4, 'use_cuda': 0,
              'report_gbits': True, 'bidirectional': True, 'port': 18515, 'rdma_cm': True, 'mtu': 4096, 'connection': 'RC',
              'cpu_freq_check': False, 'tclass': 106, 'extra_args': ['--cpu_util']}
    assert perftest.build_perftest_argv(params) == [
        '-d', 'mlx5_0', '-i', '1', '-x', '3', '-s', '65536', '-D', '10', '-t', '128', '-q', '4', '--use_cuda=0', '--tclass=106',
        '--report_gbits', '-b', '-p', '18515', '-R', '-m', '4096', '-c', 'RC', '-F', '--cpu_util', '10.0.0.2']


def test_a_client_whose_options_differ_from_its_servers_is_our_argument_error():
    # perftest 6.28+ compares its options with the server's before the test (src/perftest_communication.c, negotiate_params).
    text = ' size mismatch: local=65536, remote=4096\n Failed to negotiate parameters\n'
    assert perftest._classify(text.splitlines())[0] == 'argument_error'  # pylint: disable=protected-access


def test_build_argv_server_sweep_keeps_cpu_freq_check():
    params = {'test': 'ib_send_lat', 'role': 'server', 'server': None, 'all_sizes': True, 'size': None, 'iterations': 5000,
              'port': 20000, 'cpu_freq_check': True}
    assert perftest.build_perftest_argv(params) == ['-a', '-n', '5000', '-p', '20000']


# --- figures a client cut short, or that perftest could not compute, are never graded -------------

READ_LAT = 'ib_read_lat_ib_mlx5_sriov_vf_pod_spiderpool_doc.txt'
READ_LAT_ROW = '2       1000          1.84           12.20        1.90     \t       1.97        \t0.47   \t\t2.24    \t\t12.20'


def _read_lat_with_row(row):
    text = fixtures.shared('perftest/' + READ_LAT)
    assert READ_LAT_ROW in text
    return perftest.parse_perftest(text.replace(READ_LAT_ROW, row))


def test_latency_row_cut_mid_number_is_incomplete_not_1_us():
    """A client that timed out leaves '1.' at the end of its last line: that is not 1.0 us."""
    result = _read_lat_with_row('2       1000          1.84           12.20        1.')
    row = result['results'][0]
    assert row['t_typical_us'] is None and row['complete'] is False and row['valid'] is False
    assert result['complete'] is False


@pytest.mark.parametrize('typical', ['-1.90', '-nan', 'inf'])
def test_negative_or_non_finite_latency_is_unknown(typical):
    result = _read_lat_with_row(READ_LAT_ROW.replace('1.90', typical, 1))
    row = result['results'][0]
    assert row['t_typical_us'] is None and row['valid'] is False and row['t_avg_us'] == 1.97
    assert result['complete'] is False


def test_latency_in_exponent_form_is_not_a_result_row():
    """perftest never prints exponents: a row holding 1e309 is foreign text, so there is no figure to grade."""
    result = _read_lat_with_row(READ_LAT_ROW.replace('1.90', '1e309', 1))
    assert result['results'] == [] and result['complete'] is False


# --- the newest header layout (perftest 24.x/25.x), pasted with prompts ---------------------------

def test_ib_send_bw_newest_header_layout_pasted_with_prompts_found_public():
    result = local('ib_send_bw_ndr_perftest24_header_cpu_warning_in_table_prompt.txt')
    assert (result['test'], result['kind'], result['device'], result['link_type'], result['mtu']) == \
        ('Send BW', 'bw', 'mlx5_0', 'IB', 4096)
    assert result['header']['ibv_wr* api'] == 'ON' and result['header']['using enhanced reorder'] == 'OFF'
    assert result['header']['cqe poll batch'] == '16' and result['tx_depth'] == 128 and result['rdma_cm'] is False
    row, = result['results']
    assert (row['bytes'], row['iterations'], row['bw_peak'], row['bw_avg']) == (65536, 1000, 46567.34, 46557.03)
    assert row['bw_avg_gbps'] == pytest.approx(46557.03 * MIB * 8 / 1e9) and row['complete'] and row['valid']
    assert any('Conflicting CPU frequency' in warning for warning in result['warnings'])
    assert result['complete'] is True and result['error_class'] is None and result['side'] == 'client'


def test_ib_send_lat_newest_header_ending_in_the_next_command_found_public():
    result = local('ib_send_lat_ndr_perftest24_header_two_cpu_warnings_prompt_next_command.txt')
    row, = result['results']
    assert (row['t_typical_us'], row['t_avg_us'], row['p99_us'], row['p999_us']) == (1.27, 1.27, 1.37, 5.19)
    assert result['kind'] == 'lat' and result['max_inline'] == 236 and result['complete'] is True
    assert sum('Conflicting CPU frequency' in warning for warning in result['warnings']) == 2


def test_pasted_bidirectional_server_then_client_reports_the_client_found_public():
    result = local('ib_send_bw_bidir_D5_server_then_client_pasted_labelled_abbycin_bw.txt')
    assert [(s['side'], s['results'][0]['iterations']) for s in result['sections']] == [('server', 8758300), ('client', 8768313)]
    assert result['side'] == 'client' and result['test'] == 'Send Bidirectional BW' and result['bidirectional'] is True
    row = result['results'][0]
    assert (row['bytes'], row['bw_avg'], row['bw_peak'], row['bw_unit']) == (4096, 11402.81, None, 'MB/sec')
    assert result['duration_s'] == 5 and result['complete'] is True


PASTED_SIDES = 'ib_write_bw_bidir_roce_server_banner_then_client_pasted_synthetic.txt'


def test_pasted_bidirectional_server_banner_then_unlabelled_client_synthetic():
    result = local(PASTED_SIDES)
    assert [(s['side'], s['device']) for s in result['sections']] == [('server', 'mlx5_1'), ('client', 'mlx5_0')]
    assert (result['side'], result['device'], result['gid_index'], result['link_type']) == ('client', 'mlx5_0', 3, 'Ethernet')
    assert result['results'][0]['bw_avg'] == 183.49 and result['results'][0]['bw_avg_gbps'] == 183.49
    # The same two sides pasted the other way round: still the client's row and device.
    dashes = '-' * 87 + '\n'
    server, client = fixtures.local('perftest/' + PASTED_SIDES).split(dashes + dashes, 1)
    swapped = perftest.parse_perftest(dashes + client + server.lstrip('\n') + '\n' + dashes)
    assert [(s['side'], s['device']) for s in swapped['sections']] == [('client', 'mlx5_0'), ('server', 'mlx5_1')]
    assert (swapped['side'], swapped['device'], swapped['results'][0]['bw_avg']) == ('client', 'mlx5_0', 183.49)


def test_sides_from_command_lines_and_labels():
    assert perftest._command_side('sudo taskset -c 28 ib_write_bw -d mlx5_3 -D 30 clx-host-108 -s 65536 -p 10000 -F -b &') == 'client'
    assert perftest._command_side('INFO: run ib_write_bw server on clx-host-108: sudo ib_write_bw -d mlx5_3 -s 65536 -b') == 'server'
    assert perftest._command_side('ib_write_bw -d mlx5_0 -x 3 --report_gbits -a 2>&1 | tee log') == 'server'
    assert perftest._command_side('ib_write_bw --port 18515 -d mlx5_0 -Z') == 'server'
    assert perftest._command_side('ib_read_lat -d mlx5_1 -i 1 -F 10.0.0.2') == 'client'
    assert perftest._label_side('# client side') == 'client' and perftest._label_side('Server:') == 'server'
    assert perftest._label_side('* Waiting for client to connect... *') is None
    # Two bidirectional sides that nothing tells apart stay untold: the first is reported, its side None.
    text = local('ib_send_bw_bidir_D5_server_then_client_pasted_labelled_abbycin_bw.txt')
    assert text['side'] == 'client'
    bare = fixtures.local('perftest/ib_send_bw_bidir_D5_server_then_client_pasted_labelled_abbycin_bw.txt')
    bare = '\n'.join(line for line in bare.splitlines() if not line.startswith(('Server:', 'Client:')))
    untold = perftest.parse_perftest(bare)
    assert [s['side'] for s in untold['sections']] == [None, None] and untold['side'] is None


def test_help_of_a_perftest_built_without_cuda_has_no_cuda_options():
    result = perftest.parse_perftest_help(fixtures.local('perftest/ib_send_bw_help_debian12_perftest606_no_cuda.txt'))
    assert result['usage'] is True and '--ib-dev' in result['options'] and '--use_hugepages' in result['options']
    assert (result['cuda'], result['cuda_bus_id'], result['cuda_dmabuf']) == (False, False, False)


def test_help_of_a_cuda_perftest_without_dmabuf():
    result = perftest.parse_perftest_help(fixtures.local('perftest/ib_write_bw_help_grep_cuda_mlnx_ofed55_cuda116_nvidia_doc.txt'))
    assert result['usage'] is False
    assert (result['cuda'], result['cuda_bus_id'], result['cuda_dmabuf']) == (True, True, False)


def test_help_of_a_cuda_perftest_with_dmabuf():
    result = perftest.parse_perftest_help(fixtures.local('perftest/ib_send_bw_help_grep_cuda_perftest25_dmabuf_synthetic.txt'))
    assert (result['cuda'], result['cuda_bus_id'], result['cuda_dmabuf']) == (True, True, True)


def test_help_refuses_text_that_is_no_usage():
    with pytest.raises(ParseError):
        perftest.parse_perftest_help('sh: 1: ib_send_bw: not found\n')


def test_argv_names_the_gpu_by_bus_id_and_puts_dmabuf_after_it():
    argv = perftest.build_perftest_argv({'device': 'mlx5_0', 'use_cuda': 3, 'use_cuda_bus_id': '0000:1b:00.0', 'use_cuda_dmabuf': True})
    assert argv[argv.index('--use_cuda_bus_id=0000:1b:00.0') + 1] == '--use_cuda_dmabuf'
    assert not any(arg.startswith('--use_cuda=') for arg in argv)
    argv = perftest.build_perftest_argv({'device': 'mlx5_0', 'use_cuda': 3, 'use_cuda_dmabuf': True})
    assert argv.index('--use_cuda=3') + 1 == argv.index('--use_cuda_dmabuf')
    # The peer's end has no GPU: dma-buf alone would be refused by perftest ("CUDA DMA-BUF cannot be used without CUDA").
    assert '--use_cuda_dmabuf' not in perftest.build_perftest_argv({'device': 'mlx5_0', 'use_cuda_dmabuf': True})
