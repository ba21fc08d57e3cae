"""The runbook's preflight checks whose expectation and severity are tier data: hugepages on the cmdline against the
pool, NIC firmware per model, GPU memory wear.  Facts come from the real parsers run on real captures
(/proc/meminfo and /proc/cmdline of this machine, flint, nvidia-smi -q), changed in one field where a fault is needed.
"""
import copy
import os

import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import ethtool, host_tuning, mlx, nvidia
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import preflight, verdict
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
    # A cmdline without hugepage tokens reserves nothing to compare; the runbook's default page size (1G) holds at 100G too,
    # so a node on 2 MB pages is marginal there.
    assert checks(preflight.check_hugepages_cmdline(host_facts(tmp_path, 'ro quiet iommu=pt\n'), TIERS['100G']), 'hugepages_cmdline') == [
        ('default_hugepagesz', 'marginal')]


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
    assert mixed['detail'] == ('NICs of model MT_0000000838 do not run one firmware: mlx5_0 runs 28.39.1002, '
                               'while the other 1 run 28.43.1014')
    result = verdict.node_verdict([], found, profile)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['host_configuration']


def test_firmware_mismatch_names_the_odd_nic_by_its_rdma_name_and_the_majority_version():
    cx7 = fixtures.local(CX7).replace('FW Version(Running):   28.39.1002\n', '')
    old = cx7.replace('28.43.1014', '28.36.1010')
    firmware = nics(**{'0000:1a:00.0': cx7, '0000:3b:00.0': cx7, '0000:bb:00.0': old})
    rdma = {'devices': {'mlx5_0': {'pci_address': '0000:1a:00.0'}, 'mlx5_1': {'pci_address': '0000:3b:00.0'},
                        'mlx5_5': {'pci_address': '0000:BB:00.0'}}}
    found = [f for f in preflight.check_firmware(firmware, P400, rdma) if f['check'] == 'firmware_uniform']
    assert found[0]['status'] == 'marginal' and found[0]['actual'] == '28.36.1010, 28.43.1014'
    assert found[0]['detail'] == ('NICs of model MT_0000000838 do not run one firmware: mlx5_5 (0000:bb:00.0) runs 28.36.1010, '
                                  'while the other 2 run 28.43.1014')


def test_firmware_versions_compare_as_numbers_and_the_shipped_floor_is_the_runbooks_for_connectx7():
    profile = copy.deepcopy(P400)
    profile['preflight']['firmware_min_version']['versions'] = {'LNV2180110032': '12.9.9999'}
    assert checks(preflight.check_firmware(nics(mlx5_0=fixtures.shared(CX4)), profile), 'firmware_min_version') == [('mlx5_0', 'healthy')]
    assert all(tier['preflight']['firmware_min_version']['versions'] == {'ConnectX-7': '28.39.1002'} for tier in TIERS.values())
    # The ConnectX-4 of the fixture is not a ConnectX-7: the shipped floor names no other model.
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
    broken['nics']['select'] = {'link_layer': 'Infiniband', 'netdev_pattern': 'ibp[', 'rate': 400}
    assert preflight.preflight_errors(broken) == [
        'nics.select.rate is not a selector key (known: devices, link_layer, rate_gbps, netdev_pattern)',
        'nics.select.link_layer must be one of InfiniBand, Ethernet, any or null, got \'Infiniband\'',
        "nics.select.netdev_pattern 'ibp[' is not a regular expression: unterminated character set at position 3",
        'preflight.firmware_min_version.versions is missing: a mapping of NIC model (PSID, part number or model name such as '
        'ConnectX-7) to its minimum firmware version',
        'preflight.gpu_ecc_correctable.severity must be marginal or reject',
        'preflight.irq_numa is not a configurable check (known: dcgm_hostengine, fabric_manager, firmware_min_version, firmware_uniform, '
        'gpu_ecc_correctable, gpu_pages_pending, hugepages_cmdline, irq_locality, link_ber, link_fec, memlock, pcie_acs, '
        'persistence_mode, rail_mtu, roce_v2_gid, thermal_throttle)']


# ---------------------------------------------------------------- memlock as a login session gets it

