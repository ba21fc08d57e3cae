# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for nccl-tests ``*_perf`` output (all_reduce_perf, all_gather_perf, ...),
with or without ``NCCL_DEBUG=INFO`` lines mixed in.  Pure functions; no Ansible import.

nccl-tests prints algbw and busbw in GB/s with 1 GB = 1e9 bytes (decimal) and
times in microseconds; the figures are returned as printed, no conversion is
needed.  ``#wrong`` is a count of wrong elements; old versions print an
``error`` column (maximum deviation, a float) instead, and ``N/A`` when the
results were not checked (``-c 0``): both give ``wrong`` None, never 0.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

TOOL = 'nccl-tests'

# mpirun --tag-output ("[1,0]<stdout>:") and srun/pdsh-style "[0] " prefixes.
_PREFIX = re.compile(r'^\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?\s*')
_JOB_HEADER = re.compile(r'^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)(.*)$')
_RANK = re.compile(r'^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S{1,255})\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$')
_TESTS_VERSION = re.compile(r'^#\s*nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?')
_COLLECTIVE = re.compile(r'^#\s*Collective test (?:starting|concluded):\s*(\S+)')
_NCCL_VERSION = re.compile(r'NCCL version\s+(\d+\.\d+\.\d+\S*)')
_AVG = re.compile(r'^#\s*Avg bus bandwidth\s*:\s*([0-9.]+(?:[eE][-+]?\d+)?)')
_OOB = re.compile(r'^#\s*Out of bounds values\s*:\s*(\d+)\s*(\S+)?')
# A test binary as built (all_reduce_perf) or with the NAME_SUFFIX of an MPI build (all_reduce_perf_mpi, alltoall_perf.mpi).
_BINARY = re.compile(r'(?:^|[\s/=`\'"])((?:[A-Za-z0-9]{1,32}_){1,4}perf)((?:[_.-][A-Za-z0-9]{1,16}){0,3})(?=[\s`\'";&|)]|$)')
_LAUNCHER = re.compile(r'\b(?:mpirun|mpiexec|srun|orterun|prterun|torchrun)\b')
# NCCL's own IB transport and the IB plugins of HPC-X / DOCA (NET/IBext, NET/IBext_v8) print the HCAs they opened alike.
_NET_IB_USING = re.compile(r'NCCL INFO NET/IB(?:ext\w{0,8})?\s*:\s*Using\s+(.*)$')
# The host of an NCCL log line: NCCL prefixes each with "<hostname>:<pid>:<tid> [<cuda device>]".
_LOG_HOST = re.compile(r'^([A-Za-z0-9][A-Za-z0-9._-]{0,254}):\d+:\d+\s+\[\d+\]\s')
_NET_SOCKET_USING = re.compile(r'NCCL INFO NET/Socket\s*:\s*Using\s+(.*)$')
_IB_DEVICE = re.compile(r'\[(\d+)\]([A-Za-z0-9_.-]+):(\d+)/([A-Za-z]+)')
_SOCKET_IFACE = re.compile(r'\[(\d+)\]([^:\s\[]{1,64}):([^<\s]{0,64})<\d+>')
_USING_NETWORK = re.compile(r'NCCL INFO Using network\s+(.+?)\s*$')
_VIA_NET = re.compile(r'\b(?:Channel|Ring)\s+(\d+)(?:/\d+)?\s*:.{0,512}\bvia\s+NET/([A-Za-z0-9_]+)(/\S*)?')
_CHANNEL = re.compile(r'NCCL INFO (?:Channel|Ring)\s+(\d+)(?:/\d+)?\s*:')
_COLL_CHANNELS = re.compile(r'NCCL INFO (\d+) coll channels')
_GDR_RING = re.compile(r'Connected all rings.{0,512}\bGDR\s+([01])\b')
_NCCL_LOG = re.compile(r'NCCL (?:INFO|WARN|version|error|failure)')
_ERROR_LINE = re.compile(r'NCCL WARN|NCCL error|Test NCCL failure|Test CUDA failure|NCCL failure|Test failure')
_INT = re.compile(r'^-?\d+$')
# nccl-tests prints every decimal: '95.' is a number cut short, not 95.
_FLOAT = re.compile(r'^-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?$')

