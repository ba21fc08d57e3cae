"""perftest (ib_*_bw, ib_*_lat): real TCP between server and client; what they print comes from fabric.py.

As real perftest does, the TCP connection only carries the handshake: the data moves on the rail of the device each end
is given (``-d``; on RoCE the GID ``-x`` names its address), so a session is as fast as both devices' rails allow,
whatever address the handshake used.  Client and server negotiate their test options first (perftest 6.28+) and refuse
a mismatch; two devices on different rails of a rail-isolated RoCE fabric (one subnet and switch per rail) cannot bring
their queue pairs up.

Part of the netval lab's emulated tools (see tools.py); standard library only.
"""

import fcntl
import json
import os
import random
import re
import socket
import sys
import time
import uuid

from netval_lab import fabric, tools_cuda
from netval_lab.tool_common import MIB, PERFTEST_PORT, node_dir, out


# ============================================================================ perftest

PERFTEST_TITLES = {
    'ib_write_bw': 'RDMA_Write BW Test', 'ib_read_bw': 'RDMA_Read BW Test', 'ib_send_bw': 'Send BW Test',
    'ib_write_lat': 'RDMA_Write Latency Test', 'ib_read_lat': 'RDMA_Read Latency Test', 'ib_send_lat': 'Send Latency Test',
}
PERFTEST_FLAGS_WITH_VALUE = {'-d', '--ib-dev', '-i', '--ib-port', '-x', '--gid-index', '-p', '--port', '-D', '--duration',
                             '-s', '--size', '-n', '--iters', '-q', '--qp', '-m', '--mtu', '-c', '--connection', '-S', '--sl',
                             '-I', '--inline_size', '-t', '--tx-depth', '-r', '--rx-depth', '-u', '--qp-timeout',
                             '--tclass', '-T', '--tos', '-Q', '--cq-mod', '-o', '--outs', '-l', '--post_list',
                             '--out_json_file', '--output', '--use_cuda', '--use_cuda_bus_id', '--source_ip', '-f', '--margin', '-O'}
PERFTEST_FLAGS = {'-a', '--all', '-F', '--CPU-freq', '-b', '--bidirectional', '-R', '--rdma_cm', '--report_gbits',
                  '-e', '--events', '-z', '--com_rdma_cm', '--out_json', '--cpu_util', '-H', '--report-histogram',
                  '-U', '--report-unsorted', '--run_infinitely', '--use_cuda_dmabuf', '--use_data_direct',
                  '--report-both', '--ipv6', '--ipv6-addr', '--use_hugepages', '--odp', '-N', '--noPeak'}


def _perftest_args(tool, args):
    opts = {'host': None, 'flags': set()}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith('--') and '=' in arg:
            key, value = arg.split('=', 1)
            if key not in PERFTEST_FLAGS_WITH_VALUE:
                return None, "%s: unrecognized option '%s'" % (tool, key)
            opts[key] = value
        elif arg in PERFTEST_FLAGS_WITH_VALUE:
            if index + 1 >= len(args):
                return None, "%s: option requires an argument -- '%s'" % (tool, arg.lstrip('-'))
            if arg == '--use_cuda' and not re.match(r'^\d+$', args[index + 1]):
                opts[arg] = '0'
            else:
                opts[arg] = args[index + 1]
                index += 1
        elif arg in PERFTEST_FLAGS:
            opts['flags'].add(arg)
        elif arg.startswith('-'):
            return None, "%s: unrecognized option '%s'" % (tool, arg) if arg.startswith('--') else \
                "%s: invalid option -- '%s'" % (tool, arg[1:2])
        elif opts['host'] is None:
            opts['host'] = arg
        else:
            return None, ' Invalid Command or flag.'
        index += 1
    return opts, None


def _opt(opts, *names, **kwargs):
    for name in names:
        if name in opts:
            return opts[name]
    return kwargs.get('default')


