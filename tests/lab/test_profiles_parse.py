"""Acceptance test of the lab (issue 3): the collection's parsers read the emulated hardware as the profile declares it.

For every profile a new node is materialized into tmp_path, every emulated
tool is run as a subprocess (NETVAL_LAB_NODE_DIR points at the node) and its
output is parsed with the COLLECTION's parsers; the parsed numbers must equal
the profile's.  No namespaces, no root: a plain unit test.
"""
import importlib
import json
import os
import socket
import subprocess
import time

import pytest

from lab.netval_lab import hardware, profiles
from tests.lab.ranks import run_ranks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = 'ansible_collections.gpufleet.netval.plugins.module_utils.parsers.'
MIB = 1024.0 * 1024.0
FABRIC = {'fabric': [{'netdev': 'fab-peer01', 'ip': '127.0.0.1', 'peer_ip': '127.0.0.1', 'peer': 'peer01'}],
          'mgmt_ip': '10.251.0.11'}
PROFILES = profiles.list_profiles()


def parser(module, name):
    """The collection's parser; a missing one fails the test (it is part of the contract), it is never skipped."""
    try:
        return getattr(importlib.import_module(PACKAGE + module), name)
    except (ImportError, AttributeError) as exc:
        pytest.fail('collection parser %s.%s is not available (%s): the lab acceptance test needs it' % (module, name, exc))
    return None


def run_tool(node, tool, *args, **kwargs):
    env = dict(os.environ, NETVAL_LAB_NODE_DIR=str(node))
    env.update(kwargs.pop('env', {}))
    return subprocess.run([os.path.join(str(node), 'bin', tool)] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=kwargs.pop('timeout', 60), check=False)


def tool_output(node, tool, *args, **kwargs):
    proc = run_tool(node, tool, *args, **kwargs)
    assert proc.returncode == 0, '%s %s failed rc=%d: %s' % (tool, ' '.join(args), proc.returncode, proc.stderr)
    return proc.stdout


@pytest.fixture(params=PROFILES)
def node(request, tmp_path):
    profile = profiles.load_profile(request.param)
    node_dir = tmp_path / 'node01'
    state = hardware.materialize(profile, 'node01', 'new', str(node_dir), FABRIC)
    return node_dir, profile, state


def test_every_required_profile_exists():
    for name in ('healthy-400g', 'gen4-nic0', 'platform-slow', 'gpu-missing', 'nccl-socket-fallback', 'nccl-one-rail',
                 'spark-pair-throttled', 'healthy-100g', 'healthy-800g'):
        assert name in PROFILES


def test_ibstat_and_ibstatus(node):
    node_dir, profile, _state = node
    nics = profile['hardware']['nics']
    parsed = parser('rdma', 'parse_ibstat')(tool_output(node_dir, 'ibstat'))['devices']
    assert sorted(parsed) == sorted(nic['name'] for nic in nics)
    for nic in nics:
        port = parsed[nic['name']]['ports'][1]
        assert port['state'] == nic['state'].capitalize()
        assert port['link_layer'] == nic['link_layer']
        assert parsed[nic['name']]['firmware_version'] == nic['fw_version']
        if nic['state'] == 'ACTIVE':
            assert port['rate_gbps'] == nic['rate_gbps']
    status = parser('rdma', 'parse_ibstatus')(tool_output(node_dir, 'ibstatus'))['devices']
    assert sorted(status) == sorted(nic['name'] for nic in nics)
    text = repr(status)
    for nic in nics:
        if nic['state'] == 'ACTIVE':
            assert '%d Gb/sec' % nic['rate_gbps'] in text or str(nic['rate_gbps']) in text


def test_infiniband_sysfs(node):
    node_dir, profile, _state = node
    devices = parser('rdma', 'read_infiniband_sysfs')(str(node_dir / 'sys'))['devices']
    for nic in profile['hardware']['nics']:
        device = devices[nic['name']]
        assert device['fw_ver'] == nic['fw_version']
        assert device['pci_address'] == nic['pci_address']
        assert device['numa_node'] == nic['numa_node']
        port = device['ports'][1]
        assert port['link_layer'] == nic['link_layer']
        assert port['state'] == nic['state']
        if nic['state'] == 'ACTIVE':
            assert port['rate_gbps'] == nic['rate_gbps']


