# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the kernel log as ``dmesg`` (with or without ``--ctime``),
``journalctl -k`` (default or ``-o short-iso``) and syslog/logread lines
print it.  Picks out what decides a GPU/RDMA node's health: NVIDIA Xid and
NVSwitch SXid events, GPUs fallen off the bus, thermal throttling, NIC link
and cable-module events, PCIe AER errors and PCIe link changes.

Pure function; no Ansible import.  Lines are matched anywhere after their
prefix, so the timestamp and host format do not matter.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

# NVIDIA's Xid catalogue, as far as grading needs it: Xids that mean the GPU or its link is broken (48 DBE, 63/64 row
# remapping events, 74 NVLink, 79 fell off the bus, 92/94/95 ECC); Xids a program causes (13 graphics engine exception,
# 31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive cleanup after a program's error); the row-remapping ones.
FATAL_XIDS = (48, 63, 64, 74, 79, 92, 94, 95)
APPLICATION_XIDS = (13, 31, 43, 45)
ROW_REMAP_XIDS = (63, 64)

_BDF = r'[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
# Patterns searched anywhere in a line use bounded quantifiers (an unbounded run tried at every start is
# quadratic) and run only on lines holding their literal words.
_WORD = r'\S{1,64}'
_DECIMAL = r'\d{1,6}(?:\.\d{1,6})?'
_LINK = r'\d{1,3}(?:\.\d{1,3})? GT/s PCIe x\d{1,2}'

_TIME_PATTERNS = (
    # journalctl -o short-iso: 2025-01-17T17:10:43+0000 host kernel: ...
    re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?)\s+\S+\s+kernel:\s?'),
    # dmesg --ctime: [Sun Feb 23 16:24:18 2025] ...
    re.compile(r'^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?'),
    # OpenWrt logread: Sun Jun 11 23:02:41 2023 kern.info kernel: [uptime] ...
    re.compile(r'^([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d \d{4}) kern\.\w+ kernel:\s?'),
    # journalctl short / syslog: Feb 14 05:03:41 host kernel: ... (month may be localised)
    re.compile(r'^(\S+\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?)\s+\S+\s+kernel:\s?'),
    # plain dmesg: [ 1843.308145] ...
    re.compile(r'^\[\s*(\d+\.\d+)\]\s?'),
)
_UPTIME = re.compile(r'^\[\s*(\d+\.\d+)\]\s?')

# "NVRM: Xid (PCI:0000:01:00): 94, ..." and, for an error a MIG GPU instance owns, "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, ...".
_XID = re.compile(r'NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)(?: GPU-I:(\d{1,4}))?\): (\d+),\s*(.*)$')
_SXID = re.compile(r'(nvidia-nvswitch\d*): SXid \((?:PCI:)?(' + _BDF + r')\): (\d+),\s*(.*)$')
_FALLEN_ONE = re.compile(r'NVRM: GPU (?:at )?(?:PCI:)?(' + _BDF + r'|[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}):? (?:GPU )?has fallen off the bus')
_FALLEN_START = re.compile(r'NVRM: The NVIDIA GPU (' + _BDF + r')\s*$')
_THERMAL = re.compile(r'(temperature above threshold|clock throttled|critical temperature|thermal (?:event|shutdown|trip)'
                      r'|temperature is over|Thermal Slowdown|overheat)', re.IGNORECASE)
_NETDEV_LINK = re.compile(r'(' + _WORD + r') (' + _BDF + r') (' + _WORD + r'): (?:NIC )?Link (?:is )?(up|down)\b(.*)$', re.IGNORECASE)
_IB_PORT = re.compile(r'(' + _WORD + r') (' + _BDF + r') (' + _WORD + r'): Port: (\d{1,5}) Link (\w{1,32})')
# mainline prints "Port module event: module 0, Cable unplugged" and "Port module event[error]: module 0, Cable error, <why>";
# the runbook's (MLNX_OFED) lines carry the status in the brackets alone: "Port module event[plugged_enabled]: module 0".
_MODULE = re.compile(r'(' + _WORD + r') (' + _BDF + r')(?: (' + _WORD + r'))?: Port module event(?:\[(\w{1,32})\])?: module (\d{1,5})(?:, (.*))?$')
_AER_RECEIVED = re.compile(r'(' + _BDF + r'): AER: (Multiple )?(Corrected|Correctable|Uncorrected|Uncorrectable)'
                           r'(?: \((Non-Fatal|Fatal)\))? error (?:message )?received(?: from)?:? (\S{1,64})')
_AER_DETAIL = re.compile(r'(' + _WORD + r') (' + _BDF + r'): (?:AER: )?PCIe Bus Error: severity=([^,]{1,64}), type=([^,]{1,64})'
                         r'(?:, (?:id=\w{1,16})?\(?([^)]{0,256})\)?)?')
_AER_BIT = re.compile(r'(' + _BDF + r'):(?: AER:)?\s{1,16}\[\s{0,8}(\d{1,3})\]\s{1,16}(\S{1,64})')
_BANDWIDTH = re.compile(r'(' + _BDF + r'): (' + _DECIMAL + r') Gb/s available PCIe bandwidth'
                        r'(?: \((' + _LINK + r') link\))?'
                        r'(?:, limited by (' + _LINK + r') link at (' + _BDF + r') \(capable of (' + _DECIMAL + r') Gb/s with (' + _LINK + r') link\))?')