def _perftest_error(lines, rc=1):
    sys.stderr.write(''.join(line + '\n' for line in lines))
    return rc


def tool_perftest(state, tool, args):
    if '--help' in args or '-h' in args:
        # perftest prints its usage (with the CUDA options its build has) and exits 1, as Debian's 6.06 does.
        sys.stdout.write(tools_cuda.help_text(state, tool))
        return 1
    gpu_request = tools_cuda.gpu_request(state, tool, args)
    opts, error = _perftest_args(tool, args)
    if error:
        return _perftest_error([error, ' Invalid Command or flag.', ' Please check command line and run again.', ''])
    is_bw = tool.endswith('_bw')
    devname = _opt(opts, '-d', '--ib-dev')
    if not state['nics']:
        return _perftest_error(['No IB devices found', ' Unable to find the Infiniband/RoCE device'])
    nic = state['nics'][0] if devname is None else next((n for n in state['nics'] if n['name'] == devname), None)
    if nic is None:
        return _perftest_error(['IB device %s not found' % devname, ' Unable to find the Infiniband/RoCE device'])
    if nic['state'] != 'ACTIVE':
        return _perftest_error([' Port number 1 state is Down', " Couldn't set the link layer",
                                " Couldn't get context for the device"])
    try:
        port = int(_opt(opts, '-p', '--port', default=PERFTEST_PORT))
        duration = float(_opt(opts, '-D', '--duration', default=0)) or None
        size = _parse_size(_opt(opts, '-s', '--size', default='65536' if is_bw else '2'))
        iters = int(_opt(opts, '-n', '--iters', default=5000 if is_bw else 1000))
        qps = int(_opt(opts, '-q', '--qp', default=1))
        cuda = _opt(opts, '--use_cuda')
    except ValueError:
        return _perftest_error([' Invalid Command or flag.', ' Please check command line and run again.'])
    if not 0 < port < 65536:
        return _perftest_error([' Invalid port number %d' % port])
    params = {'tool': tool, 'size': size, 'iters': iters, 'duration': duration, 'qps': qps,
              'sweep': '-a' in opts['flags'] or '--all' in opts['flags'],
              'gbits': '--report_gbits' in opts['flags'], 'bidir': '-b' in opts['flags'] or '--bidirectional' in opts['flags'],
              'cuda': cuda, 'gid_index': _opt(opts, '-x', '--gid-index'), 'rdma_cm': '-R' in opts['flags'],
              'tclass': _opt(opts, '--tclass', '-T', '--tos'), 'gpu_request': gpu_request}
    if opts['host'] is None:
        return _perftest_server(state, nic, params, port)
    return _perftest_client(state, nic, params, opts['host'], port)


def _parse_size(text):
    match = re.match(r'^(\d+)([KMG]?)$', str(text), re.I)
    if not match:
        raise ValueError(text)
    return int(match.group(1)) * {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}[match.group(2).upper()]


def _local_fabric_ip(nic, state):
    link = nic.get('fabric') or (state['fabric'][0] if state.get('fabric') else {})
    return link.get('ip') or '127.0.0.1'


# The options perftest 6.28+ compares between client and server before a test (negotiate_params), as it names them.
NEGOTIATED = (('sweep', 'test_method', {False: 'RUN_REGULAR', True: 'RUN_ALL'}), ('duration', 'test_type', None),
              ('gbits', 'report_fmt', {False: 'MBS', True: 'GBS'}), ('size', 'size', None), ('iters', 'iters', None),
              ('qps', 'num_of_qps', None), ('rdma_cm', 'use_rdma_cm', {False: 'OFF', True: 'ON'}))


