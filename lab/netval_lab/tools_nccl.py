"""nccl-tests (all_reduce_perf and friends), one process per MPI rank.

Part of the netval lab's emulated tools (see tools.py); standard library only.  The launcher is the real one: Debian's
openmpi-bin ``mpirun`` on the node starts ``orted`` on the peer over the lab's real SSH, and ``orted`` starts the
ranks there.  Only the benchmark is emulated, per rank, as nccl-tests built with MPI=1 behaves:

* each rank reads Open MPI's rank variables (``OMPI_COMM_WORLD_RANK``, ``_SIZE``, ``_LOCAL_RANK``) and its own host's
  state (the node's hardware as its profile has it), and prints its own ``NCCL INFO`` lines, prefixed
  ``host:pid:tid [gpu]`` as NCCL does;
* NCCL's settings act as NCCL applies them: ``NCCL_IB_HCA`` (prefix match unless the list starts with ``=``, ``^``
  excludes), ``NCCL_SOCKET_IFNAME`` against the host's real interfaces, ``NCCL_IB_GID_INDEX`` against each RoCE port's
  GID table (unset: the RoCE v2 IPv4 GID, as NCCL 2.21+ chooses), ``NCCL_IB_DISABLE``;
* the ranks meet in the lab's shared state (``<lab root>/nccl-jobs/<job>/``), where real ranks would exchange the same
  facts through MPI: rank 0 waits for every rank, prints the rank lines and the result table.  Over NET/IB the bus
  bandwidth is the profile's per-rail figure times the rails every host uses (its ``nccl.hcas_used`` at most); over
  NET/Socket it is the profile's ``socket_busbw_gbs``.

Run without mpirun (no rank variables) it is one process with ``-g`` GPUs on its host, as the real binary is.
"""

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import time

from netval_lab.tool_common import ToolExit, node_dir, out

BUSBW_FACTORS = {'all_reduce_perf': lambda n: 2.0 * (n - 1) / n, 'all_gather_perf': lambda n: (n - 1.0) / n,
                 'reduce_scatter_perf': lambda n: (n - 1.0) / n, 'alltoall_perf': lambda n: (n - 1.0) / n,
                 'broadcast_perf': lambda n: 1.0, 'reduce_perf': lambda n: 1.0, 'sendrecv_perf': lambda n: 1.0}
REDOPS = {'all_reduce_perf': 'sum', 'reduce_scatter_perf': 'sum', 'reduce_perf': 'sum'}
# NCCL's bootstrap waits this long for every rank before it gives up (the lab's ranks start within a second or two).
RENDEZVOUS_S = 120.0
# nccl-tests' exit statuses (testResult_t): a CUDA error, an NCCL error.
CUDA_ERROR = 2
NCCL_ERROR = 3


# ============================================================================ arguments

def _nccl_args(args):
    opts = {'-b': '33554432', '-e': '33554432', '-f': '2', '-g': '1', '-t': '1', '-n': '20', '-w': '5', '-c': '1',
            '-i': None, '-d': 'float', '-o': 'sum', '-G': '0', '-a': '3', '-z': '0'}
    aliases = {'--minbytes': '-b', '--maxbytes': '-e', '--stepfactor': '-f', '--ngpus': '-g', '--nthreads': '-t',
               '--iters': '-n', '--warmup_iters': '-w', '--check': '-c', '--stepbytes': '-i', '--datatype': '-d',
               '--op': '-o', '--cudagraph': '-G', '--average': '-a', '--blocking': '-z'}
    index = 0
    while index < len(args):
        arg = args[index]
        key, _sep, value = arg.partition('=')
        key = aliases.get(key, key)
        if key not in opts:
            raise ToolExit(1, 'invalid option: %s\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n'
                              '\t[-g,--ngpus <gpus per thread>] \n\t[-b,--minbytes <min size in bytes>] \n'
                              '\t[-e,--maxbytes <max size in bytes>] \n\t[-i,--stepbytes <increment size>] \n'
                              '\t[-f,--stepfactor <increment factor>] \n\t[-n,--iters <iteration count>] \n' % arg)
        if not _sep:
            if index + 1 >= len(args):
                raise ToolExit(1, 'option requires an argument -- \'%s\'\n' % key.lstrip('-'))
            value = args[index + 1]
            index += 1
        opts[key] = value
        index += 1
    return opts


