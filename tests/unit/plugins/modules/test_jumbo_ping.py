"""jumbo_ping module against recorded real ping outputs; the interface MTU comes from a small sysfs tree."""
import pytest

from ansible_collections.gpufleet.netval.plugins.modules import jumbo_ping
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module


def out(name):
    return fixtures.local('ping/iputils_ping_%s.txt' % name)


def ping_argv(size, dest, count=5, extra=(), timeout=16):
    return ['/usr/bin/timeout', '--kill-after=5', str(timeout), '/usr/bin/ping', '-M', 'do', '-s', str(size),
            '-c', str(count), '-W', '1'] + list(extra) + [dest]


def sysfs(tmp_path, iface='nvcap-va', mtu='9000\n'):
    (tmp_path / 'class' / 'net' / iface).mkdir(parents=True)
    (tmp_path / 'class' / 'net' / iface / 'mtu').write_text(mtu)
    return str(tmp_path)


def test_size_from_interface_mtu_and_pass(tmp_path):
    args = {'dest': '10.213.77.2', 'interface': 'nvcap-va', 'sysfs_root': sysfs(tmp_path)}
    calls = [Call(ping_argv(8972, '10.213.77.2', extra=['-I', 'nvcap-va']), 0, out('jumbo_8972_mtu9000_ok_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, args, calls=calls)
    assert not failed, result
    assert result['passed'] is True and result['size'] == 8972 and result['mtu'] == 9000 and result['mtu_source'] == 'interface'
    assert result['received'] == 5 and result['rtt_avg_ms'] == 0.063 and result['changed'] is False
    assert result['rtt_replies_ms'] == [0.046, 0.067, 0.073, 0.063, 0.068]
    assert (result['error_class'], result['error_hint'], result['error_side']) == (None, None, None)


def test_frag_needed_is_a_result_not_a_crash():
    calls = [Call(ping_argv(8972, '10.213.77.1'), 1, '', out('jumbo_8972_local_error_mtu1500_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, {'dest': '10.213.77.1', 'mtu': 9000}, calls=calls)
    assert not failed, result
    assert result['passed'] is False and result['frag_needed'] is True and result['path_mtu'] == 1500
    assert result['reason'].startswith('fragmentation needed: path MTU 1500 < 9000 (size 8972)')
    assert result['rc'] == 1


def test_unreachable_rc_2_reason():
    calls = [Call(ping_argv(1472, '10.213.77.99', count=6), 1, out('jumbo_host_unreachable_in_subnet_netns_veth'), '')]
    result, failed = run_module(jumbo_ping.main, {'dest': '10.213.77.99', 'size': 1472, 'count': 6, 'timeout': 16}, calls=calls)
    assert not failed and result['dest_unreachable'] is True and result['passed'] is False
    assert result['reason'].startswith('100% loss: 10.213.77.99 unreachable')


def test_network_unreachable_rc_2():
    calls = [Call(ping_argv(8972, '10.99.0.1'), 2, '', out('network_unreachable_no_route_netns'))]
    result, failed = run_module(jumbo_ping.main, {'dest': '10.99.0.1', 'mtu': 9000}, calls=calls)
    assert not failed and result['dest_unreachable'] is True and 'Network is unreachable' in result['reason']


def test_fail_on_loss_names_host_command_and_reason():
    calls = [Call(ping_argv(8972, '10.213.77.2'), 1, out('jumbo_8972_peer_mtu1500_enobufs_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, {'dest': '10.213.77.2', 'mtu': 9000, 'fail_on_loss': True}, calls=calls)
    assert failed
    assert jumbo_ping.hostname() in result['msg']
    assert '/usr/bin/ping -M do -s 8972 -c 5 -W 1 10.213.77.2' in result['msg']
    assert '100% loss' in result['msg'] and result['passed'] is False
    assert (result['error_class'], result['error_side']) == ('jumbo_failed', 'host') and result['error_hint']


def test_interval_deadline_and_ipv6_headers():
    argv = ping_argv(8952, 'fd00::2', count=3, extra=['-i', '0.2', '-w', '5'], timeout=15)
    result, failed = run_module(jumbo_ping.main, {'dest': 'fd00::2', 'mtu': 9000, 'count': 3, 'interval': 0.2, 'deadline': 5},
                                calls=[Call(argv, 0, 'PING fd00::2(fd00::2) 8952 data bytes\n\n--- fd00::2 ping statistics ---\n'
                                                     '3 packets transmitted, 3 received, 0% packet loss, time 400ms\n')])
    assert not failed and result['passed'] is True and result['size'] == 8952


def test_missing_ping_names_package():
    result, failed = run_module(jumbo_ping.main, {'dest': '10.0.0.2', 'mtu': 9000}, missing=('ping',))
    assert failed and "'ping'" in result['msg'] and 'iputils-ping' in result['msg']


def test_ping_crash_rc_names_host_and_command():
    calls = [Call(ping_argv(8972, '10.0.0.2'), 139, '', 'Segmentation fault')]
    result, failed = run_module(jumbo_ping.main, {'dest': '10.0.0.2', 'mtu': 9000}, calls=calls)
    assert failed and 'rc=139' in result['msg'] and jumbo_ping.hostname() in result['msg'] and '/usr/bin/ping -M do' in result['msg']


def test_timeout():
    result, failed = run_module(jumbo_ping.main, {'dest': '10.0.0.2', 'mtu': 9000}, calls=[Call(ping_argv(8972, '10.0.0.2'), 124)])
    assert failed and (result['error_class'], result['error_side']) == ('timeout', 'ours') and 'timed out' in result['msg']


def test_garbage_output_fails_cleanly():
    result, failed = run_module(jumbo_ping.main, {'dest': '10.0.0.2', 'mtu': 9000},
                                calls=[Call(ping_argv(8972, '10.0.0.2'), 0, 'something else entirely\n')])
    assert failed and 'could not be parsed' in result['msg'] and 'ping output' in result['msg']


def test_missing_interface_in_sysfs(tmp_path):
    result, failed = run_module(jumbo_ping.main, {'dest': '10.0.0.2', 'interface': 'ens9', 'sysfs_root': str(tmp_path)})
    assert failed and 'ens9' in result['msg'] and str(tmp_path) in result['msg'] and result['_ran'] == []


def test_check_mode_still_measures(tmp_path):
    calls = [Call(ping_argv(8972, '10.213.77.2', extra=['-I', 'nvcap-va']), 0, out('jumbo_8972_mtu9000_ok_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, {'dest': '10.213.77.2', 'interface': 'nvcap-va', 'sysfs_root': sysfs(tmp_path)},
                                calls=calls, check_mode=True)
    assert not failed and result['passed'] is True and result['changed'] is False


@pytest.mark.parametrize('args,words', [
    ({'dest': '10.0.0.2; reboot', 'mtu': 9000}, 'dest must be a host name or an IP address'),
    ({'dest': '10.0.0.2', 'interface': '../../etc'}, 'interface must be'),
    ({'dest': '10.0.0.2', 'mtu': 20}, 'mtu must be a number from 68 to 65535'),
    ({'dest': '10.0.0.2', 'size': 70000}, 'size must be a number from 0 to 65507'),
    ({'dest': '10.0.0.2', 'mtu': 9000, 'count': 0}, 'count must be a number from 1 to 1000'),
    ({'dest': '10.0.0.2'}, 'one of the following is required'),
])
def test_bad_options_fail_clearly(args, words):
    result, failed = run_module(jumbo_ping.main, args)
    assert failed and words in result['msg'] and result['_ran'] == []


def test_an_ipoib_rail_is_pinged_at_its_own_mtu_and_the_runbooks_8972_would_never_leave_it(tmp_path):
    """Real pings from a netdev at the IPoIB MTU 4092: at the interface's MTU they pass; 8972 bytes fail locally (ours)."""
    args = {'dest': '10.252.1.21', 'interface': 'ibp59s0', 'sysfs_root': sysfs(tmp_path, 'ibp59s0', '4092\n')}
    calls = [Call(ping_argv(4064, '10.252.1.21', extra=['-I', 'ibp59s0']), 0, out('4064_ipoib_mtu4092_ok_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, args, calls=calls)
    assert not failed and result['passed'] is True and (result['size'], result['mtu'], result['mtu_source']) == (4064, 4092, 'interface')
    calls = [Call(ping_argv(8972, '10.252.1.21', extra=['-I', 'ibp59s0']), 1, out('8972_from_ipoib_mtu4092_local_error_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, dict(args, mtu=9000), calls=calls)
    assert not failed and result['passed'] is False and result['frag_needed'] is True and result['path_mtu'] == 4092


def test_a_path_below_the_ipoib_interface_mtu_loses_every_frame(tmp_path):
    args = {'dest': '10.252.1.21', 'interface': 'ibp59s0', 'sysfs_root': sysfs(tmp_path, 'ibp59s0', '4092\n')}
    calls = [Call(ping_argv(4064, '10.252.1.21', extra=['-I', 'ibp59s0']), 1, out('4064_ipoib_peer_mtu2044_enobufs_netns_veth'))]
    result, failed = run_module(jumbo_ping.main, args, calls=calls)
    assert not failed and result['passed'] is False and result['loss_percent'] == 100.0 and result['mtu'] == 4092
