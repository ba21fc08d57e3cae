"""Emulated tools (lab/netval_lab/tools.py): real-tool layout and real-tool errors.  Plain unit tests (tmp_path node dirs)."""
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from lab.netval_lab import hardware
from tests.lab.ranks import run_ranks
from tests.unit.fixtures import shared

FABRIC = {'fabric': [{'netdev': 'fab-peer01', 'ip': '127.0.0.1', 'peer_ip': '127.0.0.1', 'peer': 'peer01'}],
          'mgmt_ip': '10.251.0.11'}


@pytest.fixture(scope='module')
def nodes(tmp_path_factory):
    base = tmp_path_factory.mktemp('nodes')
    made = {}
    for profile in ('healthy-400g', 'spark-pair-throttled', 'gpu-missing'):
        made[profile] = base / profile
        hardware.materialize(profile, 'node01', 'new', str(made[profile]), FABRIC)
    return made


def run(node, tool, *args, **kwargs):
    env = dict(os.environ, NETVAL_LAB_NODE_DIR=str(node))
    env.update(kwargs.pop('env', {}))
    return subprocess.run([os.path.join(str(node), 'bin', tool)] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return str(sock.getsockname()[1])


# ------------------------------------------------------------------ layout identical to real outputs

def test_ibstat_layout_matches_real_output(nodes):
    real = shared('ibstat/ibstat_h100_12x_roce_2down_polling_disabled_gpud.txt').splitlines()
    ours = run(nodes['healthy-400g'], 'ibstat').stdout.splitlines()
    assert [re.sub(r':.*', ':', line) for line in ours[:17]] == [re.sub(r':.*', ':', line) for line in real[:17]]


def test_ibstatus_layout_matches_real_output(nodes):
    real = shared('ibstatus/ibstatus_a100_9x_hdr200_all_active_gpud.txt').splitlines()
    ours = run(nodes['healthy-400g'], 'ibstatus').stdout.splitlines()
    assert [line.split(':')[0] for line in ours[:9]] == [line.split(':')[0] for line in real[:9]]
    assert ours[6].index('400 Gb/sec') == real[6].index('200 Gb/sec')
    assert ours[4] == real[4] and ours[5] == real[5]


def test_show_gids_columns_match_real_output(nodes):
    real = shared('show_gids/show_gids_cx5_roce_v1v2_ipv4.txt').splitlines()
    ours = run(nodes['spark-pair-throttled'], 'show_gids').stdout.splitlines()
    assert ours[:2] == real[:2]
    row = [line for line in ours if '127.0.0.1' in line][0]
    assert row.split() == ['rocep1s0f0', '1', '2', '0000:0000:0000:0000:0000:ffff:7f00:0001', '127.0.0.1', 'v1', 'fab-peer01']
    ib_row = run(nodes['healthy-400g'], 'show_gids').stdout.splitlines()[2]
    assert ib_row.index('fe80:') == real[2].index('fe80:') and ib_row.index('v1') == real[2].index('v1')
    assert ours[-1].startswith('n_gids_found=')


def test_dcgmi_table_borders_match_real_output(nodes):
    real = shared('dcgmi/dcgmi_diag_r3_dcgm3.0.4_deployment_pass_dcgm55_truncated.txt').splitlines()
    ours = run(nodes['healthy-400g'], 'dcgmi', 'diag', '-r', '3').stdout.splitlines()
    assert ours[:4] == real[1:5]
    assert '| Denylist                  | Pass                                           |' in ours
    assert '+-----  Integration  -------+------------------------------------------------+' in ours
    assert all(len(line) == 78 for line in ours[1:])


def test_perftest_and_nccl_headers_match_real_output(nodes, tmp_path):
    node = nodes['healthy-400g']
    real = shared('perftest/ib_write_bw_ib_sweep_gbits_issue132_truncated.txt')
    port = free_port()
    # Both ends with the same options: perftest negotiates them and refuses a client that differs.
    server = subprocess.Popen([str(node / 'bin' / 'ib_write_bw'), '-p', port, '--report_gbits'],
                              env=dict(os.environ, NETVAL_LAB_NODE_DIR=str(node), NETVAL_LAB_PERFTEST_WAIT='20'),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    for _attempt in range(50):
        client = run(node, 'ib_write_bw', '-p', port, '--report_gbits', '127.0.0.1')
        if client.returncode == 0:
            break
        time.sleep(0.1)
    server.communicate(timeout=30)
    ours = client.stdout.splitlines()
    for line in (' Dual-port       : OFF\t\tDevice         : mlx5_0', ' Connection type : RC\t\tUsing SRQ      : OFF',
                 ' rdma_cm QPs\t : OFF', ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'):
        assert line in ours and ('> ' + line) in real.splitlines()
    row = ours[ours.index(' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]') + 1].split()
    assert float(row[3]) == pytest.approx(47.0 * 8, rel=0.001)
    nccl_real = shared('nccl-tests/all_gather_perf_2xGB10_single_16G_size_2.17.6_dgxspark25_truncated.txt').splitlines()
    peer = tmp_path / 'peer01'
    hardware.materialize('healthy-400g', 'peer01', 'peer', str(peer), FABRIC)
    (rc, text, _err), _peer = run_ranks([node, peer], 'all_gather_perf', ['-b', '16G', '-e', '16G'])
    assert rc == 0
    nccl = text.splitlines()
    for line in nccl_real[7:10]:
        assert line in nccl
    assert nccl[0].startswith('# nccl-tests version 2.17.6 nccl-headers=')
    assert re.match(r'^#  Rank  0 Group  0 Pid +\d+ on +node01 device  0 \[0000:1b:00\] NVIDIA H100 80GB HBM3$', nccl[5])


def test_lspci_verbose_link_lines(nodes):
    out = run(nodes['healthy-400g'], 'lspci', '-vvv', '-D', '-s', '0000:1a:00.0').stdout
    assert out.startswith('0000:1a:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n')
    assert '\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n' in out
    assert '\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n' in out
    assert '\tNUMA node: 0\n' in out
    nn = run(nodes['healthy-400g'], 'lspci', '-nn', '-d', '10de:').stdout.splitlines()
    assert len(nn) == 8 and nn[0] == '1b:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)'
    spark = run(nodes['spark-pair-throttled'], 'lspci', '-d', '15b3:').stdout.splitlines()
    assert spark[-1].startswith('0002:01:00.1 Ethernet controller: Mellanox')


def test_gpu_missing_counts(nodes):
    assert len(run(nodes['gpu-missing'], 'nvidia-smi', '-L').stdout.splitlines()) == 7
    assert 'cc:00.0' not in run(nodes['gpu-missing'], 'lspci', '-d', '10de:').stdout
    journal = run(nodes['gpu-missing'], 'journalctl', '-k', '--no-pager').stdout
    assert re.search(r"^\w{3} \d{2} \d\d:\d\d:\d\d node01 kernel: NVRM: Xid \(PCI:0000:cc:00\): 79, ", journal, re.M)


def test_kernel_log_includes_lab_events(nodes):
    node = nodes['healthy-400g']
    (node / 'log' / 'kernel.log').write_text('%.3f mlx5_core 0000:1a:00.0 fab-peer01: Link down\n'
                                             '[ 1200.5] mlx5_core 0000:1a:00.0 fab-peer01: Link up\n' % time.time())
    dmesg = run(node, 'dmesg').stdout.splitlines()
    assert dmesg[-1] == '[1200.500000] mlx5_core 0000:1a:00.0 fab-peer01: Link up'.replace('[1200', '[ 1200')
    assert any(line.endswith('fab-peer01: Link down') for line in dmesg)
    grep = run(node, 'journalctl', '-k', '-o', 'cat', '--grep', 'fab-peer01: Link').stdout.splitlines()
    assert sorted(grep) == ['mlx5_core 0000:1a:00.0 fab-peer01: Link down', 'mlx5_core 0000:1a:00.0 fab-peer01: Link up']


def test_ethtool_emulated_and_real(nodes):
    node = nodes['healthy-400g']
    info = run(node, 'ethtool', '-i', 'fab-peer01').stdout
    assert 'firmware-version: 28.39.2048 (MT_0000000838)' in info and 'bus-info: 0000:1a:00.0' in info
    channels = run(node, 'ethtool', '-l', 'ibp59s0').stdout.splitlines()
    assert channels[0] == 'Channel parameters for ibp59s0:' and channels[-1] == 'Combined:\t64'
    real = run(node, 'ethtool', '-i', 'lo')
    assert 'mlx5' not in real.stdout and real.returncode in (0, 71, 75, 76)


# ------------------------------------------------------------------ real-tool errors

@pytest.mark.parametrize('tool, args, rc, message', [
    ('ibstat', ('mlx5_42',), 255, "stat of IB device 'mlx5_42' failed"),
    ('ibstat', ('-z',), 255, 'Usage: ibstat'),
    ('lspci', ('-z',), 1, "lspci: invalid option -- 'z'"),
    ('flint', ('-d', 'mlx5_42', 'q'), 1, '-E- Cannot open Device: mlx5_42'),
    ('mlxconfig', ('-d', 'mlx5_0', 'set', 'SRIOV_EN=1'), 1, 'not emulated'),
    ('nvidia-smi', ('--bogus',), 2, ''),
    ('dcgmi', ('diag', '-r', '9'), 255, 'Invalid value "9"'),
    ('dcgmi', ('diag', '--bogus'), 255, 'PARSE ERROR'),
    ('ib_write_bw', ('--bogus',), 1, "unrecognized option '--bogus'"),
    ('ib_write_bw', ('-d', 'mlx5_42', '127.0.0.1'), 1, ' Unable to find the Infiniband/RoCE device'),
    ('all_reduce_perf', ('-g', '9'), 2, ''),
    ('dmesg', ('--bogus',), 1, "dmesg: unrecognized option '--bogus'"),
])
def test_errors_like_the_real_tools(nodes, tool, args, rc, message):
    proc = run(nodes['healthy-400g'], tool, *args)
    assert proc.returncode == rc, (proc.stdout, proc.stderr)
    assert message in proc.stderr + proc.stdout
    assert 'Traceback' not in proc.stderr


def test_perftest_connect_failure_is_real(nodes):
    port = free_port()
    proc = run(nodes['healthy-400g'], 'ib_write_bw', '-p', port, '127.0.0.1')
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == "Couldn't connect to 127.0.0.1:%s" % port


def test_perftest_busy_port_fails_for_real(nodes):
    with socket.socket() as busy:
        busy.bind(('0.0.0.0', 0))
        busy.listen(1)
        proc = run(nodes['healthy-400g'], 'ib_write_bw', '-p', str(busy.getsockname()[1]))
    assert proc.returncode == 1 and "Couldn't listen to port" in proc.stderr


def test_perftest_down_port_and_cuda_and_duration(nodes):
    spark = nodes['spark-pair-throttled']
    down = run(spark, 'ib_write_bw', '-d', 'rocep1s0f1', '127.0.0.1')
    assert down.returncode == 1 and 'Port number 1 state is Down' in down.stderr
    node = nodes['healthy-400g']
    port = free_port()
    env = dict(os.environ, NETVAL_LAB_NODE_DIR=str(node), NETVAL_LAB_PERFTEST_WAIT='20')
    server = subprocess.Popen([str(node / 'bin' / 'ib_write_bw'), '-d', 'mlx5_1', '-p', port, '-D', '1'], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    started = time.time()
    for _attempt in range(50):
        # mlx5_1's own GPU is GPU 1 in PCI order (nvidia-smi's numbering), as CUDA numbers it with CUDA_DEVICE_ORDER=PCI_BUS_ID.
        client = run(node, 'ib_write_bw', '-d', 'mlx5_1', '-p', port, '-D', '1', '--use_cuda=1', '127.0.0.1',
                     env={'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'})
        if client.returncode == 0:
            break
        time.sleep(0.1)
    server_out = server.communicate(timeout=30)[0]
    assert time.time() - started >= 1.0
    assert client.stdout.startswith(" WARNING: BW peak won't be measured in this run.\ninitializing CUDA\n")
    assert '[pid = ' in client.stdout and 'device name = [NVIDIA H100 80GB HBM3]' in client.stdout
    row = client.stdout.splitlines()[-2].split()
    assert row[2] == '0.00' and float(row[3]) == pytest.approx(46.5e9 / 2 ** 20, rel=0.0001)
    assert server_out.splitlines()[-2].split()[3] == row[3]


def test_missing_state_is_a_clean_error(tmp_path):
    node = tmp_path / 'ghost'
    hardware.write_wrappers(str(node / 'bin'), str(node))
    proc = run(node, 'ibstat')
    assert proc.returncode == 1 and 'cannot read the node state' in proc.stderr and 'Traceback' not in proc.stderr


def _bw_average(output):
    """BW average of the last result row of a perftest output."""
    return float(output.splitlines()[-2].split()[3])


def test_two_sessions_overlapping_on_one_peer_hca_each_get_about_half(tmp_path):
    """The fabric model: a peer HCA carries one session at full rate, two overlapping sessions at about half each."""
    peer, node = tmp_path / 'peer01', tmp_path / 'node01'
    hardware.materialize('healthy-400g', 'peer01', 'peer', str(peer), FABRIC)
    hardware.materialize('healthy-400g', 'node01', 'new', str(node), FABRIC)
    env_peer = dict(os.environ, NETVAL_LAB_NODE_DIR=str(peer), NETVAL_LAB_PERFTEST_WAIT='20')

    def session(port, node_device):
        server = subprocess.Popen([str(peer / 'bin' / 'ib_send_bw'), '-d', 'mlx5_0', '-p', port, '-D', '1'], env=env_peer,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        time.sleep(0.3)
        client = subprocess.Popen([str(node / 'bin' / 'ib_send_bw'), '-d', node_device, '-p', port, '-D', '1', '127.0.0.1'],
                                  env=dict(os.environ, NETVAL_LAB_NODE_DIR=str(node)), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True)
        return server, client

    alone_server, alone_client = session(free_port(), 'mlx5_0')
    alone = _bw_average(alone_client.communicate(timeout=30)[0])
    alone_server.communicate(timeout=30)
    assert alone == pytest.approx(47.0e9 / 2 ** 20, rel=0.001)
    first, second = session(free_port(), 'mlx5_0'), session(free_port(), 'mlx5_1')
    figures = [_bw_average(client.communicate(timeout=30)[0]) for _server, client in (first, second)]
    server_figures = [_bw_average(server.communicate(timeout=30)[0]) for server, _client in (first, second)]
    assert figures == pytest.approx([alone / 2, alone / 2], rel=0.01)
    assert server_figures == figures  # both ends print the figure of the same session


# ------------------------------------------------------------------ nccl-tests ranks: NCCL's settings as NCCL applies them

def test_mpirun_is_the_real_one_not_an_emulation(nodes):
    assert 'mpirun' not in hardware.TOOLS and not (nodes['healthy-400g'] / 'bin' / 'mpirun').exists()


def pair(tmp_path, profile, peer_profile=None):
    node, peer = tmp_path / 'node01', tmp_path / 'peer01'
    hardware.materialize(profile, 'node01', 'new', str(node), FABRIC)
    hardware.materialize(peer_profile or profile, 'peer01', 'peer', str(peer), FABRIC)
    return [node, peer]


def test_nccl_ib_hca_prefix_exact_and_exclude_forms_select_as_nccl_does(tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(hardware.__file__), '..'))
    try:
        from netval_lab import tools_nccl  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    devices = ['mlx5_%d' % i for i in range(12)]
    assert [d for d in devices if tools_nccl.nccl_list_selects('mlx5_1', d, 1)] == ['mlx5_1', 'mlx5_10', 'mlx5_11']
    assert [d for d in devices if tools_nccl.nccl_list_selects('=mlx5_1:1', d, 1)] == ['mlx5_1']
    assert [d for d in devices if tools_nccl.nccl_list_selects('^=mlx5_1', d, 1)] == [d for d in devices if d != 'mlx5_1']
    assert not tools_nccl.nccl_list_selects('=mlx5_1:2', 'mlx5_1', 1)
    dirs = pair(tmp_path, 'healthy-400g')
    env = {'NCCL_DEBUG': 'INFO', 'NCCL_IB_HCA': '=mlx5_1:1,mlx5_3:1'}
    (rc, text, _err), (_prc, peer_text, _perr) = run_ranks(dirs, 'all_reduce_perf', ['-b', '1G', '-e', '1G'], env=env)
    assert rc == 0
    assert 'node01:' in text and 'NCCL INFO NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_3:1/IB [RO]; OOB ' in text
    assert 'peer01:' in peer_text and 'NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_3:1/IB' in peer_text


def test_nccl_bootstrap_needs_an_interface_its_socket_ifname_selects(tmp_path):
    (rc, text, _err), _peer = run_ranks(pair(tmp_path, 'healthy-400g'), 'all_reduce_perf', ['-b', '1G', '-e', '1G'],
                                        env={'NCCL_DEBUG': 'INFO', 'NCCL_SOCKET_IFNAME': '=ib-nowhere0'})
    assert rc == 3 and 'NCCL WARN Bootstrap : no socket interface found' in text and 'Test NCCL failure' in text


def test_a_roce_gid_index_must_name_a_roce_v2_ipv4_gid(tmp_path):
    dirs = pair(tmp_path, 'spark-pair-throttled')
    hca = {'NCCL_DEBUG': 'INFO', 'NCCL_IB_HCA': '=rocep1s0f0:1,rocep1s0f1:1'}
    (rc, text, _err), _peer = run_ranks(dirs, 'all_reduce_perf', ['-b', '8', '-e', '128M'], env=dict(hca, NCCL_IB_GID_INDEX='1'))
    assert rc == 3 and 'misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed' in text
    ok = run_ranks(dirs, 'all_reduce_perf', ['-b', '8', '-e', '128M'], env=dict(hca, NCCL_IB_GID_INDEX='3'))
    assert [entry[0] for entry in ok] == [0, 0]
    # Unset, NCCL (2.21+) finds each port's RoCE v2 IPv4 GID itself.
    assert [entry[0] for entry in run_ranks(dirs, 'all_reduce_perf', ['-b', '8', '-e', '128M'], env=hca)] == [0, 0]


def test_a_profile_can_make_nccl_ride_fewer_rails_than_it_selects(tmp_path):
    dirs = pair(tmp_path, 'nccl-one-rail', 'healthy-400g')
    (rc, text, _err), _peer = run_ranks(dirs, 'all_reduce_perf', ['-b', '16G', '-e', '16G'],
                                        env={'NCCL_DEBUG': 'INFO', 'NCCL_IB_HCA': '=' + ','.join('mlx5_%d:1' % i for i in range(8))})
    assert rc == 0 and 'NET/IB : Using [0]mlx5_0:1/IB [RO]' in text
    assert text.count('NCCL WARN NET/IB : Unable to open device') == 7
    busbw = float([line for line in text.splitlines() if line.strip().startswith('17179869184')][0].split()[7])
    assert busbw == pytest.approx(46.0, rel=0.005)  # one rail at the runbook's healthy per-NIC figure


def test_a_profile_can_leave_a_tool_uninstalled(tmp_path):
    node = tmp_path / 'node'
    hardware.materialize('dcgmi-missing', 'node09', 'new', str(node), FABRIC)
    assert not (node / 'bin' / 'dcgmi').exists() and (node / 'bin' / 'nvidia-smi').exists()
    with pytest.raises(ValueError, match='dcgmx not among the emulated tools'):
        hardware.write_wrappers(str(node / 'bin'), str(node), ['dcgmx'])


# ------------------------------------------------------------------ dispatch: a tool imports only its own family

def test_every_wrapped_tool_dispatches_to_a_function_of_its_family():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(hardware.__file__), '..'))
    try:
        from netval_lab import tools, tools_nccl, tools_perftest  # pylint: disable=import-outside-toplevel
        assert set(tools.PERFTESTS) == set(tools_perftest.PERFTEST_TITLES)
        assert set(tools.NCCL_BINARIES) == set(tools_nccl.BUSBW_FACTORS)
        dispatched = set(tools.TOOLS) | set(tools.PERFTESTS) | set(tools.NCCL_BINARIES) | {'ethtool'}
        assert dispatched == set(hardware.TOOLS)
        for module, function in tools.TOOLS.values():
            assert callable(tools._tool(module, function))  # pylint: disable=protected-access
    finally:
        sys.path.pop(0)


def test_a_tool_call_imports_its_family_only(nodes):
    probe = ('import sys, runpy; sys.argv = ["tools", "ibstat"]\n'
             'try:\n    runpy.run_module("netval_lab.tools", run_name="__main__")\n'
             'except SystemExit:\n    pass\n'
             'sys.stderr.write(" ".join(sorted(m for m in sys.modules if m.startswith("netval_lab"))))\n')
    lab_dir = os.path.join(os.path.dirname(hardware.__file__), '..')
    env = dict(os.environ, PYTHONPATH=lab_dir, NETVAL_LAB_NODE_DIR=str(nodes['healthy-400g']))
    proc = subprocess.run(['/usr/bin/python3', '-c', probe], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert 'CA type' in proc.stdout or 'CA ' in proc.stdout, proc.stdout + proc.stderr
    loaded = set(proc.stderr.split())
    assert 'netval_lab.tools_rdma' in loaded
    assert not loaded & {'netval_lab.tools_perftest', 'netval_lab.tools_nccl', 'netval_lab.tools_gpu', 'netval_lab.tools_pci'}


# ------------------------------------------------------------------ a real site: ring limits, rails by device, negotiation

def real_site_node(base, profile, host, role, index):
    """A host of a real site (lab/netval_lab/site.py) with its ports as the lab builds them, materialized under ``base``."""
    from lab.netval_lab import profiles, site  # pylint: disable=import-outside-toplevel
    hw = profiles.resolve_role(profiles.load_profile(profile), role)
    ports = site.host_ports(index, role, site.host_nics(hw, len(hw['nics'])), len(hw['nics']))
    node = base / host
    hardware.materialize(profile, host, role, str(node), {'site': 'real', 'ports': ports, 'mgmt_ip': '10.251.0.%d' % (10 + index)})
    return node


def test_ethtool_never_shows_a_ring_above_its_maximum_and_refuses_one(nodes):
    node = nodes['healthy-400g']
    ring = run(node, 'ethtool', '-g', 'ibp59s0').stdout
    assert 'Pre-set maximums:\nRX:\t\t\t8192\n' in ring and 'Current hardware settings:\nRX:\t\t\t8192\n' in ring
    refused = run(node, 'ethtool', '-G', 'ibp59s0', 'rx', '16384')
    assert refused.returncode == 81
    assert refused.stderr == 'netlink error: requested ring size exceeds maximum (offset 36)\nnetlink error: Invalid argument\n'
    assert run(node, 'ethtool', '-G', 'ibp59s0', 'rx', '4096').returncode == 0
    assert 'Current hardware settings:\nRX:\t\t\t4096\n' in run(node, 'ethtool', '-g', 'ibp59s0').stdout
    assert run(node, 'ethtool', '-G', 'ibp59s0', 'rx', '8192').returncode == 0


def _session(server_node, client_node, server_args, client_args, tool='ib_send_bw'):
    port = free_port()
    server = subprocess.Popen([str(server_node / 'bin' / tool), '-p', port] + list(server_args),
                              env=dict(os.environ, NETVAL_LAB_NODE_DIR=str(server_node), NETVAL_LAB_PERFTEST_WAIT='20'),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    for _attempt in range(50):
        client = run(client_node, tool, '-p', port, *(list(client_args) + ['127.0.0.1']))
        if "Couldn't connect" not in client.stderr:
            break
        time.sleep(0.1)
    server_out, server_err = server.communicate(timeout=30)
    return client, server.returncode, server_out, server_err


def test_a_client_whose_options_differ_from_its_servers_is_refused_by_both(nodes):
    node = nodes['healthy-400g']
    client, server_rc, _out, server_err = _session(node, node, ['-d', 'mlx5_1', '-q', '4'], ['-d', 'mlx5_1'])
    assert client.returncode == 1 and server_rc == 1
    assert client.stderr.splitlines() == [' num_of_qps mismatch: local=1, remote=4', ' Failed to negotiate parameters']
    assert server_err.splitlines() == [' num_of_qps mismatch: local=4, remote=1', ' Failed to negotiate parameters']
    client, server_rc, _out, _err = _session(node, node, ['-d', 'mlx5_1', '-D', '2'], ['-d', 'mlx5_1'])
    assert client.returncode == 1 and 'test_type mismatch: local=ITERATIONS, remote=DURATION' in client.stderr


def test_roce_rails_are_isolated_a_cross_rail_pair_cannot_connect_a_same_rail_pair_can(tmp_path):
    node = real_site_node(tmp_path, 'healthy-400g-roce', 'node01', 'new', 1)
    peer = real_site_node(tmp_path, 'healthy-400g-roce', 'peer01', 'peer', 3)
    client, server_rc, _out, server_err = _session(peer, node, ['-d', 'mlx5_2', '-x', '3', '-D', '1'], ['-d', 'mlx5_0', '-x', '3', '-D', '1'])
    assert client.returncode == 1 and server_rc == 1
    assert re.match(r"^ Failed to modify QP 0x[0-9a-f]{6} to RTR\n Unable to Connect the HCA's through the link\n", client.stderr)
    assert 'rail 0 against rail 2 of a rail-isolated fabric' in client.stderr and 'Unable to Connect' in server_err
    same, server_rc, server_out, _err = _session(peer, node, ['-d', 'mlx5_2', '-x', '3', '-D', '1'], ['-d', 'mlx5_2', '-x', '3', '-D', '1'])
    assert same.returncode == 0 and server_rc == 0 and float(same.stdout.splitlines()[-2].split()[3]) > 40000
    # InfiniBand is one fabric: a pair across rails connects (through the spine), it is the plan's job not to make one.
    ib_node = real_site_node(tmp_path, 'healthy-400g', 'node02', 'new', 2)
    ib_peer = real_site_node(tmp_path, 'healthy-400g', 'peer02', 'peer', 4)
    across, _rc, _out, _err = _session(ib_peer, ib_node, ['-d', 'mlx5_2', '-D', '1'], ['-d', 'mlx5_0', '-D', '1'])
    assert across.returncode == 0, across.stderr
    # And never across link layers.
    mixed, _rc, _out, _err = _session(peer, ib_node, ['-d', 'mlx5_0', '-x', '3', '-D', '1'], ['-d', 'mlx5_0', '-D', '1'])
    assert mixed.returncode == 1 and 'link layer InfiniBand against Ethernet' in mixed.stderr


def test_a_real_site_box_has_its_storage_and_front_end_nics_beside_the_rails(tmp_path):
    node = real_site_node(tmp_path, 'healthy-400g', 'node01', 'new', 1)
    lines = run(node, 'ibdev2netdev').stdout.splitlines()
    assert len(lines) == 12 and 'mlx5_11 port 1 ==> enp41s0f1np1 (Down)' in lines and 'mlx5_10 port 1 ==> enp41s0f0np0 (Up)' in lines
    assert (node / 'sys' / 'class' / 'net' / 'ibp26s0' / 'mtu').read_text() == '4092\n'
    assert (node / 'sys' / 'class' / 'net' / 'enp169s0f0np0' / 'mtu').read_text() == '1500\n'
    assert (node / 'sys' / 'class' / 'infiniband' / 'mlx5_8' / 'ports' / '1' / 'rate').read_text() == '100 Gb/sec (4X EDR)\n'
    front = run(node, 'lspci', '-vvv', '-D', '-s', '0000:a9:00.0').stdout
    assert 'ConnectX-6 Dx' in front and 'LnkSta:\tSpeed 16GT/s' in front


# ------------------------------------------------------------------ issue 31: GPUDirect modes, GPU prerequisites, the node's clock

@pytest.fixture(scope='module')
def gpu_nodes(tmp_path_factory):
    base = tmp_path_factory.mktemp('gpu-nodes')
    made = {}
    for profile in ('healthy-400g', 'gdr-dmabuf', 'gdr-no-cuda-perftest', 'dcgm-hostengine-stopped', 'fabric-manager-stopped',
                    'persistence-off', 'acs-on-gpu-path', 'burnin-utc8'):
        made[profile] = base / profile
        hardware.materialize(profile, 'node01', 'new', str(made[profile]), FABRIC)
    return made


def perftest_pair(node, client_args, server_args=(), env=None):
    """Run one emulated perftest server and its client on one node dir; (client, server output)."""
    port = free_port()
    environ = dict(os.environ, NETVAL_LAB_NODE_DIR=str(node), NETVAL_LAB_PERFTEST_WAIT='20', **(env or {}))
    server = subprocess.Popen([str(node / 'bin' / 'ib_send_bw'), '-d', 'mlx5_2', '-p', port] + list(server_args), env=environ,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    for _attempt in range(80):
        client = run(node, 'ib_send_bw', '-d', 'mlx5_2', '-p', port, *(list(client_args) + ['127.0.0.1']), env=env or {})
        if client.returncode == 0 or server.poll() is not None:
            break
        time.sleep(0.1)
    if server.poll() is None:
        server.kill()
    return client, server.communicate(timeout=30)[0]


def test_perftest_help_lists_the_cuda_options_of_its_build(gpu_nodes):
    debian = run(gpu_nodes['gdr-no-cuda-perftest'], 'ib_send_bw', '--help')
    assert debian.returncode == 1 and debian.stdout.startswith('Usage:\n  ib_send_bw            start a server')
    assert '--use_cuda' not in debian.stdout
    ofed = run(gpu_nodes['healthy-400g'], 'ib_send_bw', '--help').stdout
    assert '--use_cuda=<cuda device id>' in ofed and '--use_cuda_bus_id=<cuda full BUS id>' in ofed and '--use_cuda_dmabuf' not in ofed
    assert '      --use_cuda_dmabuf Use CUDA DMA-BUF for GPUDirect RDMA testing' in run(gpu_nodes['gdr-dmabuf'], 'ib_send_bw', '--help').stdout


def test_perftest_refuses_cuda_options_its_build_lacks_as_the_real_one_does(gpu_nodes):
    debian = run(gpu_nodes['gdr-no-cuda-perftest'], 'ib_send_bw', '-d', 'mlx5_0', '--use_cuda=0', '127.0.0.1')
    real = fixtures_local('perftest/ib_read_bw_use_cuda_unsupported_build_debian12_perftest606.txt').splitlines()[:3]
    assert debian.returncode == 1 and debian.stderr.splitlines()[:3] == [real[0].replace('ib_read_bw', 'ib_send_bw')] + real[1:3]
    ofed = run(gpu_nodes['healthy-400g'], 'ib_send_bw', '-d', 'mlx5_0', '--use_cuda=0', '--use_cuda_dmabuf', '127.0.0.1')
    assert ofed.returncode == 1 and "unrecognized option '--use_cuda_dmabuf'" in ofed.stderr
    early = run(gpu_nodes['gdr-dmabuf'], 'ib_send_bw', '-d', 'mlx5_0', '--use_cuda_dmabuf', '--use_cuda=0', '127.0.0.1')
    assert early.returncode == 1 and early.stderr == 'CUDA DMA-BUF cannot be used without CUDA\n'


def test_dmabuf_node_needs_dmabuf_and_names_the_gpu_by_bus_id(gpu_nodes):
    node = gpu_nodes['gdr-dmabuf']
    bus = [g for g in hardware.build_state(hardware.profiles.load_profile('gdr-dmabuf'), 'node01', 'new', FABRIC)['gpus']['devices']
           if g['nic'] == 'mlx5_2'][0]['bus_id']
    plain = run(node, 'ib_send_bw', '-d', 'mlx5_2', '-p', free_port(), '--use_cuda_bus_id=%s' % bus)
    assert plain.returncode == 1 and "Couldn't allocate MR" in plain.stderr
    client, _server = perftest_pair(node, ['--use_cuda_bus_id=%s' % bus, '--use_cuda_dmabuf'], ['--use_cuda_bus_id=%s' % bus, '--use_cuda_dmabuf'])
    assert client.returncode == 0, client.stderr
    assert 'Got PCIe address of: %s' % bus in client.stdout and 'using DMA-BUF for GPU buffer address' in client.stdout
    wrong = run(node, 'ib_send_bw', '-d', 'mlx5_2', '-p', free_port(), '--use_cuda_bus_id=0000:ee:00.0', '--use_cuda_dmabuf')
    assert 'cuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID (0000:ee:00.0)' in wrong.stderr


def test_a_cuda_ordinal_without_pci_bus_order_lands_on_another_gpu(gpu_nodes):
    node = gpu_nodes['healthy-400g']
    ordered, _server = perftest_pair(node, ['-D', '1', '--use_cuda=2'], ['-D', '1', '--use_cuda=2'], env={'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'})
    fastest, _server = perftest_pair(node, ['-D', '1', '--use_cuda=2'], ['-D', '1', '--use_cuda=2'])
    bandwidth = [float(result.stdout.splitlines()[-2].split()[3]) for result in (ordered, fastest)]
    # GPU 2 in PCI order is mlx5_2's own GPU; CUDA's default order picks a GPU of the other socket: GPUDirect through the host.
    assert bandwidth[0] == pytest.approx(46.5e9 / 2 ** 20, rel=0.001) and bandwidth[1] == pytest.approx(0.55 * bandwidth[0], rel=0.01)


def test_acs_on_the_gpu_path_is_in_lspci_and_slows_gpudirect(gpu_nodes):
    node = gpu_nodes['acs-on-gpu-path']
    state = hardware.build_state(hardware.profiles.load_profile('acs-on-gpu-path'), 'node01', 'new', FABRIC)
    port = state['nics'][2]['upstream'][-1]
    text = run(node, 'lspci', '-vvv', '-s', port).stdout
    assert 'ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-' in text
    other = state['nics'][1]['upstream'][-1]
    assert 'ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-' in run(node, 'lspci', '-vvv', '-s', other).stdout
    client, _server = perftest_pair(node, ['-D', '1', '--use_cuda=2'], ['-D', '1', '--use_cuda=2'], env={'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'})
    assert float(client.stdout.splitlines()[-2].split()[3]) == pytest.approx(0.55 * 46.5e9 / 2 ** 20, rel=0.01)


def test_fabric_manager_persistence_and_dcgm_as_nvidia_smi_and_dcgmi_show_them(gpu_nodes):
    xml = run(gpu_nodes['fabric-manager-stopped'], 'nvidia-smi', '-q', '-x').stdout
    assert '<fabric>' in xml and '<state>In Progress</state>' in xml
    assert '<state>Completed</state>' in run(gpu_nodes['healthy-400g'], 'nvidia-smi', '-q', '-x').stdout
    stopped = run(gpu_nodes['fabric-manager-stopped'], 'ib_send_bw', '-d', 'mlx5_0', '--use_cuda=0', '127.0.0.1')
    assert stopped.returncode == 1 and 'cuInit(0) returned 802' in stopped.stderr
    assert '<persistence_mode>Disabled</persistence_mode>' in run(gpu_nodes['persistence-off'], 'nvidia-smi', '-q', '-x').stdout
    down = run(gpu_nodes['dcgm-hostengine-stopped'], 'dcgmi', 'discovery', '-l')
    real = fixtures_local('dcgmi/dcgmi_discovery_l_no_hostengine_dcgm_exporter_pod_blog.txt')
    assert down.returncode != 0 and down.stdout == real
    assert run(gpu_nodes['dcgm-hostengine-stopped'], 'dcgmi', 'diag', '-r', '1', '-j').stdout == real
    assert 'Open Kernel Module' in (gpu_nodes['gdr-dmabuf'] / 'proc' / 'driver' / 'nvidia' / 'version').read_text()
    assert 'nvidia_peermem' not in (gpu_nodes['gdr-dmabuf'] / 'proc' / 'modules').read_text()


def test_journalctl_reads_since_as_systemd_does_on_a_utc8_node_with_burn_in(gpu_nodes):
    node = gpu_nodes['burnin-utc8']
    day = run(node, 'journalctl', '-k', '-o', 'short-iso', '--no-pager', '--since=-24h').stdout
    assert day.count(': Link down') == 8 and 'Xid (PCI:0000:1b:00): 13' in day and '+0800 node01 kernel:' in day
    started = time.time() - 30
    assert run(node, 'journalctl', '-k', '-o', 'short-iso', '--no-pager', '--since=@%d' % started).stdout == '-- No entries --\n'
    # A zone-less time is the node's local time: the controller's UTC "now" on a UTC+8 node reaches eight hours back, into
    # the burn-in six hours ago (the bug of a window without a zone); with its zone it is the same instant on every node.
    utc_now = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(started))
    assert ': Link down' not in run(node, 'journalctl', '-k', '--no-pager', '--since=%s UTC' % utc_now).stdout
    assert run(node, 'journalctl', '-k', '--no-pager', '--since=%s' % utc_now).stdout.count(': Link down') == 8
    bad = run(node, 'journalctl', '-k', '--no-pager', '--since=the day before')
    assert bad.returncode == 1 and bad.stderr == 'Failed to parse timestamp: the day before\n'


def fixtures_local(name):
    from tests.unit.fixtures import local  # pylint: disable=import-outside-toplevel
    return local(name)