def _mismatch(mine, theirs):
    """perftest's line for the first negotiated option that differs (its own words), or None."""
    for key, name, words in NEGOTIATED:
        local, remote = mine.get(key), theirs.get(key)
        if key == 'duration':
            if bool(local) != bool(remote):
                return ' test_type mismatch: local=%s, remote=%s' % ('DURATION' if local else 'ITERATIONS', 'DURATION' if remote else 'ITERATIONS')
            if local and int(local) != int(remote):
                return ' duration mismatch: local=%d, remote=%d' % (int(local), int(remote))
            continue
        if local != remote:
            if words:
                return ' %s mismatch: local=%s, remote=%s' % (name, words[bool(local)], words[bool(remote)])
            return ' %s mismatch: local=%s, remote=%s' % (name, local, remote)
    return None


def _rail(nic):
    """(rail, netdev, isolated) the device moves its data on: its own port's on a real site, else None."""
    link = nic.get('fabric') or {}
    if not nic.get('netdev_real') or 'rail' not in link:
        return None, None, False
    return link.get('rail'), link.get('netdev'), bool(link.get('isolated'))


def _unreachable(nic, remote):
    """Why this device's QP cannot reach the remote one (None when it can): another link layer, or another rail of a
    rail-isolated RoCE fabric."""
    if remote.get('link_layer') and remote['link_layer'] != nic['link_layer']:
        return 'link layer %s against %s' % (nic['link_layer'], remote['link_layer'])
    rail, _netdev, isolated = _rail(nic)
    if isolated and remote.get('rail') is not None and rail is not None and remote['rail'] != rail:
        return 'rail %s against rail %s of a rail-isolated fabric' % (rail, remote['rail'])
    return None


QP_FAILURE = [' Failed to modify QP 0x%06x to RTR', ' Unable to Connect the HCA\'s through the link']


def _perftest_header(state, nic, params, server, cuda_lines):
    ib = nic['link_layer'] == 'InfiniBand'
    lines = []
    if params['duration'] and params['tool'].endswith('_bw'):
        lines.append(" WARNING: BW peak won't be measured in this run.")
    lines.extend(cuda_lines)
    title = PERFTEST_TITLES[params['tool']]
    if params['bidir'] and params['tool'].endswith('_bw'):
        title = title.replace(' BW Test', ' Bidirectional BW Test')
    lines.append('-' * 87)
    lines.append('                    %s' % title)
    lines.append(' Dual-port       : OFF\t\tDevice         : %s' % nic['name'])
    lines.append(' Number of qps   : %d\t\tTransport type : IB' % params['qps'])
    lines.append(' Connection type : RC\t\tUsing SRQ      : OFF')
    lines.append(' PCIe relax order: ON')
    lines.append(' ibv_wr* API     : ON')
    if not server or params['tool'].endswith('_lat'):
        lines.append(' TX depth        : %d' % (128 if params['tool'].endswith('_bw') else 1))
    if params['tool'].endswith('_bw'):
        lines.append(' CQ Moderation   : 1')
    lines.append(' Mtu             : %d[B]' % (nic['mtu'] if ib else 4096))
    lines.append(' Link type       : %s' % ('IB' if ib else 'Ethernet'))
    gid_index = params['gid_index'] if params['gid_index'] is not None else (nic['gid_index'] if not ib else None)
    if not ib:
        lines.append(' GID index       : %s' % gid_index)
    if params['tool'] == 'ib_read_lat' or params['tool'] == 'ib_read_bw':
        lines.append(' Outstand reads  : 16')
    else:
        lines.append(' Max inline data : %d[B]' % (0 if params['tool'].endswith('_bw') else 220))
    lines.append(' rdma_cm QPs\t : %s' % ('ON' if params['rdma_cm'] else 'OFF'))
    lines.append(' Data ex. method : %s' % ('rdma_cm' if params['rdma_cm'] else 'Ethernet'))
    lines.append('-' * 87)
    return lines


def _gid_line(ip):
    return ' GID: 00:00:00:00:00:00:00:00:00:00:255:255:%s' % ':'.join('%02d' % int(part) for part in ip.split('.'))


