"""The kernel log filter wraps parse_kernel_log."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_kernel_log import FilterModule
from tests.unit import fixtures


def test_filter_finds_xid():
    parse = FilterModule().filters()['parse_kernel_log']
    result = parse(fixtures.local('kernel_log/dmesg_xid79_fallen_off_bus_and_nvswitch_sxid_gpud_readme.txt'))
    assert result['xid'][0]['code'] == 79


def test_filter_rejects_nothing():
    with pytest.raises(AnsibleFilterError, match='parse_kernel_log'):
        FilterModule().filters()['parse_kernel_log'](None)
