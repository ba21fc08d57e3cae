"""ping parser and jumbo verdict on real iputils outputs captured between network namespaces."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import ping
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import fleet
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures


def local(name):
    return fixtures.local('ping/iputils_ping_%s.txt' % name)


def test_jumbo_success_mtu9000():
    result = ping.parse_ping(local('jumbo_8972_mtu9000_ok_netns_veth'))
    assert result['destination'] == result['destination_ip'] == '10.213.77.2'
    assert result['size'] == 8972 and result['packet_size'] == 9000
    assert (result['transmitted'], result['received'], result['errors'], result['loss_percent']) == (5, 5, 0, 0.0)
    assert (result['rtt_min_ms'], result['rtt_avg_ms'], result['rtt_max_ms'], result['rtt_mdev_ms']) == (0.046, 0.063, 0.073, 0.009)
    assert result['replies'] == 5 and result['time_ms'] == 4093
    assert result['rtt_replies_ms'] == [0.046, 0.067, 0.073, 0.063, 0.068]
    assert result['frag_needed'] is False and result['path_mtu'] is None and result['dest_unreachable'] is False
    verdict = ping.summarize_jumbo(result, 8972, 9000)
    assert verdict['passed'] is True and 'avg rtt 0.063 ms' in verdict['reason']


def test_one_reply_held_back_moves_the_mean_not_the_median():
    result = ping.parse_ping(local('jumbo_8972_one_reply_delayed_tbf_netns_veth'))
    assert (result['rtt_min_ms'], result['rtt_avg_ms'], result['rtt_max_ms']) == (0.25, 11.925, 57.789)
    assert result['rtt_replies_ms'] == [57.8, 0.364, 0.25, 0.528, 0.696] and result['replies'] == 5
    assert fleet.median(result['rtt_replies_ms']) == 0.528


def test_median_of_an_even_count_and_without_reply_lines():
    replies = ''.join('9008 bytes from 10.0.0.2: icmp_seq=%d ttl=64 time=%s ms\n' % (n, t) for n, t in enumerate(('0.1', '1023', '0.3', '0.2'), 1))
    result = ping.parse_ping('PING 10.0.0.2 (10.0.0.2) 8972(9000) bytes of data.\n' + replies)  # synthetic
    assert result['rtt_replies_ms'] == [0.1, 1023.0, 0.3, 0.2] and fleet.median(result['rtt_replies_ms']) == 0.25
    quiet = local('jumbo_8972_mtu9000_ok_netns_veth').split('\n\n', maxsplit=1)
    result = ping.parse_ping(quiet[0].split('\n')[0] + '\n\n' + quiet[1])  # as ping -q prints it: no reply lines
    assert result['rtt_replies_ms'] == [] and result['rtt_avg_ms'] == 0.063


def test_a_reply_time_of_hundreds_of_digits_is_a_parse_error_not_infinity():
    text = local('jumbo_8972_mtu9000_ok_netns_veth').replace('time=0.073 ms', 'time=%s ms' % ('9' * 400))  # synthetic
    with pytest.raises(ParseError, match='more than 64 digits'):
        ping.parse_ping(text)


def test_local_error_message_too_long():
    result = ping.parse_ping(local('jumbo_8972_local_error_mtu1500_netns_veth'))
    assert result['frag_needed'] is True and result['path_mtu'] == 1500
    assert (result['transmitted'], result['received'], result['errors'], result['loss_percent']) == (5, 0, 5, 100.0)
    assert result['dest_unreachable'] is False  # the loss is explained by the MTU, the host itself answers
    assert result['messages'] == ['ping: local error: message too long, mtu=1500']
    verdict = ping.summarize_jumbo(result, 8972, 9000)
    assert verdict == {'passed': False, 'reason': 'fragmentation needed: path MTU 1500 < 9000 (size 8972) towards 10.213.77.1'}


def test_frag_needed_from_a_router():
    result = ping.parse_ping(local('jumbo_frag_needed_via_router_mtu1500_netns'))
    assert result['frag_needed'] is True and result['path_mtu'] == 1500
    assert 'From 10.213.78.2 Frag needed and DF set (mtu = 1500)' in result['messages']
    assert result['received'] == 0 and result['errors'] == 5
    assert ping.summarize_jumbo(result, 8972)['reason'].startswith('fragmentation needed: path MTU 1500 < 9000 (size 8972)')


def test_peer_with_smaller_mtu_drops_silently():
    result = ping.parse_ping(local('jumbo_8972_peer_mtu1500_enobufs_netns_veth'))
    assert result['frag_needed'] is False
    assert result['loss_percent'] == 100.0 and result['errors'] == 0
    assert result['dest_unreachable'] is True
    assert result['error'] == 'sendmsg: No buffer space available'
    verdict = ping.summarize_jumbo(result, 8972, 9000)
    assert not verdict['passed']
    assert verdict['reason'].startswith('100% loss: 10.213.77.2 unreachable') and 'smaller MTU' in verdict['reason']


def test_host_unreachable_in_subnet():
    result = ping.parse_ping(local('jumbo_host_unreachable_in_subnet_netns_veth'))
    assert result['dest_unreachable'] is True
    assert (result['transmitted'], result['received'], result['errors']) == (6, 0, 3)
    assert result['messages'] == ['From 10.213.77.1 Destination Host Unreachable']
    reason = ping.summarize_jumbo(result, 8972)['reason']
    assert reason.startswith('100% loss: 10.213.77.99 unreachable') and 'Destination Host Unreachable' in reason


def test_network_unreachable_has_no_statistics():
    result = ping.parse_ping(local('network_unreachable_no_route_netns'))
    assert result['dest_unreachable'] is True and result['error'] == 'connect: Network is unreachable'
    assert result['transmitted'] is None and result['loss_percent'] is None  # unknown, not 0
    expected = {'passed': False, 'reason': 'ping failed before sending: connect: Network is unreachable'}
    assert ping.summarize_jumbo(result, 1472) == expected


def test_partial_loss_and_duplicates():
    text = ('PING 10.0.0.2 (10.0.0.2) 8972(9000) bytes of data.\n'
            '8980 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.1 ms\n\n'
            '--- 10.0.0.2 ping statistics ---\n'
            '3 packets transmitted, 1 received, +1 duplicates, 66.6667% packet loss, time 2003ms\n'
            'rtt min/avg/max/mdev = 0.100/0.100/0.100/0.000 ms\n')
    result = ping.parse_ping(text.replace('time=0.1 ms\n\n', 'time=0.1 ms\n8980 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=9.5 ms (DUP!)\n\n'))
    assert result['loss_percent'] == 66.6667 and result['duplicates'] == 1 and result['dest_unreachable'] is False
    assert result['rtt_replies_ms'] == [0.1]  # a duplicate answers a packet already counted
    assert ping.summarize_jumbo(result, 8972)['reason'] == '2 of 3 jumbo pings to 10.0.0.2 lost (66.6667% loss, size 8972, MTU 9000)'


def test_ipv6_packet_too_big():
    text = ('PING fd00::2(fd00::2) 8952 data bytes\n'
            'From fd00::1 icmp_seq=1 Packet too big: mtu=1500\n\n'
            '--- fd00::2 ping statistics ---\n'
            '1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms\n')
    result = ping.parse_ping(text)
    assert result['destination'] == 'fd00::2' and result['size'] == 8952
    assert result['frag_needed'] is True and result['path_mtu'] == 1500


def test_unknown_host():
    result = ping.parse_ping('ping: nosuch.invalid: Name or service not known\n')
    assert result['error'] == 'nosuch.invalid: Name or service not known' and result['dest_unreachable'] is None
    assert ping.summarize_jumbo(result, 8972)['passed'] is False


@pytest.mark.parametrize('text', ['', 'hello\n', '[  5]   0.00-1.00   sec   662 MBytes  5.55 Gbits/sec', 'ping statistics'])
def test_garbage_raises_parse_error(text):
    with pytest.raises(ParseError):
        ping.parse_ping(text)


def test_truncated_output_reports_unknown():
    result = ping.parse_ping(local('jumbo_8972_mtu9000_ok_netns_veth').split('\n\n', maxsplit=1)[0])
    assert result['transmitted'] is None and result['loss_percent'] is None and result['replies'] == 5
    assert ping.summarize_jumbo(result, 8972)['passed'] is False