def login(soft, source='login_shell', errors=()):
    return {'memlock_login': {'user': 'tester', 'soft_kib': soft, 'source': source, 'errors': list(errors),
                              'pam_limits': {'soft_from': '/etc/security/limits.d/99-rdma.conf: *    soft    memlock    unlimited'}}}


def test_memlock_of_the_login_session_is_graded_not_the_process():
    # The module's own process may well be unlimited (sudo, systemd): only the login session counts.
    process_unlimited = dict(login(8192), memlock={'soft': 'unlimited', 'hard': 'unlimited'})
    found = preflight.check_memlock(process_unlimited, P400)
    assert checks(found, 'memlock') == [('tester', 'marginal')]
    assert found[0]['detail'] == 'memlock (ulimit -l) of a login session of tester is 8192 KiB, expected unlimited (from login_shell)'
    assert checks(preflight.check_memlock(login('unlimited', 'pam_limits'), P400), 'memlock') == [('tester', 'healthy')]
    assert 'pam_limits /etc/security/limits.d/99-rdma.conf' in preflight.check_memlock(login('unlimited', 'pam_limits'), P400)[0]['detail']
    floor = dict(P400, preflight=dict(P400['preflight'], memlock={'min_kib': 65536, 'severity': 'reject'}))
    assert [f['status'] for f in preflight.check_memlock(login(8192), floor) + preflight.check_memlock(login(65536), floor)] == [
        'reject', 'healthy']


def test_memlock_that_could_not_be_read_is_unknown_and_says_why():
    found = preflight.check_memlock(login(None, None, ["su - tester -c 'ulimit -l' timed out: no message"]), P400)
    assert checks(found, 'memlock') == [('tester', 'unknown')] and 'timed out' in found[0]['detail']
    result = verdict.node_verdict([], found, P400)
    assert result['bucket'] == 'B' and [c['cause'] for c in result['causes']] == ['measurement_incomplete']
    assert preflight.check_memlock({'memlock_login': {}}, TIERS['roce-pair-2x100g']) == []


def test_memlock_from_the_runbook_dropin_for_a_non_root_user():
    files = [('/etc/security/limits.d/99-rdma.conf',
              host_tuning.parse_pam_limits(fixtures.local('limits/limits_d_99-rdma_conf_runbook_mixed_synthetic.txt')))]
    pam = host_tuning.resolve_pam_limit(files, 'memlock', 'tester', ['tester', 'rdma'])
    host = {'memlock_login': {'user': 'tester', 'soft_kib': pam['soft'], 'source': 'pam_limits', 'pam_limits': pam, 'errors': []}}
    found = preflight.check_memlock(host, P400)
    assert found[0]['status'] == 'marginal' and '65536 KiB' in found[0]['detail'] and '@rdma' in found[0]['detail']


# ---------------------------------------------------------------- RoCE v2 GID with the port's IPv4

def roce_port(state='ACTIVE', gids=(), layer='Ethernet'):
    return {'state': state, 'state_code': 4 if state == 'ACTIVE' else 1, 'phys_state': 'LinkUp', 'link_layer': layer,
            'rate_gbps': 200, 'gids': list(gids)}


V1 = {'index': 0, 'gid': 'fe80:0000:0000:0000:4ebb:47ff:fe0a:0001', 'type': 'IB/RoCE v1', 'roce_version': 'v1', 'netdev': 'enp1s0f0np0',
      'ipv4': None}
V2_IPV4 = {'index': 3, 'gid': '0000:0000:0000:0000:0000:ffff:0a00:0001', 'type': 'RoCE v2', 'roce_version': 'v2',
           'netdev': 'enp1s0f0np0', 'ipv4': '10.0.0.1'}