def test_pcie_lspci_and_sysfs(node):
    node_dir, profile, _state = node
    parse_lspci = parser('pcie', 'parse_lspci')
    read_pci_link = parser('pcie', 'read_pci_link')
    walk_upstream = parser('pcie', 'walk_upstream')
    assess_link = parser('pcie', 'assess_link')
    for nic in profile['hardware']['nics']:
        pcie = nic['pcie']
        devices = parse_lspci(tool_output(node_dir, 'lspci', '-vvv', '-s', nic['pci_address']))['devices']
        assert len(devices) == 1
        device = devices[0]
        assert device['lnkcap_speed_gts'] == pcie['lnkcap_gts'] and device['lnkcap_width'] == pcie['lnkcap_width']
        assert device['lnksta_speed_gts'] == pcie['lnksta_gts'] and device['lnksta_width'] == pcie['lnksta_width']
        assert device['downgraded'] == (pcie['lnksta_gts'] < pcie['lnkcap_gts'])
        link = read_pci_link(str(node_dir / 'sys'), nic['pci_address'])
        assert link['current_speed_gts'] == pcie['lnksta_gts'] and link['max_speed_gts'] == pcie['lnkcap_gts']
        hops = walk_upstream(str(node_dir / 'sys'), nic['pci_address'])
        assert hops, 'the NIC must sit behind a root port in the emulated tree'
        verdict = assess_link(link, hops)
        expected = 'degraded' if pcie['lnksta_gts'] < min(pcie['lnkcap_gts'], pcie['upstream_max_gts']) else 'ok'
        assert verdict['status'] == expected, verdict


def test_gen4_nic0_is_degraded_not_slot_limited(tmp_path):
    node_dir = tmp_path / 'node01'
    hardware.materialize('gen4-nic0', 'node01', 'new', str(node_dir), FABRIC)
    sysfs = str(node_dir / 'sys')
    link = parser('pcie', 'read_pci_link')(sysfs, '0000:1a:00.0')
    verdict = parser('pcie', 'assess_link')(link, parser('pcie', 'walk_upstream')(sysfs, '0000:1a:00.0'))
    assert verdict['status'] == 'degraded' and verdict['bottleneck'] == 'device'
    link3 = parser('pcie', 'read_pci_link')(sysfs, '0000:5d:00.0')
    assert parser('pcie', 'assess_link')(link3, parser('pcie', 'walk_upstream')(sysfs, '0000:5d:00.0'))['status'] == 'ok'


def test_mellanox_firmware_tools(node):
    node_dir, profile, _state = node
    for nic in profile['hardware']['nics']:
        flint = parser('mlx', 'parse_flint')(tool_output(node_dir, 'flint', '-d', nic['pci_address'], 'q'))
        assert flint['fw_version'] == nic['fw_version'] and flint['psid'] == nic['psid']
        config = parser('mlx', 'parse_mlxconfig')(tool_output(node_dir, 'mlxconfig', '-d', nic['pci_address'], 'q'))
        assert config['parameters']['CQE_COMPRESSION'].startswith(nic['cqe_compression'])
        assert config['parameters']['LINK_TYPE_P1'].startswith('IB' if nic['link_layer'] == 'InfiniBand' else 'ETH')
        link = parser('mlx', 'parse_mlxlink')(tool_output(node_dir, 'mlxlink', '-d', nic['name']))
        operational = link['sections']['Operational Info']
        assert operational['Physical state'] == ('LinkUp' if nic['state'] == 'ACTIVE' else nic['phys_state'])


def test_ethtool_counters(node):
    node_dir, profile, state = node
    emulated = [nic for nic in state['nics'] if not nic['netdev_real']]
    nic = emulated[0]
    stats = parser('ethtool', 'parse_ethtool_stats')(tool_output(node_dir, 'ethtool', '-S', nic['netdev']))
    rate = profile['hardware']['nics'][nic['index']]['pause_rate_per_s']
    # A pause-storm profile (pfc-pause-storm) counts frames from the moment the node was made; the others count none.
    assert (stats['counters']['rx_pause_ctrl_phy'] > 0) if rate else (stats['counters']['rx_pause_ctrl_phy'] == 0)


