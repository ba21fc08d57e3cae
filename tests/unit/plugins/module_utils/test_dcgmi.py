"""dcgmi diag parser on real text tables (shared and found-public), JSON layouts and foreign input."""
import json

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

DCGM4_PASS = 'dcgmi/dcgmi_diag_dcgm4.2.3_per_gpu_software_pass_dcgm253_truncated.txt'
DCGM331 = 'dcgmi/dcgmi_diag_r2_dcgm3.3.1_gpu_fail_godcgm52_truncated.txt'
DCGM304 = 'dcgmi/dcgmi_diag_r3_dcgm3.0.4_deployment_pass_dcgm55_truncated.txt'


def _test(result, name):
    return next(test for test in result['tests'] if test['name'] == name)


def test_dcgm4_text_per_gpu_rows_and_cut_row_is_unknown():
    result = dcgmi.parse_dcgmi_diag(fixtures.shared(DCGM4_PASS))
    assert result['format'] == 'text'
    assert result['version'] == '4.2.3' and result['driver_version'] == '570.148.08'
    assert result['gpu_device_ids'] == '26b9, 26b9, 26b9, 26b9'
    software = _test(result, 'software')
    assert software['category'] == 'Deployment' and software['overall'] == 'pass'
    assert sorted(software['per_gpu']) == ['0', '1', '2', '3']
    assert all(entry['status'] == 'pass' for entry in software['per_gpu'].values())
    memory = _test(result, 'memory')
    assert memory['category'] == 'Hardware' and memory['overall'] is None  # "| memory | Pass" is cut
    # Cut table: never reported as healthy.
    assert result['truncated'] is True and result['overall'] is None


def test_dcgm331_metadata_and_deployment_rows():
    result = dcgmi.parse_dcgmi_diag(fixtures.shared(DCGM331))
    assert result['version'] == '3.3.1' and result['gpu_device_ids'] == '1eb8'
    assert result['ran'] is True
    names = [test['name'] for test in result['tests']]
    assert names[0] == 'Denylist' and 'Page Retirement/Row Remap' in names
    assert _test(result, 'Denylist')['overall'] == 'pass'
    assert _test(result, 'Graphics Processes')['overall'] is None
    assert result['overall'] is None and result['failed_tests'] == []


def test_dcgm304_without_metadata():
    result = dcgmi.parse_dcgmi_diag(fixtures.shared(DCGM304))
    assert result['version'] is None
    assert [t['overall'] for t in result['tests'] if t['category'] == 'Deployment'] == ['pass'] * 9
    assert _test(result, 'PCIe')['category'] == 'Integration' and _test(result, 'PCIe')['overall'] is None
    assert result['overall'] is None


def test_gpu_memory_fail_with_wrapped_warning_found_public():
    result = dcgmi.parse_dcgmi_diag(
        fixtures.local('dcgmi/dcgmi_diag_r2_dcgm3.3.1_gpu_memory_fail_gpu0_wrapped_warning_godcgm52_truncated.txt'))
    memory = _test(result, 'GPU Memory')
    assert memory['category'] == 'Hardware' and memory['overall'] == 'fail'
    assert memory['per_gpu']['0']['status'] == 'fail' and memory['per_gpu']['1']['status'] == 'pass'
    message = memory['per_gpu']['0']['messages'][0]
    # dcgmi cut the message mid-word at 45 characters; the parser rebuilds it.
    assert 'Reset GPU. Restart DCGM.' in message and "Unable to create CUDA context: 'CUDA-capable device(s) is/are busy" in message
    assert result['gpus_failed'] == [0] and result['failed_tests'] == ['GPU Memory']
    # A Fail already seen stays a Fail even though the table is cut.
    assert result['truncated'] is True and result['overall'] == 'fail'
    assert 'Info' not in [test['name'] for test in result['tests']]


def test_dcgm3_json_fail_on_gpu1():
    result = dcgmi.parse_dcgmi_diag(fixtures.local('dcgmi/dcgmi_diag_r2_j_dcgm3.3_gpu_memory_fail_gpu1_synthetic.txt'))
    assert result['format'] == 'json' and result['version'] == '3.3.5'
    assert result['overall'] == 'fail' and result['failed_tests'] == ['GPU Memory'] and result['gpus_failed'] == [1]
    memory = _test(result, 'GPU Memory')
    assert memory['per_gpu']['1']['error_ids'] == [83]
    assert 'uncorrectable' in memory['per_gpu']['1']['messages'][0]
    assert _test(result, 'Denylist')['per_gpu']['1']['status'] == 'pass'  # "gpu_ids": "0,1"
    assert 'bandwidth' in _test(result, 'PCIe')['per_gpu']['0']['messages'][0]


