# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the NVIDIA (Mellanox) firmware tools: ``mlxconfig``/``mstconfig q``,
``flint``/``mstflint q`` and ``mlxlink``/``mstlink``, plus the CQE compression
helper.  Pure functions; no Ansible import.

Values are kept as the tool printed them (``True(1)``, ``BALANCED(0)``);
``N/A`` and missing fields are None, never healthy.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

_ANSI_RE = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_PROMPT_RE = re.compile(r'^[^\s@:~]{0,64}[@:~][^\s#$]{0,256}[#$]\s')


def _strip_ansi(text):
    return _ANSI_RE.sub('', text)


def _na(value):
    if value is None:
        return None
    value = value.strip()
    return None if value in ('', 'N/A', 'NA', 'n/a') else value


def _int(value):
    value = _na(value)
    if value is not None and re.match(r'^-?\d+$', value):
        return int(value)
    return None


def _float(value):
    value = _na(value)
    if value is None:
        return None
    match = re.match(r'^(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)', value)
    if not match:
        return None
    try:
        return float(match.group(1))
    except (ValueError, OverflowError):
        return None


def _snake(name):
    return re.sub(r'[^a-z0-9]+', '_', name.strip().lower()).strip('_')


# --- mlxconfig / mstconfig ---------------------------------------------------

_DEVICE_FIELDS = {
    'Device type': 'device_type',
    'Name': 'name',
    'Description': 'description',
    'Device': 'device',
    'PCI device': 'device',
}


@tool_parser('mlxconfig')
def parse_mlxconfig(text):
    """``mlxconfig -d X q`` / ``mstconfig -d X q`` -> {device, device_type, description, parameters, ...}.

    ``parameters`` maps each name to its value as printed: the current value
    in the ``Default Current Next Boot`` layout (``mlxconfig -e q``), else the
    only column.  With three columns ``parameters_default`` and
    ``parameters_next_boot`` are filled and ``pending_changes`` lists what
    changes at the next boot (None when the output cannot tell).  The leading
    ``*`` of modified parameters is stripped and the names are listed in
    ``modified``.  ``truncated`` is True when the output holds an ``...`` elision.
    """
    result = {'device': None, 'device_type': None, 'name': None, 'description': None,
              'columns': None, 'parameters': {}, 'parameters_default': None, 'parameters_next_boot': None,
              'pending_changes': None, 'modified': [], 'truncated': False}
    columns = None
    values = {}
    in_config = False
    for line in text.splitlines():
        if not line.strip():
            continue
        stripped = line.strip()
        if _PROMPT_RE.match(stripped) or re.match(r'^-+$', stripped) or re.match(r'^Device #\d+:$', stripped):
            continue
        if stripped in ('...', '\u2026'):
            result['truncated'] = True
            continue
        match = re.match(r'^Configurations:\s*(.*)$', stripped)
        if match:
            in_config = True
            header = match.group(1).strip()
            columns = [col for col in re.split(r'\s{2,}', header) if col] if header else ['Value']
            continue
        if not in_config:
            key, sep, value = stripped.partition(':')
            if sep and key.strip() in _DEVICE_FIELDS:
                result[_DEVICE_FIELDS[key.strip()]] = value.strip() or None
            continue
        if stripped.startswith('The ') or stripped.startswith('-E-') or stripped.startswith('-W-'):
            continue
        modified = stripped.startswith('*')
        body = stripped.lstrip('*').strip()
        tokens = body.split()
        if not tokens or not re.match(r'^[A-Z][A-Z0-9_]*(\[\d+\])?$', tokens[0]):
            raise ParseError('mlxconfig', 'expected "PARAMETER value..." rows under "Configurations:"', line)
        name, cells = tokens[0], tokens[1:]
        if len(cells) != len(columns):
            if len(columns) == 1 and cells:
                cells = [' '.join(cells)]
            else:
                raise ParseError('mlxconfig', 'row has %d values for %d columns' % (len(cells), len(columns)), line)
        if cells and cells[-1].endswith('*') and len(cells[-1]) > 1:
            modified = True
            cells[-1] = cells[-1][:-1]
        values[name] = cells
        if modified:
            result['modified'].append(name)
    if columns is None and result['device'] is None and result['device_type'] is None:
        raise ParseError('mlxconfig', 'neither a device header nor "Configurations:" found',
                         text.strip().splitlines()[0] if text.strip() else None)
    result['columns'] = columns

    def column(label):
        if columns and label in columns:
            index = columns.index(label)
            return dict((name, cells[index]) for name, cells in values.items())
        return None

    current = column('Current')
    if current is not None:
        result['parameters'] = current
        result['parameters_default'] = column('Default')
        result['parameters_next_boot'] = column('Next Boot')
        if result['parameters_next_boot'] is not None:
            result['pending_changes'] = sorted(name for name, value in current.items()
                                               if result['parameters_next_boot'].get(name) != value)
    else:
        result['parameters'] = dict((name, cells[-1]) for name, cells in values.items() if cells)
    return result