def _address_lines(nic, local, remote, local_ip, remote_ip):
    ib = nic['link_layer'] == 'InfiniBand'
    lines = []
    for label, info, ip in (('local', local, local_ip), ('remote', remote, remote_ip)):
        lid = '0x%02x' % info['lid'] if ib else '0000'
        lines.append(' %s address: LID %s QPN 0x%04x PSN 0x%06x RKey 0x%06x VAddr 0x%014x'
                     % (label, lid, info['qpn'], info['psn'], info['rkey'], info['vaddr']))
        if not ib:
            lines.append(_gid_line(ip))
    lines.append('-' * 87)
    return lines


def _endpoint_info(nic):
    rnd = random.Random()
    return {'lid': nic['lid'], 'qpn': rnd.randint(0x100, 0xffff), 'psn': rnd.randint(0, 0xffffff),
            'rkey': rnd.randint(0, 0xffffff), 'vaddr': 0x7f0000000000 + rnd.randint(0, 0xffffff) * 0x1000}


def _bw_rows(params, bw_bytes):
    sizes = [2 ** power for power in range(1, 24)] if params['sweep'] else [params['size']]
    rows = []
    for size in sizes:
        factor = 1.0 if size >= 65536 else size / (size + 128.0)
        bw = bw_bytes * factor * (2 if params['bidir'] else 1)
        if params['duration']:
            iterations = int(bw * params['duration'] / size)
            peak = 0.0
        else:
            iterations = params['iters']
            peak = bw * 1.0004
        scale = 8 / 1e9 if params['gbits'] else 1 / MIB
        rows.append(' %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f'
                    % (size, iterations, peak * scale, bw * scale, bw / size / 1e6))
    unit = 'Gb/sec' if params['gbits'] else 'MB/sec'
    header = ' #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]' % (unit, unit)
    return [header] + rows + ['-' * 87]


def _lat_rows(params, lat):
    header = (' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]'
              '   99% percentile[usec]   99.9% percentile[usec] ')
    row = (' %-7d %-10d    %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f'
           % (params['size'], params['iters'], lat * 0.96, lat * 6.2, lat, lat * 1.03, lat * 0.12, lat * 1.15, lat * 6.2))
    return [header, row, '-' * 87]


def _cuda_lines(state, nic, params):
    """What perftest prints while it sets its GPU buffer up (tools_cuda), and the share of the NIC's GPUDirect bandwidth it gets."""
    lines, params['gdr_factor'] = tools_cuda.gpu_setup(state, nic, params['gpu_request'], params['size'])
    params['cuda'] = True if params['gpu_request'] else None
    return lines


WAITING = ['', '************************************', '* Waiting for client to connect... *', '************************************']


def _send_line(sock, obj):
    sock.sendall((json.dumps(obj) + '\n').encode())


def _recv_line(sock, timeout):
    sock.settimeout(timeout)
    data = b''
    while not data.endswith(b'\n'):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return json.loads(data.decode() or 'null')