def test_dcgm4_json_entity_results_warn():
    result = dcgmi.parse_dcgmi_diag(fixtures.local('dcgmi/dcgmi_diag_r1_j_dcgm4.2_software_warn_gpu1_synthetic.txt'))
    assert result['version'] == '4.2.3' and result['driver_version'] == '570.148.08'
    software = _test(result, 'software')
    assert software['status'] == 'warn' and software['per_gpu']['1']['error_ids'] == [29]
    assert result['overall'] == 'warn' and result['gpus_warned'] == [1] and result['gpus_failed'] == []


def test_dcgm4_hoisted_tests_layout():
    result = dcgmi.parse_dcgmi_diag(fixtures.local('dcgmi/dcgmi_diag_r2_j_dcgm4_hoisted_tests_memory_fail_gpu0_synthetic.txt'))
    assert result['failed_tests'] == ['memory'] and result['skipped_tests'] == ['pcie']
    assert result['gpus_failed'] == [0] and result['overall'] == 'fail'


def test_cut_or_edited_json_is_a_parse_error_found_public():
    with pytest.raises(ParseError, match='does not parse'):
        dcgmi.parse_dcgmi_diag(fixtures.local('dcgmi/dcgmi_diag_r3_j_dcgm3_t400_skips_elided_dcgm139_truncated.txt'))


def test_all_skipped_is_skip_and_no_results_is_unknown():
    doc = {'DCGM GPU Diagnostic': {'test_categories': [{'category': 'Hardware', 'tests': [
        {'name': 'GPU Memory', 'results': [{'gpu_id': '0', 'status': 'Skip'}]},
        {'name': 'Diagnostic', 'results': [{'gpu_id': '0', 'status': 'Not Run'}]}]}]}}
    assert dcgmi.parse_dcgmi_diag(json.dumps(doc))['overall'] == 'skip'
    doc['DCGM GPU Diagnostic']['test_categories'][0]['tests'][0]['results'] = [{'gpu_id': '0', 'status': 'Bogus'}]
    doc['DCGM GPU Diagnostic']['test_categories'][0]['tests'].pop()
    assert dcgmi.parse_dcgmi_diag(json.dumps(doc))['overall'] is None


def test_runtime_error_makes_overall_unknown():
    doc = {'DCGM Diagnostic': {'runtime_error': 'Error while running diagnostics',
                               'test_categories': [{'category': 'Deployment', 'tests': [
                                   {'name': 'software', 'results': [{'entity_group': 'GPU', 'entity_id': 0, 'status': 'Pass'}]}]}]}}
    result = dcgmi.parse_dcgmi_diag(json.dumps(doc))
    assert result['runtime_error'] == 'Error while running diagnostics' and result['overall'] is None


def test_complete_text_table_passes():
    text = ('Successfully ran diagnostic for group.\n'
            '+---------------------------+------------------------------------------------+\n'
            '| Diagnostic                | Result                                         |\n'
            '+===========================+================================================+\n'
            '|-----  Deployment  --------+------------------------------------------------|\n'
            '| Denylist                  | Pass                                           |\n'
            '| Inforom                   | Skip                                           |\n'
            '+-----  Hardware  ----------+------------------------------------------------+\n'
            '| GPU Memory                | Pass - All                                     |\n'
            '+---------------------------+------------------------------------------------+\n')
    result = dcgmi.parse_dcgmi_diag(text)
    assert result['truncated'] is False and result['overall'] == 'pass'
    assert result['skipped_tests'] == ['Inforom']


@pytest.mark.parametrize('status,expected', [('Pass', 'pass'), ('FAIL', 'fail'), ('Warn', 'warn'), ('Skip', 'skip'),
                                             ('Not Run', 'skip'), ('weird', None), (None, None)])
def test_normalize_status(status, expected):
    assert dcgmi.normalize_status(status) == expected


@pytest.mark.parametrize('text', ['', 'Error: unable to establish a connection to the specified host: localhost\n',
                                  '[1, 2, 3]', '{"foo": 1}', 'x\x00y'])
def test_foreign_text_is_a_parse_error(text):
    with pytest.raises(ParseError):
        dcgmi.parse_dcgmi_diag(text)


def test_connection_error_hint():
    text = ('Error: unable to establish a connection to the specified host: localhost\n'
            'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')
    assert 'nv-hostengine' in dcgmi.classify_connection_error(text)
    assert dcgmi.classify_connection_error('Successfully ran diagnostic for group.') is None