# Header tokens as the columns they name.
# nccl-tests 2.17+ may print "cputime" for the time column (-C), per-iteration columns (i_min, i_max, i_p99, i_cv%) after
# each side's #wrong, and a trailing "timestamp" column (a date and a time, two tokens).
_COLUMN_NAMES = {
    'size': 'size', 'count': 'count', 'type': 'type', 'redop': 'redop', 'root': 'root',
    'time': 'time', 'cputime': 'time', 'algbw': 'algbw', 'busbw': 'busbw', '#wrong': 'wrong', 'wrong': 'wrong', 'error': 'error',
    'i_min': 'i_min', 'i_max': 'i_max', 'i_p99': 'i_p99', 'i_cv%': 'i_cv', 'timestamp': 'timestamp',
}
_METRICS = ('time', 'algbw', 'busbw', 'wrong', 'error', 'i_min', 'i_max', 'i_p99', 'i_cv')
_PER_ITERATION = ('i_min', 'i_max', 'i_p99', 'i_cv')
_TIMESTAMP = re.compile(r'^\d{4}-\d\d-\d\d$')
# The current layout, for rows whose table header is not in the text (an excerpt cut above it).
_DEFAULT_COLUMNS = [('size', None), ('count', None), ('type', None), ('redop', None), ('root', None),
                    ('time', 'oop'), ('algbw', 'oop'), ('busbw', 'oop'), ('wrong', 'oop'),
                    ('time', 'ip'), ('algbw', 'ip'), ('busbw', 'ip'), ('wrong', 'ip')]
_MAX_ERRORS = 50


def _is_ib_network(name):
    return name is not None and (name == 'IB' or name.startswith('IBext') or name.startswith('IB_'))


def _network_kind(name):
    if name is None:
        return None
    if _is_ib_network(name):
        return 'IB'
    if name == 'Socket':
        return 'Socket'
    return None


def _number(token):
    """A float for a number as printed, None for N/A or anything else."""
    token = token.rstrip('*')
    if _FLOAT.match(token):
        return float(token)
    return None


def _figure(value):
    """A time or bandwidth as a figure to grade: finite, non-negative and printed in full, else None."""
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _new_job(header=None):
    return {
        'header': header,
        'nthread': None, 'ngpus': None, 'min_bytes': None, 'max_bytes': None,
        'ranks': [], 'rows': [], 'avg_busbw_gbs': None, 'out_of_bounds': None, 'out_of_bounds_ok': None,
    }


def _table_columns(line, label_line):
    """Columns of a table header line, in order: [(name, placement)] with placement 'oop', 'ip' or None."""
    tokens = line.lstrip('#').split()
    columns = []
    in_place_label = 'in-place' in tokens or (label_line is not None and 'in-place' in label_line and 'out-of-place' not in label_line)
    for token in tokens:
        bare = token.split('(')[0].lower()
        if bare in ('in-place', 'out-of-place'):
            continue
        if bare not in _COLUMN_NAMES:
            return None
        columns.append(_COLUMN_NAMES[bare])
    if 'size' not in columns or not any(name in columns for name in ('busbw', 'algbw')):
        return None
    placed = []
    seen = {}
    for name in columns:
        if name in _METRICS:
            occurrence = seen.get(name, 0)
            seen[name] = occurrence + 1
            if occurrence == 0:
                placement = 'ip' if in_place_label and columns.count(name) == 1 else 'oop'
            else:
                placement = 'ip'
            placed.append((name, placement))
        else:
            placed.append((name, None))
    return placed


