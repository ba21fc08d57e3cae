"""testinfra checks of the slow-link fault: node01's rail is shaped to 1 Gbit/s for real, node02's is not."""


def test_rail_shaping_matches_the_fault(host):
    name = host.backend.get_hostname()
    qdisc = host.check_output('tc qdisc show dev fab-peer01')
    if name == 'node01':
        assert 'tbf' in qdisc and 'rate 1Gbit' in qdisc
    else:
        assert 'tbf' not in qdisc


def test_mtu_is_untouched(host):
    assert host.file('/sys/class/net/fab-peer01/mtu').content_string.strip() == '9000'