def test_live_roce_port_needs_a_v2_gid_with_its_ipv4():
    pair = TIERS['roce-pair-2x100g']
    rdma = {'devices': {
        'rocep1s0f0': {'pci_address': '0000:01:00.0', 'ipv4': ['10.0.0.1'], 'ports': {'1': roce_port(gids=[V1, V2_IPV4])}},
        # live, addressed, but only v1 GIDs (a RoCE v1-only setup or a GID table not yet populated)
        'roceP2p1s0f0': {'pci_address': '0002:01:00.0', 'ipv4': ['10.0.1.1'], 'ports': {'1': roce_port(gids=[V1])}},
        # live without an address (the Spark's second PCI path): carries no test traffic, not graded
        'rocep1s0f1': {'pci_address': '0000:01:00.1', 'ipv4': [], 'ports': {'1': roce_port(gids=[V1])}},
        # down: port_state names it, the GID check does not
        'roceP2p1s0f1': {'pci_address': '0002:01:00.1', 'ipv4': [], 'ports': {'1': roce_port('DOWN')}},
        # InfiniBand: no RoCE GID to want
        'mlx5_0': {'pci_address': '0000:1b:00.0', 'ipv4': [], 'ports': {'1': roce_port(layer='InfiniBand')}}}}
    found = preflight.check_roce_gids(rdma, pair)
    assert checks(found, 'roce_v2_gid') == [('roceP2p1s0f0/1', 'marginal'), ('rocep1s0f0/1', 'healthy')]
    assert found[0]['detail'] == ('roceP2p1s0f0/1 is live but no RoCE v2 GID carries 10.0.1.1 (GIDs: 0 IB/RoCE v1 -); '
                                  'show_gids should list a v2 IPv4 GID for RoCE')
    assert found[1]['actual'] == 'index 3'
    unread = {'devices': {'rocep1s0f0': dict(rdma['devices']['rocep1s0f0'], ipv4=None)}}
    assert checks(preflight.check_roce_gids(unread, pair), 'roce_v2_gid') == [('rocep1s0f0/1', 'unknown')]


def test_roce_gid_from_the_real_sysfs_reader(tmp_path):
    from tests.unit.plugins.module_utils.test_rdma import make_roce_device
    from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
    make_roce_device(tmp_path, 'rocep1s0f0', '0000:01:00.0', 'enp1s0f0np0', 'ACTIVE', ipv4_gid='10.0.0.1')
    make_roce_device(tmp_path, 'roceP2p1s0f0', '0002:01:00.0', 'enP2p1s0f0np0', 'ACTIVE')
    devices = rdma.read_infiniband_sysfs(str(tmp_path))['devices']
    devices['rocep1s0f0']['ipv4'] = ['10.0.0.1']
    devices['roceP2p1s0f0']['ipv4'] = ['10.0.1.1']
    found = preflight.check_roce_gids({'devices': devices}, P400)
    assert checks(found, 'roce_v2_gid') == [('roceP2p1s0f0/1', 'marginal'), ('rocep1s0f0/1', 'healthy')]


# ---------------------------------------------------------------- NIC IRQs on the NIC's NUMA node

def test_irq_locality_against_the_profile_fraction():
    from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import irq
    from tests.unit.plugins.module_utils.test_irq import MLX5
    interrupts = irq.parse_proc_interrupts(MLX5)
    half = irq.irq_placement(interrupts, {'121': '0', '122': '1', '123': '2-3', '124': '3'}, '0-1', r'mlx5_comp\d+@pci:0000:1b:00\.0')
    local = irq.irq_placement(interrupts, {'130': '2'}, '2-3', r'mlx5_comp\d+@pci:0000:3b:00\.0')
    host = {'irq_placement': {'0000:1b:00.0': dict(half, numa_node=0), '0000:3b:00.0': dict(local, numa_node=1),
                              '0000:5e:00.0': {'numa_node': 0, 'count': 0, 'fraction_local': None, 'error': 'cannot read /proc/interrupts'}}}
    rdma = {'devices': {'mlx5_0': {'pci_address': '0000:1b:00.0'}, 'mlx5_1': {'pci_address': '0000:3b:00.0'}}}
    found = preflight.check_irq_locality(host, rdma, P400)
    assert checks(found, 'irq_locality') == [('mlx5_0', 'marginal'), ('mlx5_1', 'healthy'), ('0000:5e:00.0', 'unknown')]
    assert found[0]['detail'] == 'mlx5_0 (0000:1b:00.0): 2 of 4 IRQs on NUMA node 0, off-node: 123, 124'
    assert found[0]['actual'] == 0.5 and 'cannot read /proc/interrupts' in found[2]['detail']


