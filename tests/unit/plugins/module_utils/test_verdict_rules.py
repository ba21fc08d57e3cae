"""Each likely-cause rule of verdict.CAUSE_RULES: the pattern that names it, and the nearest pattern that must not.

Inputs are shaped like the modules' real outputs: perftest/iperf3/ping/nccl/dcgmi figures as measurements.py
builds them (from real fixtures where one exists), preflight findings from preflight_findings() on info-module facts,
link and AER findings from parse_kernel_log() on real kernel logs.
"""
import copy
import os
import tempfile

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi, kernel_log, mlx, nccl, nvidia, pcie, perftest
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma as rdma_parser
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, fleet, measurements, preflight, verdict
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']
P400 = TIERS['400G']
PAIR = TIERS['roce-pair-2x100g']
HCAS = ['mlx5_%d' % i for i in range(8)]


def figure(metric, subject, value, **extra):
    """A measurement as measurements.py builds it."""
    entry = {'id': '%s:%s' % (metric, subject), 'kind': catalogue.metric(metric)['reads'], 'metric': metric, 'subject': subject,
             'peer': 'peer01', 'peer_device': subject, 'value': value, 'unit': catalogue.unit(metric),
             'as_printed': None if value is None else '%s %s' % (value, catalogue.unit(metric)), 'verbatim': [],
             'cmd': None, 'error': None, 'error_class': None, 'error_side': None, 'raw': ''}
    entry.update(extra)
    return entry


def rdma(values, metric='ib_send_bw_gbs'):
    return [figure(metric, 'mlx5_%d' % i, value) for i, value in enumerate(values)]


def facts(gpu_count=8, governor='performance', lnksta=32, down=(), missing_modules=(), xid_log=None):
    """Info-module results (rdma_info, pcie_info, host_tuning_info, gpu_info) of a 400G node."""
    ports = dict((hca, {'pci_address': '0000:%02x:00.0' % (0x1a + i), 'ports': {'1': {
        'state': 'DOWN' if hca in down else 'ACTIVE', 'state_code': 1 if hca in down else 4,
        'phys_state': 'Polling' if hca in down else 'LinkUp', 'rate_gbps': 400, 'link_layer': 'InfiniBand'}}})
        for i, hca in enumerate(HCAS))
    pcie = {'devices': [{'bdf': '0000:1a:00.0', 'kind': 'nic',
                         'link': {'current_speed_gts': lnksta, 'current_width': 16, 'max_speed_gts': 32, 'max_width': 16},
                         'assessment': {'status': 'ok' if lnksta == 32 else 'degraded', 'reason': 'below capability'},
                         'lspci': {'cmd': 'lspci -vvv -s 1a:00.0', 'link_lines': ['LnkSta: Speed %sGT/s, Width x16' % lnksta]}}]}
    # The runbook's cmdline (iommu=pt, default_hugepagesz=1G, hugepages=N) and the 1G pool it reserves.
    host = {'cmdline': {'tokens': ['ro', 'iommu=pt', 'default_hugepagesz=1G', 'hugepagesz=1G', 'hugepages=128']},
            'hugepages': {'total': 128, 'page_size_bytes': 1073741824, 'pools_kib': {'1048576': 128}},
            'modules': dict((m, {}) for m in P400['host']['modules'] if m not in missing_modules),
            'cpu_governor': {'uniform': governor, 'counts': {governor: 64}}, 'no_turbo': False,
            'memlock': {'soft': 'unlimited', 'hard': 'unlimited'},
            'memlock_login': {'user': 'root', 'soft_kib': 'unlimited', 'source': 'login_shell', 'errors': []}}
    xids = kernel_log.parse_kernel_log(fixtures.local(xid_log))['xid'] if xid_log else []
    # nvidia-smi lists the GPUs it sees: a GPU that fell off the bus (0000:91:00.0 in the Xid 79 log) is not among them.
    gpus = [{'index': i, 'bus_id': '0000:%02x:00.0' % (0x18 + i)} for i in range(gpu_count)]
    return {'rdma': {'devices': ports}, 'pcie': pcie, 'host': host,
            'gpu': {'nvidia_smi': 'present', 'gpu_count': gpu_count, 'gpus': gpus, 'xid_events': xids},
            'nic': {'nics': {}}, 'firmware': {'devices': {}}}


def mlxlink_link(name):
    """mlx_fw_info's ``link`` of one device, from the real parser on an mlxlink fixture."""
    parsed = mlx.parse_mlxlink(fixtures.local(name))
    return dict(dict((k, parsed[k]) for k in ('operational', 'counters', 'module', 'troubleshooting', 'truncated')), cmd='mlxlink', error=None)


