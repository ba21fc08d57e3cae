"""End to end: the real iperf3 and jumbo_ping modules between two network namespaces.

Namespace A is the new node, B the known-good peer; they share a veth pair at
MTU 9000.  The modules run as Ansible runs them (``python -m <module> args.json``)
inside the namespaces, with the real iperf3 and ping.
"""
import os

import pytest

pytestmark = pytest.mark.lab


def _iperf3_pids_in(pair, ns):
    found = []
    for pid in pair.pids(ns):
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                argv = handle.read().split(b'\0')
        except OSError:
            continue
        if any(os.path.basename(arg) == b'iperf3' for arg in argv[:2]):
            found.append(pid)
    return found


def test_iperf3_server_client_stop_leaves_nothing(netns_pair, tmp_path):
    pair = netns_pair
    server, rc = pair.run_module(pair.b, 'iperf3', {'role': 'server', 'state': 'started', 'port': 5201, 'bind': pair.ip_b,
                                                    'log_dir': str(tmp_path), 'timeout': 120}, tmp_path)
    assert rc == 0 and not server.get('failed'), server
    # Our server: its own private log folder, and who it is (pid, start time, executable) for the stop.
    log = server['log_path']
    assert server['changed'] is True and server['pid'] > 1 and log.startswith(str(tmp_path) + '/netval-')
    assert server['start_time'] > 0 and os.path.basename(server['exe']) == 'iperf3'
    assert oct(os.stat(os.path.dirname(log)).st_mode & 0o777) == '0o700'
    try:
        client, rc = pair.run_module(pair.a, 'iperf3', {'role': 'client', 'server': pair.ip_b, 'port': 5201, 'parallel': 2,
                                                        'duration': 2, 'timeout': 30}, tmp_path)
        assert rc == 0 and not client.get('failed'), client
        assert client['received_bps'] > 0 and client['received_gbps'] > 0
        assert client['protocol'] == 'tcp' and client['streams'] == 2 and len(client['per_stream']) == 2
        assert client['retransmits'] is not None and client['min_interval_bps'] > 0
        assert client['cmd'].endswith('-c %s -p 5201 -t 2 -P 2 -i 1 -J' % pair.ip_b)
        shown = tuple(client[key] for key in ('received_bps', 'received_gbps', 'sent_bps', 'retransmits', 'min_interval_bps', 'cpu', 'cmd'))
        print('\niperf3 client result (A -> B): received_bps=%r received_gbps=%r sent_bps=%r retransmits=%r '
              'min_interval_bps=%r cpu=%r cmd=%r' % shown)
    finally:
        stopped, rc = pair.run_module(pair.b, 'iperf3', {'role': 'server', 'state': 'stopped', 'pid': server['pid'],
                                                         'start_time': server['start_time'], 'exe': server['exe'],
                                                         'log_path': log, 'wait_exit': 5}, tmp_path)
    assert rc == 0 and not stopped.get('failed'), stopped
    # iperf3 -1 serves one test and exits by itself; either way it is gone
    assert stopped['stopped'] is True and stopped['server_state'] in ('stopped', 'exited')
    assert not os.path.exists(log)  # our log is read back and removed
    # the server's own report: what it received, and no throughput invented for its empty sender side
    assert stopped['received_bps'] > 0 and stopped['sent_bps'] is None
    assert stopped['received_bps'] == pytest.approx(client['received_bps'], rel=0.05)
    assert _iperf3_pids_in(pair, pair.b) == [] and _iperf3_pids_in(pair, pair.a) == []


def test_iperf3_client_to_closed_port_fails_connect_refused(netns_pair, tmp_path):
    pair = netns_pair
    result, rc = pair.run_module(pair.a, 'iperf3', {'role': 'client', 'server': pair.ip_b, 'port': 5299, 'duration': 2,
                                                    'timeout': 20}, tmp_path)
    assert rc != 0 and result['failed'] and result['error_class'] == 'connect_refused' and result['error_side'] == 'ours'
    assert 'Connection refused' in result['msg'] and '-c %s -p 5299' % pair.ip_b in result['msg']
    assert os.uname()[1] in result['msg']


def test_jumbo_ping_passes_at_mtu_9000(netns_pair, tmp_path):
    pair = netns_pair
    result, rc = pair.run_module(pair.a, 'jumbo_ping', {'dest': pair.ip_b, 'interface': pair.va, 'count': 3, 'interval': 0.2},
                                 tmp_path)
    assert rc == 0 and not result.get('failed'), result
    assert result['mtu_source'] == 'interface' and result['mtu'] == 9000 and result['size'] == 8972
    assert result['passed'] is True and result['received'] == 3 and result['frag_needed'] is False, result


def test_jumbo_check_fails_when_peer_mtu_is_1500(netns_pair, tmp_path):
    pair = netns_pair
    pair.set_mtu(pair.b, pair.vb, 1500)
    try:
        # on the misconfigured node itself the kernel refuses: local error, frag_needed, path MTU 1500
        on_b, rc = pair.run_module(pair.b, 'jumbo_ping', {'dest': pair.ip_a, 'mtu': 9000, 'count': 2, 'interval': 0.2}, tmp_path)
        assert rc == 0 and not on_b.get('failed'), on_b
        assert on_b['passed'] is False and on_b['frag_needed'] is True and on_b['path_mtu'] == 1500
        assert on_b['reason'].startswith('fragmentation needed: path MTU 1500 < 9000 (size 8972)'), on_b['reason']
        # from the healthy side the jumbo frames are dropped by the 1500-MTU peer: 100% loss, told plainly
        on_a, rc = pair.run_module(pair.a, 'jumbo_ping', {'dest': pair.ip_b, 'interface': pair.va, 'count': 2, 'interval': 0.2},
                                   tmp_path)
        assert rc == 0 and on_a['passed'] is False and on_a['loss_percent'] == 100.0
        assert on_a['reason'].startswith('100%% loss: %s unreachable' % pair.ip_b) and 'smaller MTU' in on_a['reason']
        # fail_on_loss turns the verdict into a task failure naming host, command and reason
        failed, rc = pair.run_module(pair.b, 'jumbo_ping', {'dest': pair.ip_a, 'mtu': 9000, 'count': 1, 'fail_on_loss': True},
                                     tmp_path)
        assert rc != 0 and failed['failed'] and 'fragmentation needed' in failed['msg'] and '-M do -s 8972' in failed['msg']
    finally:
        pair.set_mtu(pair.b, pair.vb, 9000)


def test_unreachable_address_in_subnet(netns_pair, tmp_path):
    pair = netns_pair
    result, rc = pair.run_module(pair.a, 'jumbo_ping', {'dest': pair.unused_ip, 'mtu': 9000, 'count': 2, 'interval': 0.5},
                                 tmp_path)
    assert rc == 0 and not result.get('failed'), result
    assert result['passed'] is False and result['dest_unreachable'] is True and result['loss_percent'] == 100.0
    assert result['reason'].startswith('100%% loss: %s unreachable' % pair.unused_ip), result['reason']
