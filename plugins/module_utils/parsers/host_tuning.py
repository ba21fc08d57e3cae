# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for host tuning state: /proc/cmdline, /proc/meminfo, /proc/modules
or lsmod, the CPU frequency governor, intel_pstate/no_turbo, memlock limits
and NIC IRQ placement.  Pure functions; no Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser
from ansible_collections.gpufleet.netval.plugins.module_utils.sysfs import read_value as _read


@tool_parser('cmdline')
def parse_cmdline(text):
    """/proc/cmdline -> {tokens: [...], params: {key: value or True}, init_args: [...]}.

    Everything after a lone ``--`` belongs to init, not the kernel, and is
    returned separately as ``init_args``.  A repeated key (``hugepagesz=2M hugepagesz=1G``) keeps every value in
    ``params_all``; ``params`` holds the last one, which is what the kernel uses.
    """
    if '\x00' in text:
        raise ParseError('cmdline', 'contains NUL bytes; expected /proc/cmdline text')
    stripped = text.strip()
    if not stripped:
        raise ParseError('cmdline', 'empty command line')
    if '\n' in stripped:
        raise ParseError('cmdline', 'more than one line; expected the single line of /proc/cmdline',
                         stripped.splitlines()[1])
    tokens = stripped.split()
    init_args = []
    if '--' in tokens:
        split_at = tokens.index('--')
        tokens, init_args = tokens[:split_at], tokens[split_at + 1:]
    params = {}
    params_all = {}
    for token in tokens:
        key, sep, value = token.partition('=')
        value = value if sep else True
        params[key] = value
        params_all.setdefault(key, []).append(value)
    return {'tokens': tokens, 'params': params, 'params_all': params_all, 'init_args': init_args}


@tool_parser('meminfo')
def parse_meminfo(text):
    """/proc/meminfo -> {fields: {name: int}, hugepages: {...}} (sizes in bytes, counts as counts)."""
    fields = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = re.match(r'^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$', line)
        if not match:
            raise ParseError('meminfo', 'line %d is not "Name: value [kB]"' % number, line)
        value = int(match.group(2))
        fields[match.group(1)] = value * 1024 if match.group(3) else value
    if not fields:
        raise ParseError('meminfo', 'no fields found')
    hugepages = {
        'total': fields.get('HugePages_Total'),
        'free': fields.get('HugePages_Free'),
        'reserved': fields.get('HugePages_Rsvd'),
        'surplus': fields.get('HugePages_Surp'),
        'page_size_bytes': fields.get('Hugepagesize'),
    }
    return {'fields': fields, 'hugepages': hugepages}


@tool_parser('proc_modules')
def parse_proc_modules(text):
    """/proc/modules -> {modules: {name: {size, refcount, used_by: [...], state}}}."""
    modules = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) < 3 or not parts[1].isdecimal():
            raise ParseError('proc_modules', 'line %d is not "name size refcount ..."' % number, line)
        used_by = []
        if len(parts) > 3 and parts[3] not in ('-', ''):
            used_by = [entry for entry in parts[3].split(',') if entry]
        modules[parts[0]] = {
            'size': int(parts[1]),
            'refcount': int(parts[2]) if re.fullmatch(r'-?[0-9]+', parts[2]) else None,
            'used_by': used_by,
            'state': parts[4] if len(parts) > 4 else None,
        }
    return {'modules': modules}


