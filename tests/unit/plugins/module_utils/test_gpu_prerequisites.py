"""Issue 31: only a real fault sends a node back.  The GPUDirect mode decided from the node (perftest --help,
/proc/driver/nvidia/version, lsmod), the GPU prerequisites (DCGM host engine, Fabric Manager, persistence mode, ACS),
Xids graded by the GPU state they left, the runbook's preflight at every GPUDirect tier, and reject lines graded by their
source.  Facts come from the real parsers on real captures, changed in one field where a fault is needed.
"""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import host_tuning, kernel_log, nvidia, perftest
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import gpudirect, preflight, verdict
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']
P100, P400 = TIERS['100G'], TIERS['400G']
NO_CUDA = 'perftest/ib_send_bw_help_debian12_perftest606_no_cuda.txt'
CUDA_NO_DMABUF = 'perftest/ib_write_bw_help_grep_cuda_mlnx_ofed55_cuda116_nvidia_doc.txt'
CUDA_DMABUF = 'perftest/ib_send_bw_help_grep_cuda_perftest25_dmabuf_synthetic.txt'
OPEN = 'nvidia/proc_driver_nvidia_version_555.42.02_open_kernel_module_public.txt'
PROPRIETARY = 'nvidia/proc_driver_nvidia_version_510.39.01_proprietary_mlnx_ofed_nvidia_doc.txt'
H100 = 'nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt'
LSMOD = 'lsmod/lsmod_talos_cx4_mlx5_rdma_modules_prompt.txt'


def support(help_fixture, version_fixture):
    helped = perftest.parse_perftest_help(fixtures.local(help_fixture))
    return {'gdr_support': {'driver': dict(nvidia.parse_nvidia_driver_version(fixtures.local(version_fixture)), error=None),
                            'perftest': dict(((k, helped[k]) for k in ('cuda', 'cuda_bus_id', 'cuda_dmabuf')), tool='ib_send_bw',
                                             cmd='ib_send_bw --help', error=None)}}


def modules(*extra):
    """host_tuning_info's modules: the real lsmod capture (no nvidia modules in it) plus ``extra``."""
    found = host_tuning.parse_lsmod(fixtures.local(LSMOD))['modules']
    found.update((name, {}) for name in extra)
    return {'modules': found}


@pytest.mark.parametrize('help_fixture, version, loaded, mode, dmabuf, bus_id', [
    (CUDA_NO_DMABUF, PROPRIETARY, ('nvidia', 'nvidia_peermem'), 'peermem', False, True),
    (CUDA_DMABUF, OPEN, ('nvidia',), 'dmabuf', True, True),
    # The open modules with peermem loaded too: peermem is the path and dma-buf is not asked for.
    (CUDA_DMABUF, OPEN, ('nvidia', 'nvidia_peermem'), 'peermem', False, True),
    (NO_CUDA, OPEN, ('nvidia',), 'none', False, False),
    (CUDA_NO_DMABUF, OPEN, ('nvidia',), 'none', False, True),
    (CUDA_NO_DMABUF, PROPRIETARY, ('nvidia',), 'none', False, True),
])
def test_gpudirect_mode_is_decided_from_the_node(help_fixture, version, loaded, mode, dmabuf, bus_id):
    decided = gpudirect.decide(support(help_fixture, version), modules(*loaded))
    assert decided['mode'] == mode and decided['cuda_dmabuf'] is dmabuf and decided['cuda_bus_id'] is bus_id
    assert (decided['reason'] is None) is (mode != 'none')
    options = gpudirect.perftest_options(decided, 60)
    assert options['use_cuda_dmabuf'] is dmabuf and options['ready_timeout'] == 60
    # The GPU by PCI address where perftest supports it, else a CUDA ordinal in PCI order (the nvidia-smi index).
    assert options['cuda_device_order'] == (None if bus_id else 'PCI_BUS_ID')


def test_a_perftest_without_cuda_names_what_to_install_and_blocks_only_gpudirect():
    found = preflight.check_gpudirect(support(NO_CUDA, OPEN), modules('nvidia'), P400)
    assert [(f['check'], f['status']) for f in found] == [('gdr_mode', 'unknown')]
    assert 'built without CUDA' in found[0]['detail'] and 'perftest of MLNX_OFED or DOCA-OFED' in found[0]['detail']
    assert preflight.gpu_test_blockers(found) == {'gdr': 'gdr_mode: ' + found[0]['detail']}
    # A tier that runs no GPUDirect test does not care.
    assert preflight.check_gpudirect(support(NO_CUDA, OPEN), modules('nvidia'), TIERS['roce-pair-2x100g']) == []