def kernel_findings(name):
    return measurements.link_flap_findings({'kernel_log': kernel_log.parse_kernel_log(fixtures.local(name))})


def nccl_figures(name, at_bytes=8589934592, rails=2, **result):
    """The NCCL figures of a real-shaped log, as the nccl_tests module returns it on its host gpu-a (its local_ib_hcas)."""
    text = fixtures.local(name)
    parsed = nccl.parse_nccl_tests(text)
    run = {'test': 'nccl', 'metric': 'nccl_busbw_gbs', 'subject': 'all_reduce', 'at_bytes': at_bytes, 'rails': rails}
    module_result = dict(parsed, stdout=text, cmd='mpirun ... all_reduce_perf', local_host='gpu-a',
                         local_ib_hcas=nccl.local_hcas(parsed, 'gpu-a'))
    module_result.update(result)
    return measurements.run_measurements(module_result, run), parsed['transport']


IB_LOG = 'nccl/all_reduce_perf_2node_h100_roce_net_ib_gdrdma_info_synthetic.txt'


def dcgmi_figures(name, shared=False):
    text = fixtures.shared(name) if shared else fixtures.local(name)
    return measurements.run_measurements(dcgmi.parse_dcgmi_diag(text), {'test': 'dcgmi', 'metric': 'dcgmi_diag', 'subject': 'gpus'})


PING_RUN = {'test': 'jumbo_ping', 'metric': 'jumbo_ping_loss_pct', 'subject': '10.0.10.2'}
H100 = 'nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt'


def worn_h100s():
    """gpu_info's GPUs from a real 8x H100 capture, one GPU with correctable errors above the tier's limit."""
    gpu = nvidia.parse_nvidia_smi_q(fixtures.shared(H100))
    gpu['gpus'][1]['ecc_errors']['aggregate']['correctable_total'] = 250
    return gpu


def ib_snapshots(grow=None, node_only=True):
    """Counter snapshots of the all-NICs test as tier_tests takes them (preflight_info's rdma read on both boxes), from the real
    sysfs tree of an 8x ConnectX-7 NDR node; ``grow`` ({device: {counter: delta}}) is added after the test on the node."""
    root = tempfile.mkdtemp(prefix='ib-snapshot-')
    os.makedirs(os.path.join(root, 'class'))
    os.symlink(fixtures.shared_path('sysfs/sys-class-infiniband_h100_8xCX7_NDR_plus_bond_gpud'), os.path.join(root, 'class', 'infiniband'))
    devices = rdma_parser.read_infiniband_sysfs(root, counters=True)['devices']
    before = {'devices': devices, 'counters_at': 100.0}
    after = {'devices': copy.deepcopy(devices), 'counters_at': 160.0}
    for device, counters in (grow or {}).items():
        for name, delta in counters.items():
            after['devices'][device]['ports'][1]['counters'][name] += delta
    side = {'reads': {'rdma': before, 'nic': {}}}
    return {'before': {'node': side, 'peer': side}, 'after': {'node': {'reads': {'rdma': after, 'nic': {}}}, 'peer': side}}


def ib_figures(snapshots, profile=P400):
    return measurements.ib_counter_figures(snapshots, ('ib_port_errors', 'ib_xmit_wait_per_s'), 'peer01', ['mlx5_0', 'mlx5_4'],
                                           {'mlx5_0': 'mlx5_0', 'mlx5_4': 'mlx5_4'})


def graded_wait(profile=P400):
    """A contract that grades PortXmitWait (the shipped tiers record it): marginal above 1000 ticks/s, no reject line."""
    changed = copy.deepcopy(profile)
    changed['tests']['all_nics']['ungraded'] = []
    changed['thresholds']['ib_xmit_wait_per_s'] = {'healthy': [None, 1000], 'reject_above': None, 'unit': '/s', 'direction': 'one-way',
                                                   'source': 'project: a test contract'}
    return changed


def h100s(**changes):
    """gpu_info's GPUs of a real 8x H100 node (nvidia-smi -q), with per-GPU fields changed: {index: {field: value}}."""
    gpu = nvidia.parse_nvidia_smi_q(fixtures.shared(H100))
    for index, fields in changes.get('gpus', {}).items():
        gpu['gpus'][index].update(fields)
    return gpu


def dcgm_read(name):
    parsed = dcgmi.parse_dcgmi_discovery(fixtures.local(name))
    return {'dcgm': {'hostengine': parsed['hostengine'], 'gpu_count': parsed['gpu_count'], 'cmd': 'dcgmi discovery -l', 'error': parsed['error']}}