_CQE_MODES = {0: 'BALANCED', 1: 'AGGRESSIVE'}


def cqe_compression(parameters):
    """Read CQE_COMPRESSION from mlxconfig parameters -> {present, value, mode, code, enabled}.

    The firmware values are BALANCED(0) (compress when it does not hurt
    latency, the default) and AGGRESSIVE(1) (always compress); both mean the
    NIC may compress CQEs, so ``enabled`` is True.  A bare number is mapped
    the same way; DISABLED gives False; anything else (or a missing
    parameter) gives None.  Whether the driver uses it is the separate ethtool
    private flag ``rx_cqe_compress``.
    """
    parameters = parameters or {}
    if isinstance(parameters, dict) and isinstance(parameters.get('parameters'), dict):
        parameters = parameters['parameters']
    value = parameters.get('CQE_COMPRESSION') if isinstance(parameters, dict) else None
    if value is None:
        return {'present': False, 'value': None, 'mode': None, 'code': None, 'enabled': None}
    value = str(value).strip()
    match = re.match(r'^([A-Za-z_]+)?\s*(?:\((\d+)\))?$', value)
    mode = None
    code = None
    if re.match(r'^\d+$', value):
        code = int(value)
        mode = _CQE_MODES.get(code)
    elif match and match.group(1):
        mode = match.group(1).upper()
        code = int(match.group(2)) if match.group(2) else None
    if mode in ('BALANCED', 'AGGRESSIVE'):
        enabled = True
    elif mode in ('DISABLED', 'DISABLE', 'FALSE', 'OFF'):
        enabled = False
    else:
        enabled = None
    return {'present': True, 'value': value, 'mode': mode, 'code': code, 'enabled': enabled}


# --- flint / mstflint -----------------------------------------------------------