_HOTPLUG = re.compile(r'(' + _BDF + r')(?::\S{1,64})?: (?:pciehp: )?(?:Slot\((\S{1,64})\): |slot\((\S{1,64})\): )?Link (Down|Up)(?: event)?\b')
_SPEED_CHANGE = re.compile(r'(' + _BDF + r'): (?:PCIe )?(?:link|Link) (?:speed|width) (?:changed|degraded|reduced)(.*)$')


def _bus(raw):
    """'0000:3b:00' or '00000000:3B:00.0' -> '0000:3b:00.0'."""
    parts = raw.lower().split(':')
    domain = '%04x' % int(parts[0], 16) if len(parts) == 3 else '0000'
    bus, devfn = parts[-2], parts[-1]
    if '.' not in devfn:
        devfn += '.0'
    return '%s:%s:%s' % (domain, bus, devfn)


def _severity(raw, fatality=None):
    text = raw.strip()
    if fatality == 'Fatal' or text.endswith('(Fatal)') or text == 'Fatal':
        return 'Fatal'
    if text.startswith('Correct'):
        return 'Corrected'
    if text.startswith('Uncorrect'):
        return 'Uncorrected'
    return text


def _split(line):
    """(time or None, message) for one log line."""
    for pattern in _TIME_PATTERNS:
        match = pattern.match(line)
        if match:
            message = line[match.end():]
            uptime = _UPTIME.match(message)
            if uptime:
                message = message[uptime.end():]
            return match.group(1), message
    return None, line.strip()