def test_nvidia_peermem_is_required_only_where_it_is_the_path():
    host = dict(modules(*P400['host']['modules']))
    del host['modules']['nvidia_peermem']
    dmabuf = gpudirect.decide(support(CUDA_DMABUF, OPEN), host)
    peermem = gpudirect.decide(support(CUDA_NO_DMABUF, PROPRIETARY), host)
    assert [f['subject'] for f in preflight.check_host(host, P400, dmabuf) if f['check'] == 'modules'] == []
    missing = [f for f in preflight.check_host(host, P400, peermem) if f['check'] == 'modules']
    assert [(f['subject'], f['status'], f['blocking']) for f in missing] == [('nvidia_peermem', 'marginal', False)]


def test_a_missing_rdma_core_module_blocks_the_tests_as_our_setup_not_a_reject():
    host = modules(*P400['host']['modules'])
    del host['modules']['mlx5_ib']
    found = [f for f in preflight.check_host(host, P400) if f['check'] == 'modules']
    assert [(f['subject'], f['status'], f['blocking']) for f in found] == [('mlx5_ib', 'marginal', True)]
    assert verdict.node_verdict([], found, P400)['bucket'] == 'B'


def test_every_gpudirect_tier_asks_the_runbooks_preflight():
    for name in ('100G', '200G', '400G', '800G'):
        tier = TIERS[name]
        assert set(tier['host']['modules']) >= {'nvidia', 'nvidia_peermem', 'mlx5_core', 'mlx5_ib', 'ib_uverbs', 'ib_core', 'ib_umad',
                                                'rdma_cm', 'rdma_ucm'}, name
        assert tier['host']['hugepages_total'] >= 64 and tier['preflight']['hugepages_cmdline']['default_size'] == '1G', name
        assert set(tier['host']['cmdline_tokens']) >= {'iommu=pt', 'default_hugepagesz=1G', 'hugepages='}, name
        assert tier['preflight']['firmware_min_version']['versions'] == {'ConnectX-7': '28.39.1002'}, name
        assert tier['preflight']['thermal_throttle']['severity'] == 'marginal', name


def test_cmdline_hugepages_token_takes_any_count():
    runbook = host_tuning.parse_cmdline('ro iommu=pt default_hugepagesz=1G hugepagesz=1G hugepages=64\n')
    found = [(f['subject'], f['status'], f['actual']) for f in preflight.check_host({'cmdline': runbook}, P100) if f['check'] == 'cmdline']
    assert found == [('iommu=pt', 'healthy', 'iommu=pt'), ('default_hugepagesz=1G', 'healthy', 'default_hugepagesz=1G'),
                     ('hugepages=', 'healthy', 'hugepages=64')]
    bare = host_tuning.parse_cmdline('ro iommu=pt hugepages=\n')
    lacking = [f for f in preflight.check_host({'cmdline': bare}, P100) if f['check'] == 'cmdline' and f['status'] != 'healthy']
    assert [(f['subject'], f['detail']) for f in lacking] == [('default_hugepagesz=1G', 'kernel cmdline lacks default_hugepagesz=1G'),
                                                              ('hugepages=', 'kernel cmdline lacks hugepages=N')]


def nic_link(lnksta, lnkcap):
    return {'devices': [{'bdf': '0000:1a:00.0', 'kind': 'nic', 'assessment': {'status': 'ok' if lnksta == lnkcap else 'degraded'},
                         'link': {'current_speed_gts': lnksta, 'current_width': 16, 'max_speed_gts': lnkcap, 'max_width': 16}}]}


def test_100g_accepts_gen3_x16_on_a_gen3_card_only():
    # The 100GbE lab notes' host: a Gen3 x16 card at Gen3 x16 carries 100 Gb/s.
    assert [f['status'] for f in preflight.check_pcie(nic_link(8, 8), P100)] == ['healthy']
    # A Gen4 card trained at Gen3 is a degraded link: a hardware fact.
    assert [f['status'] for f in preflight.check_pcie(nic_link(8, 16), P100)] == ['reject']
    # Below the 100G line at the card's own capability: the line is ours (the runbook sets none), so investigated, not returned.
    assert [f['status'] for f in preflight.check_pcie(nic_link(5, 5), P100)] == ['marginal']
    # At 400G the runbook's gen5 x16 line stands: a Gen4 card is below the contract.
    assert [f['status'] for f in preflight.check_pcie(nic_link(16, 16), P400)] == ['reject']


def xid_gpu(log, **state):
    """gpu_info of a real 8x H100 node, the kernel log's Xid events from a real capture, one GPU's state changed."""
    gpu = nvidia.parse_nvidia_smi_q(fixtures.shared(H100))
    gpu['nvidia_smi'] = 'present'
    gpu['xid_events'] = kernel_log.parse_kernel_log(log)['xid']
    for bus, fields in state.items():
        entry = [g for g in gpu['gpus'] if g['bus_id'] == bus][0]
        for key, value in fields.items():
            entry[key].update(value)
    return gpu


def xid_line(code, bus='0000:19:00'):
    return '[ 1843.308145] NVRM: Xid (PCI:%s): %d, pid=2112, name=python3, Ch 00000008\n' % (bus, code)