@tool_parser('lsmod')
def parse_lsmod(text):
    """``lsmod`` output -> {modules: {name: {size, refcount, used_by: [...]}}}."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {'modules': {}}
    if not re.match(r'^Module\s+Size\s+Used by', lines[0]):
        raise ParseError('lsmod', 'missing the "Module Size Used by" header', lines[0])
    modules = {}
    for number, line in enumerate(lines[1:], 2):
        parts = line.split()
        # One optional minus sign on the refcount (lsmod prints -1 for a module being loaded), ASCII digits only.
        if len(parts) < 3 or not re.fullmatch(r'[0-9]+', parts[1]) or not re.fullmatch(r'-?[0-9]+', parts[2]):
            raise ParseError('lsmod', 'line %d is not "name size refcount [users]"' % number, line)
        used_by = [entry for entry in parts[3].split(',') if entry] if len(parts) > 3 else []
        modules[parts[0]] = {'size': int(parts[1]), 'refcount': int(parts[2]), 'used_by': used_by}
    return {'modules': modules}


@tool_parser('limits')
def parse_limits(text):
    """/proc/<pid>/limits -> {limits: {name: {soft, hard, units}}, memlock_bytes: {soft, hard}}.

    ``unlimited`` is returned as the string 'unlimited'; numbers as int.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith('Limit'):
        raise ParseError('limits', 'missing the "Limit Soft Limit Hard Limit Units" header',
                         lines[0] if lines else None)
    limits = {}
    for line in lines[1:]:
        # The name ends at the first run of two or more spaces; soft, hard and the optional units follow.
        gap = re.search(r'\s{2,}', line)
        fields = line[gap.end():].split() if gap else []
        if not line[:1].strip() or len(fields) not in (2, 3):
            raise ParseError('limits', 'row is not "name soft hard [units]"', line)
        values = [int(raw) if raw.isdecimal() and len(raw) <= 20 else raw for raw in fields[:2]]
        limits[line[:gap.start()].strip()] = {'soft': values[0], 'hard': values[1], 'units': fields[2] if len(fields) == 3 else None}
    memlock = limits.get('Max locked memory')
    return {
        'limits': limits,
        'memlock_bytes': {'soft': memlock['soft'], 'hard': memlock['hard']} if memlock else None,
    }


@tool_parser('ulimit')
def parse_ulimit_l(text):
    """``ulimit -l`` (KiB or 'unlimited') -> {memlock_kib: int or 'unlimited'}."""
    text = text.strip()
    if text == 'unlimited':
        return {'memlock_kib': 'unlimited'}
    if not re.match(r'^[0-9]{1,20}$', text):
        raise ParseError('ulimit', 'expected a number of KiB (at most 20 digits) or "unlimited"', text)
    return {'memlock_kib': int(text)}


# pam_limits: the most specific domain wins (user over @group over *); among equals, the later line (limits.d after limits.conf).
_PAM_USER, _PAM_GROUP, _PAM_ALL = 0, 1, 2
_PAM_TYPES = ('soft', 'hard', '-')


@tool_parser('limits.conf')
def parse_pam_limits(text):
    """One pam_limits file (/etc/security/limits.conf or limits.d/*.conf) -> {entries: [{domain, type, item, value, line}],
    ignored: [lines]}, each ``line`` as written (without its comment).

    ``value`` is an int, or 'unlimited' for unlimited/infinity/-1.  Lines pam_limits itself skips (fewer than four
    fields, an unknown type, a value that is no number) are listed in ``ignored``, as pam_limits logs and skips them.
    """
    entries = []
    ignored = []
    for raw in text.splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 4 or fields[1] not in _PAM_TYPES:
            ignored.append(line)
            continue
        domain, kind, item, value = fields
        if value.lower() in ('unlimited', 'infinity', '-1'):
            value = 'unlimited'
        elif re.match(r'^\d{1,20}$', value):
            value = int(value)
        else:
            ignored.append(line)
            continue
        entries.append({'domain': domain, 'type': kind, 'item': item.lower(), 'value': value, 'line': line})
    return {'entries': entries, 'ignored': ignored}


def _pam_rank(domain, user, groups):
    """How specifically ``domain`` names ``user`` (lower is more specific), None when it does not apply.

    limits.conf(5): group and wildcard limits are not applied to root; root's limits need its own name.
    """
    if domain == user:
        return _PAM_USER
    if user == 'root':
        return None
    if domain.startswith('@') and domain[1:] in groups:
        return _PAM_GROUP
    if domain == '*':
        return _PAM_ALL
    return None


