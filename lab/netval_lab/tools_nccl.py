"""nccl-tests and the mpirun that launches them.

Part of the netval lab's emulated tools (see tools.py); standard library only.
"""

import ipaddress
import json
import os
import random
import re
import subprocess
import sys

from netval_lab.tool_common import ToolExit, out


# ============================================================================ nccl-tests and mpirun

BUSBW_FACTORS = {'all_reduce_perf': lambda n: 2.0 * (n - 1) / n, 'all_gather_perf': lambda n: (n - 1.0) / n,
                 'reduce_scatter_perf': lambda n: (n - 1.0) / n, 'alltoall_perf': lambda n: (n - 1.0) / n,
                 'broadcast_perf': lambda n: 1.0, 'reduce_perf': lambda n: 1.0, 'sendrecv_perf': lambda n: 1.0}
REDOPS = {'all_reduce_perf': 'sum', 'reduce_scatter_perf': 'sum', 'reduce_perf': 'sum'}


def _mpirun_args(args):
    opts = {'np': None, 'hosts': [], 'env': {}, 'hostfile': None, 'mca': {}}
    index = 0
    while index < len(args):
        arg = args[index]
        nxt = args[index + 1] if index + 1 < len(args) else None
        if arg in ('-np', '-n', '--np', '-c'):
            opts['np'] = int(nxt)
            index += 2
        elif arg in ('--hostfile', '-hostfile', '--machinefile', '-machinefile', '--default-hostfile'):
            opts['hostfile'] = nxt
            index += 2
        elif arg in ('-H', '--host', '-host'):
            opts['hosts'] += [item for item in nxt.split(',') if item]
            index += 2
        elif arg == '-x':
            key, _sep, value = nxt.partition('=')
            opts['env'][key] = value if _sep else os.environ.get(key, '')
            index += 2
        elif arg in ('--mca', '-mca', '--gmca'):
            if nxt is None or index + 2 >= len(args):
                raise ToolExit(1, 'mpirun: Error: option "%s" needs a parameter name and a value\n' % arg)
            opts['mca'][nxt] = args[index + 2]
            index += 3
        elif arg in ('--bind-to', '--map-by', '--rank-by', '-N', '--npernode', '--prefix', '--wdir', '-wdir'):
            index += 2
        elif arg.startswith('-'):
            if arg in ('--allow-run-as-root', '--oversubscribe', '--tag-output', '-v', '--verbose', '--report-bindings',
                       '--display-map', '-q', '--quiet', '--noprefix'):
                index += 1
                continue
            raise ToolExit(1, 'mpirun: Error: unknown option "%s"\nType \'mpirun --help\' for usage.\n' % arg)
        else:
            return opts, args[index:]
    return opts, []


def _read_hostfile(path):
    hosts = []
    try:
        with open(path, encoding='utf-8') as handle:
            for line in handle:
                line = line.split('#', 1)[0].strip()
                if not line:
                    continue
                parts = line.split()
                slots = 1
                for part in parts[1:]:
                    if part.startswith('slots='):
                        slots = int(part.split('=', 1)[1])
                hosts.append((parts[0], slots))
    except OSError:
        raise ToolExit(1, '--------------------------------------------------------------------------\n'
                          'Open RTE was unable to open the hostfile:\n    %s\nCheck to make sure the path and filename are correct.\n'
                          '--------------------------------------------------------------------------\n' % path)
    return hosts