def _parse_row(tokens, columns):
    """A table row as a dict, or None when it does not fit the columns (a cut or foreign line)."""
    if columns and columns[-1][0] == 'timestamp' and len(tokens) == len(columns) + 1 and _TIMESTAMP.match(tokens[-2]):
        tokens = tokens[:-2] + ['%s %s' % (tokens[-2], tokens[-1])]
    if len(tokens) != len(columns):
        return None
    row = {
        'size_bytes': None, 'count': None, 'type': None, 'redop': None, 'root': None,
        'oop_time_us': None, 'oop_algbw_gbs': None, 'oop_busbw_gbs': None, 'oop_wrong': None, 'oop_error': None,
        'ip_time_us': None, 'ip_algbw_gbs': None, 'ip_busbw_gbs': None, 'ip_wrong': None, 'ip_error': None,
        'wrong': None, 'error_flagged': False, 'valid': True,
    }
    suffix = {'time': 'time_us', 'algbw': 'algbw_gbs', 'busbw': 'busbw_gbs', 'wrong': 'wrong', 'error': 'error',
              'i_min': 'i_min_us', 'i_max': 'i_max_us', 'i_p99': 'i_p99_us', 'i_cv': 'i_cv_pct'}
    for token, (name, placement) in zip(tokens, columns):
        if name == 'timestamp':
            row['timestamp'] = token
        elif name in ('size', 'count'):
            if not _INT.match(token):
                return None
            row['size_bytes' if name == 'size' else 'count'] = int(token)
        elif name == 'root':
            if not _INT.match(token):
                return None
            row['root'] = int(token)
        elif name in ('type', 'redop'):
            row[name] = token
        else:
            if token.endswith('*'):
                row['error_flagged'] = True
            if name == 'wrong':
                bare = token.rstrip('*')
                value = int(bare) if _INT.match(bare) else None
                if value is None and bare != 'N/A':
                    return None
            else:
                value = _number(token)
                non_finite = token.rstrip('*').lstrip('+-').lower() in ('inf', 'nan')
                if value is None and token.rstrip('*') != 'N/A' and not non_finite:
                    return None
                if non_finite or value is not None and _figure(value) is None:
                    # inf, nan, 1e309 or a negative: dropped from the figures, the row marked invalid.
                    value = None
                    row['valid'] = False
            row['%s_%s' % (placement, suffix[name])] = value
    wrongs = [row[key] for key in ('oop_wrong', 'ip_wrong') if row[key] is not None]
    row['wrong'] = sum(wrongs) if wrongs else None
    return row


def _strip_prefix(line):
    return _PREFIX.sub('', line, count=1)