def test_pause_storm_counters_grow(tmp_path):
    node_dir = tmp_path / 'node01'
    state = hardware.materialize('healthy-400g', 'node01', 'new', str(node_dir), FABRIC)
    hardware.apply_fault(str(node_dir), 'pause-storm')
    netdev = state['nics'][1]['netdev']
    parse = parser('ethtool', 'parse_ethtool_stats')
    first = parse(tool_output(node_dir, 'ethtool', '-S', netdev))['counters']['rx_pause_ctrl_phy']
    time.sleep(0.3)
    second = parse(tool_output(node_dir, 'ethtool', '-S', netdev))['counters']['rx_pause_ctrl_phy']
    assert second - first >= 0.2 * hardware.PAUSE_STORM_RATE


def test_gpus(node):
    node_dir, profile, _state = node
    gpus = profile['hardware']['gpus']
    xml = parser('nvidia', 'parse_nvidia_smi_xml')(tool_output(node_dir, 'nvidia-smi', '-q', '-x'))
    assert xml['gpu_count'] == gpus['count_present'] and len(xml['gpus']) == gpus['count_present']
    assert not xml['gpu_count_mismatch']
    assert {gpu['name'] for gpu in xml['gpus']} == {gpus['model']}
    topo = parser('nvidia', 'parse_nvidia_smi_topo')(tool_output(node_dir, 'nvidia-smi', 'topo', '-m'))
    assert len([name for name in topo['devices'] if name.startswith('GPU')]) == gpus['count_present']
    assert sorted(topo['nic_legend'].values()) == sorted(nic['name'] for nic in profile['hardware']['nics'])


