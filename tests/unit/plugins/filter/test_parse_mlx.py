"""parse_mlxconfig, parse_flint and parse_mlxlink filters wrap their parsers."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_flint import FilterModule as FlintFilters
from ansible_collections.gpufleet.netval.plugins.filter.parse_mlxconfig import FilterModule as ConfigFilters
from ansible_collections.gpufleet.netval.plugins.filter.parse_mlxlink import FilterModule as LinkFilters
from tests.unit import fixtures


def test_filters_parse():
    config = ConfigFilters().filters()['parse_mlxconfig']
    flint = FlintFilters().filters()['parse_flint']
    link = LinkFilters().filters()['parse_mlxlink']
    shared_config = fixtures.shared('mlxconfig/mlxconfig_query_cx4_vpi_eth_sriov_terrencemiao_truncated_in_source.txt')
    assert config(shared_config)['parameters']['SRIOV_EN'] == 'True(1)'
    assert flint(fixtures.shared('flint/flint_query_cx4_fs3_terrencemiao.txt'))['psid'] == 'LNV2180110032'
    assert link(fixtures.local('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt'))['counters']['link_down_counter'] == 0


@pytest.mark.parametrize('filters,name', [(ConfigFilters, 'parse_mlxconfig'), (FlintFilters, 'parse_flint'), (LinkFilters, 'parse_mlxlink')])
def test_filter_errors_name_the_filter(filters, name):
    with pytest.raises(AnsibleFilterError, match=name):
        filters().filters()[name]('-E- Failed to open the device\n')
