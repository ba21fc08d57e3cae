"""iperf3 parser on real outputs: shared ones from public issues and our own captures between network namespaces."""
import json

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import iperf3
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

GIB = 1024 ** 3
MIB = 1024 ** 2


def local(name):
    return fixtures.local('iperf3/iperf3_3.12_%s_netns_veth.txt' % name)


# --- real outputs from ../shared/fixtures/iperf3, to the numbers in their headers -------------------------

def test_shared_p16_sum_lines_35g():
    result = iperf3.parse_iperf3(fixtures.shared('iperf3/iperf3_3.0.11_P16_sum_lines_35G_esnet286.txt'))
    assert result['sent_bps'] == 35.2e9 and result['received_bps'] == 35.2e9
    assert result['sent_printed'] == result['received_printed'] == '35.2 Gbits/sec'
    assert result['retransmits'] == 0
    assert result['sent_bytes'] == 123 * GIB
    assert result['duration_s'] == 30.0
    assert result['protocol'] == 'tcp'
    # only the two [SUM] lines were quoted: what is not there is unknown, not zero
    assert result['streams'] is None and result['per_stream'] == [] and result['min_interval_bps'] is None


def test_shared_server_side_old_bandwidth_column_truncated():
    result = iperf3.parse_iperf3(fixtures.shared('iperf3/iperf3_server_side_old_bandwidth_column_40g_esnet408_truncated.txt'))
    assert result['role'] == 'server'
    # the server's "0.00 Bytes 0.00 bits/sec sender" line is not a result, and the receiver line is cut off
    assert result['sent_bps'] is None and result['received_bps'] is None
    assert len(result['intervals']) == 11
    assert result['intervals'][0] == {'start': 0.0, 'end': 1.0, 'bps': 3.14e9, 'retransmits': None, 'omitted': False}
    assert result['intervals'][-1]['end'] == 10.04
    # the 0.04 s tail does not count as the slowest interval
    assert result['min_interval_bps'] == 3.14e9
    assert result['streams'] == 1


def test_shared_single_stream_retransmits_and_cwnd():
    result = iperf3.parse_iperf3(fixtures.shared('iperf3/iperf3_tcp_single_stream_retr_cwnd_36G_esnet55.txt'))
    assert result['role'] == 'client' and result['reverse'] is False
    assert result['sent_bps'] == 36.7e9 and result['received_bps'] == 36.7e9
    assert result['retransmits'] == 3148
    assert result['sent_bytes'] == int(round(42.8 * GIB))
    assert result['intervals'][0] == {'start': 0.0, 'end': 1.0, 'bps': 36.0e9, 'retransmits': 328, 'omitted': False}
    assert sum(i['retransmits'] for i in result['intervals']) == 3148
    assert result['min_interval_bps'] == 29.6e9
    assert result['per_stream'] == [{'id': 5, 'sent_bps': 36.7e9, 'received_bps': 36.7e9, 'retransmits': 3148,
                                     'lost_percent': None, 'jitter_ms': None}]


def test_shared_udp_37_percent_loss():
    result = iperf3.parse_iperf3(fixtures.shared('iperf3/iperf3_udp_summary_37pct_loss_cx5_100g_esnet841.txt'))
    assert result['protocol'] == 'udp'
    assert result['sent_bps'] == 5.51e9
    assert result['received_bps'] == 3.48e9
    assert result['lost_packets'] == 10427939 and result['packets'] == 28304262
    assert result['lost_percent'] == pytest.approx(10427939 * 100.0 / 28304262)
    assert round(result['lost_percent']) == 37 and result['lost_printed'] == '37%'
    assert result['jitter_ms'] == 0.001
    assert result['retransmits'] is None


# --- our captures between two namespaces (iperf 3.12) ------------------------------------------------------

def test_json_tcp_p4_client():
    result = iperf3.parse_iperf3(local('tcp_p4_client_json'))
    assert result['format'] == 'json' and result['role'] == 'client'
    assert result['protocol'] == 'tcp' and result['streams'] == 4 and result['reverse'] is False
    assert result['received_bps'] == pytest.approx(16741964463.923893)
    assert result['sent_bps'] == pytest.approx(16746684382.61871)
    assert result['retransmits'] == 0
    assert len(result['per_stream']) == 4 and all(s['received_bps'] > 4e9 for s in result['per_stream'])
    assert [round(i['bps'] / 1e6) for i in result['intervals']] == [16736, 15701, 17806]
    assert result['min_interval_bps'] == pytest.approx(15701320036.157637)
    assert result['cpu'] == {'host_total': pytest.approx(98.9856, abs=1e-3), 'remote_total': pytest.approx(75.5577, abs=1e-3)}
    assert result['duration_s'] == pytest.approx(3.0, abs=0.01)
    assert result['error'] is None