def test_kernel_log(node):
    node_dir, profile, _state = node
    parse = parser('kernel_log', 'parse_kernel_log')
    for argv in (('journalctl', '-k', '--no-pager'), ('dmesg',)):
        parsed = parse(tool_output(node_dir, *argv))
        xid_codes = sorted(event.get('code') for event in parsed['xid'])
        expected = [79] if profile['hardware']['gpus']['xid_lines'] else []
        # A burn-in leaves application Xids (13, 31, 43) on three GPUs, and a link down and up on every port.
        burnin = [13] * 3 + [31] * 3 + [43] * 3 if profile['hardware']['host']['burnin_hours_ago'] else []
        assert [int(code) for code in xid_codes] == sorted(expected + burnin)
        assert bool(parsed['fallen_off_bus']) == bool(expected)
        downs = [event for event in parsed['link_events'] if event.get('event') == 'down']
        assert len(downs) == (len(profile['hardware']['nics']) if burnin else 0)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def test_perftest_bandwidth_per_hca(node):
    node_dir, profile, _state = node
    parse = parser('perftest', 'parse_perftest')
    summarize = parser('perftest', 'summarize_perftest')
    seen = set()
    for nic in profile['hardware']['nics']:
        if (nic['state'], nic['bw_gbytes_s']) in seen:
            continue
        seen.add((nic['state'], nic['bw_gbytes_s']))
        if nic['state'] != 'ACTIVE':
            proc = run_tool(node_dir, 'ib_write_bw', '-d', nic['name'], '127.0.0.1')
            assert proc.returncode != 0
            continue
        port = str(_free_port())
        env = dict(os.environ, NETVAL_LAB_NODE_DIR=str(node_dir), NETVAL_LAB_PERFTEST_WAIT='20')
        server = subprocess.Popen([str(node_dir / 'bin' / 'ib_write_bw'), '-d', nic['name'], '-p', port, '-F'],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        try:
            client = None
            for _attempt in range(50):
                client = run_tool(node_dir, 'ib_write_bw', '-d', nic['name'], '-p', port, '-F', '127.0.0.1')
                if client.returncode == 0 or "Couldn't connect" not in client.stderr:
                    break
                time.sleep(0.1)
            server_out, _err = server.communicate(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
        assert client.returncode == 0, client.stderr
        assert server.returncode == 0
        for text, side in ((client.stdout, 'client'), (server_out, 'server')):
            parsed = parse(text)
            assert parsed['device'] == nic['name'] and parsed['side'] == side
            assert parsed['bw_unit'] and 'MB/sec' in parsed['bw_unit']
            measured = summarize(parsed)['bw_avg_gbytes_s']
            assert measured == pytest.approx(nic['bw_gbytes_s'], rel=0.005), (nic['name'], measured)
            raw = parsed['results'][-1]['bw_avg']
            assert raw * MIB / 1e9 == pytest.approx(nic['bw_gbytes_s'], rel=0.005)


def test_nccl_transport_and_busbw(node, tmp_path):
    """Two ranks, one on the node and one on its peer, as orted starts them: the job's busbw is one rail's figure times
    the rails both hosts use over NET/IB (the profile's socket figure over NET/Socket)."""
    node_dir, profile, state = node
    parse = parser('nccl', 'parse_nccl_tests')
    peer_dir = tmp_path / 'peer01'
    peer = hardware.materialize(profile, 'peer01', 'peer', str(peer_dir), FABRIC)
    # The rails the plan would test: the ports NCCL can connect (InfiniBand, or RoCE with an IPv4 RoCE v2 GID).
    used = {}
    for host, hw in (('node01', state), ('peer01', peer)):
        usable = sorted(nic['name'] for nic in hw['nics'] if nic['state'] == 'ACTIVE' and (
            nic['link_layer'] == 'InfiniBand' or any(gid['type'] == 'RoCE v2' and gid['ipv4'] for gid in nic['gids'])))
        used[host] = usable[:hw['nccl'].get('hcas_used') or len(usable)]
    hca = '=' + ','.join(sorted(set(name for names in used.values() for name in names)))
    if state['gpus'].get('fabric_manager') == 'stopped':
        # Without nvidia-fabricmanager an NVSwitch board's CUDA does not start: the node's rank fails before any collective (in a
        # job, mpirun then ends the peer's ranks; here the node's rank runs alone).
        proc = run_tool(node_dir, 'all_reduce_perf', '-b', '8', '-e', '8G', '-f', '2', '-g', '1', env={'NCCL_DEBUG': 'INFO', 'NCCL_IB_HCA': hca})
        assert proc.returncode != 0 and "'system not yet initialized'" in proc.stdout + proc.stderr, proc.stdout
        return
    (rc, text, err), (peer_rc, peer_text, _peer_err) = run_ranks(
        [node_dir, peer_dir], 'all_reduce_perf', ['-b', '8', '-e', '8G', '-f', '2', '-g', '1'], env={'NCCL_DEBUG': 'INFO', 'NCCL_IB_HCA': hca})
    assert (rc, peer_rc) == (0, 0), err
    nccl = state['nccl']
    parsed = parse(text + peer_text)
    transport = 'Socket' if 'Socket' in (nccl['transport'], peer['nccl']['transport']) else 'IB'
    # Each rank logs its own host's choice; the job rides what every rank can (its channels).
    assert parsed['transport'] == transport and transport in parsed['transports_seen']
    assert parsed['gdr'] == (transport == 'IB' and nccl['gdr'] and peer['nccl']['gdr'])
    assert not parsed['multiple_jobs'] and [rank['host'] for rank in parsed['ranks']] == ['node01', 'peer01']
    largest = max(parsed['rows'], key=lambda row: row['size_bytes'])
    if transport == 'IB':
        assert parsed['ib_hcas_by_host'] == used
        expected = min(nccl['busbw_gbs'], peer['nccl']['busbw_gbs']) * min(len(names) for names in used.values())
    else:
        assert 'node01' not in parsed['ib_hcas_by_host']
        expected = min(nccl['socket_busbw_gbs'], peer['nccl']['socket_busbw_gbs'])
    assert largest['oop_busbw_gbs'] == pytest.approx(expected, rel=0.005)
    assert parsed['avg_busbw_gbs'] < expected


def test_nccl_needs_nccl_debug_info_for_transport(tmp_path):
    """Like real NCCL: without NCCL_DEBUG=INFO there are no NET/... lines, so the transport is unknown, not IB."""
    dirs = [tmp_path / 'node01', tmp_path / 'peer01']
    hardware.materialize('healthy-400g', 'node01', 'new', str(dirs[0]), FABRIC)
    hardware.materialize('healthy-400g', 'peer01', 'peer', str(dirs[1]), FABRIC)
    (rc, text, _err), _peer = run_ranks(dirs, 'all_reduce_perf', ['-b', '1G', '-e', '1G'])
    parsed = parser('nccl', 'parse_nccl_tests')(text)
    assert rc == 0 and parsed['transport'] is None and parsed['rows']


@pytest.mark.parametrize('json_flag', [(), ('-j',)])
def test_dcgmi_results(node, json_flag):
    node_dir, profile, _state = node
    parse = parser('dcgmi', 'parse_dcgmi_diag')
    expected = profile['hardware']['dcgmi']['results']
    if 'dcgmi' in (profile['hardware']['host'].get('tools_missing') or []):
        assert not os.path.exists(os.path.join(str(node_dir), 'bin', 'dcgmi'))  # dcgmi-missing: DCGM not installed
        return
    proc = run_tool(node_dir, 'dcgmi', 'diag', '-r', '2', *json_flag)
    if profile['hardware']['dcgmi']['hostengine'] == 'stopped':
        # No host engine to connect to: dcgmi says so, and the module's classifier names it.
        assert proc.returncode != 0 and parser('dcgmi', 'classify_connection_error')(proc.stdout)
        return
    failed = sorted(test for test in ('PCIe', 'GPU Memory') if expected[test] == 'Fail')
    assert proc.returncode == (226 if failed else 0)
    parsed = parse(proc.stdout)
    assert parsed['ran'] and parsed['version'] == profile['hardware']['dcgmi']['version']
    assert sorted(parsed['failed_tests']) == failed
    assert parsed['overall'] == ('fail' if failed else 'pass')
    if failed:
        assert parsed['gpus_failed'] == [profile['hardware']['gpus']['count_present'] - 1]


def test_lab_tools_run_under_system_python(tmp_path):
    """The wrappers exec /usr/bin/python3 (what the lab nodes have), not the venv's interpreter."""
    node_dir = tmp_path / 'node01'
    hardware.materialize('healthy-100g', 'node01', 'new', str(node_dir), FABRIC)
    with open(str(node_dir / 'bin' / 'ibstat'), encoding='utf-8') as handle:
        wrapper = handle.read()
    assert wrapper.startswith('#!/bin/sh\n')
    assert 'exec /usr/bin/python3 -S -c "import sys; from netval_lab.tools import main; sys.exit(main())" ibstat "$@"' in wrapper
    assert 'CA \'mlx5_0\'' in tool_output(node_dir, 'ibstat')


def test_a_wrapped_tool_starts_without_site_runpy_or_what_only_other_calls_need(tmp_path):
    """The lab runs thousands of tool calls per run: the wrapper skips site and runpy, and an ethtool call (which reads
    the fabric's ledgers for its counters) imports neither subprocess nor uuid."""
    node_dir = tmp_path / 'node01'
    hardware.materialize('healthy-100g', 'node01', 'new', str(node_dir), FABRIC)
    with open(str(node_dir / 'bin' / 'ethtool'), encoding='utf-8') as handle:
        wrapper = handle.read()
    probe = wrapper.replace('sys.exit(main())', 'rc = main(); sys.stderr.write(chr(10) + \\" \\".join(sorted(sys.modules))); sys.exit(rc)')
    assert probe != wrapper
    script = tmp_path / 'ethtool-probe'
    script.write_text(probe)
    with open(str(node_dir / 'state.json'), encoding='utf-8') as handle:
        netdev = json.load(handle)['nics'][0]['netdev']
    proc = subprocess.run(['/bin/sh', str(script), '-S', netdev], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, check=False)
    loaded = set(proc.stderr.splitlines()[-1].split())
    assert proc.returncode == 0 and 'rx_bytes' in proc.stdout, proc.stdout + proc.stderr
    assert 'netval_lab.fabric' in loaded and 'netval_lab.tools_host' in loaded, proc.stderr
    assert not loaded & {'site', 'runpy', 'subprocess', 'uuid'}, sorted(loaded & {'site', 'runpy', 'subprocess', 'uuid'})