@tool_parser('kernel log')
def parse_kernel_log(text):
    """Kernel log text -> {xid, sxid, fallen_off_bus, thermal, link_events, aer, pcie_link_changes, line_count}.

    Every entry carries ``line`` (the original text) and ``time`` (the line's
    own timestamp as printed, or None).  Any text is a valid log; an empty
    log gives empty lists - a caller that could not read the log at all
    must report that as unknown, not as zero events.
    """
    result = {'xid': [], 'sxid': [], 'fallen_off_bus': [], 'thermal': [], 'link_events': [], 'aer': [],
              'pcie_link_changes': [], 'line_count': 0}
    pending_fallen = None
    fallen_seen = set()
    last_detail = {}
    for raw_line in text.splitlines():
        line = raw_line.rstrip()
        if not line.strip():
            continue
        result['line_count'] += 1
        when, message = _split(line)
        entry = {'time': when, 'line': line}

        if pending_fallen and 'fallen off the bus' in message:
            if pending_fallen[0] not in fallen_seen:
                fallen_seen.add(pending_fallen[0])
                result['fallen_off_bus'].append({'bus_id': pending_fallen[0], 'time': pending_fallen[1], 'line': pending_fallen[2]})
            pending_fallen = None
        start = _FALLEN_START.search(message)
        if start:
            pending_fallen = (_bus(start.group(1)), when, line)
            continue

        match = _XID.search(message)
        if match:
            rest = match.group(4)
            pid = re.search(r"pid=(?:'?<unknown>'?|(\d+))", rest)
            name = re.search(r'name=([^,]{1,256}),', rest)
            detail = re.sub(r"^(?:pid=[^,]*,\s*)?(?:name=[^,]*,\s*)?", '', rest)
            entry.update({'code': int(match.group(3)), 'bus_id': _bus(match.group(1)),
                          'gpu_instance': int(match.group(2)) if match.group(2) else None,
                          'pid': int(pid.group(1)) if pid and pid.group(1) else None,
                          'process': name.group(1).strip() if name and name.group(1).strip() != '<unknown>' else None,
                          'message': detail.strip()})
            result['xid'].append(entry)
            if entry['code'] == 79 and entry['bus_id'] not in fallen_seen:
                fallen_seen.add(entry['bus_id'])
                result['fallen_off_bus'].append({'bus_id': entry['bus_id'], 'time': when, 'line': line})
            continue
        match = _SXID.search(message)
        if match:
            entry.update({'switch': match.group(1), 'bus_id': _bus(match.group(2)), 'code': int(match.group(3)),
                          'message': match.group(4).strip()})
            result['sxid'].append(entry)
            continue
        match = _FALLEN_ONE.search(message)
        if match:
            bus = _bus(match.group(1))
            if bus not in fallen_seen:
                fallen_seen.add(bus)
                result['fallen_off_bus'].append({'bus_id': bus, 'time': when, 'line': line})
            continue

        match = _IB_PORT.search(message) if 'Port: ' in message else None
        if match:
            state = match.group(5).upper()
            event = {'ACTIVE': 'up', 'DOWN': 'down'}.get(state, state.lower())
            entry.update({'driver': match.group(1), 'device': _bus(match.group(2)), 'netdev': None, 'ibdev': match.group(3),
                          'port': int(match.group(4)), 'event': event, 'state': state, 'message': message.strip()})
            result['link_events'].append(entry)
            continue
        match = _MODULE.search(message) if 'Port module event' in message else None
        if match:
            tag = (match.group(4) or '').lower()
            status = (match.group(6) or '').strip() or tag
            lowered = '%s %s' % (tag, status.lower())
            if 'error' in lowered:
                event = 'cable_error'
            elif 'unplugged' in lowered:
                event = 'module_unplugged'
            elif 'plugged' in lowered:
                event = 'module_plugged'
            elif 'disabled' in lowered:
                event = 'module_disabled'
            else:
                event = 'module_event'
            entry.update({'driver': match.group(1), 'device': _bus(match.group(2)), 'netdev': match.group(3), 'ibdev': None,
                          'port': None, 'module': int(match.group(5)), 'event': event, 'state': status, 'message': message.strip()})
            result['link_events'].append(entry)
            continue
        match = _NETDEV_LINK.search(message) if 'link' in message.lower() else None
        if match:
            entry.update({'driver': match.group(1), 'device': _bus(match.group(2)), 'netdev': match.group(3), 'ibdev': None,
                          'port': None, 'event': match.group(4).lower(), 'state': match.group(5).strip(' -,') or None,
                          'message': message.strip()})
            result['link_events'].append(entry)
            continue

        match = _AER_RECEIVED.search(message)
        if match:
            source = match.group(5)
            entry.update({'kind': 'received', 'reported_by': _bus(match.group(1)),
                          'bdf': _bus(source) if re.match('^' + _BDF + '$', source) else None,
                          'source_id': None if re.match('^' + _BDF + '$', source) else source,
                          'severity': _severity(match.group(3), match.group(4)), 'multiple': bool(match.group(2)),
                          'type': None, 'agent': None, 'errors': []})
            result['aer'].append(entry)
            continue
        match = _AER_DETAIL.search(message) if 'PCIe Bus Error' in message else None
        if match:
            bdf = _bus(match.group(2))
            entry.update({'kind': 'detail', 'reported_by': bdf, 'bdf': bdf, 'source_id': None, 'driver': match.group(1),
                          'severity': _severity(match.group(3)), 'multiple': False, 'type': match.group(4).strip(),
                          'agent': (match.group(5) or '').strip() or None, 'errors': []})
            result['aer'].append(entry)
            last_detail[bdf] = entry
            continue
        match = _AER_BIT.search(message)
        if match and _bus(match.group(1)) in last_detail:
            last_detail[_bus(match.group(1))]['errors'].append(match.group(3))
            continue

        match = _BANDWIDTH.search(message)
        if match:
            entry.update({'device': _bus(match.group(1)), 'event': 'limited' if match.group(4) else 'bandwidth',
                          'available_gbps': float(match.group(2)), 'link': match.group(3) or match.group(4),
                          'limited_at': _bus(match.group(5)) if match.group(5) else None,
                          'capable_gbps': float(match.group(6)) if match.group(6) else None, 'capable_link': match.group(7)})
            result['pcie_link_changes'].append(entry)
            continue
        match = _HOTPLUG.search(message)
        if match and ('pciehp' in message or 'Slot(' in message or 'slot(' in message):
            entry.update({'device': _bus(match.group(1)), 'event': 'link_' + match.group(4).lower(),
                          'slot': match.group(2) or match.group(3)})
            result['pcie_link_changes'].append(entry)
            continue
        match = _SPEED_CHANGE.search(message)
        if match:
            entry.update({'device': _bus(match.group(1)), 'event': 'changed', 'detail': match.group(2).strip()})
            result['pcie_link_changes'].append(entry)
            continue

        if _THERMAL.search(message):
            device = re.search(r'(' + _BDF + r')', message)
            entry.update({'device': _bus(device.group(1)) if device else None, 'message': message.strip()})
            result['thermal'].append(entry)
    # A 'The NVIDIA GPU <bdf>' start whose continuation was cut off is left unreported: unknown, not fallen.
    return result


def summarize_xid(events):
    """{bus_id: {code (as a string): count}} for a list of xid entries."""
    summary = {}
    for event in events or []:
        codes = summary.setdefault(event.get('bus_id'), {})
        code = str(event.get('code'))
        codes[code] = codes.get(code, 0) + 1
    return summary


_ISO_ZONED = re.compile(r'^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?:([+-])(\d\d):?(\d\d)|(Z))$')


def time_epoch(when):
    """Seconds since the epoch of an entry's ``time`` when it carries its zone (journalctl -o short-iso and
    short-iso-precise: 2025-01-17T17:10:43+0800), else None: a time without a zone (dmesg --ctime, syslog) or the
    kernel's uptime cannot be placed on the node's clock."""
    match = _ISO_ZONED.match(str(when or ''))
    if not match:
        return None
    parts = [int(match.group(index)) for index in range(1, 7)]
    try:
        seconds = calendar.timegm((parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if match.group(7):
        seconds += float('0.' + match.group(7))
    if match.group(8):
        offset = int(match.group(9)) * 3600 + int(match.group(10)) * 60
        seconds -= offset if match.group(8) == '+' else -offset
    return seconds