# --- "Pass/Fail/Skip - All" rows name every GPU of the run ----------------------------------------

def test_fail_all_with_a_warning_per_gpu_names_all_eight_gpus_found_public():
    result = dcgmi.parse_dcgmi_diag(
        fixtures.local('dcgmi/dcgmi_diag_r3_dcgm3.3.8_gpu_memory_fail_all_8xh100_prompt_nccltests264.txt'))
    memory = _test(result, 'GPU Memory')
    assert memory['all_gpus'] is True and memory['overall'] == 'fail'
    assert sorted(memory['per_gpu']) == [str(gpu) for gpu in range(8)]
    assert all(entry['status'] == 'fail' for entry in memory['per_gpu'].values())
    assert "Unable to initialize CUDA library: 'system not yet initialized'" in memory['per_gpu']['5']['messages'][0]
    assert result['gpus_in_run'] == list(range(8)) and result['gpus_failed'] == list(range(8))
    assert result['failed_tests'] == ['GPU Memory'] and result['overall'] == 'fail' and result['truncated'] is False
    assert _test(result, 'PCIe')['per_gpu']['7']['status'] == 'skip' and _test(result, 'Denylist')['all_gpus'] is False
    assert result['version'] == '3.3.8'


def test_fail_all_naming_one_gpu_covers_every_device_the_metadata_lists():
    result = dcgmi.parse_dcgmi_diag(
        fixtures.local('dcgmi/dcgmi_diag_r2_dcgm3.3.0_pcie_fail_all_one_gpu_named_8gpu_prompt_blog.txt'))
    pcie = _test(result, 'PCIe')
    assert pcie['overall'] == 'fail' and sorted(pcie['per_gpu']) == [str(gpu) for gpu in range(8)]
    assert 'unsupported display driver / cuda driver combination' in pcie['per_gpu']['0']['messages'][0]
    assert pcie['per_gpu']['3']['messages'] == [] and pcie['per_gpu']['3']['status'] == 'fail'
    assert result['gpus_failed'] == list(range(8)) and result['overall'] == 'fail'


def test_all_rows_without_any_gpu_list_keep_the_status_on_the_test():
    """DCGM 2.x prints no Metadata and names no GPU: 'Pass - All' cannot be expanded, and says so."""
    result = dcgmi.parse_dcgmi_diag(fixtures.local('dcgmi/dcgmi_diag_r2_dcgm2_pass_all_no_gpu_list_prompt_ppc64le_notes.txt'))
    memory = _test(result, 'GPU Memory')
    assert memory['all_gpus'] is True and memory['status'] == 'pass' and memory['per_gpu'] == {}
    assert result['gpus_in_run'] is None and result['overall'] == 'pass' and result['gpus_failed'] == []
    assert result['skipped_tests'] == ['CUDA Toolkit Libraries', 'Diagnostic', 'SM Performance', 'Targeted Performance',
                                       'Targeted Power']


SKIPPED_R3 = 'dcgmi/dcgmi_diag_r3_dcgm3.3.9_blackwell_software_pass_hardware_all_skipped_slurm_on_aws.txt'
SKIPPED_R3_JSON = 'dcgmi/dcgmi_diag_r3_j_dcgm4_software_pass_hardware_all_skipped_synthetic.txt'
GB10_R1_JSON = 'dcgmi/dcgmi_diag_r1_j_dcgm4.2.3_gb10_software_fail_persistence_found_public.txt'
MEMTEST_R4 = 'dcgmi/dcgmi_diag_r4_dcgm3_memtest_pass_others_skipped_persistence_fail_gpu_memtest_page.txt'


def test_software_pass_with_every_hardware_test_skipped_is_not_a_pass_found_public():
    result = dcgmi.parse_dcgmi_diag(fixtures.local(SKIPPED_R3))
    assert (result['version'], result['driver_version'], result['gpus_in_run']) == ('3.3.9', '570.172.08', [0, 1])
    assert result['truncated'] is False and result['failed_tests'] == []
    assert _test(result, 'Denylist')['overall'] == 'pass' and _test(result, 'GPU Memory')['overall'] == 'skip'
    assert result['hardware_ran'] is False and result['hardware_tests_run'] == []
    assert result['hardware_tests_skipped'] == ['PCIe', 'GPU Memory', 'Targeted Stress', 'Targeted Power', 'Memory Bandwidth', 'EUD Test']
    assert result['overall'] == 'skip'
    assert 'every hardware and stress test was skipped (PCIe, GPU Memory' in dcgmi.level_not_run(result, 3)