def resolve_pam_limit(files, item, user, groups=()):
    """The soft and hard ``item`` limits pam_limits gives ``user`` (member of ``groups``) at login.

    ``files`` is [(path, parse_pam_limits result)] in pam_limits' reading order: limits.conf, then limits.d/*.conf by name.
    Returns {soft, hard, soft_from, hard_from} with the values as written (KiB for memlock, or 'unlimited') and
    'path: line' naming the line that set each; None where no line applies (the session keeps what its parent had).
    """
    best = {'soft': (None, None, None), 'hard': (None, None, None)}
    for path, parsed in files:
        for entry in parsed.get('entries') or []:
            if entry['item'] != item:
                continue
            rank = _pam_rank(entry['domain'], user, set(groups or ()))
            if rank is None:
                continue
            for kind in ('soft', 'hard') if entry['type'] == '-' else (entry['type'],):
                current = best[kind][0]
                if current is None or rank <= current:
                    best[kind] = (rank, entry['value'], '%s: %s' % (path, entry['line']))
    return {'soft': best['soft'][1], 'hard': best['hard'][1], 'soft_from': best['soft'][2], 'hard_from': best['hard'][2]}


def read_pam_limits_files(limits_dir='/etc/security'):
    """[(path, text)] of limits.conf and limits.d/*.conf under ``limits_dir``, in pam_limits' order; missing files left out."""
    paths = [os.path.join(limits_dir, 'limits.conf')]
    try:
        names = sorted(name for name in os.listdir(os.path.join(limits_dir, 'limits.d')) if name.endswith('.conf'))
    except OSError:
        names = []
    paths += [os.path.join(limits_dir, 'limits.d', name) for name in names]
    found = []
    for path in paths:
        text = _read(path)
        if text is not None:
            found.append((path, text))
    return found


@tool_parser('cpulist')
def parse_cpulist(text):
    """A kernel CPU list such as ``0-3,8,10-11`` -> {cpus: [0, 1, 2, 3, 8, 10, 11]}."""
    text = text.strip()
    cpus = set()
    if not text:
        return {'cpus': []}
    for part in text.split(','):
        match = re.match(r'^(\d{1,7})(?:-(\d{1,7}))?$', part.strip())
        if not match:
            raise ParseError('cpulist', 'expected ranges like 0-3,8', part)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if last < first or last - first > 65536:
            raise ParseError('cpulist', 'bad range', part)
        cpus.update(range(first, last + 1))
    return {'cpus': sorted(cpus)}


def read_cpu_governors(sysfs_root='/sys'):
    """{cpu_name: governor} from cpufreq, empty where cpufreq is absent (VMs, some BIOS modes)."""
    base = os.path.join(sysfs_root, 'devices', 'system', 'cpu')
    governors = {}
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return governors
    for name in names:
        if not re.match(r'^cpu\d+$', name):
            continue
        value = _read(os.path.join(base, name, 'cpufreq', 'scaling_governor'))
        if value is not None:
            governors[name] = value.strip()
    return governors


def read_no_turbo(sysfs_root='/sys'):
    """True/False from intel_pstate/no_turbo, or None when the file does not exist."""
    value = _read(os.path.join(sysfs_root, 'devices', 'system', 'cpu', 'intel_pstate', 'no_turbo'))
    if value is None:
        return None
    return value.strip() == '1'


def read_hugepage_pools(sysfs_root='/sys'):
    """{page_size_kib: nr_hugepages} from /sys/kernel/mm/hugepages."""
    base = os.path.join(sysfs_root, 'kernel', 'mm', 'hugepages')
    pools = {}
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return pools
    for name in names:
        match = re.match(r'^hugepages-(\d+)kB$', name)
        value = _read(os.path.join(base, name, 'nr_hugepages'))
        if match and value is not None and value.strip().isdecimal():
            pools[int(match.group(1))] = int(value.strip())
    return pools


def summarize_governors(governors):
    """Collapse per-CPU governors: {governor: count} plus the single value when all agree."""
    counts = {}
    for value in governors.values():
        counts[value] = counts.get(value, 0) + 1
    uniform = list(counts)[0] if len(counts) == 1 else None
    return {'counts': counts, 'uniform': uniform}