def blocked_expected(found, test, metric, subject=None):
    """The test plan's expected figure of a test a failed GPU prerequisite rules out (plan option blocked)."""
    reason = preflight.gpu_test_blockers(found).get(test)
    return [{'id': '%s:*' % metric, 'metric': metric, 'subject': subject, 'test': test, 'reason': reason,
             'error_class': verdict.GPU_PREREQUISITE}] if reason else []


def gdr_support(help_fixture, version_fixture):
    """gpu_info's gdr_support from the real parsers: perftest --help and /proc/driver/nvidia/version."""
    helped = perftest.parse_perftest_help(fixtures.local(help_fixture))
    return {'gdr_support': {'driver': dict(nvidia.parse_nvidia_driver_version(fixtures.local(version_fixture)), error=None),
                            'perftest': dict(((k, helped[k]) for k in ('cuda', 'cuda_bus_id', 'cuda_dmabuf')), tool='ib_send_bw',
                                             cmd='ib_send_bw --help', error=None)}}


NO_CUDA_HELP = 'perftest/ib_send_bw_help_debian12_perftest606_no_cuda.txt'
CUDA_HELP = 'perftest/ib_write_bw_help_grep_cuda_mlnx_ofed55_cuda116_nvidia_doc.txt'
PROPRIETARY = 'nvidia/proc_driver_nvidia_version_510.39.01_proprietary_mlnx_ofed_nvidia_doc.txt'
ACS_ON = 'lspci/lspci_vvv_s_amd_matisse_downstream_port_acsctl_redirect_on_found_public.txt'
ACS_OFF = 'lspci/lspci_vvv_intel_sunrise_point_root_port_acs_capable_acsctl_off_found_public.txt'


def acs_facts(bridge_fixture):
    """pcie_info, gpu_info and rdma_info of a NIC and its GPU below one switch, the NIC's downstream port read from a real lspci."""
    parsed = pcie.parse_lspci(fixtures.local(bridge_fixture))['devices'][0]
    acs = {'ctl': parsed['acs_ctl'], 'redirects': pcie.acs_redirects(parsed['acs_ctl']), 'line': parsed['acs_line'],
           'cmd': 'lspci -vvv -s 0000:19:03.0', 'error': None}
    off = {'ctl': dict((k, False) for k in parsed['acs_ctl']), 'redirects': [], 'line': 'ACSCtl: SrcValid-', 'cmd': 'lspci', 'error': None}
    up = [{'bdf': '0000:18:02.0', 'acs': off}, {'bdf': '0000:17:01.0', 'acs': off}]
    devices = [{'bdf': '0000:1a:00.0', 'kind': 'nic', 'upstream': [{'bdf': '0000:19:03.0', 'acs': acs}] + up},
               {'bdf': '0000:1b:00.0', 'kind': 'gpu', 'upstream': [{'bdf': '0000:19:04.0', 'acs': off}] + up}]
    gpu = {'gpus': [{'index': 0, 'bus_id': '0000:1b:00.0'}],
           'gpu_nic_pairs': [{'nic': 'mlx5_0', 'gpu': 0, 'gpu_name': 'GPU0', 'link': 'PXB'}]}
    return {'devices': devices}, gpu, {'devices': {'mlx5_0': {'pci_address': '0000:1a:00.0'}}}


def contract_adopts(profile, metric):
    """The profile with a contract that states ``metric``'s line as its own (a contract file's thresholds.<metric>.source)."""
    adopted = copy.deepcopy(profile)
    adopted['thresholds'][metric]['source'] = 'contract: section 4.2 of the supply agreement'
    return adopted


def with_rules(profile, **settings):
    changed = copy.deepcopy(profile)
    changed['cause_rules'].update(settings)
    return changed


def run(measured=(), found=(), profile=P400, context=None):
    return verdict.node_verdict(list(measured), list(found), profile, context)


def named(result, cause):
    return [c for c in result['causes'] if c['cause'] == cause]


# A contract whose per-HCA line (40 GB/s) leaves room for a node 9 % below its siblings' 47 GB/s.
LENIENT = copy.deepcopy(P400)
LENIENT['thresholds']['ib_send_bw_gbs'].update(healthy=[40, None], reject_below=38)


