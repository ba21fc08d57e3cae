"""nvidia-smi parsers on real outputs (XML, -q text, table, topo -m) and on faulty or foreign input."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import nvidia
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

XML_A10G = 'nvidia-smi-xml/nvidia_smi_qx_515.105.01_A10G_remapped_rows_zero_telegraf.xml.txt'
XML_T4 = 'nvidia-smi-xml/nvidia_smi_qx_515.105.01_TeslaT4_retired_pages_zero_telegraf.xml.txt'
XML_A100_MIG = 'nvidia-smi-xml/nvidia_smi_qx_535.54.03_A100_sxm4_80GB_mig_enabled_attached4_but_1gpu_telegraf.xml.txt'
Q_H100 = 'nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt'
Q_H100_VM = 'nvidia-smi/nvidia_smi_q_535.183.01_8xH100_passthrough_vm_healthy_gpud.txt'
Q_4090 = 'nvidia-smi/nvidia_smi_q_535.154.05_8xRTX4090_ecc_na_gpud.txt'
Q_TITANV = 'nvidia-smi/nvidia_smi_q_560.35.03_1xTitanV_old_ecc_layout_gpud.txt'
Q_RETIRED = 'nvidia-smi/nvidia_smi_q_d_page_retired_535.86.10_8gpu_azure_healthy_azhpc.txt'
TABLE_A30 = 'nvidia-smi/nvidia_smi_545_A30_table_ucx9212_truncated.txt'
TOPO_DGX = 'nvidia-smi-topo/topo_m_dgx_a100_NV12_12NICs_pxb_nccl1505_truncated.txt'
TOPO_H100 = 'nvidia/topo_m_8xh100_nv18_8nic_pix_sglang30401.txt'
TOPO_ADA = 'nvidia/topo_m_4xrtx6000ada_4nic_node_only_stelline_esc8000a.txt'


@pytest.mark.parametrize('raw,expected', [
    ('00000000:1B:00.0', '0000:1b:00.0'), ('PCI:0000:3b:00', '0000:3b:00.0'), ('00000001:00:00.0', '0001:00:00.0'),
    ('0000:c1:00.1', '0000:c1:00.1'), ('not a bus', None), ('123456789:00:00.0', None), (None, None)])
def test_normalize_bus_id(raw, expected):
    assert nvidia.normalize_bus_id(raw) == expected


def test_xml_a10g_healthy_remapped_rows_zero():
    result = nvidia.parse_nvidia_smi_xml(fixtures.shared(XML_A10G))
    assert (result['driver_version'], result['cuda_version'], result['gpu_count']) == ('515.105.01', '11.7', 1)
    gpu = result['gpus'][0]
    assert gpu['bus_id'] == '0000:00:1e.0' and gpu['bus_id_raw'] == '00000000:00:1E.0'
    assert gpu['name'] == 'NVIDIA A10G' and gpu['ecc_mode_current'] == 'Enabled'
    assert gpu['remapped_rows'] == {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False}
    assert gpu['retired_pages'] == {'single_bit': None, 'double_bit': None, 'pending': None}
    assert gpu['ecc_errors']['volatile']['dram_uncorrectable'] == 0
    assert gpu['pcie'] == {'gen_current': 1, 'gen_max': 4, 'width_current': 8, 'width_max': 16, 'replays': 0}
    assert gpu['power_draw_w'] == 25.58 and gpu['temperature_c'] == 17
    assert gpu['clocks_throttle_reasons'] == ['gpu_idle']
    assert result['gpu_count_mismatch'] is False


def test_xml_t4_retired_pages_zero_and_remapped_rows_unknown():
    gpu = nvidia.parse_nvidia_smi_xml(fixtures.shared(XML_T4))['gpus'][0]
    assert gpu['retired_pages'] == {'single_bit': 0, 'double_bit': 0, 'pending': False}
    # <remapped_rows>N/A</remapped_rows>: unsupported on Turing -> unknown, never 0
    assert gpu['remapped_rows'] == {'correctable': None, 'uncorrectable': None, 'pending': None, 'failure': None}


def test_xml_a100_mig_trimmed_file_reports_count_mismatch():
    result = nvidia.parse_nvidia_smi_xml(fixtures.shared(XML_A100_MIG))
    assert result['gpu_count'] == 4 and len(result['gpus']) == 1 and result['gpu_count_mismatch'] is True
    gpu = result['gpus'][0]
    assert gpu['mig_mode_current'] == 'Enabled' and gpu['bus_id'] == '0000:01:00.0'
    assert gpu['remapped_rows']['uncorrectable'] is None
    assert gpu['clocks_throttle_reasons'] == []  # newer <clocks_event_reasons> layout
    assert gpu['power_draw_w'] == 67.03


def test_xml_fault_injected_into_real_file():
    """The real A10G file with the counters a failing GPU shows (edited in memory, not stored)."""
    text = fixtures.shared(XML_A10G)
    text = text.replace('<remapped_row_unc>0</remapped_row_unc>', '<remapped_row_unc>3</remapped_row_unc>')
    text = text.replace('<remapped_row_pending>No</remapped_row_pending>', '<remapped_row_pending>Yes</remapped_row_pending>')
    text = text.replace('<dram_uncorrectable>0</dram_uncorrectable>', '<dram_uncorrectable>2</dram_uncorrectable>', 1)
    text = text.replace('<clocks_throttle_reason_hw_thermal_slowdown>Not Active<', '<clocks_throttle_reason_hw_thermal_slowdown>Active<')
    gpu = nvidia.parse_nvidia_smi_xml(text)['gpus'][0]
    assert gpu['remapped_rows']['uncorrectable'] == 3 and gpu['remapped_rows']['pending'] is True
    assert gpu['ecc_errors']['volatile']['dram_uncorrectable'] == 2
    assert gpu['ecc_errors']['volatile']['uncorrectable_total'] == 2
    assert gpu['ecc_errors']['aggregate']['dram_uncorrectable'] == 0
    assert 'hw_thermal_slowdown' in gpu['clocks_throttle_reasons']


def test_xml_old_single_double_bit_layout():
    text = ('<?xml version="1.0" ?><nvidia_smi_log><driver_version>418.87.00</driver_version><attached_gpus>1</attached_gpus>'
            '<gpu id="00000000:3B:00.0"><ecc_errors><volatile><single_bit><device_memory>4</device_memory><total>4</total></single_bit>'
            '<double_bit><device_memory>1</device_memory><total>1</total></double_bit></volatile></ecc_errors>'
            '<power_readings><power_draw>40.10 W</power_draw></power_readings></gpu></nvidia_smi_log>')
    gpu = nvidia.parse_nvidia_smi_xml(text)['gpus'][0]
    volatile = gpu['ecc_errors']['volatile']
    assert volatile['single_bit'] == 4 and volatile['double_bit'] == 1 and volatile['uncorrectable_total'] == 1
    assert gpu['ecc_errors']['aggregate']['double_bit'] is None
    assert gpu['power_draw_w'] == 40.1 and gpu['clocks_throttle_reasons'] is None


@pytest.mark.parametrize('text', [
    'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.',
    '<nvidia_smi_log><gpu>', '<other/>', '<!DOCTYPE a [<!ENTITY x "y">]><nvidia_smi_log/>', ''])
def test_xml_rejects_garbage(text):
    with pytest.raises(ParseError):
        nvidia.parse_nvidia_smi_xml(text)


def test_q_h100_healthy_eight_gpus():
    result = nvidia.parse_nvidia_smi_q(fixtures.shared(Q_H100))
    assert result['gpu_count'] == 8 and len(result['gpus']) == 8 and result['driver_version'] == '535.161.08'
    gpu = result['gpus'][0]
    assert gpu['bus_id'] == '0000:19:00.0' and gpu['name'] == 'NVIDIA H100 80GB HBM3'
    assert gpu['uuid'] == 'GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa' and gpu['serial'] == '1650124031592'
    assert gpu['pcie'] == {'gen_current': 5, 'gen_max': 5, 'width_current': 16, 'width_max': 16, 'replays': 67}
    volatile = gpu['ecc_errors']['volatile']
    assert volatile['sram_uncorrectable'] == 0 and volatile['sram_uncorrectable_sec_ded'] == 0 and volatile['dram_uncorrectable'] == 0
    assert gpu['ecc_errors']['aggregate']['sram_threshold_exceeded'] is False
    assert gpu['retired_pages'] == {'single_bit': None, 'double_bit': None, 'pending': None}  # N/A on Hopper, not 0
    assert gpu['remapped_rows'] == {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False}
    assert gpu['clocks_throttle_reasons'] == ['hw_slowdown', 'hw_power_brake_slowdown']
    assert [g['bus_id'] for g in result['gpus']][-1] == '0000:db:00.0'


def test_q_h100_vm_and_fault_injection():
    text = fixtures.shared(Q_H100_VM)
    healthy = nvidia.parse_nvidia_smi_q(text)
    assert healthy['gpu_count'] == 8 and all(g['remapped_rows']['pending'] is False for g in healthy['gpus'])
    faulty = text.replace('        Pending                           : No', '        Pending                           : Yes', 1)
    gpus = nvidia.parse_nvidia_smi_q(faulty)['gpus']
    assert gpus[0]['remapped_rows']['pending'] is True and gpus[1]['remapped_rows']['pending'] is False


def test_q_rtx4090_ecc_disabled_counts_unknown():
    gpu = nvidia.parse_nvidia_smi_q(fixtures.shared(Q_4090))['gpus'][0]
    assert gpu['ecc_mode_current'] == 'Disabled'
    assert gpu['ecc_errors']['volatile']['uncorrectable_total'] is None
    assert gpu['remapped_rows']['uncorrectable'] == 0


def test_q_titan_v_old_ecc_layout_all_na():
    result = nvidia.parse_nvidia_smi_q(fixtures.shared(Q_TITANV))
    volatile = result['gpus'][0]['ecc_errors']['volatile']
    assert result['gpu_count'] == 1 and result['gpus'][0]['ecc_mode_current'] is None
    assert 'single_bit_device_memory' in volatile and volatile['single_bit'] is None and volatile['double_bit'] is None


def test_q_page_retired_section_only():
    result = nvidia.parse_nvidia_smi_q(fixtures.shared(Q_RETIRED))
    assert result['gpu_count'] == 8 and [g['bus_id'] for g in result['gpus']][:2] == ['0001:00:00.0', '0002:00:00.0']
    assert all(g['retired_pages'] == {'single_bit': 0, 'double_bit': 0, 'pending': False} for g in result['gpus'])
    assert result['gpus'][0]['name'] is None


def test_dispatcher_picks_the_format():
    assert nvidia.parse_nvidia_smi(fixtures.shared(XML_T4))['gpus'][0]['name'] == 'Tesla T4'
    assert nvidia.parse_nvidia_smi(fixtures.shared(Q_TITANV))['gpus'][0]['name'] == 'NVIDIA TITAN V'


@pytest.mark.parametrize('text', ['', 'hello world\n', 'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\n'])
def test_q_rejects_foreign_text(text):
    with pytest.raises(ParseError):
        nvidia.parse_nvidia_smi_q(text)


def test_table_a30_truncated_keeps_complete_rows():
    result = nvidia.parse_nvidia_smi_table(fixtures.shared(TABLE_A30))
    assert (result['driver_version'], result['cuda_version'], result['gpu_count']) == ('545.23.08', '12.3', 2)
    assert result['gpus'][0]['bus_id'] == '0000:17:00.0' and result['gpus'][0]['temperature_c'] == 27
    assert result['gpus'][1]['power_draw_w'] == 30 and result['gpus'][1]['memory_total_mib'] == 24576


def test_topo_dgx_a100_truncated():
    topo = nvidia.parse_nvidia_smi_topo(fixtures.shared(TOPO_DGX))
    assert set(topo) == {'devices', 'matrix', 'affinity', 'nic_legend'}
    assert len(topo['devices']) == 20 and topo['devices'][8] == 'NIC0'
    assert topo['matrix']['GPU0']['GPU1'] == 'NV12' and topo['matrix']['GPU0']['NIC0'] == 'PXB'
    assert topo['affinity']['GPU0'] == {'cpu_affinity': '48-63,176-191', 'numa_affinity': 3, 'gpu_numa_id': None}
    assert topo['affinity']['GPU4']['numa_affinity'] is None  # cut mid-row
    assert 'GPU5' not in topo['matrix'] and topo['nic_legend'] == {}
    pairs = nvidia.pair_gpus_with_nics(topo)
    assert [(p['nic'], p['gpu'], p['link']) for p in pairs[:4]] == [('NIC0', 0, 'PXB'), ('NIC1', 0, 'PXB'), ('NIC2', 2, 'PXB'), ('NIC3', 2, 'PXB')]


def test_topo_h100_pix_pairs_and_legend():
    topo = nvidia.parse_nvidia_smi_topo(fixtures.local(TOPO_H100))
    assert topo['nic_legend']['NIC7'] == 'mlx5_7' and topo['matrix']['NIC7']['NIC7'] == 'X'
    assert topo['affinity']['GPU4'] == {'cpu_affinity': '48-95,144-191', 'numa_affinity': 1, 'gpu_numa_id': None}
    pairs = nvidia.pair_gpus_with_nics(topo)
    assert [(p['nic'], p['gpu'], p['link'], p['numa_node']) for p in pairs] == [
        ('mlx5_%d' % n, n, 'PIX', 0 if n < 4 else 1) for n in range(8)]
    assert all(p['numa_local'] for p in pairs)


def test_topo_ada_node_only_ties_go_to_lower_index():
    topo = nvidia.parse_nvidia_smi_topo(fixtures.local(TOPO_ADA))
    pairs = nvidia.pair_gpus_with_nics(topo)
    assert [(p['nic'], p['gpu'], p['link']) for p in pairs] == [
        ('mlx5_0', 0, 'NODE'), ('mlx5_1', 0, 'NODE'), ('mlx5_2', 2, 'NODE'), ('mlx5_3', 2, 'NODE')]


def test_topo_old_driver_tabs_and_mlx5_columns():
    text = ('\tGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\n'
            'GPU0\t X \tNV1\tSYS\tPHB\t0-15\n'
            'GPU1\tNV1\t X \tSYS\tPXB\t0-15\n'
            'mlx5_0\tSYS\tSYS\t X \tSYS\t\n'
            'mlx5_1\tPHB\tPXB\tSYS\t X \t\n')
    topo = nvidia.parse_nvidia_smi_topo(text)
    assert topo['devices'] == ['GPU0', 'GPU1', 'mlx5_0', 'mlx5_1']
    assert topo['affinity']['GPU1'] == {'cpu_affinity': '0-15', 'numa_affinity': None, 'gpu_numa_id': None}
    pairs = nvidia.pair_gpus_with_nics(topo)
    assert [(p['nic'], p['gpu'], p['link'], p['numa_local']) for p in pairs] == [('mlx5_0', 0, 'SYS', False), ('mlx5_1', 1, 'PXB', True)]


@pytest.mark.parametrize('text', ['', 'GPU0 X\n', '        GPU0    GPU1\n', 'nvidia-smi: command not found\n'])
def test_topo_rejects_garbage(text):
    with pytest.raises(ParseError):
        nvidia.parse_nvidia_smi_topo(text)


def test_pair_without_any_link_gives_unknown_gpu():
    pairs = nvidia.pair_gpus_with_nics({'devices': ['GPU0', 'NIC0'], 'matrix': {}, 'affinity': {}, 'nic_legend': {'NIC0': 'mlx5_0'}})
    assert pairs == [{'nic': 'mlx5_0', 'nic_column': 'NIC0', 'gpu': None, 'gpu_name': None, 'link': None,
                      'numa_node': None, 'numa_local': None}]


def test_xml_instant_and_average_power_layout_of_recent_drivers_found_public():
    """Driver 575 prints gpu_power_readings with instant_power_draw / average_power_draw and no power_draw."""
    result = nvidia.parse_nvidia_smi_xml(
        fixtures.local('nvidia/nvidia_smi_qx_575.51.02_rtx4070_laptop_instant_average_power_prompt.xml.txt'))
    gpu = result['gpus'][0]
    assert result['driver_version'] == '575.51.02' and result['gpu_count'] == 1 and result['gpu_count_mismatch'] is False
    assert (gpu['power_draw_w'], gpu['power_average_w'], gpu['temperature_c']) == (11.26, 11.15, 41.0)
    assert gpu['bus_id'] == '0000:01:00.0' and gpu['pcie']['gen_current'] == 2 and gpu['pcie']['width_max'] == 8
    assert gpu['remapped_rows'] == {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False}
    assert gpu['clocks_throttle_reasons'] == ['gpu_idle']


def test_xml_older_power_draw_layout_still_read():
    result = nvidia.parse_nvidia_smi_xml(
        fixtures.shared('nvidia-smi-xml/nvidia_smi_qx_515.105.01_TeslaT4_retired_pages_zero_telegraf.xml.txt'))
    assert result['gpus'][0]['power_draw_w'] == 26.78 and result['gpus'][0]['power_average_w'] is None


@pytest.mark.parametrize('readings, draw, average', [
    ('<average_power_draw>88.0 W</average_power_draw>', 88.0, 88.0),
    ('<power_draw>70.5 W</power_draw><average_power_draw>69.0 W</average_power_draw>', 70.5, 69.0),
    ('<instant_power_draw>N/A</instant_power_draw><average_power_draw>N/A</average_power_draw>', None, None),
])
def test_xml_power_blocks_of_each_schema(readings, draw, average):
    text = fixtures.local('nvidia/nvidia_smi_qx_575.51.02_rtx4070_laptop_instant_average_power_prompt.xml.txt')
    start, end = text.index('<gpu_power_readings>'), text.index('</gpu_power_readings>')
    for block in ('gpu_power_readings', 'power_readings'):
        edited = text[:start] + '<%s>%s</%s>' % (block, readings, block) + text[end + len('</gpu_power_readings>'):]
        gpu = nvidia.parse_nvidia_smi_xml(edited)['gpus'][0]
        assert (gpu['power_draw_w'], gpu['power_average_w']) == (draw, average)


def test_q_text_instant_and_average_power_lines():
    """nvidia-smi -q of recent drivers prints 'Average Power Draw' / 'Instant Power Draw' instead of 'Power Draw'."""
    text = fixtures.shared('nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt')
    old = '        Power Draw                        : 67.74 W\n'
    assert old in text
    new = ('        Average Power Draw                : 66.10 W\n'
           '        Instant Power Draw                : 67.74 W\n')
    gpu = nvidia.parse_nvidia_smi_q(text.replace(old, new, 1))['gpus'][0]
    assert (gpu['power_draw_w'], gpu['power_average_w']) == (67.74, 66.10)
    assert nvidia.parse_nvidia_smi_q(text)['gpus'][0]['power_draw_w'] == 67.74


def test_blackwell_xml_counts_the_sram_secded_uncorrectable_errors_synthetic():
    result = nvidia.parse_nvidia_smi_xml(fixtures.local('nvidia/nvidia_smi_qx_580_b200_blackwell_sram_secded_uncorrectable_synthetic.xml.txt'))
    (gpu,) = result['gpus']
    assert (result['driver_version'], result['cuda_version'], gpu['name'], gpu['bus_id']) == ('580.95.05', '13.0', 'NVIDIA B200', '0000:1b:00.0')
    assert gpu['pcie'] == {'gen_current': 5, 'gen_max': 5, 'width_current': 16, 'width_max': 16, 'replays': 0}
    volatile = gpu['ecc_errors']['volatile']
    # The XML spells it sram_uncorrectable_secded (-q prints "SEC-DED"): two uncorrectable errors, never zero.
    assert (volatile['sram_uncorrectable_secded'], volatile['sram_uncorrectable'], volatile['uncorrectable_total']) == (2, 2, 2)
    assert gpu['ecc_errors']['aggregate']['correctable_total'] == 3 and gpu['ecc_mode_current'] == 'Enabled'
    assert (gpu['power_draw_w'], gpu['power_average_w'], gpu['temperature_c']) == (143.02, 142.37, 34.0)


def test_driver_version_of_the_open_kernel_modules():
    result = nvidia.parse_nvidia_driver_version(fixtures.local('nvidia/proc_driver_nvidia_version_555.42.02_open_kernel_module_public.txt'))
    assert result['version'] == '555.42.02' and result['open_kernel_module'] is True


def test_driver_version_of_the_proprietary_module():
    result = nvidia.parse_nvidia_driver_version(fixtures.local('nvidia/proc_driver_nvidia_version_510.39.01_proprietary_mlnx_ofed_nvidia_doc.txt'))
    assert result['version'] == '510.39.01' and result['open_kernel_module'] is False


def test_driver_version_refuses_a_missing_banner():
    with pytest.raises(ParseError):
        nvidia.parse_nvidia_driver_version('cat: /proc/driver/nvidia/version: No such file or directory\n')


def test_fabric_manager_state_of_an_nvswitch_system_from_the_text_query():
    result = nvidia.parse_nvidia_smi_q(fixtures.shared('nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt'))
    assert [gpu['fabric'] for gpu in result['gpus']] == [{'state': 'Completed', 'status': 'Success'}] * 8
    assert all(gpu['persistence_mode'] == 'Enabled' for gpu in result['gpus'])


def test_fabric_not_applicable_reads_as_unknown():
    result = nvidia.parse_nvidia_smi_xml(fixtures.shared(
        'nvidia-smi-xml/nvidia_smi_qx_535.54.03_A100_sxm4_80GB_mig_enabled_attached4_but_1gpu_telegraf.xml.txt'))
    assert result['gpus'][0]['fabric'] == {'state': None, 'status': None}