def _perftest_server(state, nic, params, port):
    # A real server waits in accept() for as long as it runs (the collection's watchdog ends it at its deadline): eight
    # servers of a batch wait while the clients go one at a time, the last for seven runs of the profile's duration.
    # NETVAL_LAB_PERFTEST_WAIT bounds the wait for the tests that start a lab tool by hand.
    wait = float(os.environ['NETVAL_LAB_PERFTEST_WAIT']) if os.environ.get('NETVAL_LAB_PERFTEST_WAIT') else None
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(('0.0.0.0', port))
        listener.listen(1)
    except OSError:
        return _perftest_error(["Couldn't listen to port %d" % port, ' Unable to open file descriptor for socket connection',
                                ' Unable to init the socket connection'])
    cuda = _cuda_lines(state, nic, params)
    out('\n'.join(WAITING))
    sys.stdout.flush()
    listener.settimeout(wait)
    try:
        conn, peer = listener.accept()
    except socket.timeout:
        return _perftest_error(["Couldn't accept a client connection within %g s (netval lab timeout)" % wait,
                                ' Unable to open file descriptor for socket connection', ' Unable to init the socket connection'])
    finally:
        listener.close()
    mine = None
    with conn:
        try:
            hello = _recv_line(conn, 30)
            if not hello or hello.get('tool') != params['tool']:
                return _perftest_error([' Failed to exchange data between server and clients'])
            mismatch = _mismatch(params, hello.get('params') or {})
            if mismatch:
                _send_line(conn, {'ok': False, 'refused': 'negotiate',
                                  'params': dict((key, params[key]) for key, _name, _words in NEGOTIATED)})
                return _perftest_error([mismatch, ' Failed to negotiate parameters'])
            why = _unreachable(nic, hello.get('device') or {})
            if why:
                _send_line(conn, {'ok': False, 'refused': 'rtr', 'device': _device(nic)})
                return _perftest_error([QP_FAILURE[0] % random.randint(0x100, 0xffff), QP_FAILURE[1],
                                        ' (netval lab: %s)' % why])
            local = _endpoint_info(nic)
            mine = _open_session(nic, conn.getsockname()[0], '%s server port %d' % (params['tool'], port), params, hello.get('session'))
            _send_line(conn, {'ok': True, 'info': local, 'ip': _local_fabric_ip(nic, state), 'capacity': mine['hca'][0],
                              'lat': _own_latency(nic, params)})
            done = _recv_line(conn, 60 + (params['duration'] or 0))
            ours = _close_session(mine)
            if done:
                _send_line(conn, {'shares': ours})
        except (OSError, ValueError):
            return _perftest_error([' Failed to exchange data between server and clients'])
        finally:
            _close_session(mine)
    if not done:
        return _perftest_error([' Failed to exchange data between server and clients'])
    lines = cuda + _perftest_header(state, nic, params, True, [])
    lines += _address_lines(nic, local, hello['info'], _local_fabric_ip(nic, state), peer[0])
    if params['tool'].endswith('_bw'):
        lines += _bw_rows(params, fabric.session_bytes(ours + (done.get('shares') or [])))
    else:
        lines += _lat_rows(params, max(_own_latency(nic, params), hello['lat']))
    out('\n'.join(lines))
    return 0


def _own_latency(nic, params):
    return nic['lat_us'] * (1.8 if params['tool'] == 'ib_read_lat' else 1.0)


def _open_session(nic, local_address, label, params, session_id):
    """Enter this session in the ledgers of this end's HCA and rail (both kept under this host's node dir).

    The rail is the device's own port on a real site (its tc shaping limits the session), else the device's cable on the
    ideal site (one per node and peer), else, for a NIC the ideal site only emulates, the interface the handshake left
    through.  The handshake goes to the box's management address, as on a real site: it never decides the data's rail.
    """
    link = nic.get('fabric') or {}
    cable = link.get('netdev') if nic.get('netdev_real') else link.get('cable')
    rail = _rail(nic)[1] or cable or fabric.rail_of(local_address)
    capacity = fabric.hca_capacity_bytes(nic, params['cuda'] is not None) * params.get('gdr_factor', 1.0)
    session = {'hca': (capacity, fabric.Ledger(node_dir(), nic['name'])),
               'rail': (fabric.rail_rate_bytes(rail), fabric.Ledger(node_dir(), 'rail-%s' % (rail or 'unknown')))}
    for capacity, ledger in session.values():
        ledger.open(label, session_id, capacity)
    session['nic'] = nic
    return session


def _count_symbol_errors(nic):
    """A bad InfiniBand cable (profile symbol_errors_per_session): the port's symbol_error counter grows with the session."""
    grow = int(nic.get('symbol_errors_per_session') or 0)
    if not grow or nic['link_layer'] != 'InfiniBand':
        return
    path = os.path.join(node_dir(), 'sys', 'class', 'infiniband', nic['name'], 'ports', '1', 'counters', 'symbol_error')
    try:
        with open(path, 'r+', encoding='utf-8') as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            value = int(handle.read().strip() or 0) + grow
            handle.seek(0)
            handle.truncate()
            handle.write('%d\n' % value)
    except (OSError, ValueError):
        pass