# ---------------------------------------------------------------- mlxlink FEC and BER

def link_of(name, cmd='mlxlink -d 0000:1b:00.0 -m -c -e'):
    parsed = mlx.parse_mlxlink(fixtures.local(name))
    return dict(dict((k, parsed[k]) for k in ('operational', 'counters', 'module', 'troubleshooting', 'truncated')), cmd=cmd, error=None)


def test_fec_and_ber_graded_on_live_links_and_a_missing_mlxlink_is_our_gap():
    firmware = {'devices': {
        '0000:1b:00.0': {'link': link_of('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt')},
        '0000:3b:00.0': {'link': link_of('mlx/mlxlink_cx5_100g_bad_signal_integrity_c_e_synthetic.txt', 'mstlink -d 0000:3b:00.0 -m -c -e')},
        '0000:5e:00.0': {'link': {'cmd': None, 'error': 'mlxlink (...) or mstlink (...) is not installed on node01: FEC and BER not read'}},
        '0000:9a:00.0': {'link': link_of('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt')}}}
    rdma = {'devices': dict(('mlx5_%d' % i, {'pci_address': pci, 'ports': {'1': {
        'state': 'DOWN' if i == 3 else 'ACTIVE', 'state_code': 1 if i == 3 else 4}}})
        for i, pci in enumerate(('0000:1b:00.0', '0000:3b:00.0', '0000:5e:00.0', '0000:9a:00.0')))}
    found = preflight.check_link_quality(firmware, rdma, P400)
    assert checks(found, 'link_fec') == [('mlx5_0', 'healthy'), ('mlx5_1', 'healthy'), ('mlx5_2', 'unknown')]
    assert checks(found, 'link_ber') == [('mlx5_0', 'healthy'), ('mlx5_1', 'marginal')]
    bad = [f for f in found if f['status'] == 'marginal'][0]
    assert bad['detail'] == 'mlx5_1 effective physical BER 1e-12 (limit 1e-15)' and bad['verbatim'][0] == '$ mstlink -d 0000:3b:00.0 -m -c -e'
    result = verdict.node_verdict([], found, P400)
    assert result['bucket'] == 'B' and 'not installed' in ' '.join(c['detail'] for c in result['causes'])


def test_a_fec_mode_outside_the_allowed_list_and_no_ber_counters():
    link = link_of('mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt')
    link['operational'] = dict(link['operational'], fec='No FEC')
    link['counters'] = None  # mlxlink without -c output (the lab's emulation today)
    found = preflight.check_link_quality({'devices': {'0000:1b:00.0': {'link': link}}}, None, P400)
    assert [(f['check'], f['status']) for f in found] == [('link_fec', 'marginal'), ('link_ber', 'unknown')]
    assert found[0]['detail'] == '0000:1b:00.0 link FEC No FEC, expected RS-FEC'
    lab_fec = dict(link, operational=dict(link['operational'], fec='Standard_RS-FEC - (544,514)'))
    assert preflight.check_link_quality({'devices': {'x': {'link': lab_fec}}}, None, P400)[0]['status'] == 'healthy'


def test_mlxlink_of_the_newest_layout_graded_healthy_and_high_ber():
    healthy = link_of('mlx/mlxlink_m_c_bluefield3_100g_dac_healthy_ber_15E-255_sigcomm26_tutorial.txt')
    noisy = link_of('mlx/mlxlink_m_c_cx7_400g_high_ber_link_down_37_bad_signal_synthetic.txt')
    found = preflight.check_link_quality({'devices': {'0000:03:00.1': {'link': healthy}, '0000:3b:00.0': {'link': noisy}}}, None, P400)
    assert [(f['check'], f['subject'], f['status']) for f in found] == [
        ('link_fec', '0000:03:00.1', 'healthy'), ('link_ber', '0000:03:00.1', 'healthy'),
        ('link_fec', '0000:3b:00.0', 'healthy'), ('link_ber', '0000:3b:00.0', 'marginal')]
    assert found[-1]['detail'] == '0000:3b:00.0 effective physical BER 3e-13 (limit 1e-15)'


