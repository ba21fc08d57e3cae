"""dcgmi_diag runs one dcgmi diag under a timeout; results are returned, failures explained."""
import pytest

from ansible_collections.gpufleet.netval.plugins.modules import dcgmi_diag
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

FAIL_JSON = fixtures.local('dcgmi/dcgmi_diag_r2_j_dcgm3.3_gpu_memory_fail_gpu1_synthetic.txt')
WARN_JSON = fixtures.local('dcgmi/dcgmi_diag_r1_j_dcgm4.2_software_warn_gpu1_synthetic.txt')


def argv(level=1, timeout=120, extra=()):
    return ['/usr/bin/timeout', '--kill-after=5', str(timeout), '/usr/bin/dcgmi', 'diag', '-r', str(level), '-j'] + list(extra)


def test_success_level1_warn_is_returned_not_failed():
    result, failed = run_module(dcgmi_diag.main, {}, calls=[Call(argv(), out=WARN_JSON)])
    assert not failed, result
    assert result['level'] == 1 and result['overall'] == 'warn' and result['gpus_warned'] == [1]
    assert result['cmd'] == '/usr/bin/dcgmi diag -r 1 -j' and result['changed'] is False
    assert (result['error_class'], result['error_hint'], result['error_side']) == (None, None, None)


def test_real_text_table_without_json():
    out = fixtures.local('dcgmi/dcgmi_diag_r2_dcgm3.3.1_gpu_memory_fail_gpu0_wrapped_warning_godcgm52_truncated.txt')
    calls = [Call(['/usr/bin/timeout', '--kill-after=5', '600', '/usr/bin/dcgmi', 'diag', '-r', '2'], rc=226, out=out)]
    result, failed = run_module(dcgmi_diag.main, {'level': 2, 'json': False}, calls=calls)
    assert not failed, result
    assert result['format'] == 'text' and result['gpus_failed'] == [0] and result['overall'] == 'fail' and result['rc'] == 226


def test_fail_result_with_gpus_and_fail_on():
    calls = [Call(argv(2, 600, ['-i', '0,1']), rc=226, out=FAIL_JSON)]
    result, failed = run_module(dcgmi_diag.main, {'level': 2, 'gpus': [0, 1]}, calls=calls)
    assert not failed and result['overall'] == 'fail' and result['failed_tests'] == ['GPU Memory']
    result, failed = run_module(dcgmi_diag.main, {'level': 2, 'gpus': [0, 1], 'fail_on': 'fail'}, calls=calls)
    assert failed and hostname() in result['msg'] and 'dcgmi diag -r 2 -j -i 0,1' in result['msg']
    assert (result['error_class'], result['error_side']) == ('diag_failed', 'host')
    assert 'GPU Memory' in result['msg'] and 'GPUs failed: 1' in result['msg']
    assert result['tests'], 'the parsed results travel with the failure'


def test_fail_on_warn():
    result, failed = run_module(dcgmi_diag.main, {'fail_on': 'warn'}, calls=[Call(argv(), out=WARN_JSON)])
    assert failed and 'software' in result['msg']
    result, failed = run_module(dcgmi_diag.main, {'fail_on': 'fail'}, calls=[Call(argv(), out=WARN_JSON)])
    assert not failed


def test_missing_dcgmi_names_the_package():
    result, failed = run_module(dcgmi_diag.main, {}, missing=('dcgmi',))
    assert failed and 'dcgmi' in result['msg'] and 'datacenter-gpu-manager' in result['msg'] and hostname() in result['msg']
    assert (result['error_class'], result['error_side']) == ('tool_missing', 'ours')


def test_hostengine_not_running_hints_nv_hostengine():
    err = ('Error: unable to establish a connection to the specified host: localhost\n'
           'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')
    result, failed = run_module(dcgmi_diag.main, {}, calls=[Call(argv(), rc=255, err=err)])
    assert failed and 'nv-hostengine' in result['msg'] and 'rc=255' in result['msg']
    assert (result['error_class'], result['error_side']) == ('hostengine_unreachable', 'ours') and 'nv-hostengine' in result['error_hint']
    assert '/usr/bin/dcgmi diag -r 1 -j' in result['msg'] and result['error_class'] == 'hostengine_unreachable'


def test_timeout_default_by_level():
    result, failed = run_module(dcgmi_diag.main, {'level': 3}, calls=[Call(argv(3, 1800), rc=124)])
    assert failed and 'timed out after 1800s' in result['msg'] and hostname() in result['msg']
    assert (result['error_class'], result['error_side']) == ('timeout', 'ours')


def test_explicit_timeout():
    result, failed = run_module(dcgmi_diag.main, {'level': 4, 'timeout': 9000}, calls=[Call(argv(4, 9000), out=FAIL_JSON)])
    assert not failed and result['level'] == 4


@pytest.mark.parametrize('out', ['garbage\n', '{"DCGM GPU Diagnostic": {"test_categories": [', ''])
def test_garbage_fails_cleanly(out):
    result, failed = run_module(dcgmi_diag.main, {}, calls=[Call(argv(), rc=0, out=out)])
    assert failed and 'could not be parsed' in result['msg'] and hostname() in result['msg']
    assert (result['error_class'], result['error_side']) == ('parse_error', 'ours')
    assert 'Traceback' not in result['msg']


def test_check_mode_runs_nothing():
    result, failed = run_module(dcgmi_diag.main, {'level': 3, 'gpus': [2]}, check_mode=True)
    assert not failed and result['_ran'] == []
    assert result['cmd'] == '/usr/bin/dcgmi diag -r 3 -j -i 2' and result['timeout'] == 1800


@pytest.mark.parametrize('args,needle', [({'gpus': [-1]}, 'gpus'), ({'level': 5}, 'level'), ({'timeout': 0}, 'timeout')])
def test_bad_input(args, needle):
    result, failed = run_module(dcgmi_diag.main, args)
    assert failed and needle in result['msg'] and result['_ran'] == []
    # level=5 is refused by Ansible's own choices check, before the module can add its failure keys.
    assert result.get('error_class', 'invalid_options') == 'invalid_options'


def test_a_level_whose_hardware_tests_were_all_skipped_says_so_without_failing():
    out = fixtures.local('dcgmi/dcgmi_diag_r3_j_dcgm4_software_pass_hardware_all_skipped_synthetic.txt')
    result, failed = run_module(dcgmi_diag.main, {'level': 3}, calls=[Call(argv(3, 1800), out=out)])
    assert not failed, result
    assert result['overall'] == 'skip' and result['hardware_ran'] is False
    assert result['level_not_run'].startswith('every hardware and stress test was skipped (pcie, memory, diagnostic')
    result, failed = run_module(dcgmi_diag.main, {}, calls=[Call(argv(), out=WARN_JSON)])
    assert not failed and result['level_not_run'] is None