def _nccl_size(text):
    match = re.match(r'^(\d+)([KMGT]?)$', text.strip(), re.I)
    if not match:
        raise ToolExit(1, 'invalid size specified for [-b,--minbytes] or [-e,--maxbytes]: %s\n' % text)
    return int(match.group(1)) * {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4}[match.group(2).upper()]


def _nccl_code(version):
    parts = (version.split('.') + ['0', '0'])[:3]
    return '%d%02d%02d' % (int(parts[0]), int(parts[1]), int(parts[2]))


# ============================================================================ NCCL's own settings, as NCCL reads them

def parse_nccl_list(text):
    """NCCL's device/interface list syntax: (exclude, exact, [(name, port or None)]); '^' excludes, '=' matches exactly."""
    text = (text or '').strip()
    exclude = text.startswith('^')
    if exclude:
        text = text[1:]
    exact = text.startswith('=')
    if exact:
        text = text[1:]
    items = []
    for item in text.split(','):
        item = item.strip()
        if not item:
            continue
        name, _sep, port = item.partition(':')
        items.append((name, int(port) if port.isdigit() else None))
    return exclude, exact, items


def nccl_list_selects(spec, name, port=None):
    """Whether an NCCL_IB_HCA / NCCL_SOCKET_IFNAME value selects device ``name`` (port ``port``): unset selects all."""
    if not spec:
        return True
    exclude, exact, items = parse_nccl_list(spec)
    hit = any((name == wanted if exact else name.startswith(wanted)) and (want_port is None or port is None or port == want_port)
              for wanted, want_port in items)
    return hit != exclude


