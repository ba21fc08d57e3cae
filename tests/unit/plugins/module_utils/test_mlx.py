"""mlxconfig / flint / mlxlink parsers and the CQE compression helper on real and (marked) synthetic outputs."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import mlx
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures


# --- mlxconfig ------------------------------------------------------------------------------

def test_mlxconfig_cx4_real_single_column_truncated():
    result = mlx.parse_mlxconfig(fixtures.shared('mlxconfig/mlxconfig_query_cx4_vpi_eth_sriov_terrencemiao_truncated_in_source.txt'))
    assert result['device'] == '/dev/mst/mt4115_pciconf0' and result['device_type'] == 'ConnectX4'
    assert result['name'] == '00KH925_Ax'
    assert result['description'] == 'Mellanox ConnectX-4 EDR IB VPI Single-port x16 PCIe 3.0 HCA'
    assert result['parameters'] == {'LINK_TYPE_P1': 'ETH(2)', 'SRIOV_EN': 'True(1)', 'NUM_OF_VFS': '8'}
    assert result['truncated'] is True
    assert result['parameters_next_boot'] is None and result['pending_changes'] is None


def test_mstconfig_cx6lx_real_three_columns():
    result = mlx.parse_mlxconfig(fixtures.local('mlx/mstconfig_e_q_cx6lx_sriov968_found_public_truncated.txt'))
    assert result['device'] == '0108:00:00.0' and result['device_type'] == 'ConnectX6LX'
    assert result['columns'] == ['Default', 'Current', 'Next Boot']
    assert result['parameters']['CRYPTO_POLICY'] == 'UNRESTRICTED(1)' and len(result['parameters']) == 7
    assert result['parameters_next_boot'] == result['parameters'] == result['parameters_default']
    assert result['pending_changes'] == [] and result['modified'] == []


def test_mlxconfig_pending_and_modified_synthetic():
    result = mlx.parse_mlxconfig(fixtures.local('mlx/mlxconfig_e_q_cx7_sriov_pending_cqe_balanced_synthetic.txt'))
    assert result['parameters']['SRIOV_EN'] == 'False(0)'
    assert result['parameters_next_boot']['SRIOV_EN'] == 'True(1)'
    assert result['pending_changes'] == ['NUM_OF_VFS', 'SRIOV_EN']
    assert result['modified'] == ['NUM_OF_VFS', 'SRIOV_EN', 'ADVANCED_PCI_SETTINGS']
    assert result['parameters_default']['ADVANCED_PCI_SETTINGS'] == 'False(0)'
    assert result['parameters']['ESWITCH_HAIRPIN_DESCRIPTORS'] == 'Array[0..7]'
    assert '*' not in ''.join(result['parameters'])


def test_mstconfig_next_boot_only_synthetic():
    result = mlx.parse_mlxconfig(fixtures.local('mlx/mstconfig_q_cx5_next_boot_only_cqe_aggressive_synthetic.txt'))
    assert result['columns'] == ['Next Boot']
    assert result['parameters']['CQE_COMPRESSION'] == 'AGGRESSIVE(1)'
    assert result['pending_changes'] is None


@pytest.mark.parametrize('text', ['', '-E- Failed to open the device\n', 'Configurations:   Default   Current   Next Boot\n  SRIOV_EN  True(1)\n',
                                  'Configurations:\n  not a parameter row\n'])
def test_mlxconfig_rejects_garbage(text):
    with pytest.raises(ParseError):
        mlx.parse_mlxconfig(text)


@pytest.mark.parametrize('value,mode,code,enabled', [
    ('BALANCED(0)', 'BALANCED', 0, True), ('AGGRESSIVE(1)', 'AGGRESSIVE', 1, True), ('1', 'AGGRESSIVE', 1, True),
    ('0', 'BALANCED', 0, True), ('DISABLED(0)', 'DISABLED', 0, False), ('weird value', None, None, None),
])
def test_cqe_compression(value, mode, code, enabled):
    result = mlx.cqe_compression({'CQE_COMPRESSION': value})
    assert (result['mode'], result['code'], result['enabled'], result['present']) == (mode, code, enabled, True)


def test_cqe_compression_missing_is_unknown():
    assert mlx.cqe_compression({'SRIOV_EN': 'True(1)'}) == {'present': False, 'value': None, 'mode': None, 'code': None, 'enabled': None}
    parsed = mlx.parse_mlxconfig(fixtures.local('mlx/mlxconfig_e_q_cx7_sriov_pending_cqe_balanced_synthetic.txt'))
    assert mlx.cqe_compression(parsed)['mode'] == 'BALANCED'


# --- flint ------------------------------------------------------------------------------------

def test_flint_cx4_real():
    result = mlx.parse_flint(fixtures.shared('flint/flint_query_cx4_fs3_terrencemiao.txt'))
    assert result['image_type'] == 'FS3' and result['fw_version'] == '12.28.2006'
    assert result['fw_release_date'] == '15.9.2020' and result['psid'] == 'LNV2180110032'
    assert [rom['type'] for rom in result['rom_info']] == ['UEFI', 'PXE'] and result['rom_info'][1]['version'] == '3.6.102'
    assert result['base_guid'] == 'ec0d9a030076eae2' and result['guids'] == 4
    assert result['base_mac'] == 'ec0d9a76eae2' and result['macs'] == 4
    assert result['security_attributes'] == [] and result['secure_fw'] is False
    assert result['reset_pending'] is False and result['image_vsd'] is None


def test_flint_reset_pending_synthetic():
    result = mlx.parse_flint(fixtures.local('mlx/flint_q_cx7_fs4_secure_fw_reset_pending_synthetic.txt'))
    assert result['fw_version'] == '28.43.1014' and result['fw_version_running'] == '28.39.1002'
    assert result['reset_pending'] is True and result['secure_fw'] is True and result['guids'] == 16
    assert result['rom_info'][2]['type'] == 'UEFI Virtio net'


def test_mstflint_orig_guid_synthetic():
    result = mlx.parse_flint(fixtures.local('mlx/mstflint_q_cx4lx_orig_guid_na_synthetic.txt'))
    assert result['psid'] == 'MT_2420110034' and result['rom_info'] == []
    assert result['orig_base_guid'] is None and result['base_guid'] == 'e8ebd30300130616'


def test_flint_missing_security_line_is_unknown():
    result = mlx.parse_flint('FW Version:            16.35.2000\nPSID:                  MT_0000000008\n')
    assert result['security_attributes'] is None and result['secure_fw'] is None and result['guids'] is None


@pytest.mark.parametrize('text', ['', '-E- Cannot open Device: /dev/mst/mt4129_pciconf0. No such file or directory\n',
                                  'hca_id: mlx5_0\n\ttransport: InfiniBand (0)\n'])
def test_flint_rejects_garbage(text):
    with pytest.raises(ParseError):
        mlx.parse_flint(text)


# --- mlxlink ------------------------------------------------------------------------------------

def test_mlxlink_healthy_synthetic():
    result = mlx.parse_mlxlink(fixtures.local('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt'))
    assert result['operational']['state'] == 'Active' and result['operational']['speed'] == '200G'
    assert result['operational']['fec'] == 'Standard RS-FEC - (544,514)'
    assert result['troubleshooting'] == {'status_opcode': 0, 'group_opcode': None, 'recommendation': 'No issue was observed'}
    counters = result['counters']
    assert counters['effective_physical_ber'] == pytest.approx(15e-255, rel=1e-9)
    assert counters['raw_physical_ber'] == pytest.approx(2e-9)
    assert counters['effective_physical_errors'] == 0 and counters['link_down_counter'] == 0
    assert counters['raw_physical_errors_per_lane'] == [3946476, 5120336, 7692183, 3026261]
    assert counters['symbol_errors'] is None
    assert result['module']['vendor_part_number'] == 'MMA1T00-VS' and result['module']['length_m'] == 2.0
    assert result['module']['identifier'] == 'QSFP56' and result['module']['temperature_c'] == 47.0
    assert result['eye'] is None


def test_mlxlink_bad_signal_integrity_ansi_synthetic():
    result = mlx.parse_mlxlink(fixtures.local('mlx/mlxlink_cx5_100g_bad_signal_integrity_c_e_synthetic.txt'))
    assert result['operational']['state'] == 'Active'
    assert result['troubleshooting']['status_opcode'] == 15
    assert result['troubleshooting']['recommendation'] == 'Bad signal integrity'
    assert result['counters']['effective_physical_errors'] == 42
    assert result['counters']['effective_physical_ber'] == pytest.approx(1e-12)
    assert result['counters']['link_down_counter'] == 3 and result['counters']['link_error_recovery_counter'] == 7
    assert result['eye']['physical_grade'] == [8213, 7940, 1120, 8003]
    assert result['module'] is None


def test_mlxlink_without_counters_leaves_them_unknown():
    text = ('Operational Info\n----------------\nState                              : Polling\n'
            'Physical state                     : N/A\nSpeed                              : N/A\n')
    result = mlx.parse_mlxlink(text)
    assert result['operational']['state'] == 'Polling' and result['operational']['speed'] is None
    assert result['counters'] is None and result['troubleshooting'] is None


@pytest.mark.parametrize('text', ['', '-E- Failed to open device: mlx5_9\n', 'State : Active\n',
                                  'Operational Info\n----------------\nno colon here\n'])
def test_mlxlink_rejects_garbage(text):
    with pytest.raises(ParseError):
        mlx.parse_mlxlink(text)


def test_mlxlink_recent_mft_ndr_link_pasted_with_prompts_and_elided_found_public():
    result = mlx.parse_mlxlink(fixtures.local('mlx/mlxlink_cx7_ndr_show_mo_doca3.3_prompt_truncated_in_source.txt'))
    operational = result['operational']
    assert (operational['state'], operational['physical_state'], operational['speed'], operational['width']) == \
        ('Active', 'LinkUp', 'IB-NDR', '4x')
    assert operational['fec'] == 'Ethernet_Consortium_LL_50G_RS_FEC_PLR -(272,257+1)'
    assert result['supported']['enabled_link_speed'] == '0x000000f1 (NDR,HDR,EDR,FDR,SDR)'
    # The author's "..." cut the Troubleshooting Info: unknown, and the result says it was cut.
    assert result['troubleshooting'] == {'status_opcode': None, 'group_opcode': None, 'recommendation': None}
    assert result['truncated'] is True


def test_mlxlink_full_output_is_not_truncated():
    assert mlx.parse_mlxlink(fixtures.local('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt'))['truncated'] is False


def test_bluefield3_mlxlink_counters_zero_ber_printed_15e255_found_public():
    result = mlx.parse_mlxlink(fixtures.local('mlx/mlxlink_m_c_bluefield3_100g_dac_healthy_ber_15E-255_sigcomm26_tutorial.txt'))
    assert result['truncated'] is False and result['sections']['Tool Information']['Firmware Version'] == '32.43.2402'
    assert (result['operational']['state'], result['operational']['speed'], result['operational']['fec']) == (
        'Active', '100G', 'Standard RS-FEC - RS(528,514)')
    assert (result['module']['vendor_name'], result['module']['vendor_part_number']) == ('FS', 'Q28-PC03')
    counters = result['counters']
    assert counters['effective_physical_ber'] == 1.5e-254 and counters['raw_physical_ber'] == 1.5e-254
    assert counters['raw_physical_errors_per_lane'] == [0, 0, 0, 0] and counters['link_down_counter'] == 0
    assert counters['time_since_last_clear_min'] == 25075.2


def test_connectx7_mlxlink_with_errors_and_a_high_ber_synthetic():
    result = mlx.parse_mlxlink(fixtures.local('mlx/mlxlink_m_c_cx7_400g_high_ber_link_down_37_bad_signal_synthetic.txt'))
    assert result['troubleshooting']['status_opcode'] == 15 and result['operational']['speed'] == '400G'
    counters = result['counters']
    assert (counters['effective_physical_errors'], counters['effective_physical_ber'], counters['raw_physical_ber']) == (1873, 3e-13, 2e-05)
    assert counters['raw_physical_errors_per_lane'] == [120488, 97311, 5510238914, 101027]
    assert (counters['link_down_counter'], counters['link_error_recovery_counter']) == (37, 112)
