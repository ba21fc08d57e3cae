"""The runbook's preflight checks whose expectation and severity are tier data: hugepages on the cmdline against the
pool, NIC firmware per model, GPU memory wear.  Facts come from the real parsers run on real captures
(/proc/meminfo and /proc/cmdline of this machine, flint, nvidia-smi -q), changed in one field where a fault is needed.
"""
import copy
import os

import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils import host_tuning, mlx, nvidia, preflight, verdict
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']
P400 = TIERS['400G']
# The runbook's expected tokens ("iommu=pt, default_hugepagesz=1G, hugepages=N") on a typical boot line.
RUNBOOK_CMDLINE = ('BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=0d6e2f8a ro quiet intel_iommu=on iommu=pt '
                   'default_hugepagesz=1G hugepagesz=1G hugepages=128\n')
CX7 = 'mlx/flint_q_cx7_fs4_secure_fw_reset_pending_synthetic.txt'
CX4 = 'flint/flint_query_cx4_fs3_terrencemiao.txt'


def host_facts(tmp_path, cmdline, one_gig_pages=0):
    """host_tuning_info's cmdline and hugepages from the real parsers; the pools read from a sysfs tree as the module does."""
    meminfo = fixtures.local('proc/meminfo_firecracker_vm_dev_no_hugepages.txt')
    if one_gig_pages:
        meminfo = meminfo.replace('HugePages_Total:       0', 'HugePages_Total:     %d' % one_gig_pages)
        meminfo = meminfo.replace('Hugepagesize:       2048 kB', 'Hugepagesize:    1048576 kB')
    for kib, count in ((2048, 0), (1048576, one_gig_pages)):
        pool = tmp_path / 'kernel' / 'mm' / 'hugepages' / ('hugepages-%dkB' % kib)
        pool.mkdir(parents=True, exist_ok=True)
        (pool / 'nr_hugepages').write_text('%d\n' % count)
    hugepages = dict(host_tuning.parse_meminfo(meminfo)['hugepages'], pools_kib=host_tuning.read_hugepage_pools(str(tmp_path)))
    return {'cmdline': host_tuning.parse_cmdline(cmdline), 'hugepages': hugepages}


def checks(findings, check):
    return [(f['subject'], f['status']) for f in findings if f['check'] == check]


def test_page_sizes_and_the_pools_a_cmdline_reserves():
    assert [preflight.page_size_kib(t) for t in ('1G', '2M', '2048K', '1GB', 'huge', '')] == [1048576, 2048, 2048, 1048576, None, None]
    tokens = host_tuning.parse_cmdline('ro hugepages=64 hugepagesz=1G hugepages=16 hugepagesz=2M hugepages=512 hugepages=x')['tokens']
    assert preflight.requested_hugepages(tokens) == {None: 64, 1048576: 16, 2048: 512}


def test_cmdline_hugepages_against_this_machines_empty_pool(tmp_path):
    host = host_facts(tmp_path, RUNBOOK_CMDLINE)
    found = preflight.check_hugepages_cmdline(host, P400)
    assert checks(found, 'hugepages_cmdline') == [('default_hugepagesz', 'marginal'), ('hugepages-1048576kB', 'marginal')]
    assert found[0]['detail'] == 'default hugepage size 2048 kB (Hugepagesize), expected 1048576 kB (default_hugepagesz=1G)'
    assert found[1]['detail'] == 'kernel cmdline reserves 128 hugepages of 1048576 kB, the pool has 0'
    result = verdict.node_verdict([], found, P400)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['host_configuration']


def test_cmdline_hugepages_that_the_pool_holds_are_healthy(tmp_path):
    found = preflight.check_hugepages_cmdline(host_facts(tmp_path, RUNBOOK_CMDLINE, one_gig_pages=128), P400)
    assert checks(found, 'hugepages_cmdline') == [('default_hugepagesz', 'healthy'), ('hugepages-1048576kB', 'healthy')]
    # 100G names no default page size; a cmdline without hugepage tokens reserves nothing to compare.
    assert preflight.check_hugepages_cmdline(host_facts(tmp_path, 'ro quiet iommu=pt\n'), TIERS['100G']) == []


def test_cmdline_hugepages_severity_is_profile_data(tmp_path):
    strict = copy.deepcopy(P400)
    strict['preflight']['hugepages_cmdline']['severity'] = 'reject'
    found = preflight.check_hugepages_cmdline(host_facts(tmp_path, RUNBOOK_CMDLINE), strict)
    assert set(f['status'] for f in found) == {'reject'}
    del strict['preflight']['hugepages_cmdline']
    assert preflight.check_hugepages_cmdline(host_facts(tmp_path, RUNBOOK_CMDLINE), strict) == []


def nics(**texts):
    return {'devices': dict((device, {'firmware': mlx.parse_flint(text)}) for device, text in texts.items())}