def test_json_tcp_p4_server_empty_sender_side_is_unknown():
    result = iperf3.parse_iperf3(local('tcp_p4_server_json'))
    assert result['role'] == 'server'
    assert result['received_bps'] == pytest.approx(16741964463.923893)
    assert result['sent_bps'] is None and result['retransmits'] is None
    assert all(s['sent_bps'] is None for s in result['per_stream'])
    assert result['cpu']['remote_total'] is None
    # four intervals, the last a 0.002 s tail that must not count as the slowest
    assert len(result['intervals']) == 4
    assert result['min_interval_bps'] == pytest.approx(15704055453.515688)


def test_json_udp_client_loss_from_receiver():
    result = iperf3.parse_iperf3(local('udp_1g_client_json'))
    assert result['protocol'] == 'udp'
    assert result['sent_bps'] == pytest.approx(999742545.519512)
    assert result['received_bps'] == pytest.approx(988955881.901994)
    assert result['lost_packets'] == 450 and result['packets'] == 41899
    assert result['lost_percent'] == pytest.approx(1.0739856801909309)
    assert result['retransmits'] is None


def test_json_udp_server():
    result = iperf3.parse_iperf3(local('udp_1g_server_json'))
    assert result['received_bps'] == pytest.approx(988955881.901994) and result['sent_bps'] is None
    assert result['lost_percent'] == pytest.approx(1.074, abs=1e-3)
    # iperf 3.12 prints lost_percent 0 per stream next to 450/41899: the counts win
    assert result['per_stream'][0]['lost_percent'] == pytest.approx(450 * 100.0 / 41899)


def test_json_reverse_client_and_server():
    client = iperf3.parse_iperf3(local('tcp_reverse_client_json'))
    server = iperf3.parse_iperf3(local('tcp_reverse_server_json'))
    assert client['reverse'] is True and server['reverse'] is True
    assert client['received_bps'] == pytest.approx(14448572273.136663)
    assert client['retransmits'] == 48  # counted by the remote sender, reported to the client
    assert server['sent_bps'] == pytest.approx(14448645215.309092) and server['received_bps'] is None
    assert server['retransmits'] == 48


def test_text_tcp_p4_client_uses_sum_lines():
    result = iperf3.parse_iperf3(local('tcp_p4_client_text'))
    assert result['received_bps'] == 21.9e9 and result['received_printed'] == '21.9 Gbits/sec'
    assert result['retransmits'] == 7
    assert result['streams'] == 4 and [s['id'] for s in result['per_stream']] == [5, 7, 9, 12]
    assert result['per_stream'][0]['retransmits'] == 7
    assert [i['bps'] for i in result['intervals']] == [22.2e9, 26.0e9, 17.6e9]
    assert result['min_interval_bps'] == 17.6e9


def test_text_tcp_p4_server_ignores_zero_length_tail():
    result = iperf3.parse_iperf3(local('tcp_p4_server_text'))
    assert result['role'] == 'server' and result['received_bps'] == 21.9e9 and result['sent_bps'] is None
    assert result['intervals'][-1]['start'] == result['intervals'][-1]['end'] == 3.0
    assert result['min_interval_bps'] == 17.6e9


def test_text_udp_client_and_server_agree_on_loss():
    client = iperf3.parse_iperf3(local('udp_1g_client_text'))
    server = iperf3.parse_iperf3(local('udp_1g_server_text'))
    assert client['received_bps'] == server['received_bps'] == 993e6
    assert client['sent_printed'] == '1000 Mbits/sec'
    assert client['lost_packets'] == server['lost_packets'] == 295
    assert client['lost_printed'] == '0.7%'
    assert client['lost_percent'] == pytest.approx(295 * 100.0 / 41899)
    # the client's interval lines carry datagram counts, not retransmits
    assert all(i['retransmits'] is None for i in client['intervals'])


def test_text_reverse_client_and_server():
    client = iperf3.parse_iperf3(local('tcp_reverse_client_text'))
    server = iperf3.parse_iperf3(local('tcp_reverse_server_text'))
    assert client['reverse'] is True and client['received_bps'] == 15.0e9 and client['retransmits'] == 57
    assert server['sent_bps'] == 15.0e9 and server['received_bps'] is None
    assert [i['retransmits'] for i in server['intervals']] == [35, 22, 0]


