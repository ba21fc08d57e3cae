# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ethtool outputs (link settings, -i, -g, -l, -a, -k, -S), the
counter classification used for pause/PFC/discard/error counters, and
``counter_deltas`` which turns two ``ethtool -S`` snapshots into deltas and
rates.  Pure functions; no Ansible import.

Unknown values ("Unknown!", "n/a", "Not reported") are returned as None,
never as zero or as healthy.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

# Keys of the link-settings output whose value continues on the following indented lines.
_LIST_KEYS = {
    'Supported link modes': 'supported_link_modes',
    'Advertised link modes': 'advertised_link_modes',
    'Link partner advertised link modes': 'link_partner_advertised_link_modes',
    'Supported FEC modes': 'supported_fec_modes',
    'Advertised FEC modes': 'advertised_fec_modes',
    'Link partner advertised FEC modes': 'link_partner_advertised_fec_modes',
}

_UNKNOWN = ('unknown!', 'unknown', 'n/a', 'not reported', '')

_YES = ('yes', 'on', 'true')
_NO = ('no', 'off', 'false')


def _snake(name):
    return re.sub(r'[^a-z0-9]+', '_', name.strip().lower()).strip('_')


def _bool(value):
    """'yes'/'on' -> True, 'no'/'off' -> False, anything else -> None."""
    if value is None:
        return None
    word = value.strip().lower().split(' ')[0] if value.strip() else ''
    if word in _YES:
        return True
    if word in _NO:
        return False
    return None


def _unknown(value):
    return value is None or value.strip().lower() in _UNKNOWN or value.strip().lower().startswith('unknown')


def _key_value_lines(tool, text):
    """Yield (key, value) for ``key: value`` lines; raise when a line is neither that nor blank."""
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(':')
        if not sep or not key.strip():
            raise ParseError(tool, 'expected "name: value" lines', line)
        yield key.strip(), value.strip()


@tool_parser('ethtool')
def parse_ethtool(text):
    """``ethtool DEV`` (link settings) -> {netdev, speed_mbps, duplex, port, auto_negotiation, link_detected, ...}.

    ``speed_mbps`` is an int, or None when ethtool prints ``Unknown!`` (no
    link, or a virtual NIC).  ``duplex`` is ``Full``/``Half`` or None.  Link
    mode and FEC lists are None when the driver does not report them.
    ``fields`` keeps every value as printed.
    """
    lines = text.splitlines()
    start = None
    netdev = None
    for index, line in enumerate(lines):
        match = re.match(r'^Settings for (\S+?):\s*$', line.strip())
        if match:
            start, netdev = index, match.group(1)
            break
    if start is None:
        raise ParseError('ethtool', 'missing the "Settings for DEV:" line', lines[0] if lines else None)
    fields = {}
    order = []
    current = None
    for line in lines[start + 1:]:
        if not line.strip():
            continue
        stripped = line.strip()
        key, sep, value = stripped.partition(':')
        if sep and key and not re.search(r'/(Full|Half)$', key) and re.match(r'^[A-Za-z][A-Za-z0-9 ()/_.-]*$', key):
            current = key.strip()
            fields[current] = [value.strip()] if value.strip() else []
            order.append(current)
        elif current is not None and line[:1] in (' ', '\t'):
            fields[current].append(stripped)
        else:
            raise ParseError('ethtool', 'unexpected line in link settings', line)
    if not fields:
        raise ParseError('ethtool', 'no link settings after "Settings for %s:"' % netdev)

    def joined(key):
        parts = fields.get(key)
        if parts is None:
            return None
        return ' '.join(parts).strip()

    def word_list(key):
        value = joined(key)
        if value is None or value.lower() in ('not reported', ''):
            return None
        return value.split()

    speed_raw = joined('Speed')
    speed = None
    if speed_raw is not None:
        match = re.match(r'^(\d+)\s*Mb/s$', speed_raw)
        speed = int(match.group(1)) if match else None
    duplex_raw = joined('Duplex')
    duplex = duplex_raw if duplex_raw in ('Full', 'Half') else None
    ports_raw = joined('Supported ports')
    ports = None
    if ports_raw is not None:
        match = re.match(r'^\[(.*)\]$', ports_raw)
        ports = match.group(1).split() if match else ports_raw.split()
    result = {
        'netdev': netdev,
        'speed_mbps': speed,
        'speed': speed_raw,
        'duplex': duplex,
        'port': None if _unknown(joined('Port')) else joined('Port'),
        'auto_negotiation': _bool(joined('Auto-negotiation')),
        'link_detected': _bool(joined('Link detected')),
        'supported_ports': ports,
        'supports_auto_negotiation': _bool(joined('Supports auto-negotiation')),
        'advertised_auto_negotiation': _bool(joined('Advertised auto-negotiation')),
        'supported_pause': joined('Supported pause frame use'),
        'advertised_pause': joined('Advertised pause frame use'),
        'transceiver': joined('Transceiver'),
        'mdi_x': joined('MDI-X'),
        'fields': dict((key, joined(key)) for key in order),
    }
    for key, name in _LIST_KEYS.items():
        result[name] = word_list(key)
    return result