def test_firmware_minimum_per_model_reads_the_running_version():
    burnt = fixtures.local(CX7)  # 28.43.1014 burnt, 28.39.1002 still running
    active = burnt.replace('FW Version(Running):   28.39.1002\n', '')
    profile = copy.deepcopy(P400)
    profile['preflight']['firmware_min_version']['versions'] = {'MT_0000000838': '28.43.1014'}
    found = preflight.check_firmware(nics(mlx5_0=burnt, mlx5_1=active, mlx5_2=fixtures.shared(CX4)), profile)
    assert checks(found, 'firmware_min_version') == [('mlx5_0', 'marginal'), ('mlx5_1', 'healthy')]
    assert found[0]['detail'] == 'mlx5_0 (MT_0000000838) runs firmware 28.39.1002, the contract needs 28.43.1014 or later'
    assert checks(found, 'firmware_uniform') == [('LNV2180110032', 'healthy'), ('MT_0000000838', 'marginal')]
    mixed = [f for f in found if f['check'] == 'firmware_uniform' and f['status'] == 'marginal'][0]
    assert mixed['detail'] == 'NICs of model MT_0000000838 run firmware mlx5_0 28.39.1002, mlx5_1 28.43.1014'
    result = verdict.node_verdict([], found, profile)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['host_configuration']


def test_firmware_versions_compare_as_numbers_and_shipped_tiers_name_no_model():
    profile = copy.deepcopy(P400)
    profile['preflight']['firmware_min_version']['versions'] = {'LNV2180110032': '12.9.9999'}
    assert checks(preflight.check_firmware(nics(mlx5_0=fixtures.shared(CX4)), profile), 'firmware_min_version') == [('mlx5_0', 'healthy')]
    assert all(tier['preflight']['firmware_min_version']['versions'] == {} for tier in TIERS.values())
    assert preflight.check_firmware(nics(mlx5_0=fixtures.shared(CX4)), P400) == [
        preflight.finding('firmware_uniform', 'LNV2180110032', 'healthy', 'one version', '12.28.2006',
                          'NICs of model LNV2180110032 run firmware 12.28.2006')]


def h100_gpus():
    return nvidia.parse_nvidia_smi_q(fixtures.shared('nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt'))


def test_gpu_memory_of_a_healthy_h100_node_is_healthy():
    gpu = h100_gpus()
    found = preflight.check_gpu_memory(gpu, P400)
    assert len(found) == 16 and set(f['status'] for f in found) == {'healthy'}
    assert preflight.check_gpus(gpu, P400) == [preflight.finding('gpu_count', 'gpus', 'healthy', 8, 8, '8 GPUs visible')]


def test_gpu_correctable_errors_above_the_limit_and_pending_remaps_are_marginal():
    gpu = h100_gpus()
    gpu['gpus'][2]['ecc_errors']['aggregate']['correctable_total'] = 250
    gpu['gpus'][5]['remapped_rows']['pending'] = True
    found = preflight.check_gpu_memory(gpu, P400)
    bad = [(f['check'], f['subject'], f['status']) for f in found if f['status'] != 'healthy']
    assert bad == [('gpu_ecc_correctable', gpu['gpus'][2]['bus_id'], 'marginal'), ('gpu_pages_pending', gpu['gpus'][5]['bus_id'], 'marginal')]
    assert [f['detail'] for f in found if f['status'] != 'healthy'] == [
        'GPU %s: 250 correctable ECC errors (limit 100)' % gpu['gpus'][2]['bus_id'],
        'GPU %s: remapped rows pending (a GPU reset applies them)' % gpu['gpus'][5]['bus_id']]
    assert not [f for f in preflight.check_gpus(gpu, P400) if f['check'] == 'gpu_ecc']  # pending is not a reject
    result = verdict.node_verdict([], found, P400)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['gpu_memory_wear']


def test_gpu_uncorrectable_errors_are_counted_once_and_reject():
    gpu = h100_gpus()
    gpu['gpus'][1]['ecc_errors']['volatile']['uncorrectable_total'] = 2
    gpu['gpus'][1]['ecc_errors']['aggregate']['uncorrectable_total'] = 2
    found = [f for f in preflight.check_gpus(gpu, P400) if f['check'] == 'gpu_ecc']
    assert [(f['subject'], f['status'], f['actual']) for f in found] == [(gpu['gpus'][1]['bus_id'], 'reject', '2 uncorrectable')]
    assert verdict.node_verdict([], found, P400)['causes'][0]['cause'] == 'gpu_hardware'


def test_retired_pages_pending_on_a_real_azure_node():
    gpu = nvidia.parse_nvidia_smi_q(fixtures.shared('nvidia-smi/nvidia_smi_q_d_page_retired_535.86.10_8gpu_azure_healthy_azhpc.txt'))
    assert set(f['status'] for f in preflight.check_gpu_memory(gpu, P400)) == {'healthy'}
    gpu['gpus'][0]['retired_pages']['pending'] = True
    assert checks(preflight.check_gpu_memory(gpu, P400), 'gpu_pages_pending')[0] == (gpu['gpus'][0]['bus_id'], 'marginal')


def test_preflight_settings_of_every_tier_are_usable_and_bad_ones_are_named():
    for name, profile in TIERS.items():
        assert preflight.preflight_errors(profile) == [], name
    broken = copy.deepcopy(P400)
    broken['preflight']['gpu_ecc_correctable'] = {'severity': 'warn', 'max': 100}
    broken['preflight']['firmware_min_version'] = {'severity': 'marginal'}
    broken['preflight']['irq_numa'] = {'severity': 'marginal'}
    assert preflight.preflight_errors(broken) == [
        'preflight.firmware_min_version.versions is missing: a mapping of NIC model (PSID or part number) to its minimum firmware version',
        'preflight.gpu_ecc_correctable.severity must be marginal or reject',
        'preflight.irq_numa is not a configurable check (known: firmware_min_version, firmware_uniform, gpu_ecc_correctable, '
        'gpu_pages_pending, hugepages_cmdline)']