def tool_mpirun(state, args):
    opts, program = _mpirun_args(args)
    if not program:
        sys.stderr.write('mpirun could not find anything to do.\n')
        return 1
    binary = os.path.basename(program[0])
    if binary not in BUSBW_FACTORS:
        sys.stderr.write('--------------------------------------------------------------------------\n'
                         'mpirun was unable to find the specified executable file, and therefore\n'
                         'did not launch the job.  This error was first reported for process\n'
                         'rank 0; it may have occurred for other processes as well.\n\n'
                         'NOTE: A common cause for this error is misspelling a mpirun command\n'
                         '      line parameter option (remember that mpirun interprets the first\n'
                         '      unrecognized command line token as the executable).\n\n'
                         'Node:       %s\nExecutable: %s\n'
                         '--------------------------------------------------------------------------\n'
                         % (state['host'], program[0]))
        return 1
    slots = []
    if opts['hostfile']:
        for host, count in _read_hostfile(opts['hostfile']):
            slots += [host] * count
    for host in opts['hosts']:
        name, _sep, count = host.partition(':')
        slots += [name] * (int(count) if count.isdigit() else 1)
    if not slots:
        slots = [state['host']] * (opts['np'] or 1)
    np_ = opts['np'] or len(slots)
    if np_ > len(slots):
        sys.stderr.write('--------------------------------------------------------------------------\n'
                         'There are not enough slots available in the system to satisfy the %d\n'
                         'slots that were requested by the application:\n\n  %s\n\n'
                         'Either request fewer slots for your application, or make more slots\n'
                         'available for use.\n'
                         '--------------------------------------------------------------------------\n' % (np_, program[0]))
        return 1
    oob_error = _oob_interface_error(state, opts['mca'], slots[:np_])
    if oob_error:
        sys.stderr.write(oob_error)
        return 1
    env = dict((key, value) for key, value in os.environ.items() if key.startswith('NCCL_'))
    env.update(opts['env'])
    return run_nccl_test(state, binary, program[1:], slots[:np_], env)


def _ipv4_interfaces():
    """[(ifname, address, network)] of the admin-up IPv4 interfaces of this namespace, loopback left out."""
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
                found.append((link['ifname'], addr['local'], ipaddress.ip_network('%s/%s' % (addr['local'], addr['prefixlen']), strict=False)))
    return found


def _selected(interfaces, include, exclude):
    """Open MPI's *_if_include / *_if_exclude: comma-separated interface names or CIDR subnets."""
    def matches(entry, item):
        ifname, address, _network = entry
        if '/' in item:
            try:
                return ipaddress.ip_address(address) in ipaddress.ip_network(item, strict=False)
            except ValueError:
                return False
        return ifname == item
    if include:
        items = [i.strip() for i in include.split(',') if i.strip()]
        return [e for e in interfaces if any(matches(e, i) for i in items)]
    items = [i.strip() for i in (exclude or '').split(',') if i.strip()]
    return [e for e in interfaces if not any(matches(e, i) for i in items)]


def _oob_interface_error(state, mca, ranks_hosts):
    """What Open MPI's TCP out-of-band layer does with this namespace's interfaces, as text on stderr (None: fine).

    Unpinned, with the same docker0 subnet (172.17.0.1/16) on every host, it takes the peers for directly
    reachable over docker0 and the job dies (the two-box RoCE pair field report); pinned with
    oob_tcp_if_include / btl_tcp_if_include to a subnet no interface has, it finds nothing to use.
    """
    if len(set(ranks_hosts)) < 2:
        return None
    interfaces = _ipv4_interfaces()
    for key in ('oob_tcp_if_include', 'btl_tcp_if_include'):
        if mca.get(key) and not _selected(interfaces, mca[key], None):
            return ('--------------------------------------------------------------------------\n'
                    'None of the TCP networks specified to be included for out-of-band communications\n'
                    'could be found:\n\n  Value given: %s\n\nPlease revise the specification and try again.\n'
                    '--------------------------------------------------------------------------\n' % mca[key])
    chosen = _selected(interfaces, mca.get('oob_tcp_if_include'), mca.get('oob_tcp_if_exclude'))
    docker = [e for e in chosen if e[0].startswith('docker')]
    if docker:
        return ('[%s:%05d] [[%d,0],1] tcp_peer_recv_connect_ack: received unexpected process identifier [[%d,0],0] from %s\n'
                '--------------------------------------------------------------------------\n'
                'ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[%d,0],0] on node %s\n'
                '  Remote daemon: [[%d,0],1] on node %s\n\nThis is usually due to either a failure of the TCP network\n'
                'connection to the node, or possibly an internal failure of\nthe daemon itself. We cannot recover from this failure,\n'
                'and therefore will terminate the job.\n'
                '(netval lab: %s %s is on every host, so Open MPI could not find a corresponding process entry for that peer;\n'
                ' pin it with --mca oob_tcp_if_include <fabric subnet> --mca btl_tcp_if_include <fabric subnet>)\n'
                '--------------------------------------------------------------------------\n'
                % (state['host'], os.getpid() % 100000, 4242, 4242, docker[0][1], 4242, state['host'], 4242,
                   sorted(set(ranks_hosts) - {state['host']})[0] if set(ranks_hosts) - {state['host']} else ranks_hosts[-1],
                   docker[0][0], docker[0][2]))
    return None