def sibling_run(slow):
    """node09's verdict after the run's comparison with eight siblings at 47 GB/s on every HCA; its own HCAs at ``slow``."""
    nodes = dict(('node%02d' % i, dict(run(rdma([47.0] * 8), profile=LENIENT), tier='400G', sku='H100 / MT4129')) for i in range(1, 9))
    nodes['node09'] = dict(run(rdma(slow), profile=LENIENT), tier='400G', sku='H100 / MT4129')
    analysis = fleet.analyse(nodes, {'400G': dict(FLEET_RULES)})
    return verdict.with_fleet_outliers(nodes['node09'], analysis['marks'].get('node09'))


with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'defaults', 'main.yml'), encoding='utf-8') as handle:
    FLEET_RULES = yaml.safe_load(handle)['tier_profile_fleet_rules']


# Each case: cause -> (positive run, subjects it must name, words its detail must hold, negative run).
CASES = {
    'run_incomplete': (
        lambda: run(rdma([47.0] * 8), found=[verdict.run_incomplete_finding('tests: Run the clients of batch 1', 'peer01 cannot be reached')]),
        ['tests: Run the clients of batch 1'], ['did not finish', 'peer01 cannot be reached', 'Nothing here is held against the node'],
        # The nearest pattern: the same text under another check is a finding like any other, not a broken run.
        lambda: run(rdma([47.0] * 8), found=[dict(verdict.run_incomplete_finding('x', 'y'), check='peer_health')])),
    'gpu_hardware': (
        lambda: run(found=preflight.preflight_findings(
            facts(gpu_count=7, xid_log='kernel_log/dmesg_xid79_fallen_off_bus_and_nvswitch_sxid_gpud_readme.txt'), P400)),
        ['gpus'], ['7 of 8 GPUs', 'Xid', 'return the node'],
        lambda: run(found=preflight.preflight_findings(facts(), P400))),
    'gpu_memory_wear': (
        lambda: run(found=preflight.check_gpu_memory(worn_h100s(), P400)),
        ['0000:3b:00.0'], ['250 correctable ECC errors (limit 100)', 'nvidia-smi -r'],
        lambda: run(found=preflight.check_gpu_memory(nvidia.parse_nvidia_smi_q(fixtures.shared(H100)), P400))),
    'gpu_diagnostics': (
        lambda: run(dcgmi_figures('dcgmi/dcgmi_diag_r2_dcgm3.3.1_gpu_memory_fail_gpu0_wrapped_warning_godcgm52_truncated.txt')),
        ['GPU Memory'], ['GPU Memory: fail on GPU 0', 'do not accept'],
        lambda: run(dcgmi_figures('dcgmi/dcgmi_diag_r3_dcgm3.0.4_deployment_pass_dcgm55_truncated.txt', shared=True))),
    'link_instability': (
        lambda: run(found=kernel_findings('kernel_log/logread_kernel_igc_nic_link_down_up_lede11302_truncated.txt')),
        ['0000:05:00.0'], ['went down 2 time(s)', 'Replace the cable'],
        lambda: run(found=kernel_findings('kernel_log/journalctl_k_mlx5_ib_port_link_init_active_gpud_pr1209_truncated.txt'))),
    'link_quality': (
        lambda: run(found=preflight.check_link_quality({'devices': {'0000:3b:00.0': {'link': mlxlink_link(
            'mlx/mlxlink_cx5_100g_bad_signal_integrity_c_e_synthetic.txt')}}}, None, P400)),
        ['0000:3b:00.0'], ['effective physical BER 1e-12 (limit 1e-15)', 'replace the cable'],
        lambda: run(found=preflight.check_link_quality({'devices': {'0000:1b:00.0': {'link': mlxlink_link(
            'mlx/mlxlink_cx6_200g_healthy_m_c_synthetic.txt')}}}, None, P400))),
    'nic_link': (
        lambda: run(found=preflight.preflight_findings(facts(down=('mlx5_5',)), P400)),
        ['mlx5_5', 'nics'], ['mlx5_5 port 1 is DOWN (Polling)', '7 of 8 compute rails Active'],
        lambda: run(found=preflight.preflight_findings(facts(), P400))),
    'pcie_link': (
        lambda: run(rdma([38.0] + [47.0] * 7), preflight.preflight_findings(facts(lnksta=16), P400)),
        ['mlx5_0'], ['LnkSta 16GT/s x16', '0000:1a:00.0'],
        lambda: run(rdma([47.0] * 8), preflight.preflight_findings(facts(), P400))),
    'pcie_errors': (
        lambda: run(found=kernel_findings('kernel_log/syslog_kernel_aer_correctable_data_link_layer_popos3363_truncated.txt')),
        ['0000:00:00.0', '0000:00:03.1'], ['PCIe AER Corrected error on 0000:00:03.1', 'Reseat'],
        lambda: run(found=kernel_findings('kernel_log/dmesg_firecracker_vm_dev_boot_no_events.txt'))),
    'platform_tuning': (
        lambda: run(rdma([42.0 + i * 0.1 for i in range(8)]), preflight.preflight_findings(facts(governor='powersave'), P400)),
        HCAS, ['about 8% below', 'CPU governor powersave, expected performance'],
        lambda: run(rdma([42.0] * 7 + [34.0]))),
    'platform_aggregate': (
        lambda: run([figure('all_nics_gbs', 'all NICs', 240.0)]),
        ['all NICs'], ['30% or more below', 'all NICs 240 GB/s', 'healthy >= 360 GB/s'],
        lambda: run([figure('all_nics_gbs', 'all NICs', 300.0)])),
    'rdma_all_slow': (
        lambda: run(rdma([30.0, 33.0, 36.0, 39.0, 40.0, 41.0, 41.5, 44.0])),
        HCAS, ['every NIC is below', 'mlx5_0 30 GB/s'],
        lambda: run(rdma([42.0] * 8))),
    'single_nic_slow': (
        lambda: run(rdma([47.0, 47.0, 47.0, 41.0, 47.0, 47.0, 47.0, 47.0])),
        ['mlx5_3'], ['mlx5_3 is slow (41 GB/s)', 'lspci LnkSta'],
        lambda: run(rdma([47.0] * 8))),
    'rdma_specific': (
        lambda: run(rdma([30.0, 30.0]) + [figure('iperf3_gbps', '10.0.10.2', 360.0)]),
        ['mlx5_0', 'mlx5_1'], ['memlock', 'show_gids'],
        lambda: run(rdma([30.0, 30.0]) + [figure('iperf3_gbps', '10.0.10.2', 250.0)])),
    'firmware_throttle': (
        lambda: run([figure('ib_write_bw_gbps', 'rocep1s0f0', 14.2), figure('ib_write_bw_gbps', 'roceP2p1s0f0', 14.0)], profile=PAIR),
        ['rocep1s0f0'], ['rocep1s0f0 runs at 14.2 Gb/s', 'power-drain'],
        lambda: run([figure('ib_write_bw_gbps', 'rocep1s0f0', 25.0)], profile=PAIR)),
    'nccl_socket_fallback': (
        lambda: run(rdma([47.0] * 2) + nccl_figures('nccl/all_reduce_perf_2node_net_socket_fallback_info_synthetic.txt')[0],
                    context={'nccl_transport': 'Socket'}),
        ['all_reduce'], ['NET/Socket', 'not NET/IB', 'every HCA of the node passed', 'GID table'],
        # The nearest: the same fallback where the node's HCAs did not prove IB usable (one failed its own test) is ours.
        lambda: run(rdma([47.0, 30.0]) + nccl_figures('nccl/all_reduce_perf_2node_net_socket_fallback_info_synthetic.txt')[0],
                    context={'nccl_transport': 'Socket'})),
    'nccl_rails': (
        lambda: run(rdma([47.0] * 2) + nccl_figures(IB_LOG, local_ib_hcas=['mlx5_0'])[0], context={'nccl_transport': 'IB'}),
        ['all_reduce'], ['NCCL used 1 of the 2 HCAs', 'NCCL WARN', 'NCCL_DEBUG_SUBSYS=INIT,NET'],
        lambda: run(rdma([47.0] * 2) + nccl_figures(IB_LOG)[0], context={'nccl_transport': 'IB'})),
    'nccl_topology': (
        # Two 400G rails at 46 GB/s of busbw: under 0.85 x 2 x 45 while both HCAs are healthy on their own.
        lambda: run(rdma([47.0] * 2) + nccl_figures(IB_LOG)[0], context={'nccl_transport': 'IB'}),
        ['all_reduce'], ['inside the node', 'NVLink', 'nvidia-smi topo -m', 'NCCL_DEBUG_SUBSYS=GRAPH', '(0.85 x 2 rails'],
        lambda: run(rdma([47.0, 38.0]) + nccl_figures(IB_LOG)[0], context={'nccl_transport': 'IB'})),
    'nccl_gdr': (
        lambda: run(rdma([47.0] * 2) + nccl_figures(IB_LOG, rails=1, gdr=False)[0], context={'nccl_transport': 'IB'}),
        ['all_reduce'], ['without GPUDirect RDMA', 'nvidia_peermem', 'ACS'],
        lambda: run(rdma([47.0] * 2) + nccl_figures(IB_LOG, rails=1)[0], context={'nccl_transport': 'IB'})),
    'nccl_wrong_results': (
        lambda: run([figure('nccl_busbw_gbs', 'all_reduce', 46.0), figure('nccl_wrong', 'all_reduce', 3)], context={'nccl_transport': 'IB'}),
        ['all_reduce'], ['3 wrong results', 'dcgmi diag -r 3'],
        lambda: run([figure('nccl_busbw_gbs', 'all_reduce', 46.0), figure('nccl_wrong', 'all_reduce', 0)], context={'nccl_transport': 'IB'})),
    'gdr': (
        lambda: run(rdma([47.0] * 2) + [figure('gdr_bw_gbs', 'mlx5_1', 40.0)]),
        ['mlx5_1'], ['nvidia_peermem', 'mlx5_1 40 GB/s'],
        lambda: run(rdma([47.0, 38.0]) + [figure('gdr_bw_gbs', 'mlx5_1', 37.5)])),
    'pfc_pause': (
        lambda: run([figure('pause_per_s', 'ens1np0', 250000.0)]),
        ['ens1np0'], ['ens1np0 250000/s', 'switch'],
        lambda: run([figure('pause_per_s', 'ens1np0', 500.0)])),
    'ib_link_errors': (
        lambda: run(ib_figures(ib_snapshots({'mlx5_4': {'symbol_error': 52}}))),
        ['mlx5_4'], ['mlx5_4 +52 (symbol_error +52, link_downed +0, port_rcv_errors +0)', 'grew on: node', 'cable'],
        lambda: run(ib_figures(ib_snapshots()))),
    'ib_congestion': (
        lambda: run(ib_figures(ib_snapshots({'mlx5_0': {'port_xmit_wait': 600000}})), profile=graded_wait()),
        ['mlx5_0'], ['mlx5_0 10000 ticks/s over 60 s', 'credits'],
        # The shipped tiers record PortXmitWait without grading it.
        lambda: run(ib_figures(ib_snapshots({'mlx5_0': {'port_xmit_wait': 600000}})))),
    'jumbo_path': (
        lambda: run([measurements.run_measurements({'loss_percent': 100.0, 'received': 0, 'transmitted': 5, 'frag_needed': True,
                                                    'reason': 'fragmentation needed: path MTU 1500 < 9000 (size 8972)', 'stdout': ''},
                                                   PING_RUN)[0]]),
        ['10.0.10.2'], ['100.0% loss (0/5 received), fragmentation needed', 'MTU is 9000'],
        lambda: run([measurements.run_measurements({'loss_percent': 0.0, 'received': 5, 'transmitted': 5, 'stdout': ''}, PING_RUN)[0]])),
    'host_configuration': (
        lambda: run(rdma([47.0] * 8), preflight.preflight_findings(facts(missing_modules=('nvidia_peermem',)), P400)),
        ['nvidia_peermem'], ['kernel module nvidia_peermem is not loaded'],
        # The same kind of finding, explained by the platform pattern instead.
        lambda: run(rdma([42.0] * 8), preflight.preflight_findings(facts(governor='powersave'), P400))),
    'node_side_failure': (
        lambda: run(rdma([47.0] * 2) + [figure('gdr_bw_gbs', 'mlx5_0', None, error_class='cuda_unavailable', error_side='node',
                                               error='ibv_reg_mr failed: Bad address (CUDA/GPUDirect unavailable)')]),
        ['mlx5_0'], ['because of something on the node', 'ibv_reg_mr failed', 'cuda_unavailable'],
        lambda: run(rdma([47.0] * 2) + [figure('gdr_bw_gbs', 'mlx5_0', None, error_class='cuda_unavailable', error_side='ours',
                                               error='ibv_reg_mr failed: Bad address (CUDA/GPUDirect unavailable)')])),
    'fleet_outlier': (
        lambda: sibling_run([42.8] * 8),
        HCAS, ['at 42.8 GB/s, 8.9 % worse than the median 47 GB/s of 72 figures', 'The siblings: 9 nodes of tier 400G',
               'still meets the contract', 'nothing here is held against the provider'],
        # The nearest pattern: 4 % below its siblings is within the fleet's spread (min_shortfall_pct 5).
        lambda: sibling_run([45.1] * 8)),
    'measurement_incomplete': (
        lambda: run(rdma([47.0] * 7), context={'expected': [{'id': 'ib_send_bw_gbs:%s' % h, 'metric': 'ib_send_bw_gbs', 'subject': h,
                                                             'test': 'ib_send_bw', 'reason': None} for h in HCAS]}),
        ['mlx5_7'], ['ib_send_bw per HCA on mlx5_7: not measured', 'not held against the node', 'tier_tests run log'],
        lambda: run(rdma([47.0] * 8), context={'expected': [{'id': 'ib_send_bw_gbs:%s' % h, 'metric': 'ib_send_bw_gbs', 'subject': h,
                                                             'test': 'ib_send_bw', 'reason': None} for h in HCAS]})),
    'gdr_mode': (
        lambda: run(found=preflight.check_gpudirect(gdr_support(NO_CUDA_HELP, PROPRIETARY), {'modules': {'nvidia_peermem': {}}}, P400)),
        ['gpudirect'], ['built without CUDA', 'MLNX_OFED or DOCA-OFED'],
        lambda: run(found=preflight.check_gpudirect(gdr_support(CUDA_HELP, PROPRIETARY), {'modules': {'nvidia_peermem': {}}}, P400))),
    'fabric_manager': (
        lambda: run(found=preflight.check_fabric_manager(h100s(gpus={2: {'fabric': {'state': 'In Progress', 'status': None}}}), P400)),
        ['nvswitch'], ['1 of 8 GPUs', 'nvidia-fabricmanager', 'system not yet initialized'],
        lambda: run(found=preflight.check_fabric_manager(h100s(), P400))),
    'dcgm_hostengine': (
        lambda: run(found=preflight.check_dcgm_hostengine(dcgm_read('dcgmi/dcgmi_discovery_l_no_hostengine_dcgm_exporter_pod_blog.txt'), P400),
                    context={'expected': blocked_expected(preflight.check_dcgm_hostengine(
                        dcgm_read('dcgmi/dcgmi_discovery_l_no_hostengine_dcgm_exporter_pod_blog.txt'), P400), 'dcgmi', 'dcgmi_diag')}),
        ['dcgm'], ['DCGM host engine', 'nvidia-dcgm', 'Not run because of it: dcgmi'],
        lambda: run(found=preflight.check_dcgm_hostengine(dcgm_read('dcgmi/dcgmi_discovery_l_8x_h800_0_nvswitches_public_notes.txt'), P400))),
    'persistence_mode': (
        lambda: run(found=preflight.check_persistence_mode(h100s(gpus={0: {'persistence_mode': 'Disabled'}}), P400)),
        ['gpus'], ['persistence mode is off on 1 GPU(s)', 'nvidia-persistenced'],
        lambda: run(found=preflight.check_persistence_mode(h100s(), P400))),
    'pcie_acs': (
        lambda: run([figure('gdr_bw_gbs', 'mlx5_0', 30.0)] + rdma([47.0] * 2), preflight.check_pcie_acs(*(acs_facts(ACS_ON) + (P400,)))),
        ['mlx5_0'], ['0000:19:03.0 (ReqRedir+CmpltRedir+UpstreamFwd)', 'root complex', 'It explains mlx5_0 30 GB/s'],
        lambda: run(found=preflight.check_pcie_acs(*(acs_facts(ACS_OFF) + (P400,))))),
    'project_line': (
        lambda: run([figure('ib_read_bw_gbs', 'mlx5_0', 9.0)], profile=TIERS['100G']),
        ['mlx5_0'], ['mlx5_0 9 GB/s', 'this project chose', 'source: contract'],
        lambda: run([figure('ib_read_bw_gbs', 'mlx5_0', 9.0)], profile=contract_adopts(TIERS['100G'], 'ib_read_bw_gbs'))),
    'unexplained': (
        lambda: run([figure('ib_write_lat_us', 'rocep1s0f0', 12.0)], profile=PAIR),
        ['rocep1s0f0'], ['ib_write_lat typical latency on rocep1s0f0 is reject', 'measured 12.0 us', 'healthy <= 3 us'],
        lambda: run([figure('ib_write_lat_us', 'rocep1s0f0', 1.45)], profile=PAIR)),
}


