"""The filter wraps the parser and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_nccl_tests import FilterModule
from tests.unit import fixtures


def test_filter_parses_a_real_output():
    parse = FilterModule().filters()['parse_nccl_tests']
    result = parse(fixtures.local('nccl/all_reduce_perf_h100_ring_512M_8G_healthy_avg95_nccltests252.txt'))
    assert result['avg_busbw_gbs'] == 95.3009 and len(result['rows']) == 5


def test_filter_error_names_the_filter():
    parse = FilterModule().filters()['parse_nccl_tests']
    with pytest.raises(AnsibleFilterError, match='parse_nccl_tests: nccl-tests output'):
        parse('not an nccl-tests log\n')
    with pytest.raises(AnsibleFilterError, match='parse_nccl_tests'):
        parse(None)