def tool_nccl_perf(state, binary, args):
    env = dict((key, value) for key, value in os.environ.items() if key.startswith('NCCL_'))
    return run_nccl_test(state, binary, args, [state['host']], env)


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


def run_nccl_test(state, binary, args, ranks_hosts, env):
    opts = _nccl_args(args)
    min_bytes, max_bytes = _nccl_size(opts['-b']), _nccl_size(opts['-e'])
    ngpus = int(opts['-g'])
    gpus = state['gpus']['devices']
    if state['gpus'].get('fabric_manager') == 'stopped':
        # An NVSwitch board whose fabric manager is not running: CUDA cannot start (CUDA_ERROR_SYSTEM_NOT_READY).
        sys.stdout.write('# nThread 1 nGpus %d minBytes %d maxBytes %d\n' % (ngpus, min_bytes, max_bytes))
        sys.stdout.write('%s: Test CUDA failure common.cu:%d \'system not yet initialized\'\n .. %s pid %d: Test failure common.cu:%d\n'
                         % (state['host'], 1008, state['host'], os.getpid(), 1150))
        return 2
    if ngpus > len(gpus):
        sys.stdout.write('# nThread 1 nGpus %d minBytes %d maxBytes %d\n' % (ngpus, min_bytes, max_bytes))
        sys.stdout.write('%s: Test CUDA failure common.cu:%d \'invalid device ordinal\'\n .. %s pid %d: Test failure common.cu:%d\n'
                         % (state['host'], 1008, state['host'], os.getpid(), 1150))
        return 2
    nccl = state['nccl']
    model = state['gpus']['model']
    total = len(ranks_hosts) * ngpus
    multi_node = len(set(ranks_hosts)) > 1
    debug = (env.get('NCCL_DEBUG') or '').upper()
    pid = os.getpid()
    lines = ['# nccl-tests version %s nccl-headers=%s nccl-library=%s'
             % (nccl['nccl_tests_version'], _nccl_code(nccl['version']), _nccl_code(nccl['version'])),
             '# Collective test starting: %s' % binary,
             '# nThread %s nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %s iters: %s agg iters: 1 validation: %s graph: %s'
             % (opts['-t'], ngpus, min_bytes, max_bytes, ('%s(factor)' % opts['-f']) if opts['-i'] is None else ('%s(bytes)' % opts['-i']),
                opts['-w'], opts['-n'], opts['-c'], opts['-G']),
             '#', '# Using devices']
    local_counter = {}
    rank = 0
    for host in ranks_hosts:
        local = local_counter.get(host, 0)
        local_counter[host] = local + ngpus
        for gpu_index in range(ngpus):
            device = (local + gpu_index) % max(1, len(gpus))
            bus = gpus[device]['bus_id'] if device < len(gpus) else gpus[0]['bus_id']
            lines.append('#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s'
                         % (rank, 0, pid + 7 * (ranks_hosts.index(host)), host, device, bus[:10], model))
            rank += 1
    transport = nccl['transport']
    hcas = [nic for nic in state['nics'] if nic['state'] == 'ACTIVE']
    if env.get('NCCL_IB_HCA'):
        wanted = [item.split(':')[0].lstrip('^=') for item in env['NCCL_IB_HCA'].split(',')]
        hcas = [nic for nic in hcas if any(nic['name'].startswith(item) for item in wanted)]
    if env.get('NCCL_IB_DISABLE') == '1' or not hcas:
        transport = 'Socket'
    bootstrap = state['fabric'][0] if state.get('fabric') else {'netdev': 'lo', 'ip': '127.0.0.1'}
    if_label = '%s:%s<0>' % (bootstrap.get('netdev', 'lo'), bootstrap.get('ip', '127.0.0.1'))
    gdr = nccl['gdr'] and transport == 'IB'
    if debug in ('VERSION', 'WARN', 'INFO', 'TRACE'):
        lines.append('NCCL version %s+cuda%s' % (nccl['version'], state['gpus']['cuda_version']))
    if debug in ('INFO', 'TRACE'):
        prefix = '%s:%d:%d [0] NCCL INFO ' % (state['host'], pid, pid)
        lines.append(prefix + 'Bootstrap : Using %s' % if_label)
        lines.append(prefix + 'NET/Plugin: No plugin found (libnccl-net.so)')
        lines.append(prefix + 'NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: '
                     'No such file or directory : when loading libnccl-net.so')
        lines.append(prefix + 'NET/Plugin: Using internal network plugin.')
        if transport == 'IB':
            devs = ' '.join('[%d]%s:1/%s' % (index, nic['name'], 'IB' if nic['link_layer'] == 'InfiniBand' else 'RoCE')
                            for index, nic in enumerate(hcas))
            lines.append(prefix + 'NET/IB : Using %s [RO]; OOB %s' % (devs, if_label))
            lines.append(prefix + 'Using network IB')
        else:
            if env.get('NCCL_IB_DISABLE') != '1':
                lines.append(prefix + 'NET/IB : No device found.')
            lines.append(prefix + 'NET/Socket : Using [0]%s' % if_label)
            lines.append(prefix + 'Using network Socket')
        lines.append(prefix + 'ncclCommInitRank comm 0x55d0c0a1b2c0 rank 0 nranks %d cudaDev 0 nvmlDev 0 busId %s commId 0x%x - Init START'
                     % (total, (gpus[0]['bus_id'][5:7] + '000') if gpus else '0', pid))
        if multi_node:
            chan_prefix = '%s:%d:%d [0] NCCL INFO ' % (state['host'], pid, pid + 41)
            via = ('NET/IB/0/GDRDMA' if gdr else 'NET/IB/0') if transport == 'IB' else 'NET/Socket/0'
            if gdr:
                lines.append(chan_prefix + "GPU Direct RDMA Enabled for HCA 0 '%s'" % hcas[0]['name'])
            peer_rank = ngpus
            for channel in range(2):
                lines.append(chan_prefix + 'Channel %02d/0 : %d[0] -> 0[0] [receive] via %s' % (channel, peer_rank, via))
                lines.append(chan_prefix + 'Channel %02d/0 : 0[0] -> %d[0] [send] via %s' % (channel, peer_rank, via))
        else:
            lines.append(prefix + 'Channel 00/0 : 0[0] -> 0[0] via P2P/CUMEM')
        lines.append(prefix + 'Connected all rings')
        lines.append(prefix + 'ncclCommInitRank comm 0x55d0c0a1b2c0 rank 0 nranks %d cudaDev 0 nvmlDev 0 - Init COMPLETE' % total)
    lines.append('#')
    lines.append('#                                                              out-of-place                       in-place          ')
    lines.append('#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ')
    lines.append('#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ')
    peak = nccl['busbw_gbs'] if multi_node or total == 1 else nccl['busbw_gbs']
    if transport == 'Socket' and nccl['transport'] == 'IB':
        peak = min(peak, 2.0)
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
    lines.append('# Collective test concluded: %s' % binary)
    lines.append('')
    out('\n'.join(lines))
    return 0


def _nccl_code(version):
    parts = (version.split('.') + ['0', '0'])[:3]
    return '%d%02d%02d' % (int(parts[0]), int(parts[1]), int(parts[2]))