@tool_parser('ethtool -i')
def parse_ethtool_driver(text):
    """``ethtool -i DEV`` -> {driver, version, firmware_version, bus_info, ...}.

    Empty values (no firmware on veth, no bus on virtual NICs) are None.
    mlx5 appends the PSID to the firmware version (``14.23.1020 (MT_2420110034)``):
    the whole string stays in ``firmware_version``, the parts go to
    ``firmware_version_number`` and ``firmware_psid``.
    """
    fields = {}
    for key, value in _key_value_lines('ethtool -i', text):
        fields[key] = value
    if 'driver' not in fields:
        raise ParseError('ethtool -i', 'missing the "driver:" line', text.strip().splitlines()[0] if text.strip() else None)
    result = {}
    for key, value in fields.items():
        name = _snake(key)
        if name.startswith('supports_'):
            result[name] = _bool(value)
        else:
            result[name] = value or None
    for name in ('version', 'firmware_version', 'expansion_rom_version', 'bus_info'):
        result.setdefault(name, None)
    firmware = result.get('firmware_version') or ''
    match = re.match(r'^(\S+)\s+\((\S+)\)$', firmware)
    result['firmware_version_number'] = match.group(1) if match else (firmware or None)
    result['firmware_psid'] = match.group(2) if match else None
    return result


def _parse_sections(tool, text, header_re, rows):
    """Shared reader for ``ethtool -g`` and ``-l``: 'Pre-set maximums:' and 'Current hardware settings:' blocks."""
    sections = {'maximum': {}, 'current': {}}
    netdev = None
    section = None
    seen_header = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = re.match(header_re, stripped)
        if match:
            netdev, seen_header = match.group(1), True
            continue
        if stripped.rstrip(':').lower() == 'pre-set maximums':
            section = 'maximum'
            continue
        if stripped.rstrip(':').lower() == 'current hardware settings':
            section = 'current'
            continue
        key, sep, value = stripped.partition(':')
        if not sep or section is None:
            raise ParseError(tool, 'expected "Pre-set maximums:" / "Current hardware settings:" blocks of "name: value"', line)
        value = value.strip()
        if re.match(r'^\d+$', value):
            parsed = int(value)
        elif value.lower() in ('on', 'off'):
            parsed = value.lower() == 'on'
        elif _unknown(value):
            parsed = None
        else:
            parsed = value
        sections[section][_snake(key)] = parsed
    if not seen_header and not sections['maximum'] and not sections['current']:
        raise ParseError(tool, 'no "Pre-set maximums" or "Current hardware settings" found')
    for section_values in sections.values():
        for row in rows:
            section_values.setdefault(row, None)
    sections['netdev'] = netdev
    return sections


@tool_parser('ethtool -g')
def parse_ethtool_ring(text):
    """``ethtool -g DEV`` -> {maximum: {rx, rx_mini, rx_jumbo, tx}, current: {...}}; ints, None for n/a.

    Extra rows of newer ethtool (RX Buf Len, CQE Size, TX Push, TCP data split)
    are kept under the same section, on/off as booleans.
    """
    return _parse_sections('ethtool -g', text, r'^Ring parameters for (\S+?):$', ('rx', 'rx_mini', 'rx_jumbo', 'tx'))


@tool_parser('ethtool -l')
def parse_ethtool_channels(text):
    """``ethtool -l DEV`` -> {maximum: {rx, tx, other, combined}, current: {...}}; ints, None for n/a."""
    return _parse_sections('ethtool -l', text, r'^Channel parameters for (\S+?):$', ('rx', 'tx', 'other', 'combined'))


@tool_parser('ethtool -a')
def parse_ethtool_pause(text):
    """``ethtool -a DEV`` -> {netdev, autonegotiate, rx, tx} as booleans (plus rx/tx_negotiated when printed)."""
    result = {'netdev': None, 'autonegotiate': None, 'rx': None, 'tx': None}
    found = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = re.match(r'^Pause parameters for (\S+?):$', stripped)
        if match:
            result['netdev'] = match.group(1)
            found = True
            continue
        key, sep, value = stripped.partition(':')
        if not sep:
            raise ParseError('ethtool -a', 'expected "name: on|off" lines', line)
        result[_snake(key)] = _bool(value)
        found = True
    if not found or (result['rx'] is None and result['tx'] is None and result['netdev'] is None):
        raise ParseError('ethtool -a', 'no pause parameters found')
    return result


