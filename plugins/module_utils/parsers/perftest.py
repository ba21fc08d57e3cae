# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser and command builder for the perftest suite (ib_send_bw, ib_write_bw,
ib_read_bw, ib_send_lat, ib_write_lat, ib_read_lat).  Pure functions; no
Ansible import.

Units, exactly as perftest defines them: ``MB/sec`` (older versions) and
``MiB/sec`` (newer ones) are both 2^20 bytes per second -- its usage text says
"MiB=2^20 byte, while Gb=10^9 bits" -- and ``Gb/sec`` (``--report_gbits``) is
10^9 bits per second.  Every bandwidth row keeps the figure as printed next
to the decimal Gb/s and GB/s conversions.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

TOOL = 'perftest'

BW_TESTS = ('ib_send_bw', 'ib_write_bw', 'ib_read_bw')
LAT_TESTS = ('ib_send_lat', 'ib_write_lat', 'ib_read_lat')
TESTS = BW_TESTS + LAT_TESTS

MIB = 2 ** 20

# What an operator should look at for each error class.
ERROR_HINTS = {
    'no_rdma_device': 'no RDMA device found: check that the NIC driver (mlx5_ib) is loaded, that ibv_devices lists the device '
                      'and that the device option names it',
    'connect_failed': 'could not reach the perftest server over its TCP control port: check that the server was started on the peer, '
                      'the address and port are right and no firewall is in the way',
    'qp_modify_failed': 'QP modify failure: wrong GID index? check show_gids and pass gid_index (the RoCE v2 GID of the interface); '
                        'on a port that requires GRH, perftest needs a GID index too',
    'cuda_unavailable': 'CUDA/GPUDirect unavailable: check that the GPU is visible (nvidia-smi), that this perftest was built with CUDA '
                        'and that nvidia-peermem (or dma-buf support) is loaded',
    'completion_error': 'a work completion failed (for example retry counter exceeded): check link state, MTU on both ends, '
                        'PFC/ECN on the switch and that the peer is still running',
    'argument_error': 'perftest rejected its command line: check the option combination and that this perftest version supports it',
    'port_in_use': 'the TCP control port is already in use: stop the leftover perftest server or use another port',
    'timeout': 'the test did not finish within the hard timeout: the peer may be unreachable over RDMA or its server was not started',
    'unknown_error': 'perftest failed for a reason this parser does not classify: read error_text and the raw output',
}

# (class, compiled pattern), in precedence order: the first class with a match wins.
_ERROR_PATTERNS = (
    # A perftest built without CUDA does not know --use_cuda at all: that is a CUDA problem, not a typo.
    ('cuda_unavailable', re.compile(r"unrecognized option '--use_cuda|unknown option -- use_cuda")),
    ('argument_error', re.compile(r'Parser function exited with Error|Invalid Command|Invalid (?:Connection type|MTU|CPU|congest)'
                                  r'|cannot be used without|unrecognized option|invalid option|'
                                  r'argument \S+ should be|Please check command line'
                                  # perftest 6.28+ refuses a client whose test options differ from its server's.
                                  r'|\w+ mismatch: local=|Failed to negotiate parameters')),
    ('no_rdma_device', re.compile(r'No IB devices found|Unable to find the Infiniband/RoCE device|Failed to get IB devices list'
                                  r'|Did not detect devices|IB device \S+ not found|Couldn\'t get device list')),
    ('cuda_unavailable', re.compile(r'No CUDA device|no available device\(s\) that support CUDA|cuInit\(0\) returned'
                                    r'|cuMemAlloc(?:Host)?\(?\)? (?:error|failed)|cuCtxCreate\S* error|Couldn\'t init GPU context'
                                    r'|Failed to load CUDA|--use_cuda not supported|DMA-BUF is not supported on this GPU'
                                    r'|No such device ID \(\d+\) exists|cuDeviceGetByPCIBusId failed|CUDA is not (?:supported|enabled)')),
    ('port_in_use', re.compile(r'Address already in use|Couldn\'t listen to port|Failed to bind socket|bind failed'
                               r'|Failed to bind RDMA CM address')),
    ('qp_modify_failed', re.compile(r'Failed to modify QP.{0,256}to (?:RTR|RTS|INIT)|Unable to Connect the HCA\'s through the link')),
    ('completion_error', re.compile(r'Completion with error|Failed status|WC status|Failed to complete')),
    ('connect_failed', re.compile(r'Couldn\'t connect to|Unable to open file descriptor for socket connection'
                                  r'|Failed to exchange data between server and clients|Unable to init the socket connection'
                                  r'|Couldn\'t read remote address|Unable to perform rdma_client function|Unable to connect \(retries')),
)
# Registering memory fails for GPU buffers when GPUDirect is missing; only a CUDA error then.
_REG_MR = re.compile(r'ibv_reg_mr failed|Couldn\'t allocate MR|Failed to register MR')
_CUDA_CONTEXT = re.compile(r'CUDA|cuMemAlloc|GPU buffer')
# Failure lines that belong to no class: only an error when perftest itself printed something.
_GENERIC_FAILURE = re.compile(r'^\s*(?:Couldn\'t |Unable to |Failed to |Error[: ]|error: )')