@tool_parser('flint')
def parse_flint(text):
    """``flint -d X q`` / ``mstflint -d X q`` -> {fw_version, psid, image_type, fw_release_date, ...}.

    ``rom_info`` is a list of {type, version, cpu, raw} (continuation lines
    included); ``guids``/``macs`` are the counts printed next to the base GUID
    and MAC; ``security_attributes`` is a list ([] for N/A, None when the line
    is absent).  ``fw_version_running`` is set when a newly burnt image is
    not running yet, and ``reset_pending`` tells whether they differ.
    """
    fields = {}
    rom_lines = []
    last_key = None
    for line in text.splitlines():
        if not line.strip():
            continue
        stripped = line.strip()
        if _PROMPT_RE.match(stripped):
            continue
        match = re.match(r'^([A-Z][A-Za-z0-9 ()/._-]*?):\s*(.*)$', stripped)
        if match and not line[:1].isspace():
            key, value = match.group(1).strip(), match.group(2).strip()
            if key == 'Description' and re.match(r'^UID\s+GuidsNumber', value):
                last_key = None
                continue
            fields.setdefault(key, value)
            last_key = key
            if key == 'Rom Info':
                rom_lines.append(value)
            continue
        if line[:1].isspace() and last_key == 'Rom Info':
            rom_lines.append(stripped)
            continue
        if stripped.startswith('-E-') or stripped.startswith('-W-'):
            continue
        raise ParseError('flint', 'unexpected line in query output', line)
    if 'FW Version' not in fields and 'PSID' not in fields:
        raise ParseError('flint', 'no "FW Version" or "PSID" found', text.strip().splitlines()[0] if text.strip() else None)

    def guid_pair(key):
        value = _na(fields.get(key))
        if value is None:
            return None, None
        parts = value.split()
        base = None if parts[0] == 'N/A' else parts[0]
        count = int(parts[1]) if len(parts) > 1 and parts[1].isdecimal() else None
        return base, count

    roms = []
    for raw in rom_lines:
        if _na(raw) is None:
            continue
        match = re.match(r'^type=(\S(?:[^=]{0,62}\S)?)\s{1,16}version=(\S+)(?:\s+cpu=(\S+))?', raw)
        roms.append({'raw': raw, 'type': match.group(1) if match else None,
                     'version': match.group(2) if match else None, 'cpu': match.group(3) if match else None})
    base_guid, guids = guid_pair('Base GUID')
    base_mac, macs = guid_pair('Base MAC')
    orig_guid, dummy = guid_pair('Orig Base GUID')
    orig_mac, dummy = guid_pair('Orig Base MAC')
    security = fields.get('Security Attributes')
    if security is None:
        attributes = None
    elif _na(security) is None:
        attributes = []
    else:
        attributes = [part.strip() for part in security.split(',') if part.strip()]
    fw_version = _na(fields.get('FW Version'))
    running = _na(fields.get('FW Version(Running)'))
    return {
        'fw_version': fw_version,
        'fw_version_running': running,
        'reset_pending': (running != fw_version) if running and fw_version else False if fw_version else None,
        'psid': _na(fields.get('PSID')),
        'orig_psid': _na(fields.get('Orig PSID')),
        'image_type': _na(fields.get('Image type')),
        'fw_release_date': _na(fields.get('FW Release Date')),
        'product_version': _na(fields.get('Product Version')),
        'part_number': _na(fields.get('Part Number')),
        'description': _na(fields.get('Description')),
        'rom_info': roms,
        'base_guid': base_guid,
        'guids': guids,
        'base_mac': base_mac,
        'macs': macs,
        'orig_base_guid': orig_guid,
        'orig_base_mac': orig_mac,
        'image_vsd': _na(fields.get('Image VSD')),
        'device_vsd': _na(fields.get('Device VSD')),
        'security_attributes': attributes,
        'secure_fw': None if attributes is None else 'secure-fw' in attributes,
        'security_version': _int(fields.get('Security Ver')),
        'fields': fields,
    }


# --- mlxlink / mstlink -----------------------------------------------------------

_OPERATIONAL = {'State': 'state', 'Physical state': 'physical_state', 'Speed': 'speed', 'Width': 'width',
                'FEC': 'fec', 'Loopback Mode': 'loopback_mode', 'Auto Negotiation': 'auto_negotiation'}


def _ber(value):
    """'15E-255' / '1E-12' / '2E-9' -> float; N/A -> None."""
    value = _na(value)
    if value is None:
        return None
    match = re.match(r'^(\d+(?:\.\d+)?)[eE]([-+]?\d+)$', value)
    if not match:
        return _float(value)
    try:
        return float('%se%s' % (match.group(1), match.group(2)))
    except (ValueError, OverflowError):
        return None


def _int_list(value):
    value = _na(value)
    if value is None:
        return None
    parts = [part.strip() for part in value.split(',')]
    if not all(re.match(r'^\d+$', part) for part in parts):
        return None
    return [int(part) for part in parts]


