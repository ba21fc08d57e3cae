"""The nvidia-smi filters wrap their parsers and turn ParseError into AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter.parse_nvidia_smi import FilterModule as SmiFilters
from ansible_collections.gpufleet.netval.plugins.filter.parse_nvidia_smi_topo import FilterModule as TopoFilters
from tests.unit import fixtures


def test_parse_nvidia_smi_reads_xml_and_text():
    parse = SmiFilters().filters()['parse_nvidia_smi']
    xml = fixtures.shared('nvidia-smi-xml/nvidia_smi_qx_515.105.01_TeslaT4_retired_pages_zero_telegraf.xml.txt')
    assert parse(xml)['gpus'][0]['retired_pages']['pending'] is False
    text = fixtures.shared('nvidia-smi/nvidia_smi_q_560.35.03_1xTitanV_old_ecc_layout_gpud.txt')
    assert parse(text)['gpu_count'] == 1


def test_parse_nvidia_smi_error_names_the_filter():
    with pytest.raises(AnsibleFilterError, match='parse_nvidia_smi: nvidia-smi'):
        SmiFilters().filters()['parse_nvidia_smi']('No devices were found\n')


def test_parse_nvidia_smi_topo():
    parse = TopoFilters().filters()['parse_nvidia_smi_topo']
    topo = parse(fixtures.local('nvidia/topo_m_4xrtx6000ada_4nic_node_only_stelline_esc8000a.txt'))
    assert topo['matrix']['GPU2']['NIC3'] == 'NODE'
    with pytest.raises(AnsibleFilterError, match='parse_nvidia_smi_topo'):
        parse('')
