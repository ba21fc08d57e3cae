"""The parse_perftest filter wraps the parser and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_perftest import FilterModule
from tests.unit import fixtures


def test_filter_parses_a_real_output():
    parse = FilterModule().filters()['parse_perftest']
    result = parse(fixtures.shared('perftest/ib_read_lat_ib_mlx5_sriov_vf_pod_spiderpool_doc.txt'))
    assert result['kind'] == 'lat'
    assert result['results'][0]['p99_us'] == 2.24


def test_filter_classifies_errors():
    parse = FilterModule().filters()['parse_perftest']
    assert parse(" Did not detect devices \n Unable to find the Infiniband/RoCE device\n")['error_class'] == 'no_rdma_device'


def test_filter_error_names_the_filter():
    parse = FilterModule().filters()['parse_perftest']
    with pytest.raises(AnsibleFilterError, match='parse_perftest: perftest output'):
        parse('hello world\n')