def _interfaces():
    """[(ifname, address)] of this host's admin-up IPv4 interfaces, loopback left out (what NCCL's bootstrap looks at)."""
    try:
        proc = subprocess.run(['ip', '-j', '-4', 'addr', 'show'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=10, check=False)
        links = json.loads(proc.stdout or '[]')
    except (OSError, ValueError, subprocess.SubprocessError):
        return []
    found = []
    for link in links:
        if link.get('ifname') == 'lo' or 'UP' not in (link.get('flags') or []):
            continue
        for addr in link.get('addr_info') or []:
            if addr.get('family') == 'inet' and addr.get('local'):
                found.append((link['ifname'], addr['local']))
    return found


def bootstrap_interface(spec, interfaces):
    """The interface NCCL's bootstrap takes: the first NCCL_SOCKET_IFNAME selects; unset, an ib* one first, never docker*
    or lo.  None: 'Bootstrap : no socket interface found'."""
    if spec:
        chosen = [entry for entry in interfaces if nccl_list_selects(spec, entry[0])]
    else:
        usable = [entry for entry in interfaces if not entry[0].startswith(('docker', 'lo'))]
        chosen = [entry for entry in usable if entry[0].startswith('ib')] + [entry for entry in usable if not entry[0].startswith('ib')]
    return chosen[0] if chosen else None


def _roce_v2_ipv4_gid(nic):
    for gid in nic.get('gids') or []:
        if gid['type'] == 'RoCE v2' and gid.get('ipv4'):
            return gid['index']
    return None


def gid_problem(nic, env):
    """Why NCCL cannot connect a RoCE port's queue pairs with this GID setting (None: it can; InfiniBand needs no GID)."""
    if nic['link_layer'] == 'InfiniBand':
        return None
    wanted = env.get('NCCL_IB_GID_INDEX')
    if wanted in (None, '', '-1'):
        return None if _roce_v2_ipv4_gid(nic) is not None else 'no RoCE v2 GID with an IPv4 address on %s' % nic['name']
    by_index = dict((str(gid['index']), gid) for gid in nic.get('gids') or [])
    gid = by_index.get(str(wanted))
    if gid is None or gid['type'] != 'RoCE v2' or not gid.get('ipv4'):
        return 'GID index %s of %s is not a RoCE v2 GID with an IPv4 address' % (wanted, nic['name'])
    return None


def ib_devices(state, env):
    """(the ACTIVE ports NCCL opens, the ones NCCL_IB_HCA selects but the profile's nccl.hcas_used leaves unopened)."""
    active = [nic for nic in sorted(state['nics'], key=lambda nic: nic['name']) if nic['state'] == 'ACTIVE']
    selected = [nic for nic in active if nccl_list_selects(env.get('NCCL_IB_HCA'), nic['name'], 1)]
    limit = state['nccl'].get('hcas_used')
    if limit is None or limit >= len(selected):
        return selected, []
    return selected[:max(0, limit)], selected[max(0, limit):]


# ============================================================================ one rank

def _world():
    """(rank, size, local rank, job key) under mpirun, None when run on its own."""
    env = os.environ
    if 'OMPI_COMM_WORLD_RANK' not in env:
        return None
    job = '%s-%s' % (env.get('OMPI_MCA_ess_base_jobid', '0'),
                     hashlib.sha256(env.get('OMPI_MCA_orte_hnp_uri', '').encode()).hexdigest()[:12])
    return int(env['OMPI_COMM_WORLD_RANK']), int(env['OMPI_COMM_WORLD_SIZE']), int(env.get('OMPI_COMM_WORLD_LOCAL_RANK', '0')), job


def _job_dir(job):
    """Where the ranks of one job meet: the lab root (two levels above this host's folder) / nccl-jobs / job."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(node_dir()))), 'nccl-jobs', job)


def _write_json(path, data):
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def _wait_for(paths, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(os.path.exists(path) for path in paths):
            return True
        time.sleep(0.05)
    return False


def _fail(lines, host, pid, reason, rc, code_line=1008):
    lines.append('%s: Test %s failure common.cu:%d %s' % (host, 'CUDA' if rc == CUDA_ERROR else 'NCCL', code_line, reason))
    lines.append(' .. %s pid %d: Test failure common.cu:%d' % (host, pid, 1150))
    out('\n'.join(lines))
    return rc


def rank_facts(state, env, ngpus, local_rank):
    """What one rank knows of its own host and NCCL's choices there: GPUs, bootstrap interface, transport, HCAs, GDR,
    the figures its host's profile gives, and the error NCCL would stop with (None when there is none)."""
    gpus = state['gpus']['devices']
    first = local_rank * ngpus
    facts = {'host': state['host'], 'pid': os.getpid(), 'devices': [], 'error': None, 'warn': [],
             'busbw_per_rail': state['nccl']['busbw_gbs'], 'socket_busbw': state['nccl'].get('socket_busbw_gbs') or 2.0,
             'gdr': bool(state['nccl']['gdr']), 'version': state['nccl']['version'], 'model': state['gpus']['model']}
    if state['gpus'].get('fabric_manager') == 'stopped':
        # An NVSwitch board whose fabric manager is not running: CUDA cannot start (CUDA_ERROR_SYSTEM_NOT_READY).
        facts['error'] = ('cuda', "'system not yet initialized'")
        return facts
    if first + ngpus > len(gpus):
        facts['error'] = ('cuda', "'invalid device ordinal'")
        return facts
    facts['devices'] = [{'index': first + i, 'bus_id': gpus[first + i]['bus_id']} for i in range(ngpus)]
    bootstrap = bootstrap_interface(env.get('NCCL_SOCKET_IFNAME'), _interfaces())
    facts['bootstrap'] = bootstrap
    if bootstrap is None:
        facts['warn'].append('Bootstrap : no socket interface found')
        facts['error'] = ('nccl', "'internal error - please report this issue to the NCCL developers'")
        return facts
    used, unopened = ib_devices(state, env)
    facts['warn'] += ['NET/IB : Unable to open device %s' % nic['name'] for nic in unopened]
    transport = 'IB'
    if env.get('NCCL_IB_DISABLE') == '1' or state['nccl']['transport'] == 'Socket' or not used:
        transport, used = 'Socket', []
    facts['transport'] = transport
    facts['hcas'] = [{'name': nic['name'], 'link': 'IB' if nic['link_layer'] == 'InfiniBand' else 'RoCE'} for nic in used]
    for nic in used:
        problem = gid_problem(nic, env)
        if problem:
            facts['warn'].append('Call to ibv_modify_qp failed with error Network is unreachable (%s)' % problem)
            facts['error'] = ('nccl', "'unhandled system error (run with NCCL_DEBUG=INFO for details)'")
    return facts


def _info_lines(facts, env, rank, total):
    """This rank's NCCL_DEBUG=INFO lines, as NCCL prints them on its host."""
    pid = facts['pid']
    device = facts['devices'][0]['index'] if facts['devices'] else 0
    prefix = '%s:%d:%d [%d] NCCL INFO ' % (facts['host'], pid, pid, device)
    warn = '%s:%d:%d [%d] ' % (facts['host'], pid, pid, device)
    lines = []
    bootstrap = facts.get('bootstrap')
    if_label = '%s:%s<0>' % bootstrap if bootstrap else None
    if env.get('NCCL_SOCKET_IFNAME'):
        lines.append(prefix + 'NCCL_SOCKET_IFNAME set by environment to %s' % env['NCCL_SOCKET_IFNAME'])
    if bootstrap:
        lines.append(prefix + 'Bootstrap : Using %s' % if_label)
    for text in facts['warn']:
        if text.startswith('Call to ibv_modify_qp'):
            lines.append(warn + 'misc/ibvwrap.cc:187 NCCL WARN ' + text.split(' (', 1)[0])
        else:
            lines.append(warn + ('bootstrap.cc:67' if text.startswith('Bootstrap') else 'transport/net_ib.cc:257') + ' NCCL WARN ' + text)
    if not bootstrap:
        return lines
    lines.append(prefix + 'NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.')
    for name in ('NCCL_IB_HCA', 'NCCL_IB_GID_INDEX', 'NCCL_IB_TC'):
        if env.get(name):
            lines.append(prefix + '%s set by environment to %s.' % (name, env[name]))
    if facts['transport'] == 'IB':
        devs = ' '.join('[%d]%s:1/%s' % (index, hca['name'], hca['link']) for index, hca in enumerate(facts['hcas']))
        lines.append(prefix + 'NET/IB : Using %s [RO]; OOB %s' % (devs, if_label))
        lines.append(prefix + 'Using network IB')
    else:
        if env.get('NCCL_IB_DISABLE') != '1':
            lines.append(prefix + 'NET/IB : No device found.')
        lines.append(prefix + 'NET/Socket : Using [0]%s' % if_label)
        lines.append(prefix + 'Using network Socket')
    lines.append(prefix + 'ncclCommInitRank comm 0x55d0c0a1b2c0 rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId 0x%x - Init START'
                 % (rank, total, device, device, (facts['devices'][0]['bus_id'][5:7] + '000') if facts['devices'] else '0', pid))
    return lines


def _channel_lines(facts, peer_rank, gdr, transport):
    pid = facts['pid']
    prefix = '%s:%d:%d [0] NCCL INFO ' % (facts['host'], pid, pid + 41)
    lines = []
    if gdr:
        lines.append(prefix + "GPU Direct RDMA Enabled for HCA 0 '%s'" % facts['hcas'][0]['name'])
    for channel, _hca in enumerate(facts['hcas'] or [None]):
        dev = channel if transport == 'IB' else 0
        via = ('NET/IB/%d/GDRDMA' % dev if gdr else 'NET/IB/%d' % dev) if transport == 'IB' else 'NET/Socket/0'
        lines.append(prefix + 'Channel %02d/0 : %d[0] -> 0[0] [receive] via %s' % (channel, peer_rank, via))
        lines.append(prefix + 'Channel %02d/0 : 0[0] -> %d[0] [send] via %s' % (channel, peer_rank, via))
    return lines


def tool_nccl_perf(state, binary, args):
    opts = _nccl_args(args)
    min_bytes, max_bytes = _nccl_size(opts['-b']), _nccl_size(opts['-e'])
    ngpus = int(opts['-g'])
    env = dict((key, value) for key, value in os.environ.items() if key.startswith('NCCL_'))
    debug = (env.get('NCCL_DEBUG') or '').upper()
    world = _world()
    rank, size, local_rank, job = world if world else (0, 1, 0, None)
    facts = rank_facts(state, env, ngpus, local_rank)
    host, pid = facts['host'], facts['pid']
    info = _info_lines(facts, env, rank, size * ngpus) if debug in ('INFO', 'TRACE') else []
    if debug == 'WARN':
        info = [line for line in _info_lines(facts, env, rank, size * ngpus) if ' NCCL WARN ' in line]
    if facts['error'] and facts['error'][0] == 'cuda':
        return _fail(['# nThread 1 nGpus %d minBytes %d maxBytes %d' % (ngpus, min_bytes, max_bytes)] if rank == 0 else [],
                     host, pid, facts['error'][1], CUDA_ERROR)
    if job is None:
        everyone = [facts]
    else:
        folder = _job_dir(job)
        os.makedirs(folder, exist_ok=True)
        _write_json(os.path.join(folder, '%d.json' % rank), facts)
        if rank != 0:
            if info:
                out('\n'.join(info))
            if facts['error']:
                return _fail([], host, pid, facts['error'][1], NCCL_ERROR)
            # The rank stays in the job until rank 0 has the collective's figures, as a real rank does.
            _wait_for([os.path.join(folder, 'done')], RENDEZVOUS_S + 60)
            _write_json(os.path.join(folder, '%d.exit' % rank), {'pid': pid})
            return 0
        if not _wait_for([os.path.join(folder, '%d.json' % other) for other in range(size)], RENDEZVOUS_S):
            info.append('%s:%d:%d [0] bootstrap.cc:150 NCCL WARN Bootstrap : timeout waiting for the other ranks' % (host, pid, pid))
            return _fail(info, host, pid, "'remote process exited or there was a network error'", NCCL_ERROR)
        everyone = []
        for other in range(size):
            with open(os.path.join(folder, '%d.json' % other), encoding='utf-8') as handle:
                everyone.append(json.load(handle))
    lines = _table(state, binary, opts, everyone, info, ngpus, min_bytes, max_bytes)
    rc = 0
    if facts['error'] or any(other['error'] for other in everyone):
        rc = NCCL_ERROR
        reason = (facts['error'] or [o['error'] for o in everyone if o['error']][0])[1]
        lines.append('%s: Test NCCL failure common.cu:1008 %s' % (host, reason))
        lines.append(' .. %s pid %d: Test failure common.cu:%d' % (host, pid, 1150))
    out('\n'.join(lines))
    if job is not None:
        folder = _job_dir(job)
        _write_json(os.path.join(folder, 'done'), {'rc': rc})
        _wait_for([os.path.join(folder, '%d.exit' % other) for other in range(1, size)], 10)
        shutil.rmtree(folder, ignore_errors=True)
    return rc


def _table(state, binary, opts, everyone, info, ngpus, min_bytes, max_bytes):
    """Rank 0's output: header, every rank's line, its own NCCL lines, the result table (nccl-tests' layout)."""
    nccl = state['nccl']
    total = len(everyone) * ngpus
    hosts = []
    for facts in everyone:
        if facts['host'] not in hosts:
            hosts.append(facts['host'])
    multi_node = len(hosts) > 1
    lines = ['# nccl-tests version %s nccl-headers=%s nccl-library=%s'
             % (nccl['nccl_tests_version'], _nccl_code(nccl['version']), _nccl_code(nccl['version'])),
             '# Collective test starting: %s' % binary,
             '# nThread %s nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %s iters: %s agg iters: 1 validation: %s graph: %s'
             % (opts['-t'], ngpus, min_bytes, max_bytes, ('%s(factor)' % opts['-f']) if opts['-i'] is None else ('%s(bytes)' % opts['-i']),
                opts['-w'], opts['-n'], opts['-c'], opts['-G']),
             '#', '# Using devices']
    rank = 0
    for facts in everyone:
        for device in facts['devices']:
            lines.append('#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s'
                         % (rank, 0, facts['pid'], facts['host'], device['index'], device['bus_id'][:10], facts['model']))
            rank += 1
    if (os.environ.get('NCCL_DEBUG') or '').upper() in ('VERSION', 'WARN', 'INFO', 'TRACE'):
        lines.append('NCCL version %s+cuda%s' % (nccl['version'], state['gpus']['cuda_version']))
    lines += info
    if any(facts['error'] for facts in everyone):
        lines.append('#')
        return lines
    transport = 'Socket' if any(facts.get('transport') == 'Socket' for facts in everyone) else 'IB'
    rails = min(len(facts['hcas']) for facts in everyone) if transport == 'IB' else 0
    gdr = transport == 'IB' and all(facts['gdr'] for facts in everyone)
    debug = (os.environ.get('NCCL_DEBUG') or '').upper() in ('INFO', 'TRACE')
    if debug and multi_node:
        lines += _channel_lines(everyone[0], ngpus * sum(1 for f in everyone if f['host'] == hosts[0]), gdr, transport)
    if debug:
        pid = everyone[0]['pid']
        lines.append('%s:%d:%d [0] NCCL INFO Connected all rings' % (everyone[0]['host'], pid, pid))
        lines.append('%s:%d:%d [0] NCCL INFO ncclCommInitRank comm 0x55d0c0a1b2c0 rank 0 nranks %d cudaDev 0 nvmlDev 0 - Init COMPLETE'
                     % (everyone[0]['host'], pid, pid, total))
    if not multi_node:
        peak = min(facts['busbw_per_rail'] for facts in everyone)
    elif transport == 'IB':
        peak = min(facts['busbw_per_rail'] for facts in everyone) * rails
    else:
        peak = min(facts['socket_busbw'] for facts in everyone)
    lines.append('#')
    lines.append('#                                                              out-of-place                       in-place          ')
    lines.append('#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ')
    lines.append('#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ')
    lines += _rows(binary, opts, total, peak, min_bytes, max_bytes, everyone[0]['pid'])
    return lines


def _rows(binary, opts, total, peak, min_bytes, max_bytes, pid):
    factor = BUSBW_FACTORS[binary](total) if total > 1 else 1.0
    sizes = []
    size = min_bytes
    step_bytes = _nccl_size(opts['-i']) if opts['-i'] else None
    step_factor = int(opts['-f'])
    while size <= max_bytes and len(sizes) < 64:
        sizes.append(size)
        if step_bytes:
            size += step_bytes
        elif step_factor > 1:
            size *= step_factor
        else:
            break
    if not sizes:
        sizes = [min_bytes]
    type_size = {'float': 4, 'half': 2, 'double': 8, 'int8': 1, 'int32': 4, 'bfloat16': 2}.get(opts['-d'], 4)
    redop = REDOPS.get(binary, 'none')
    root = '0' if binary in ('broadcast_perf', 'reduce_perf') else '-1'
    rnd = random.Random(pid)
    busbw_sum = 0.0
    count_rows = 0
    lines = []
    for size in sizes:
        count = size // type_size
        if binary in ('all_gather_perf', 'alltoall_perf', 'reduce_scatter_perf'):
            count = size // type_size // max(1, total)
        cells = []
        for variant in range(2):
            busbw = peak * size / (size + 1048576.0) * (1.0 + 0.003 * variant) if total > 1 else 0.0
            busbw = min(busbw, peak)
            algbw = busbw / factor if factor else busbw
            seconds = size / (algbw * 1e9) if algbw > 0 else 5e-6 + rnd.random() * 1e-6
            usec = seconds * 1e6 + (8.0 if size < 65536 else 0.0)
            algbw = size / (usec * 1e3)
            busbw = algbw * factor if total > 1 else 0.0
            if usec >= 10000:
                time_text = '%7.0f' % usec
            elif usec >= 100:
                time_text = '%7.1f' % usec
            else:
                time_text = '%7.2f' % usec
            cells.append('  %7s  %6.2f  %6.2f  %6s' % (time_text, algbw, busbw, '0' if opts['-c'] != '0' else 'N/A'))
            busbw_sum += busbw
            count_rows += 1
        lines.append('%12d  %12d  %8s  %6s  %6s%s' % (size, count, opts['-d'], redop, root, ''.join(cells)))
    lines.append('# Out of bounds values : 0 OK')
    lines.append('# Avg bus bandwidth    : %g ' % round(busbw_sum / max(1, count_rows), 4))
    lines.append('#')
    lines.append('# Collective test concluded: %s' % (binary,))
    lines.append('')
    return lines