_WARNING = re.compile(r'^\s*(?:WARNING:|Warning:|libibverbs: Warning|Conflicting CPU frequency|Requested mtu is higher than active mtu'
                      r'|Perftest doesn\'t support|Disabling dynamic polling|Using sampled CPU speed|mlx5: )')
_DEPRECATED = re.compile(r'\bis deprecated\b')
_TITLE_WORD = re.compile(r'\b(?:BW|Latency)\b')
_DASHES = re.compile(r'^\s*-{20,}\s*$')
_BANNER = re.compile(r'Waiting for client (?:to connect|rdma_cm QP to connect)')
_FIELD = re.compile(r'(?:^|\s)(?P<key>[A-Za-z][\w.*()\-]{0,40}(?: [\w.*()\-]{1,40}){0,6})\s{0,16}:\s{0,16}(?P<value>\S+)')
_NUMBER = re.compile(r'^-?(?:\d+(?:\.\d*)?|\.\d+|nan|inf)$', re.IGNORECASE)
_WELL_FORMED = re.compile(r'^\d{1,20}(?:\.\d{1,20})?$')
_CMDLINE = re.compile(r'\bib_(?:send|write|read|atomic)_(?:bw|lat)\b')
# "Server:", "# client", "[server side]", "client output:" ... a label an operator typed above a pasted side.
_SIDE_LABEL = re.compile(r'^[\s#>*\[(=-]{0,8}(server|client)(?:\s+side)?(?:\s+output)?\s*[\]):]?(?:\s|$)', re.IGNORECASE)
# perftest's short options that take no value; any other short option takes the next token as its value.
_FLAGS_WITHOUT_VALUE = frozenset('abeFhHNORVzUCgPZ')
# Long options that take their value as the next token (most are written --name=value or are flags).
_LONG_WITH_VALUE = frozenset(('--port', '--ib-dev', '--ib-port', '--size', '--duration', '--iters', '--tx-depth', '--rx-depth',
                              '--qp', '--gid-index', '--mtu', '--connection', '--sl', '--cq-mod', '--inline_size', '--source_ip',
                              '--dest_ip', '--source_port', '--dest_port', '--tclass', '--flow_label', '--margin'))
_SHELL_END = re.compile(r'^(?:&&?|\|\|?|;|\d?>>?\S*|<\S*|2>&1)$')
_GPU_NAME = re.compile(r'^\[pid = \d+, dev = (?P<index>\d+)\] device name = \[(?P<name>[^\]]*)\]')
_CUDA_SEEN = re.compile(r'^(?:initializing CUDA|cuMemAlloc\(\) of a|allocated GPU buffer|Picking (?:device No\.|GPU number))')