# ---------------------------------------------------------------- rings, channels and MTU of the rails, against the hardware

def nic_facts(netdev, device, ring_text, channels_text, driver='mlx5_core', mtu=9000):
    """nic_info's entry of one netdev, from the ethtool parsers on -g / -l outputs."""
    return {'nics': {netdev: {'rdma_device': device, 'mtu': mtu, 'driver': {'driver': driver},
                              'ring': ethtool.parse_ethtool_ring(ring_text), 'channels': ethtool.parse_ethtool_channels(channels_text)}}}


RING_1024 = 'ethtool/ethtool_g_mlx5_ring_1024_of_8192_synthetic.txt'
CHANNELS_24 = 'ethtool/ethtool_l_mlx5_combined_24_of_63_synthetic.txt'


def test_an_mlx5_ring_at_its_maximum_meets_a_contract_that_asks_more_and_one_below_does_not():
    at_max = fixtures.local(RING_1024).replace('Current hardware settings:\nRX:\t\t1024', 'Current hardware settings:\nRX:\t\t8192')
    found = preflight.check_nic_tuning(nic_facts('enp65s0f0np0', 'mlx5_0', at_max, fixtures.local(CHANNELS_24)), None, P400)
    ring = [f for f in found if f['check'] == 'rx_ring'][0]
    assert (ring['status'], ring['expected'], ring['actual']) == ('healthy', '>= 8192', 8192)
    assert ring['detail'] == 'enp65s0f0np0 RX ring 8192 at its maximum, the contract asks 16384'
    channels = [f for f in found if f['check'] == 'channels'][0]
    # 24 of a maximum of 63: the contract's 64 is out of reach, 63 is what this NIC can do.
    assert (channels['status'], channels['expected']) == ('marginal', '>= 63')
    low = preflight.check_nic_tuning(nic_facts('enp65s0f0np0', 'mlx5_0', fixtures.local(RING_1024), fixtures.local(CHANNELS_24)), None, P400)
    assert [(f['status'], f['detail']) for f in low if f['check'] == 'rx_ring'] == [('marginal', 'enp65s0f0np0 RX ring 1024, maximum 8192')]


def test_ipoib_netdevs_and_non_rails_are_not_graded_for_rings_or_mtu():
    ipoib = nic_facts('ibp65s0', 'mlx5_0', fixtures.local(RING_1024), fixtures.local(CHANNELS_24), driver='mlx5_core[ib_ipoib]', mtu=4092)
    assert preflight.check_nic_tuning(ipoib, None, P400) == []
    assert preflight.check_rail_mtu(ipoib, P400) == []
    storage = nic_facts('enp41s0f0np0', 'mlx5_10', fixtures.local(RING_1024), fixtures.local(CHANNELS_24), mtu=1500)
    selection = {'devices': ['mlx5_0'], 'ports': [{'device': 'mlx5_0', 'link_layer': 'Ethernet', 'selected': True, 'pci_address': None},
                                                  {'device': 'mlx5_10', 'link_layer': 'Ethernet', 'selected': False, 'pci_address': None}]}
    assert preflight.check_nic_tuning(storage, None, P400, selection) == []
    assert preflight.check_rail_mtu(storage, P400, selection) == []


def test_a_roce_rail_below_the_contracts_jumbo_mtu_is_host_configuration():
    roce = nic_facts('enp65s0f0np0', 'mlx5_0', fixtures.local(RING_1024), fixtures.local(CHANNELS_24), mtu=1500)
    found = preflight.check_rail_mtu(roce, P400)
    assert [(f['check'], f['status'], f['actual']) for f in found] == [('rail_mtu', 'marginal', 1500)]
    assert 'the contract asks 9000 on Ethernet rails' in found[0]['detail']
    assert preflight.check_rail_mtu(nic_facts('enp65s0f0np0', 'mlx5_0', fixtures.local(RING_1024), fixtures.local(CHANNELS_24)),
                                    P400)[0]['status'] == 'healthy'
