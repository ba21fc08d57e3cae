"""fabric_route: the node's route to the peer's rail address, read from real `ip route get` outputs."""
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
from ansible_collections.gpufleet.netval.plugins.modules import fabric_route
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

ARGV = ['/usr/bin/timeout', '--kill-after=5', '15', '/usr/bin/ip', 'route', 'get', '10.252.1.12', 'from', '10.252.1.11']
ARGS = {'dest': '10.252.1.12', 'source': '10.252.1.11', 'interface': 'ibp59s0'}


def out(name):
    return fixtures.local('iproute/ip_route_get_%s_iproute2_6.1_netns.txt' % name)


def test_the_parser_reads_dev_via_and_the_kernels_refusal():
    assert rdma.parse_ip_route_get(out('onlink_rail')) == {
        'dest': '10.252.1.12', 'type': 'unicast', 'from': '10.252.1.11', 'via': None, 'dev': 'ibp59s0', 'src': None, 'error': None}
    wrong = rdma.parse_ip_route_get(out('via_default_mgmt0_rail_slash32'))
    assert (wrong['dev'], wrong['via']) == ('mgmt0', '10.251.0.254')
    assert rdma.parse_ip_route_get(out('unreachable_stderr'))['error'] == 'Network is unreachable'


def test_a_route_through_the_tested_rail_passes():
    result, failed = run_module(fabric_route.main, ARGS, calls=[Call(ARGV, 0, out('onlink_rail'))])
    assert not failed and result['passed'] is True and result['dev'] == 'ibp59s0' and result['error_class'] is None


def test_a_route_through_the_management_network_is_caught_and_named_the_nodes():
    result, failed = run_module(fabric_route.main, ARGS, calls=[Call(ARGV, 0, out('via_default_mgmt0_rail_slash32'))])
    assert failed and result['error_class'] == 'wrong_route' and result['error_side'] == 'host'
    assert 'the route to 10.252.1.12 leaves' in result['msg'] and 'through mgmt0 via 10.251.0.254, not ibp59s0 (the tested rail)' in result['msg']
    assert (result['dev'], result['via'], result['passed']) == ('mgmt0', '10.251.0.254', False)


def test_no_route_at_all_and_bad_options():
    result, failed = run_module(fabric_route.main, ARGS, calls=[Call(ARGV, 2, '', out('unreachable_stderr'))])
    assert failed and result['error_class'] == 'no_route' and 'Network is unreachable' in result['msg']
    result, failed = run_module(fabric_route.main, dict(ARGS, dest='-c'))
    assert failed and result['error_class'] == 'invalid_options' and 'dest' in result['msg']