# A root of -1 is how nccl-tests prints "no root" for collectives that have none.
@tool_parser(TOOL, signed=('root',), keep_command=True)
def parse_nccl_tests(text):
    """nccl-tests ``*_perf`` output -> rows, bus bandwidth, transport (IB/Socket), GDR, ranks and errors.

    ``test`` is the collective's binary without the suffix of an MPI build (``all_reduce_perf`` for
    ``all_reduce_perf_mpi``), from the "Collective test starting" line or the command line; ``binary`` is the name as
    printed.  Returns {test, binary, nccl_tests_version, nccl_version, rows: [...], avg_busbw_gbs, out_of_bounds, transport, gdr, network,
    transports_seen, ranks: [...], net_devices, ib_hcas, ib_hcas_by_host, socket_ifaces, channels, multiple_jobs, jobs: [...],
    errors: [...], truncated, invalid_rows}.  ``ib_hcas_by_host`` maps each host NCCL logged from (the ``host:pid:tid`` prefix of
    its INFO lines) to the HCAs its ``NET/IB : Using`` lines name there: how many rails each box of the job used.  A figure
    that is not finite or is negative (``1e309`` busbw) is dropped (None) and its row has ``valid`` False; ``invalid_rows``
    counts them, and an unusable average leaves ``truncated`` True.
    When the log holds more than one job header (each rank started its own job, e.g. nccl-tests built
    without MPI, or two hosts each printing a header), ``multiple_jobs`` is True and the top-level ``rows``,
    ``avg_busbw_gbs`` and ``out_of_bounds`` are None: each job is under ``jobs`` and rows are attributed to the job
    header printed last before them (best effort: independent jobs interleave).
    """
    if '\x00' in text:
        raise ParseError(TOOL, 'contains NUL bytes; expected nccl-tests text output')
    jobs = []
    errors = []
    nccl_versions = []
    tests_version = None
    library_code = None
    test = None
    binary = None
    command_test = None
    net_devices = []
    ib_hcas = []
    ib_hcas_by_host = {}
    socket_ifaces = []
    networks_used = []
    channel_nets = []
    channel_ids = set()
    coll_channels = None
    gdr_evidence = []
    gdr_disabled = False
    ib_using = False
    socket_using = False
    recognised = False
    columns = None
    label_line = None
    previous = None
    partial_rows = 0

    def current_job():
        if not jobs:
            jobs.append(_new_job())
        return jobs[-1]

    for raw in text.splitlines():
        line = _strip_prefix(raw.rstrip())
        stripped = line.strip()
        if not stripped:
            continue
        match = _JOB_HEADER.match(stripped)
        if match:
            recognised = True
            job = _new_job(stripped)
            job['nthread'], job['ngpus'] = int(match.group(1)), int(match.group(2))
            job['min_bytes'], job['max_bytes'] = int(match.group(3)), int(match.group(4))
            jobs.append(job)
            previous = stripped
            continue
        match = _TESTS_VERSION.match(stripped)
        if match:
            recognised = True
            tests_version = match.group(1)
            library_code = int(match.group(2)) if match.group(2) else library_code
            continue
        match = _COLLECTIVE.match(stripped)
        if match:
            recognised = True
            named = _BINARY.match(match.group(1))
            test = test or (named.group(1) if named else match.group(1))
            binary = binary or match.group(1)
            continue
        match = _RANK.match(stripped)
        if match:
            recognised = True
            current_job()['ranks'].append({
                'rank': int(match.group(1)),
                'group': int(match.group(2)) if match.group(2) is not None else None,
                'pid': int(match.group(3)),
                'host': match.group(4).strip(),
                'device': int(match.group(5)),
                'bus_id': match.group(6),
                'name': match.group(7).strip() or None,
            })
            continue
        if _ERROR_LINE.search(stripped) and len(errors) < _MAX_ERRORS:
            errors.append(stripped)
        first_token = stripped.split()[0]
        if first_token.lower() == 'size':
            found = _table_columns(stripped, previous)
            if found is not None:
                recognised = True
                columns = found
                current_job()
                previous = stripped
                continue
        if stripped.startswith('#'):
            match = _AVG.match(stripped)
            if match:
                recognised = True
                current_job()['avg_busbw_gbs'] = _figure(_number(match.group(1)))
                continue
            match = _OOB.match(stripped)
            if match:
                recognised = True
                job = current_job()
                job['out_of_bounds'] = int(match.group(1))
                job['out_of_bounds_ok'] = (match.group(2) == 'OK') if match.group(2) else None
                continue
            found = _table_columns(stripped, previous)
            if found is not None:
                recognised = True
                columns = found
                current_job()
            previous = stripped
            continue
        if 'out-of-place' in stripped or stripped == 'in-place':
            previous = stripped
            continue
        if _INT.match(first_token) and not stripped.startswith('-'):
            tokens = stripped.split()
            row = _parse_row(tokens, columns if columns is not None else _DEFAULT_COLUMNS)
            if row is not None:
                recognised = True
                current_job()['rows'].append(row)
                continue
            partial_rows += 1
        if _NCCL_LOG.search(stripped):
            recognised = True
            match = _NCCL_VERSION.search(stripped)
            if match:
                nccl_versions.append(match.group(1))
            match = _NET_IB_USING.search(stripped)
            if match:
                ib_using = True
                host = _LOG_HOST.match(stripped)
                for found_dev in _IB_DEVICE.finditer(match.group(1)):
                    entry = '%s:%s/%s' % (found_dev.group(2), found_dev.group(3), found_dev.group(4))
                    if entry not in net_devices:
                        net_devices.append(entry)
                    if found_dev.group(2) not in ib_hcas:
                        ib_hcas.append(found_dev.group(2))
                    if host:
                        on_host = ib_hcas_by_host.setdefault(host.group(1), [])
                        if found_dev.group(2) not in on_host:
                            on_host.append(found_dev.group(2))
            match = _NET_SOCKET_USING.search(stripped)
            if match:
                socket_using = True
                for found_if in _SOCKET_IFACE.finditer(match.group(1)):
                    if found_if.group(2) not in socket_ifaces:
                        socket_ifaces.append(found_if.group(2))
            match = _USING_NETWORK.search(stripped)
            if match and match.group(1) not in networks_used:
                networks_used.append(match.group(1))
            match = _VIA_NET.search(stripped)
            if match:
                if match.group(2) not in channel_nets:
                    channel_nets.append(match.group(2))
                gdr_evidence.append('GDRDMA' in (match.group(3) or ''))
            match = _CHANNEL.search(stripped)
            if match:
                channel_ids.add(int(match.group(1)))
            match = _COLL_CHANNELS.search(stripped)
            if match:
                coll_channels = max(coll_channels or 0, int(match.group(1)))
            if 'GPU Direct RDMA Enabled' in stripped:
                gdr_evidence.append(True)
            if 'GPU Direct RDMA Disabled' in stripped:
                gdr_disabled = True
            match = _GDR_RING.search(stripped)
            if match:
                gdr_evidence.append(match.group(1) == '1')
            continue
        if binary is None and (_LAUNCHER.search(stripped) or '$' in stripped or stripped.startswith('./')
                               or _BINARY.match(first_token.rsplit('/', 1)[-1])):
            match = _BINARY.search(stripped)
            if match:
                binary = match.group(1) + match.group(2)
                command_test = match.group(1)
        previous = stripped

    if not recognised:
        first = next((line for line in text.splitlines() if line.strip()), None)
        raise ParseError(TOOL, 'no nccl-tests header, result table or NCCL log line found', first)

    # Transport: what the connections used beats what was initialised.
    transports_seen = []
    for name in channel_nets + networks_used:
        kind = _network_kind(name)
        if kind and kind not in transports_seen:
            transports_seen.append(kind)
    if channel_nets:
        kinds = [_network_kind(name) for name in channel_nets]
        transport = 'Socket' if 'Socket' in kinds else ('IB' if 'IB' in kinds else None)
    elif networks_used:
        kinds = [_network_kind(name) for name in networks_used]
        transport = 'Socket' if 'Socket' in kinds else ('IB' if 'IB' in kinds else None)
    elif ib_using:
        transport = 'IB'
    elif socket_using:
        transport = 'Socket'
    else:
        transport = None
    network = (channel_nets or networks_used or [None])[0]

    if any(gdr_evidence):
        gdr = True
    elif gdr_evidence or gdr_disabled:
        gdr = False
    elif transport == 'Socket' and (channel_nets or networks_used):
        gdr = False
    else:
        gdr = None

    # Two job headers, or one rank number printed twice, mean independent jobs, not one multi-node job.
    rank_numbers = [rank['rank'] for job in jobs for rank in job['ranks']]
    headers = [job for job in jobs if job['header']]
    multiple_jobs = len(headers) > 1 or len(set(rank_numbers)) < len(rank_numbers)

    if library_code and library_code >= 20900:
        library_version = '%d.%d.%d' % (library_code // 10000, (library_code // 100) % 100, library_code % 100)
    else:
        library_version = None
    ranks = [rank for job in jobs for rank in job['ranks']]
    first_job = jobs[0] if jobs else _new_job()
    truncated = partial_rows > 0 or (columns is not None and first_job['avg_busbw_gbs'] is None)
    return {
        'test': test or command_test,
        'binary': binary,
        'nccl_tests_version': tests_version,
        'nccl_version': nccl_versions[0] if nccl_versions else library_version,
        'rows': None if multiple_jobs else first_job['rows'],
        'avg_busbw_gbs': None if multiple_jobs else first_job['avg_busbw_gbs'],
        'out_of_bounds': None if multiple_jobs else first_job['out_of_bounds'],
        'out_of_bounds_ok': None if multiple_jobs else first_job['out_of_bounds_ok'],
        'transport': transport,
        'gdr': gdr,
        'network': network,
        'transports_seen': transports_seen,
        'ranks': ranks,
        'net_devices': net_devices,
        'ib_hcas': ib_hcas,
        'ib_hcas_by_host': ib_hcas_by_host,
        'socket_ifaces': socket_ifaces,
        'channels': coll_channels if coll_channels is not None else (len(channel_ids) or None),
        'multiple_jobs': bool(multiple_jobs),
        'jobs': jobs,
        'errors': errors,
        'truncated': truncated,
        'invalid_rows': sum(1 for job in jobs for row in job['rows'] if not row['valid']),
    }


def _row_busbw(row):
    values = [v for v in (row.get('oop_busbw_gbs'), row.get('ip_busbw_gbs')) if v is not None]
    return max(values) if values else None


def busbw_at(parsed, size_bytes):
    """The row of ``parsed['rows']`` with the largest size <= ``size_bytes``, or None when there is none."""
    rows = [row for row in (parsed or {}).get('rows') or [] if row.get('size_bytes') is not None]
    below = [row for row in rows if row['size_bytes'] <= int(size_bytes)]
    if not below:
        return None
    return max(below, key=lambda row: row['size_bytes'])


def max_busbw(parsed):
    """The highest busbw (out-of-place or in-place) of any row, in GB/s, or None without rows."""
    values = [_row_busbw(row) for row in (parsed or {}).get('rows') or []]
    values = [value for value in values if value is not None]
    return max(values) if values else None


def busbw_at_max_size(parsed):
    """busbw (the better of out-of-place and in-place) of the largest message size, or None."""
    rows = [row for row in (parsed or {}).get('rows') or [] if row.get('size_bytes') is not None]
    if not rows:
        return None
    return _row_busbw(max(rows, key=lambda row: row['size_bytes']))


def data_errors(parsed):
    """Rows whose #wrong is above zero, as [{size_bytes, oop_wrong, ip_wrong}], plus out-of-bounds failures."""
    found = []
    for row in (parsed or {}).get('rows') or []:
        if (row.get('wrong') or 0) > 0:
            found.append({'size_bytes': row.get('size_bytes'), 'oop_wrong': row.get('oop_wrong'), 'ip_wrong': row.get('ip_wrong')})
    return found


# What Open MPI's launcher prints when it cannot start the job on every host, first match wins: (pattern, error_class).
# launcher_missing: a program it needs is not where it looks; launcher_failed: the SSH session or Open MPI's own network.
_LAUNCHER_PROBLEMS = (
    (re.compile(r'orted: (?:command not found|No such file or directory)|(?:bash|sh): [^\n]{0,200}orted: No such file'),
     'launcher_missing'),
    (re.compile(r'mpirun was unable to find the specified executable file|mpirun was unable to launch the specified application'),
     'launcher_missing'),
    (re.compile(r'Host key verification failed|Permission denied \(publickey|No route to host|Connection (?:refused|timed out)'),
     'launcher_failed'),
    (re.compile(r'None of the TCP networks specified to be included for out-of-band'), 'launcher_failed'),
    (re.compile(r'ORTE was unable to reliably start one or more daemons|An ORTE daemon has unexpectedly failed|'
                r'ORTE has lost communication with a remote daemon|ORTE does not know how to route a message'), 'launcher_failed'),
)


def local_hcas(parsed, host=None):
    """The HCAs NCCL used on ``host`` (its ``NET/IB : Using`` line); else on the host of rank 0 (mpirun's first host,
    the node under test); None when the log names none."""
    by_host = parsed.get('ib_hcas_by_host') or {}
    if host in by_host:
        return by_host[host]
    first = [rank.get('host') for rank in parsed.get('ranks') or [] if rank.get('rank') == 0]
    return by_host.get(first[0]) if first else None


def launcher_problem(text):
    """(error_class, the line that says so) when mpirun's output shows it could not start the job on every host, else None.

    A pure reading of Open MPI's (ORTE's) messages: the SSH session to a host refused or unverified, orted or the benchmark
    not found there, the out-of-band network unusable.  These are the launcher's, never the hosts' under test.
    """
    lines = (text or '').splitlines()
    for pattern, error_class in _LAUNCHER_PROBLEMS:
        for line in lines:
            if pattern.search(line):
                return error_class, ' '.join(line.split())[:300]
    return None
