"""The filter wraps the parser and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_dcgmi_diag import FilterModule
from tests.unit import fixtures


def test_filter_parses_a_real_table():
    parse = FilterModule().filters()['parse_dcgmi_diag']
    result = parse(fixtures.shared('dcgmi/dcgmi_diag_dcgm4.2.3_per_gpu_software_pass_dcgm253_truncated.txt'))
    assert result['version'] == '4.2.3' and result['overall'] is None


def test_filter_error_names_the_filter():
    parse = FilterModule().filters()['parse_dcgmi_diag']
    with pytest.raises(AnsibleFilterError, match='parse_dcgmi_diag: dcgmi output'):
        parse('Error: unable to establish a connection to the specified host: localhost\n')