def test_every_rule_has_a_case():
    assert set(CASES) == set(rule.cause for rule in verdict.CAUSE_RULES) | {'unexplained'}


@pytest.mark.parametrize('cause', sorted(CASES))
def test_rule_names_its_cause_on_its_pattern(cause):
    positive, subjects, words, _negative = CASES[cause]
    result = positive()
    found = named(result, cause)
    assert found, (cause, result['causes'])
    assert set(subjects) <= set(s for c in found for s in c['subjects']), found
    detail = ' '.join(c['detail'] for c in found)
    for word in words:
        assert word in detail, (word, detail)
    assert result['bucket'] in ('B', 'C')


@pytest.mark.parametrize('cause', sorted(CASES))
def test_rule_stays_silent_on_the_near_miss(cause):
    _positive, _subjects, _words, negative = CASES[cause]
    result = negative()
    assert not named(result, cause), result['causes']


def test_every_rule_reads_only_the_settings_it_declares():
    for rule in verdict.CAUSE_RULES:
        assert set(rule.keys) <= set(verdict.CAUSE_RULE_KEYS), rule.cause
    used = set(k for rule in verdict.CAUSE_RULES for k in rule.keys)
    assert used == set(verdict.CAUSE_RULE_KEYS)


def test_platform_ratios_are_profile_data():
    slow = rdma([42.0 + i * 0.1 for i in range(8)])  # ratios 0.913-0.928 of the 46 GB/s floor
    assert named(run(slow), 'platform_tuning')
    assert not named(run(slow, profile=with_rules(P400, platform_max_spread=0.01)), 'platform_tuning')
    assert named(run(slow, profile=with_rules(P400, platform_max_spread=0.02)), 'platform_tuning')
    assert not named(run(slow, profile=with_rules(P400, platform_min_ratio=0.95)), 'platform_tuning')
    assert named(run(slow, profile=with_rules(P400, platform_min_ratio=0.95)), 'rdma_all_slow')