def _close_session(session):
    """[(capacity, overlapping sessions)] of this end's HCA and rail, to combine with the other end's.  Closing twice is harmless."""
    if session is None:
        return []
    if not session.get('closed'):
        session['closed'] = True
        _count_symbol_errors(session['nic'])
    return [[capacity, ledger.close()] for capacity, ledger in (session['hca'], session['rail'])]


def _device(nic):
    """What the handshake tells the other end about this end's device: its link layer and rail."""
    rail, netdev, isolated = _rail(nic)
    return {'name': nic['name'], 'link_layer': nic['link_layer'], 'rail': rail, 'netdev': netdev, 'isolated': isolated}


def _perftest_client(state, nic, params, host, port):
    """The client end: both ends' HCAs, the rail and the sessions sharing either HCA decide what it prints (fabric.py)."""
    cuda = _cuda_lines(state, nic, params)
    try:
        sock = socket.create_connection((host, port), timeout=float(os.environ.get('NETVAL_LAB_PERFTEST_CONNECT', '5')))
    except OSError:
        return _perftest_error(["Couldn't connect to %s:%d" % (host, port),
                                ' Unable to open file descriptor for socket connection',
                                ' Unable to init the socket connection'])
    local = _endpoint_info(nic)
    mine = None
    with sock:
        try:
            session_id = uuid.uuid4().hex
            mine = _open_session(nic, sock.getsockname()[0], '%s client to %s:%d' % (params['tool'], host, port), params, session_id)
            _send_line(sock, {'tool': params['tool'], 'session': session_id, 'info': local, 'capacity': mine['hca'][0], 'lat': _own_latency(nic, params),
                              'device': _device(nic),
                              'params': {key: params[key] for key in ('sweep', 'size', 'iters', 'duration', 'bidir', 'gbits', 'qps',
                                                                      'rdma_cm')}})
            reply = _recv_line(sock, 30)
            if reply and reply.get('refused') == 'negotiate':
                return _perftest_error([_mismatch(params, reply.get('params') or {}) or ' options differ from the server\'s',
                                        ' Failed to negotiate parameters'])
            if reply and reply.get('refused') == 'rtr':
                return _perftest_error([QP_FAILURE[0] % random.randint(0x100, 0xffff), QP_FAILURE[1],
                                        ' (netval lab: %s)' % (_unreachable(nic, reply.get('device') or {}) or 'the remote QP is unreachable')])
            if not reply or not reply.get('ok'):
                raise ValueError('no reply')
            # As long as asked, as the real tool: the lab shortens a run with the operator's knob
            # (tier_tests_duration_override), never here, so a run at the profile's durations holds its peer as long.
            if params['duration']:
                time.sleep(params['duration'])
            ours = _close_session(mine)
            _send_line(sock, {'done': True, 'shares': ours})
            remote = _recv_line(sock, 30)
            if not remote:  # the server went away before the final exchange, as a real one that dies mid-test
                raise ValueError('no final exchange')
        except (OSError, ValueError):
            return _perftest_error([' Failed to exchange data between server and clients'])
        finally:
            _close_session(mine)
    lines = _perftest_header(state, nic, params, False, cuda)
    lines += _address_lines(nic, local, reply['info'], _local_fabric_ip(nic, state), reply.get('ip') or host)
    if params['tool'].endswith('_bw'):
        lines += _bw_rows(params, fabric.session_bytes(ours + (remote.get('shares') or [])))
    else:
        lines += _lat_rows(params, max(_own_latency(nic, params), reply['lat']))
    out('\n'.join(lines))
    return 0
