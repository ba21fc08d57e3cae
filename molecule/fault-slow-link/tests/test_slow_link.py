"""testinfra checks of the slow-link fault: node01's first addressed rail is shaped to 1 Gbit/s for real, node02's is not."""

import json


def _rail(name):
    """The node's netdev and MTU on its first addressed rail (real site), or on its link to its peer (ideal site)."""
    with open('/run/netval-lab/lab.json', encoding='utf-8') as handle:
        lab = json.load(handle)
    if not lab.get('rails'):
        return [link['node_if'] for link in lab['links'] if link['node'] == name][0], 9000
    port = [port for port in lab['hosts'][name]['ports'] if port['kind'] == 'rail' and port['ip']][0]
    return port['netdev'], port['mtu']


def test_rail_shaping_matches_the_fault(host):
    name = host.backend.get_hostname()
    netdev, _mtu = _rail(name)
    qdisc = host.check_output('tc qdisc show dev %s' % netdev)
    if name == 'node01':
        assert 'tbf' in qdisc and 'rate 1Gbit' in qdisc
    else:
        assert 'tbf' not in qdisc


def test_mtu_is_untouched(host):
    netdev, mtu = _rail(host.backend.get_hostname())
    assert host.file('/sys/class/net/%s/mtu' % netdev).content_string.strip() == str(mtu)