def test_aggregate_shortfall_is_profile_data():
    aggregate = [figure('all_nics_gbs', 'all NICs', 240.0)]  # 0.667 of the 360 GB/s floor
    assert named(run(aggregate), 'platform_aggregate')
    assert not named(run(aggregate, profile=with_rules(P400, platform_aggregate_shortfall=0.4)), 'platform_aggregate')


def test_firmware_throttle_is_off_where_the_profile_says_null():
    assert P400['cause_rules']['firmware_throttle_max_ratio'] is None
    result = run(rdma([47.0] * 7 + [5.0]))
    assert not named(result, 'firmware_throttle') and named(result, 'single_nic_slow')
    throttled = run(rdma([47.0] * 7 + [5.0]), profile=with_rules(P400, firmware_throttle_max_ratio=0.2))
    assert [c['subjects'] for c in named(throttled, 'firmware_throttle')] == [['mlx5_7']]


def test_a_throttled_pair_is_not_also_all_slow():
    result = CASES['firmware_throttle'][0]()
    assert [c['cause'] for c in result['causes']] == ['firmware_throttle', 'firmware_throttle']


def test_rules_use_the_catalogue_families():
    assert verdict.NCCL_WRONG in catalogue.metrics_in_family('nccl')
    assert catalogue.test_of_metric(verdict.NCCL_WRONG) == verdict.NCCL_TEST
    for family in ('rdma_bw', 'gdr_bw', 'aggregate_bw', 'tcp', 'pause', 'ping', 'gpu_diag') + verdict.THROUGHPUT_FAMILIES:
        assert catalogue.metrics_in_family(family), family
    # A new per-HCA RDMA metric of the rdma_bw family is read by the same rules without a code change.
    for metric in catalogue.metrics_in_family('rdma_bw'):
        assert catalogue.family(metric) == 'rdma_bw'


