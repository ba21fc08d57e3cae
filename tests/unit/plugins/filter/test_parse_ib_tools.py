"""The RDMA filters (parse_ibstat, parse_ibstatus, parse_ibv_devinfo, parse_show_gids) wrap the parsers
and turn ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter import parse_ibstat, parse_ibstatus, parse_ibv_devinfo, parse_show_gids
from tests.unit import fixtures

FILTERS = {
    'parse_ibstat': (parse_ibstat, 'ibstat/ibstat_h100_12x_roce_2down_polling_disabled_gpud.txt'),
    'parse_ibstatus': (parse_ibstatus, 'ibstatus/ibstatus_a100_9x_hdr200_all_active_gpud.txt'),
    'parse_ibv_devinfo': (parse_ibv_devinfo, 'ibv_devinfo/ibv_devinfo_cx7_ib_port_down_deepep60_truncated.txt'),
    'parse_show_gids': (parse_show_gids, 'show_gids/show_gids_cx5_roce_v1v2_ipv4.txt'),
}


def get(name):
    return FILTERS[name][0].FilterModule().filters()[name]


@pytest.mark.parametrize('name', sorted(FILTERS))
def test_filter_parses_a_real_output(name):
    result = get(name)(fixtures.shared(FILTERS[name][1]))
    assert result['devices'] if name != 'parse_show_gids' else result['gids']


def test_filter_values():
    assert get('parse_ibstat')(fixtures.shared(FILTERS['parse_ibstat'][1]))['devices']['mlx5_5']['ports'][1]['state'] == 'Down'
    assert get('parse_ibstatus')(fixtures.shared(FILTERS['parse_ibstatus'][1]))['devices']['mlx5_0']['ports'][1]['rate_gbps'] == 200
    assert get('parse_show_gids')(fixtures.shared(FILTERS['parse_show_gids'][1]))['roce_v2_ipv4']['mlx5_0']['index'] == 3
    devinfo = get('parse_ibv_devinfo')(fixtures.shared(FILTERS['parse_ibv_devinfo'][1]).encode('utf-8'))
    assert devinfo['devices']['mlx5_0']['ports'][1]['state'] == 'PORT_DOWN'


@pytest.mark.parametrize('name', sorted(FILTERS))
def test_filter_error_names_the_filter(name):
    with pytest.raises(AnsibleFilterError, match='%s: ' % name):
        get(name)('this is not the output of any RDMA tool\n')
    with pytest.raises(AnsibleFilterError, match=name):
        get(name)(None)