def test_dcgm4_json_level_with_every_hardware_test_skipped_synthetic():
    result = dcgmi.parse_dcgmi_diag(fixtures.local(SKIPPED_R3_JSON))
    assert (result['format'], result['version'], result['driver_version']) == ('json', '4.2.3', '575.57.08')
    assert result['hardware_ran'] is False and result['overall'] == 'skip'
    assert result['hardware_tests_skipped'] == ['pcie', 'memory', 'diagnostic', 'targeted_stress', 'targeted_power', 'memory_bandwidth']
    assert _test(result, 'software')['per_gpu']['1']['status'] == 'pass'
    assert dcgmi.level_not_run(result, 3).startswith('every hardware and stress test was skipped')


def test_a_hardware_test_that_ran_keeps_the_level_run_found_public():
    result = dcgmi.parse_dcgmi_diag(fixtures.local(MEMTEST_R4))
    assert result['hardware_ran'] is True and result['hardware_tests_run'] == ['Memtest']
    assert len(result['hardware_tests_skipped']) == 6 and result['overall'] == 'fail'
    assert result['failed_tests'] == ['Persistence Mode']
    assert 'Persistence mode for GPU 0 is currently disabled.' in _test(result, 'Persistence Mode')['messages'][0]
    assert dcgmi.level_not_run(result, 4) is None


def test_dcgm4_json_gb10_level1_found_public():
    result = dcgmi.parse_dcgmi_diag(fixtures.local(GB10_R1_JSON))
    assert (result['format'], result['version'], result['driver_version']) == ('json', '4.2.3', '580.82.09')
    software = _test(result, 'software')
    assert software['category'] == 'Deployment' and software['per_gpu']['0']['error_ids'] == [29]
    assert software['per_gpu']['0']['messages'][0].startswith('Persistence Mode: Persistence mode for GPU 0 is disabled.')
    assert 'SRAM Threshold checking was skipped.' in software['messages'][0]
    assert result['overall'] == 'fail' and result['gpus_failed'] == [0]
    # A level-1 run lists no hardware test: that is what level 1 is, never "the level did not run".
    assert result['hardware_ran'] is None and dcgmi.level_not_run(result, 1) is None


def test_level_not_run_needs_a_complete_result_of_level_two_or_more():
    only_software = {'DCGM Diagnostic': {'test_categories': [{'category': 'Deployment', 'tests': [
        {'name': 'software', 'results': [{'entity_group': 'GPU', 'entity_id': 0, 'status': 'Pass'}]}]}]}}
    result = dcgmi.parse_dcgmi_diag(json.dumps(only_software))
    assert result['overall'] == 'pass' and result['hardware_ran'] is None
    assert dcgmi.level_not_run(result, 1) is None
    assert 'lists no hardware or stress test' in dcgmi.level_not_run(result, 3)
    assert dcgmi.level_not_run(dict(result, truncated=True), 3) is None
    skipped = dcgmi.parse_dcgmi_diag(fixtures.local(SKIPPED_R3))
    assert dcgmi.level_not_run(dict(skipped, overall='fail'), 3) is None
    assert dcgmi.is_software_test({'category': None, 'name': 'Persistence Mode'}) is True
    assert dcgmi.is_software_test({'category': None, 'name': 'targeted_power'}) is False


def test_discovery_without_host_engine_is_unreachable():
    result = dcgmi.parse_dcgmi_discovery(fixtures.local('dcgmi/dcgmi_discovery_l_no_hostengine_dcgm_exporter_pod_blog.txt'))
    assert result['hostengine'] == 'unreachable' and result['gpus'] == [] and result['gpu_count'] is None
    assert 'Unable to connect to host engine' in result['error']


def test_discovery_lists_the_gpus_the_host_engine_sees():
    result = dcgmi.parse_dcgmi_discovery(fixtures.local('dcgmi/dcgmi_discovery_l_8x_h800_0_nvswitches_public_notes.txt'))
    assert result['hostengine'] == 'reachable' and result['gpu_count'] == 8 and result['nvswitch_count'] == 0
    assert [gpu['id'] for gpu in result['gpus']] == list(range(8))
    assert result['gpus'][0] == {'id': 0, 'name': 'NVIDIA H800', 'bus_id': '0000:18:00.0', 'uuid': 'GPU-34bf77d1-c686-6821-79a8-32d326c5039c'}
    assert result['gpus'][5]['bus_id'] == '0000:bd:00.0'


def test_discovery_refuses_foreign_text():
    with pytest.raises(ParseError):
        dcgmi.parse_dcgmi_discovery('bash: dcgmi: command not found\n')