@tool_parser('mlxlink')
def parse_mlxlink(text):
    """``mlxlink -d X [-c] [-e] [-m]`` / ``mstlink`` -> {sections, operational, troubleshooting, module, counters, ...}.

    ``sections`` keeps every section as {key: value as printed} (ANSI colours
    removed).  ``counters`` (from ``-c``) has the BERs as floats
    (``15E-255`` -> 1.5e-254), error counters as ints and raw errors per lane
    as a list; fields mlxlink did not print are None.  ``truncated`` is True when the text stops at an elision
    mark (``...``, as pasted outputs are cut): nothing after it is read.
    """
    text = _strip_ansi(text)
    lines = text.splitlines()
    sections = {}
    order = []
    current = None
    truncated = False
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if stripped in ('...', '\u2026'):
            # An elision mark where the output was pasted: what follows is not mlxlink's, the rest is unknown.
            truncated = True
            break
        following = lines[index + 1].strip() if index + 1 < len(lines) else ''
        if stripped and re.match(r'^-{3,}$', following) and ':' not in stripped:
            current = stripped
            sections.setdefault(current, {})
            order.append(current)
            index += 2
            continue
        index += 1
        if not stripped or _PROMPT_RE.match(stripped):
            continue
        if stripped.startswith('-E-') or stripped.startswith('-W-'):
            continue
        key, sep, value = stripped.partition(':')
        if current is None or not sep or not key.strip():
            if current is None:
                continue
            raise ParseError('mlxlink', 'expected "Key : value" lines inside section %r' % current, line)
        sections[current][key.strip()] = value.strip()
    if not sections:
        raise ParseError('mlxlink', 'no "Title" + "-----" sections found', _first_line(lines))

    def section(*names):
        for name in names:
            if name in sections:
                return sections[name]
        return None

    result = {'sections': sections, 'truncated': truncated}
    operational = section('Operational Info')
    result['operational'] = None
    if operational is not None:
        result['operational'] = dict((name, _na(operational.get(key))) for key, name in _OPERATIONAL.items())
    supported = section('Supported Info')
    result['supported'] = None
    if supported is not None:
        result['supported'] = dict((_snake(key), value) for key, value in supported.items())
    trouble = section('Troubleshooting Info')
    result['troubleshooting'] = None
    if trouble is not None:
        result['troubleshooting'] = {
            'status_opcode': _int(trouble.get('Status Opcode')),
            'group_opcode': _na(trouble.get('Group Opcode')),
            'recommendation': _na(trouble.get('Recommendation')),
        }
    module = section('Module Info')
    result['module'] = None
    if module is not None:
        entry = dict((_snake(key), _na(value)) for key, value in module.items())
        length = _na(module.get('Cable Length'))
        entry['length_m'] = _float(length) if length is not None else None
        entry['identifier'] = _na(module.get('Identifier'))
        entry['vendor_name'] = _na(module.get('Vendor Name'))
        entry['vendor_part_number'] = _na(module.get('Vendor Part Number'))
        entry['vendor_serial_number'] = _na(module.get('Vendor Serial Number'))
        entry['temperature_c'] = _float(module.get('Temperature [C]'))
        result['module'] = entry
    counters = section('Physical Counters and BER Info')
    result['counters'] = None
    if counters is not None:
        per_lane_ber = _na(counters.get('Raw Physical BER Per Lane'))
        result['counters'] = {
            'time_since_last_clear_min': _float(counters.get('Time Since Last Clear [Min]')),
            'symbol_errors': _int(counters.get('Symbol Errors')),
            'symbol_ber': _ber(counters.get('Symbol BER')),
            'effective_physical_errors': _int(counters.get('Effective Physical Errors')),
            'effective_physical_ber': _ber(counters.get('Effective Physical BER')),
            'raw_physical_errors_per_lane': _int_list(counters.get('Raw Physical Errors Per Lane')),
            'raw_physical_ber': _ber(counters.get('Raw Physical BER')),
            'raw_physical_ber_per_lane': [_ber(part) for part in per_lane_ber.split(',')] if per_lane_ber else None,
            'link_down_counter': _int(counters.get('Link Down Counter')),
            'link_error_recovery_counter': _int(counters.get('Link Error Recovery Counter')),
        }
    eye = section('EYE Opening Info', 'Eye Opening Info')
    result['eye'] = None
    if eye is not None:
        result['eye'] = dict((_snake(key), _int_list(value) if _int_list(value) is not None else _na(value))
                             for key, value in eye.items())
    return result


def _first_line(lines):
    for line in lines:
        if line.strip():
            return line.strip()
    return None