# Header keys (lower case, single spaces) -> output field and converter.
_HEADER_FIELDS = {
    'device': ('device', str),
    'number of qps': ('qps', int),
    'transport type': ('transport', str),
    'connection type': ('connection_type', str),
    'tx depth': ('tx_depth', int),
    'rx depth': ('rx_depth', int),
    'cq moderation': ('cq_moderation', int),
    'mtu': ('mtu', int),
    'link type': ('link_type', str),
    'gid index': ('gid_index', int),
    'max inline data': ('max_inline', int),
    'outstand reads': ('outstand_reads', int),
    'post list': ('post_list', int),
    'rdma_cm qps': ('rdma_cm', 'onoff'),
    'data ex. method': ('data_ex_method', str),
}

_BW_COLUMNS = ('bytes', 'iterations', 'bw_peak', 'bw_avg', 'msg_rate_mpps')
_LAT_COLUMN_NAMES = (
    ('t_min[usec]', 't_min_us'), ('t_max[usec]', 't_max_us'), ('t_typical[usec]', 't_typical_us'),
    ('t_avg[usec]', 't_avg_us'), ('t_stdev[usec]', 't_stdev_us'), ('99% percentile[usec]', 'p99_us'),
    ('99.9% percentile[usec]', 'p999_us'), ('tps average', 'tps_avg'),
)
_LAT_FIELDS = ('t_min_us', 't_max_us', 't_typical_us', 't_avg_us', 't_stdev_us', 'p99_us', 'p999_us')