def grades(gpu):
    return [(f['actual'], f['status'], f['blocking']) for f in preflight.check_gpus(gpu, P400) if f['check'] == 'gpu_xid']


def test_application_xids_from_burn_in_are_information():
    gpu = xid_gpu(''.join(xid_line(code) for code in (13, 31, 43, 45)))
    assert grades(gpu) == [('Xid %d' % code, 'info', False) for code in (13, 31, 43, 45)]
    assert verdict.node_verdict([], preflight.check_gpus(gpu, P400), P400)['bucket'] == 'A'


def test_xid_63_is_graded_by_the_row_remapping_state():
    assert grades(xid_gpu(xid_line(63))) == [('Xid 63', 'info', False)]
    pending = xid_gpu(xid_line(63), **{'0000:19:00.0': {'remapped_rows': {'pending': True}}})
    assert grades(pending) == [('Xid 63', 'marginal', False)]
    failed = xid_gpu(xid_line(63), **{'0000:19:00.0': {'remapped_rows': {'failure': True}}})
    assert grades(failed) == [('Xid 63', 'reject', False)]


def test_a_fatal_xid_before_the_hand_off_is_graded_by_the_gpu_it_left():
    assert grades(xid_gpu(xid_line(79))) == [('Xid 79', 'info', False)]
    # The GPU is gone from nvidia-smi: the hardware fact blocks and returns the node.
    assert grades(xid_gpu(xid_line(79, bus='0000:99:00'))) == [('Xid 79', 'reject', True)]
    worn = xid_gpu(xid_line(94), **{'0000:19:00.0': {'ecc_errors': {'volatile': {'uncorrectable_total': 2}}}})
    assert grades(worn) == [('Xid 94', 'reject', False)]


def test_thermal_events_and_throttled_clocks_are_graded():
    gpu = xid_gpu('')
    gpu['thermal_events'] = kernel_log.parse_kernel_log(
        '[ 9.1] CPU12: Core temperature above threshold, cpu clock throttled (total events = 1)\n')['thermal']
    gpu['gpus'][3]['clocks_throttle_reasons'] = ['hw_thermal_slowdown', 'gpu_idle']
    found = [(f['subject'], f['status']) for f in preflight.check_thermal(gpu, P400)]
    assert found == [('kernel log', 'marginal'), (gpu['gpus'][3]['bus_id'], 'marginal')]
    # The capture's GPUs all show HW Slowdown from the rack's power brake: not thermal, not graded.
    quiet = xid_gpu('')
    assert all('hw_power_brake_slowdown' in g['clocks_throttle_reasons'] for g in quiet['gpus'])
    quiet['thermal_events'] = []
    assert [(f['subject'], f['status']) for f in preflight.check_thermal(quiet, P400)] == [('gpus', 'healthy')]


def test_fabric_manager_and_dcgm_block_the_tests_they_break():
    gpu = xid_gpu('')
    gpu['gpus'][0]['fabric'] = {'state': 'Not Started', 'status': None}
    gpu['dcgm'] = {'hostengine': 'unreachable', 'gpu_count': None, 'cmd': 'dcgmi discovery -l', 'error': 'Error: Unable to connect'}
    found = preflight.check_fabric_manager(gpu, P400) + preflight.check_dcgm_hostengine(gpu, P400)
    blocked = preflight.gpu_test_blockers(found)
    assert sorted(blocked) == ['dcgmi', 'gdr', 'nccl']
    assert blocked['gdr'].startswith('fabric_manager: NVSwitch fabric not ready on 1 of 8 GPUs')
    assert blocked['dcgmi'].startswith('fabric_manager:')


def test_a_project_reject_line_is_marginal_unless_the_contract_adopts_it():
    figure = {'id': 'all', 'metric': 'ib_read_bw_gbs', 'subject': 'mlx5_0', 'value': 8.0, 'unit': 'GB/s'}
    graded = verdict.grade_measurements([figure], P100['thresholds'])[0]
    assert graded['status'] == 'marginal' and graded['reject_line'] == 'project'
    adopted = copy.deepcopy(P100['thresholds'])
    adopted['ib_read_bw_gbs']['source'] = 'contract: MSA schedule B'
    assert verdict.grade_measurements([figure], adopted)[0]['status'] == 'reject'


def test_the_aggregate_line_is_the_runbooks_30_percent_rule():
    for name in ('200G', '400G', '800G'):
        line = TIERS[name]['thresholds']['all_nics_gbs']
        assert line['reject_below'] == pytest.approx(0.7 * line['healthy'][0]) and line['source'].startswith('runbook'), name


def test_any_ping_loss_is_investigated_unless_the_contract_says_otherwise():
    figure = {'id': 'p', 'metric': 'jumbo_ping_loss_pct', 'subject': '10.0.0.2', 'value': 20.0, 'unit': '%'}
    for name, tier in TIERS.items():
        assert verdict.grade_measurements([figure], tier['thresholds'])[0]['status'] == 'marginal', name
