"""The filter wraps the parser and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_cmdline import FilterModule


def test_filter_parses():
    parse = FilterModule().filters()['parse_cmdline']
    assert parse('ro iommu=pt\n')['params'] == {'ro': True, 'iommu': 'pt'}


def test_filter_error_names_the_filter():
    parse = FilterModule().filters()['parse_cmdline']
    with pytest.raises(AnsibleFilterError, match='parse_cmdline: cmdline output'):
        parse('')
