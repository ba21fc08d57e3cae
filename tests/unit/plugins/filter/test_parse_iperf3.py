"""The parse_iperf3 filter wraps the parser and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_iperf3 import FilterModule
from tests.unit import fixtures


def test_filter_parses_real_output():
    parse = FilterModule().filters()['parse_iperf3']
    result = parse(fixtures.shared('iperf3/iperf3_tcp_single_stream_retr_cwnd_36G_esnet55.txt'))
    assert result['received_bps'] == 36.7e9 and result['retransmits'] == 3148


def test_filter_error_names_the_filter():
    parse = FilterModule().filters()['parse_iperf3']
    with pytest.raises(AnsibleFilterError, match='parse_iperf3: iperf3 output'):
        parse('not iperf3 at all')
    with pytest.raises(AnsibleFilterError, match='parse_iperf3'):
        parse(None)
