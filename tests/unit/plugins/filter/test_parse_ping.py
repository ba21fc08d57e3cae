"""The parse_ping filter wraps the parser and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_ping import FilterModule
from tests.unit import fixtures


def test_filter_parses_real_output():
    parse = FilterModule().filters()['parse_ping']
    result = parse(fixtures.local('ping/iputils_ping_jumbo_frag_needed_via_router_mtu1500_netns.txt'))
    assert result['frag_needed'] is True and result['path_mtu'] == 1500


def test_filter_error_names_the_filter():
    parse = FilterModule().filters()['parse_ping']
    with pytest.raises(AnsibleFilterError, match='parse_ping: ping output'):
        parse('no ping here')