def test_json_and_text_of_same_kind_of_run_have_the_same_keys():
    assert set(iperf3.parse_iperf3(local('tcp_p4_client_json'))) == set(iperf3.parse_iperf3(local('tcp_p4_client_text')))


@pytest.mark.parametrize('name,message', [
    ('refused', 'unable to connect to server: Connection refused'),
    ('noroute', 'unable to connect to server: No route to host'),
    ('busy', 'the server is busy running a test. try again later'),
])
@pytest.mark.parametrize('fmt', ['json', 'text'])
def test_real_errors_json_and_text(name, message, fmt):
    result = iperf3.parse_iperf3(fixtures.local('iperf3/iperf3_3.12_error_%s_%s_netns_veth.txt' % (name, fmt)))
    assert result['error'] == message
    assert result['received_bps'] is None and result['sent_bps'] is None


@pytest.mark.parametrize('message,cause', [
    ('unable to connect to server: Connection refused', 'connect_refused'),
    ('unable to connect to server: No route to host', 'no_route'),
    ('unable to connect to server: Network is unreachable', 'no_route'),
    ('the server is busy running a test. try again later', 'server_busy'),
    ('unable to connect to server: Connection timed out', 'timeout'),
    ('unable to receive control message: Connection reset by peer', 'iperf3_error'),
    (None, None),
])
def test_classify_error(message, cause):
    assert iperf3.classify_iperf3_error(message) == cause


def test_json_omitted_intervals_do_not_count():
    doc = json.loads(local('tcp_reverse_client_json'))
    doc['intervals'][1]['sum']['omitted'] = True
    result = iperf3.parse_iperf3(json.dumps(doc))
    assert result['min_interval_bps'] == pytest.approx(14204661140.02274)


def test_server_json_stream_without_one_test_is_last_object():
    two = local('tcp_p4_server_json') + '\n' + local('tcp_reverse_server_json')
    assert iperf3.parse_iperf3(two)['reverse'] is True


@pytest.mark.parametrize('text', ['', 'hello world\n', '{"a": 1}', '{not json', '[1, 2]', 'PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.'])
def test_garbage_raises_parse_error(text):
    with pytest.raises(ParseError):
        iperf3.parse_iperf3(text)


def test_json_with_wrong_types_reports_unknown():
    result = iperf3.parse_iperf3('{"start": [], "end": {"sum_received": {"bits_per_second": "fast", "bytes": true}}, "intervals": {}}')
    assert result['received_bps'] is None and result['intervals'] == []


def test_build_argv_client_and_server():
    assert iperf3.build_iperf3_argv({'role': 'server', 'port': 5202, 'bind': '10.0.0.1', 'json': True}) == \
        ['-s', '-1', '-p', '5202', '-B', '10.0.0.1', '-J']
    assert iperf3.build_iperf3_argv({'role': 'client', 'server': '10.0.0.2', 'port': 5201, 'duration': 3, 'parallel': 4,
                                     'interval': 1.0, 'omit': 1, 'reverse': True, 'udp': True, 'bandwidth': '10G',
                                     'json': True}) == \
        ['-c', '10.0.0.2', '-p', '5201', '-t', '3', '-P', '4', '-i', '1', '-O', '1', '-R', '-u', '-b', '10G', '-J']
    assert iperf3.build_iperf3_argv({'role': 'client', 'server': 'peer', 'interval': 0.5, 'json': False}) == \
        ['-c', 'peer', '-p', '5201', '-t', '10', '-P', '1', '-i', '0.5']


def test_an_interval_line_of_32k_digits_is_a_clear_error():
    """Issue 13: one iperf3 line ending in 32K digits took 92 s; no tool prints such a number, so it is refused at once."""
    line = '[  5]   0.00-1.00   sec   662 MBytes  5.55 Gbits/sec  ' + '1' * 32768 + '\n'
    with pytest.raises(ParseError, match='a number of more than 64 digits'):
        iperf3.parse_iperf3(line)


def test_iperf3_3_17_json_of_a_multi_threaded_run_synthetic():
    result = iperf3.parse_iperf3(fixtures.local('iperf3/iperf3_3.17_tcp_p4_client_json_threads_layout_synthetic.txt'))
    assert (result['format'], result['role'], result['version'], result['protocol'], result['streams']) == (
        'json', 'client', 'iperf 3.17.1', 'tcp', 4)
    assert (result['sent_bps'], result['received_bps'], result['retransmits']) == (16746684382.61871, 16741964463.923893, 0)
    assert result['duration_s'] == 3.001682 and result['error'] is None