def test_dcgmi_fail_all_names_the_test_and_every_gpu():
    result = run(dcgmi_figures('dcgmi/dcgmi_diag_r3_dcgm3.3.8_gpu_memory_fail_all_8xh100_prompt_nccltests264.txt'))
    cause = named(result, 'gpu_diagnostics')
    assert len(cause) == 1 and cause[0]['subjects'] == ['GPU Memory']
    assert 'GPU Memory: fail on all GPUs (GPU 0, 1, 2, 3, 4, 5, 6, 7)' in cause[0]['detail']
    # The skipped tests after the failure are not failures of their own.
    assert 'PCIe' not in cause[0]['detail'] and result['bucket'] == 'C'


def test_a_pause_storm_with_every_nic_slow_names_pfc_first_not_the_platform():
    # The runbook's "iperf3 fine, RDMA slow ... PFC misconfigured on the switch": pause frames explain the slow NICs.
    result = run(rdma([31.0] * 8) + [figure('all_nics_gbs', 'all NICs', 248.0), figure('iperf3_gbps', '10.0.10.2', 20.0)]
                 + [figure('pause_per_s', 'ens%dnp0' % i, 150000.0) for i in range(8)])
    names = [c['cause'] for c in result['causes']]
    assert names[0] == 'pfc_pause' and 'platform_aggregate' in names, names
