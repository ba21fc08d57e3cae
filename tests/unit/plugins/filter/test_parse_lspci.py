"""The parse_lspci filter wraps pcie.parse_lspci and turns ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_lspci import FilterModule
from tests.unit import fixtures


def test_filter_parses_a_real_output():
    parse = FilterModule().filters()['parse_lspci']
    devices = parse(fixtures.local('lspci/lspci_vvv_bcm5720_nic_width_x1_downgraded_gpud.txt'))['devices']
    assert [d['bdf'] for d in devices] == ['01:00.0', '01:00.1']
    assert devices[0]['width_downgraded'] is True and devices[0]['lnksta_width'] == 1


def test_filter_accepts_bytes():
    parse = FilterModule().filters()['parse_lspci']
    assert parse(b'\tLnkSta:\tSpeed 8GT/s (ok), Width x8 (ok)\n')['devices'][0]['downgraded'] is False


@pytest.mark.parametrize('bad', [None, 'this is not lspci output\n'])
def test_filter_error_names_the_filter(bad):
    parse = FilterModule().filters()['parse_lspci']
    with pytest.raises(AnsibleFilterError, match='parse_lspci'):
        parse(bad)