def _number(token):
    """float of a perftest number; None for nan/inf (perftest prints -nan when it divides by zero), for a negative
    figure and for a number cut short (``1.`` at the end of a truncated line: perftest always prints the decimals)."""
    if not _WELL_FORMED.match(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def _convert(raw, kind):
    match = re.match(r'^-?\d+', raw)
    if kind is int:
        return int(match.group(0)) if match else None
    if kind == 'onoff':
        return {'ON': True, 'OFF': False}.get(raw.upper())
    return raw


def _table_columns(line):
    """Columns of a result table header line, or None when the line is not one."""
    if '#bytes' not in line or '#iterations' not in line:
        return None
    unit = re.search(r'BW peak\[([^\]]{1,32})\]', line)
    if unit:
        columns = list(_BW_COLUMNS)
        if '#sl' in line:
            columns.insert(1, 'sl')
        return {'kind': 'bw', 'unit': unit.group(1), 'columns': columns}
    lat = [field for name, field in _LAT_COLUMN_NAMES if name in line]
    if lat:
        return {'kind': 'lat', 'unit': 'usec', 'columns': ['bytes', 'iterations'] + lat}
    return None


def _bw_row(values, table, not_measured):
    unit = table['unit']
    row = {'bytes': None, 'iterations': None, 'bw_peak': None, 'bw_avg': None, 'msg_rate_mpps': None}
    row.update(values)
    for key in ('bytes', 'iterations'):
        if row[key] is not None:
            row[key] = int(row[key])
    if row.get('sl') is not None:
        row['sl'] = int(row['sl'])
    avg = row['bw_avg']
    # perftest cannot measure a peak in duration mode (-D) or with some CQ moderation settings; it prints 0.00.
    if row['bw_peak'] == 0 and ((avg is not None and avg > 0) or not_measured):
        row['bw_peak'] = None
    row['bw_avg_as_printed'] = avg
    row['bw_unit'] = unit
    row['bw_avg_gbps'] = None
    row['bw_avg_gbytes_s'] = None
    if avg is not None:
        if unit in ('MB/sec', 'MiB/sec'):
            row['bw_avg_gbytes_s'] = avg * MIB / 1e9
            row['bw_avg_gbps'] = avg * MIB * 8 / 1e9
        elif unit == 'Gb/sec':
            row['bw_avg_gbps'] = avg
            row['bw_avg_gbytes_s'] = avg / 8
    return row


def _lat_row(values):
    row = dict.fromkeys(('bytes', 'iterations') + _LAT_FIELDS)
    row.update(values)
    for key in ('bytes', 'iterations'):
        if row[key] is not None:
            row[key] = int(row[key])
    return row


def _title(line):
    """'RDMA_Write BW Test' -> 'RDMA_Write BW': a section title line (ending in 'Test', naming BW or Latency), else None."""
    stripped = line.strip()
    if not stripped.endswith('Test') or not stripped[-5:-4].isspace():
        return None
    title = stripped[:-4].rstrip()
    return title if _TITLE_WORD.search(title) else None


def _new_section(title, declared=None):
    return {'title': title, 'header': {}, 'fields': {}, 'table': None, 'results': [], 'closed': False,
            'server_banner': False, 'declared_side': declared, 'side': None}


def _command_side(line):
    """'server' or 'client' from a perftest command line: the client names its server (a host operand), the server does not.

    ``-Z``/``--server`` and ``-P``/``--client`` say it outright; tokens before the binary (sudo, taskset -c N, a prompt)
    are skipped, and shell punctuation ends the command.
    """
    tokens = line.split()
    # The last mention is the binary itself ("INFO: run ib_write_bw server on host: sudo ib_write_bw -d mlx5_3 ...").
    start = next((index for index in range(len(tokens) - 1, -1, -1) if _CMDLINE.search(tokens[index])), None)
    if start is None:
        return None
    operands = []
    index = start + 1
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if _SHELL_END.match(token):
            break
        if token in ('-Z', '--server'):
            return 'server'
        if token in ('-P', '--client'):
            return 'client'
        if token.startswith('--'):
            if '=' not in token and token in _LONG_WITH_VALUE:
                index += 1
            continue
        if token.startswith('-') and len(token) > 1:
            if len(token) == 2 and token[1] not in _FLAGS_WITHOUT_VALUE:
                index += 1
            continue
        operands.append(token)
    return 'client' if operands else 'server'


def _label_side(line):
    """'server' or 'client' when the line starts with a label an operator typed above one side's output, else None."""
    match = _SIDE_LABEL.match(line)
    return match.group(1).lower() if match else None


def _parse_row(tokens, table, not_measured):
    """A result row from numeric tokens.

    ``complete`` is False when columns are missing or the last number is cut short (truncated output); ``valid`` is
    False when a figure is not a finite, non-negative, well-formed number (-nan, inf, -1, 1.): that figure is None.
    """
    columns = table['columns']
    values = {}
    for name, token in zip(columns, tokens):
        values[name] = _number(token)
    cut_short = bool(tokens) and tokens[-1].endswith('.')
    complete = len(tokens) >= len(columns) and not cut_short
    row = _bw_row(values, table, not_measured) if table['kind'] == 'bw' else _lat_row(values)
    row['complete'] = complete
    row['valid'] = all(value is not None for value in values.values())
    return row


def _classify(lines):
    """(error_class, error_lines) from the lines of a capture."""
    cuda_context = any(_CUDA_CONTEXT.search(line) for line in lines)
    for error_class, pattern in _ERROR_PATTERNS:
        found = [line.strip() for line in lines if pattern.search(line)]
        if error_class == 'cuda_unavailable' and cuda_context:
            found += [line.strip() for line in lines if _REG_MR.search(line)]
        if found:
            return error_class, found
    return None, []


def _side(section):
    """The side a section shows: the server's banner, else what its label or command line declared, else (one-way tests
    only) the client's TX depth line; None when nothing tells."""
    if section['server_banner']:
        return 'server'
    if section['declared_side']:
        return section['declared_side']
    if section['title'] and 'Bidirectional' not in section['title'] and 'tx_depth' in section['fields']:
        return 'client'
    return None


def _resolve_sides(sections):
    """Each section's side; a capture pasting both sides one after the other (a bidirectional run prints the same header on
    both) leaves one side untold: when every other section with results is the server, that one is the client (and the
    reverse)."""
    for section in sections:
        section['side'] = _side(section)
    with_results = [section for section in sections if section['results']]
    untold = [section for section in with_results if section['side'] is None]
    told = set(section['side'] for section in with_results if section['side'])
    if len(untold) == 1 and len(told) == 1:
        untold[0]['side'] = 'client' if told == {'server'} else 'server'


@tool_parser(TOOL, keep_command=True)
def parse_perftest(text):
    """Output of one perftest run (stdout and stderr, client or server) -> dict.

    Returns {test, kind, device, link_type, gid_index, mtu, bw_unit, results,
    error_class, error_hint, error_text, ...header fields, warnings, sections}.
    ``results`` are the rows of the client's table (or of the only table);
    ``sections`` keeps every header/table found, so a capture holding the
    server's and the client's output side by side is not double counted.
    A section's side comes from the server's "Waiting for client" banner, a
    label or command line above it (the client's names its server), the
    one-way client's TX depth line, or, for two pasted sides of which one is
    told, from the other; ``side`` is None when nothing tells.
    Missing numbers are None.  Raises ParseError when the text holds neither a
    perftest header or table nor a recognised perftest error.
    """
    if '\x00' in text:
        raise ParseError(TOOL, 'contains NUL bytes; expected perftest text output')
    lines = [re.sub(r'^>\s?', '', line.rstrip('\r')) for line in text.splitlines()]

    sections = []
    warnings = []
    gpu = None
    use_cuda = None
    duration_s = None
    cmd_iterations = None
    banner_pending = False
    banner_seen = False
    not_measured = False
    current = None
    state = None  # 'header', 'table' or None
    pending_side = None  # what a label or command line says of the next section
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        label = _label_side(stripped) if len(stripped) <= 400 else None
        if _CMDLINE.search(stripped) and re.search(r'(?:^|\s)-[a-zA-Z]|\s--\w', stripped):
            pending_side = label or _command_side(stripped)
            duration = re.search(r'(?:^|\s)(?:-D\s*|--duration[= ])(\d+)\b', stripped)
            iters = re.search(r'(?:^|\s)(?:-n\s*|--iters[= ])(\d+)\b', stripped)
            if duration and duration_s is None:
                duration_s = int(duration.group(1))
            if iters and cmd_iterations is None:
                cmd_iterations = int(iters.group(1))
            if '--use_cuda' in stripped:
                use_cuda = True
            continue
        if label and len(stripped) <= 64 and not _title(line):
            pending_side = label
            continue
        if _BANNER.search(stripped):
            banner_seen = True
            if current is not None and current['table'] is None:
                current['server_banner'] = True
            else:
                banner_pending = True
            continue
        if stripped.startswith('*') and stripped.strip('* ') == '':
            continue
        gpu_match = _GPU_NAME.match(stripped)
        if gpu_match:
            gpu = {'index': int(gpu_match.group('index')), 'name': gpu_match.group('name')}
            use_cuda = True
            continue
        if _CUDA_SEEN.match(stripped):
            use_cuda = True
        if _WARNING.match(line) or _DEPRECATED.search(line):
            warnings.append(stripped)
            if "BW peak won't be measured" in stripped:
                not_measured = True
            continue
        title = _title(line)
        if title and ':' not in line:
            current = _new_section(title, pending_side)
            current['server_banner'] = banner_pending
            banner_pending = False
            pending_side = None
            sections.append(current)
            state = 'header'
            continue
        if _DASHES.match(line):
            if state == 'table' and current is not None and current['results']:
                current['closed'] = True
            state = None
            continue
        columns = _table_columns(line)
        if columns is not None:
            if current is None or current['table'] is not None and current['results']:
                current = _new_section(None, pending_side)
                pending_side = None
                sections.append(current)
            current['table'] = columns
            state = 'table'
            continue
        tokens = stripped.split()
        if state == 'table' and current is not None and len(tokens) >= 2 and all(_NUMBER.match(t) for t in tokens):
            current['results'].append(_parse_row(tokens, current['table'], not_measured))
            continue
        if state == 'header' and current is not None:
            for match in _FIELD.finditer(stripped):
                key = ' '.join(match.group('key').lower().split())
                current['header'][key] = match.group('value')
                spec = _HEADER_FIELDS.get(key)
                if spec:
                    current['fields'][spec[0]] = _convert(match.group('value'), spec[1])

    for section in sections:
        _settle_peaks(section, not_measured)
    _resolve_sides(sections)
    error_class, error_lines = _classify(lines)
    has_table = any(section['table'] or section['title'] for section in sections)
    if error_class is None:
        generic = [line.strip() for line in lines if _GENERIC_FAILURE.match(line)]
        if generic and (has_table or banner_seen):
            error_class, error_lines = 'unknown_error', generic
    if not has_table and error_class is None and not banner_seen:
        raise ParseError(TOOL, 'no perftest header, result table or known perftest error found',
                         next((line for line in lines if line.strip()), None))

    primary = _primary(sections)
    fields = primary['fields'] if primary else {}
    title = primary['title'] if primary else None
    table = primary['table'] if primary else None
    results = primary['results'] if primary else []
    kind = None
    if title:
        kind = 'lat' if 'Latency' in title else 'bw'
    elif table:
        kind = table['kind']

    result = {
        'test': title,
        'kind': kind,
        'device': fields.get('device'),
        'link_type': fields.get('link_type'),
        'gid_index': fields.get('gid_index'),
        'mtu': fields.get('mtu'),
        'bw_unit': table['unit'] if table and table['kind'] == 'bw' else None,
        'results': results,
        'error_class': error_class,
        'error_hint': ERROR_HINTS.get(error_class),
        'error_text': '\n'.join(error_lines[:5]) if error_lines else None,
        'transport': fields.get('transport'),
        'connection_type': fields.get('connection_type'),
        'qps': fields.get('qps'),
        'tx_depth': fields.get('tx_depth'),
        'rx_depth': fields.get('rx_depth'),
        'cq_moderation': fields.get('cq_moderation'),
        'max_inline': fields.get('max_inline'),
        'outstand_reads': fields.get('outstand_reads'),
        'post_list': fields.get('post_list'),
        'rdma_cm': fields.get('rdma_cm'),
        'data_ex_method': fields.get('data_ex_method'),
        'duration_s': duration_s,
        'iterations': cmd_iterations if cmd_iterations is not None else (results[0]['iterations'] if results else None),
        'use_cuda': use_cuda,
        'gpu': gpu,
        'bidirectional': ('Bidirectional' in title) if title else None,
        'bw_peak_measured': (False if primary and primary.get('peak_not_measured') else None),
        'header': dict(primary['header']) if primary else {},
        'side': primary['side'] if primary else None,
        'waiting_for_client': banner_seen,
        'warnings': warnings,
        'complete': (bool(results) and error_class is None and primary['closed']
                     and all(row['complete'] and row['valid'] for row in results)),
        'sections': [_section_summary(section) for section in sections],
    }
    return result


def _settle_peaks(section, not_measured):
    """A table where one row shows peak 0.00 next to a real average did not measure peaks: every 0.00 peak there is unknown."""
    rows = [row for row in section['results'] if 'bw_peak' in row]
    unmeasured = not_measured or any(row['bw_peak'] is None and row['bw_avg'] for row in rows)
    section['peak_not_measured'] = unmeasured
    if unmeasured:
        for row in rows:
            if row['bw_peak'] == 0:
                row['bw_peak'] = None


def _primary(sections):
    """The section whose numbers are reported: the client's table when the capture has both sides."""
    with_results = [section for section in sections if section['results']]
    if not with_results:
        return sections[0] if sections else None
    for section in with_results:
        if section['side'] == 'client':
            return section
    return with_results[0]


def _section_summary(section):
    table = section['table']
    return {
        'test': section['title'],
        'side': section['side'],
        'device': section['fields'].get('device'),
        'bw_unit': table['unit'] if table and table['kind'] == 'bw' else None,
        'results': section['results'],
    }


def summarize_perftest(parsed):
    """Headline numbers of a parsed run: the row with the largest message size.

    Returns {bytes, bw_avg_gbps, bw_avg_gbytes_s, t_typical_us, t_avg_us, p99_us} (None where unknown).
    """
    rows = [row for row in parsed.get('results') or [] if row.get('bytes') is not None]
    summary = dict.fromkeys(('bytes', 'bw_avg_gbps', 'bw_avg_gbytes_s', 't_typical_us', 't_avg_us', 'p99_us'))
    if not rows:
        return summary
    row = max(rows, key=lambda entry: entry['bytes'])
    for key in summary:
        summary[key] = row.get(key)
    return summary


_HELP_OPTION = re.compile(r'^\s{0,16}(?:-[A-Za-z], )?(--[a-z][a-z0-9_-]{0,40})\b')
# The usage's CUDA options (perftest prints them only when it was built with CUDA, and --use_cuda_dmabuf only with dma-buf).
_HELP_CUDA = (('cuda', '--use_cuda'), ('cuda_bus_id', '--use_cuda_bus_id'), ('cuda_dmabuf', '--use_cuda_dmabuf'))


@tool_parser('perftest --help')
def parse_perftest_help(text):
    """``ib_*_bw --help`` (its usage, or a grep of it) -> {usage, options, cuda, cuda_bus_id, cuda_dmabuf}.

    perftest prints the CUDA options only when it was built with CUDA (Debian's package is not), and
    ``--use_cuda_dmabuf`` only when that build supports dma-buf: their presence says which GPUDirect mode this
    perftest can run.  ``usage`` is True when the text holds perftest's "Usage:" line (a whole usage, so a missing
    option is really missing); a grep of it holds only option lines.  Raises ParseError for text that has neither.
    """
    lines = text.splitlines()
    usage = any(line.strip() == 'Usage:' for line in lines)
    options = []
    for line in lines:
        match = _HELP_OPTION.match(line)
        if match and match.group(1) not in options:
            options.append(match.group(1))
    if not usage and not options:
        raise ParseError('perftest --help', 'neither a "Usage:" line nor an option line (such as "  -d, --ib-dev=<dev>")',
                         text.strip().splitlines()[0] if text.strip() else None)
    found = dict((key, option in options) for key, option in _HELP_CUDA)
    found.update(usage=usage, options=options)
    return found


def build_perftest_argv(params):
    """perftest arguments (without the binary) from module parameters; the client adds the server address last.

    ``params`` keys: test, role, server, device, ib_port, gid_index, size, all_sizes, duration, iterations,
    tx_depth, qps, use_cuda, use_cuda_bus_id, use_cuda_dmabuf, tclass, report_gbits, bidirectional, port, rdma_cm, mtu, connection,
    cpu_freq_check, extra_args.  Missing keys mean "not set".
    """
    args = []
    if params.get('device'):
        args += ['-d', params['device']]
    if params.get('ib_port') is not None:
        args += ['-i', str(params['ib_port'])]
    if params.get('gid_index') is not None:
        args += ['-x', str(params['gid_index'])]
    if params.get('all_sizes'):
        args.append('-a')
    elif params.get('size') is not None:
        args += ['-s', str(params['size'])]
    if params.get('duration') is not None:
        args += ['-D', str(params['duration'])]
    elif params.get('iterations') is not None:
        args += ['-n', str(params['iterations'])]
    if params.get('tx_depth') is not None:
        args += ['-t', str(params['tx_depth'])]
    if params.get('qps') is not None:
        args += ['-q', str(params['qps'])]
    # The GPU by its PCI address where perftest can take one, else by CUDA ordinal; --use_cuda_dmabuf after it: perftest reads
    # its options in order and refuses dma-buf before a CUDA memory type is set ("CUDA DMA-BUF cannot be used without CUDA").
    if params.get('use_cuda_bus_id'):
        args.append('--use_cuda_bus_id=%s' % params['use_cuda_bus_id'])
    elif params.get('use_cuda') is not None:
        args.append('--use_cuda=%d' % params['use_cuda'])
    if params.get('use_cuda_dmabuf') and (params.get('use_cuda_bus_id') or params.get('use_cuda') is not None):
        args.append('--use_cuda_dmabuf')
    if params.get('tclass') is not None:
        args.append('--tclass=%d' % params['tclass'])
    if params.get('report_gbits'):
        args.append('--report_gbits')
    if params.get('bidirectional'):
        args.append('-b')
    if params.get('port') is not None:
        args += ['-p', str(params['port'])]
    if params.get('rdma_cm'):
        args.append('-R')
    if params.get('mtu') is not None:
        args += ['-m', str(params['mtu'])]
    if params.get('connection'):
        args += ['-c', params['connection']]
    if not params.get('cpu_freq_check'):
        args.append('-F')
    args += [str(arg) for arg in params.get('extra_args') or []]
    if params.get('role') == 'client' and params.get('server'):
        args.append(params['server'])
    return args