@tool_parser('ethtool -k')
def parse_ethtool_features(text):
    """``ethtool -k DEV`` -> {netdev, features: {name: {enabled: bool, fixed: bool}}}.

    ``[fixed]`` means the driver does not let it change; ``[requested on]``
    is kept as ``requested``.
    """
    features = {}
    netdev = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = re.match(r'^Features for (\S+?):$', stripped)
        if match:
            netdev = match.group(1)
            continue
        match = re.match(r'^([A-Za-z0-9][\w.-]*):\s+(on|off)(?:\s+\[(fixed|requested (?:on|off))\])?\s*$', stripped)
        if not match:
            raise ParseError('ethtool -k', 'expected "feature: on|off [fixed]" lines', line)
        entry = {'enabled': match.group(2) == 'on', 'fixed': match.group(3) == 'fixed'}
        if match.group(3) and match.group(3).startswith('requested'):
            entry['requested'] = match.group(3).endswith('on')
        features[match.group(1)] = entry
    if not features and netdev is None:
        raise ParseError('ethtool -k', 'no features found')
    return {'netdev': netdev, 'features': features}


# --- ethtool -S -------------------------------------------------------------

_PFC_RE = re.compile(r'^(rx|tx)_prio(\d+)_(pause|pause_duration|pause_transition)$')
_PFC_ICE_RE = re.compile(r'^(rx|tx)_priority_(\d+)_(xon|xoff)(?:\.nic)?$')
_PAUSE_RE = re.compile(r'pause|xoff|xon|flow_control')
_DISCARD_RE = re.compile(r'discard|drop|out_of_buffer|missed|no_buffer|fifo_overflow|buffer_passed_thres')
_ERROR_RE = re.compile(r'err|crc|jabber|fcs|undersize|oversize|fragments_phy|out_of_range_len')
_LINK_RE = re.compile(r'link_down_events')


def classify_counter(name):
    """The groups an ``ethtool -S`` counter belongs to: a set of 'pause', 'pfc', 'discards', 'errors', 'link'.

    Names are those of mlx5 (``rx_discards_phy``, ``rx_prio3_pause``, ``rx_crc_errors_phy``
    ...), mlx4, ice, ixgbe and virtio/veth.  XDP drops are program decisions,
    not NIC discards, and are left out of ``discards``.
    """
    groups = set()
    lowered = name.lower()
    if _PFC_RE.match(lowered) or _PFC_ICE_RE.match(lowered):
        groups.add('pfc')
        groups.add('pause')
    elif _PAUSE_RE.search(lowered):
        groups.add('pause')
    if _DISCARD_RE.search(lowered) and 'xdp' not in lowered:
        groups.add('discards')
    if _ERROR_RE.search(lowered):
        groups.add('errors')
    if _LINK_RE.search(lowered):
        groups.add('link')
    return groups


@tool_parser('ethtool -S')
def parse_ethtool_stats(text):
    """``ethtool -S DEV`` -> {counters: {name: int}, pause, pfc, discards, errors, link, unparsed}.

    ``counters`` has every ``name: integer`` line; names keep the driver's own
    prefixes (bnx2x ``[0]: rx_bytes``, be2net ``rxq0: rx_pkts``).  ``pause``,
    ``discards``, ``errors`` and ``link`` are the recognised subsets of
    ``counters``; ``pfc`` is per priority (a string key): {'3': {rx_pause, tx_pause,
    rx_pause_duration, ...}}.  Also accepts the output of
    ``ethtool -S DEV | grep ...`` (no header).
    """
    counters = {}
    unparsed = []
    header = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r'^(NIC|PHY) statistics:$', stripped) or re.match(r'^Statistics for \S+:?$', stripped):
            header = True
            continue
        match = re.match(r'^(\S.*?):\s+(-?\d+)$', stripped)
        if match:
            counters[match.group(1)] = int(match.group(2))
        else:
            unparsed.append(stripped)
    if not counters and not header:
        raise ParseError('ethtool -S', 'no "name: value" counters found', text.strip().splitlines()[0] if text.strip() else None)
    if unparsed and len(unparsed) > len(counters):
        raise ParseError('ethtool -S', 'more unreadable lines than counters; not ethtool -S output', unparsed[0])
    result = {'counters': counters, 'pause': {}, 'pfc': {}, 'discards': {}, 'errors': {}, 'link': {}, 'unparsed': unparsed}
    for name, value in counters.items():
        groups = classify_counter(name)
        for group in ('pause', 'discards', 'errors', 'link'):
            if group in groups:
                result[group][name] = value
        match = _PFC_RE.match(name.lower())
        if match:
            result['pfc'].setdefault(match.group(2), {})['%s_%s' % (match.group(1), match.group(3))] = value
            continue
        match = _PFC_ICE_RE.match(name.lower())
        if match:
            result['pfc'].setdefault(match.group(2), {})['%s_%s' % (match.group(1), match.group(3))] = value
    return result


# --- counter deltas -----------------------------------------------------------

_GROUP_THRESHOLDS = {
    'pause_per_s': 'pause', 'pfc_per_s': 'pfc', 'discards_per_s': 'discards', 'discard_per_s': 'discards',
    'errors_per_s': 'errors', 'error_per_s': 'errors', 'link_per_s': 'link',
}


def _counters_and_time(snapshot, label):
    """Accept {name: int}, a parse_ethtool_stats result, or a nic_info entry; return ({name: int}, timestamp)."""
    timestamp = None
    current = snapshot
    for dummy in range(4):
        if not isinstance(current, dict):
            break
        if isinstance(current.get('timestamp'), (int, float)) and timestamp is None:
            timestamp = float(current['timestamp'])
        inner = current.get('counters')
        if isinstance(inner, dict):
            current = inner
            continue
        break
    if not isinstance(current, dict):
        raise ValueError('%s: expected a dict of counters, got %s' % (label, type(snapshot).__name__))
    counters = {}
    for name, value in current.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            counters[name] = value
        elif isinstance(value, str) and re.match(r'^-?\d+$', value.strip()):
            counters[name] = int(value.strip())
    return counters, timestamp


def counter_deltas(before, after, seconds=None, watch=None):
    """Compare two counter snapshots taken ``seconds`` apart.

    ``before``/``after``: {name: int}, parse_ethtool_stats results or nic_info
    entries (then ``seconds`` may be None and the snapshots' ``timestamp`` is
    used).  ``watch``: thresholds in counts per second, either per group
    (``pause_per_s``, ``pfc_per_s``, ``discards_per_s``, ``errors_per_s``) or
    per counter name.  Group thresholds skip ``*_duration`` counters, which
    count time, not frames.

    Returns {deltas, rates_per_s, reset, watched, suspicious, suspicious_detail,
    seconds, only_before, only_after}.  A counter that went backwards
    (reset, wrap) is listed in ``reset`` and its delta and rate are None,
    never negative.
    """
    old, old_time = _counters_and_time(before, 'before')
    new, new_time = _counters_and_time(after, 'after')
    if seconds is None and old_time is not None and new_time is not None:
        seconds = new_time - old_time
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            try:
                seconds = float(seconds)
            except (TypeError, ValueError):
                raise ValueError('seconds must be a number, got %r' % (seconds,))
        if seconds <= 0:
            raise ValueError('seconds must be greater than 0, got %r' % (seconds,))
    watch = dict(watch or {})
    for key, value in watch.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError('threshold %s must be a number, got %r' % (key, value))
    deltas = {}
    rates = {}
    reset = []
    watched = {}
    suspicious_detail = {}
    for name in sorted(set(old) & set(new)):
        if new[name] < old[name]:
            reset.append(name)
            deltas[name] = None
            rates[name] = None
            continue
        delta = new[name] - old[name]
        deltas[name] = delta
        rate = delta / float(seconds) if seconds else None
        rates[name] = rate
        groups = classify_counter(name)
        if delta and groups & set(('pause', 'pfc', 'discards', 'errors', 'link')):
            watched[name] = delta
        if rate is None:
            continue
        limits = []
        if name in watch:
            limits.append(watch[name])
        if 'duration' not in name:
            for key, group in _GROUP_THRESHOLDS.items():
                if key in watch and group in groups:
                    limits.append(watch[key])
        if limits and rate > min(limits):
            suspicious_detail[name] = {'rate_per_s': rate, 'threshold_per_s': min(limits), 'delta': delta}
    return {
        'seconds': seconds,
        'deltas': deltas,
        'rates_per_s': rates,
        'reset': reset,
        'watched': watched,
        'suspicious': sorted(suspicious_detail),
        'suspicious_detail': suspicious_detail,
        'only_before': sorted(set(old) - set(new)),
        'only_after': sorted(set(new) - set(old)),
    }
