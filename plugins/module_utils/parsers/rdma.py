# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA inventory: parsers for ibstat, ibstatus, ibv_devinfo, show_gids and
``ip -4 -o addr show``, a reader for /sys/class/infiniband, and the choice of
the live port(s).  Pure functions; no Ansible import.

Formats follow the tools' sources: ibstat.c and the ibstatus script of
rdma-core (infiniband-diags), libibverbs' devinfo.c, NVIDIA's show_gids script
and the kernel's drivers/infiniband/core/sysfs.c.  What a (truncated) output
does not say is None, never a healthy default.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser
from ansible_collections.gpufleet.netval.plugins.module_utils.sysfs import read_value as _read

# Kernel sysfs "state" (enum ib_port_state) and "phys_state" (IB PortPhysicalState) codes.
PORT_STATES = {0: 'NOP', 1: 'DOWN', 2: 'INIT', 3: 'ARMED', 4: 'ACTIVE', 5: 'ACTIVE_DEFER'}
PHYS_STATES = {0: '<unknown>', 1: 'Sleep', 2: 'Polling', 3: 'Disabled', 4: 'PortConfigurationTraining',
               5: 'LinkUp', 6: 'LinkErrorRecovery', 7: 'Phy Test'}
STATE_ACTIVE = 4
PHYS_LINK_UP = 5

_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_PCI_BDF = re.compile(r'^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')
_ZERO_GID = re.compile(r'^[0:]+$')


def _number(text):
    """'400' -> 400, '2.5' -> 2.5; None when not a number."""
    if text is None:
        return None
    match = re.match(r'^\s*(\d+(?:\.\d+)?)\s*$', text)
    if not match:
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def _int(text, base=10):
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def _lid(text):
    """A LID as printed by sysfs/ibstatus (0x33bf) or ibstat (13247) -> int; None when unknown."""
    if text is None:
        return None
    text = text.strip()
    if re.match(r'^0x[0-9a-fA-F]+$', text):
        return int(text, 16)
    if text.isdecimal():
        return int(text)
    return None


def _value(text):
    """Strip a value; '' and 'unknown' (what ibstatus prints for an unreadable file) become None."""
    if text is None:
        return None
    text = text.strip()
    if text in ('', 'unknown'):
        return None
    return text


def split_rate(text):
    """A kernel rate string '400 Gb/sec (4X NDR)' -> {rate_gbps, rate_text, width, speed}.

    Unknown parts are None (a down port's rate file may be unreadable).
    """
    text = _value(text)
    result = {'rate_gbps': None, 'rate_text': text, 'width': None, 'speed': None}
    if text is None:
        return result
    match = re.match(r'^(\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((\d+X)\s*([^)]*)\))?', text)
    if match:
        result['rate_gbps'] = _number(match.group(1))
        result['width'] = match.group(2)
        result['speed'] = (match.group(3) or '').strip() or None
    return result


def split_state(text, names):
    """'4: ACTIVE' -> (4, 'ACTIVE', warning or None); a name that disagrees with the code is flagged."""
    text = _value(text)
    if text is None:
        return None, None, None
    match = re.match(r'^(\d+)\s*:\s*(.*)$', text)
    if not match:
        return None, text, 'unexpected value %r' % text
    code = int(match.group(1))
    name = match.group(2).strip() or None
    warning = None
    if names.get(code) != name:
        warning = 'unexpected value %r (code %d is %r in the kernel)' % (text, code, names.get(code))
    return code, name, warning


def ipv4_from_gid(gid):
    """An IPv4-mapped GID (0000:...:0000:ffff:c0a8:0684 or ::ffff:192.168.6.132) -> '192.168.6.132', else None."""
    if not gid:
        return None
    gid = gid.strip().lower()
    match = re.match(r'^::ffff:(\d+\.\d+\.\d+\.\d+)$', gid)
    if match:
        return match.group(1)
    groups = gid.split(':')
    if len(groups) != 8 or not all(re.match(r'^[0-9a-f]{1,4}$', group) for group in groups):
        return None
    if any(int(group, 16) for group in groups[:5]) or int(groups[5], 16) != 0xffff:
        return None
    high, low = int(groups[6], 16), int(groups[7], 16)
    return '%d.%d.%d.%d' % (high >> 8, high & 0xff, low >> 8, low & 0xff)


def roce_version(gid_type):
    """sysfs gid_attrs/types text ('IB/RoCE v1', 'RoCE v2') or a show_gids VER ('v2') -> 'v1' / 'v2' / None."""
    if not gid_type:
        return None
    match = re.search(r'\b[vV](\d)\s*$', gid_type.strip())
    return 'v%s' % match.group(1) if match else None


def _empty_ibstat_port():
    return {'state': None, 'physical_state': None, 'rate_gbps': None, 'base_lid': None, 'lid': None,
            'sm_lid': None, 'capability_mask': None, 'port_guid': None, 'link_layer': None}


def _empty_ibstat_device():
    return {'ca_type': None, 'number_of_ports': None, 'firmware_version': None, 'hardware_version': None,
            'node_guid': None, 'system_image_guid': None, 'ports': {}}


_IBSTAT_CA = re.compile(r"^(CA|Switch|Router|iWARP RNIC|\?\?\?):? '([^']+)'\s*$")
_IBSTAT_PORT = re.compile(r'^\s*Port (\d+):\s*$')
_KEY = re.compile(r'^[A-Za-z][A-Za-z _/-]*$')
_GID_KEY = re.compile(r'^GID\[\s*\d+\]$')


def _key_value(line, gid_keys=False):
    """(key, value) of a 'key: value' line, both stripped, split at the first colon; None for other lines."""
    key, sep, value = line.partition(':')
    key = key.strip()
    if not sep or not (_KEY.match(key) or gid_keys and _GID_KEY.match(key)):
        return None
    return key, value.strip()


def _without_note(value):
    """'40 (FDR10)' -> '40': a value without its parenthesised note."""
    head, sep, tail = value.partition('(')
    return head.strip() if sep and tail.rstrip().endswith(')') else value


_IBSTAT_DEVICE_KEYS = {'number of ports': 'number_of_ports', 'firmware version': 'firmware_version',
                       'hardware version': 'hardware_version', 'node guid': 'node_guid',
                       'system image guid': 'system_image_guid'}
_IBSTAT_PORT_KEYS = {'state': 'state', 'physical state': 'physical_state', 'rate': 'rate_gbps',
                     'base lid': 'base_lid', 'sm lid': 'sm_lid', 'capability mask': 'capability_mask',
                     'port guid': 'port_guid', 'link layer': 'link_layer'}


@tool_parser('ibstat')
def parse_ibstat(text):
    """``ibstat`` (infiniband-diags) -> {devices: {NAME: {ca_type, number_of_ports, firmware_version,
    hardware_version, node_guid, system_image_guid, ports: {N: {state, physical_state, rate_gbps, base_lid,
    lid, sm_lid, capability_mask, port_guid, link_layer}}}}}.

    ``state`` and ``physical_state`` are ibstat's words (Active/Down/Initializing/Armed, LinkUp/Polling/Disabled...).
    ``rate_gbps`` is ibstat's ``Rate`` (Gb/s, 2.5 for 1X SDR); ibstat prints a rate for ports that are down too,
    so it is a link speed only where the state is Active.  ``lid`` is the port's LID, that is its base LID.
    Lines before the first CA (shell traces, ``ibwarn:`` debug lines) are ignored; a field cut off by a
    truncated output is None and a CA whose ports were cut off has ``ports: {}``.  No output (no devices) is
    ``{devices: {}}``; text without any CA block raises ParseError.
    """
    devices = {}
    device = port = None
    for line in _ANSI.sub('', text).splitlines():
        if not line.strip() or line.startswith('ibwarn:') or line.startswith('+ '):
            continue
        header = _IBSTAT_CA.match(line)
        if header:
            device = devices.setdefault(header.group(2), _empty_ibstat_device())
            port = None
            continue
        if device is None:
            continue
        port_header = _IBSTAT_PORT.match(line)
        if port_header:
            port = device['ports'].setdefault(int(port_header.group(1)), _empty_ibstat_port())
            continue
        pair = _key_value(line)
        if not pair:
            continue
        key, value = pair[0].lower(), _value(pair[1])
        if port is None:
            if key.endswith(' type'):
                device['ca_type'] = value
            elif key in _IBSTAT_DEVICE_KEYS:
                field = _IBSTAT_DEVICE_KEYS[key]
                device[field] = _int(value) if field == 'number_of_ports' else value
            continue
        field = _IBSTAT_PORT_KEYS.get(key)
        if field == 'rate_gbps':
            # "Rate: 400", "Rate: 2.5" (1X SDR) or "Rate: 40 (FDR10)"
            port[field] = _number(_without_note(value)) if value else None
        elif field in ('base_lid', 'sm_lid'):
            port[field] = _lid(value)
            if field == 'base_lid':
                port['lid'] = port['base_lid']
        elif field:
            port[field] = value
    if not devices and text.strip():
        raise ParseError('ibstat', "no \"CA '<name>'\" block found", text.strip().splitlines()[0])
    return {'devices': devices}


_IBSTATUS_HEADER = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:\s*$")


@tool_parser('ibstatus')
def parse_ibstatus(text):
    """``ibstatus`` (the infiniband-diags script) -> {devices: {NAME: {ports: {N: {default_gid, base_lid,
    sm_lid, state, state_code, phys_state, phys_state_code, rate_gbps, rate_text, width, speed, link_layer,
    warnings}}}}}.

    ``state`` is the kernel word ('ACTIVE') with its code (4); ``phys_state`` 'LinkUp' (5).  LIDs are ints
    (ibstatus prints them in hex).  The rate label is the kernel's: RoCE 100G reads '100 Gb/sec (4X EDR)'.
    ibstatus prints 'unknown' for a file it cannot read: that is None here.  Text before the first
    "Infiniband device" block is ignored; text without any block raises ParseError.
    """
    devices = {}
    port = None
    for line in _ANSI.sub('', text).splitlines():
        header = _IBSTATUS_HEADER.match(line)
        if header:
            ports = devices.setdefault(header.group(1), {'ports': {}})['ports']
            port = ports.setdefault(int(header.group(2)), {
                'default_gid': None, 'base_lid': None, 'sm_lid': None, 'state': None, 'state_code': None,
                'phys_state': None, 'phys_state_code': None, 'rate_gbps': None, 'rate_text': None,
                'width': None, 'speed': None, 'link_layer': None, 'warnings': []})
            continue
        pair = _key_value(line) if port is not None else None
        if not pair:
            continue
        key, value = pair[0].lower(), pair[1]
        if key == 'default gid':
            port['default_gid'] = _value(value)
        elif key in ('base lid', 'sm lid'):
            port[key.replace(' ', '_')] = _lid(value)
        elif key == 'state':
            port['state_code'], port['state'], warning = split_state(value, PORT_STATES)
            if warning:
                port['warnings'].append('state: %s' % warning)
        elif key == 'phys state':
            port['phys_state_code'], port['phys_state'], warning = split_state(value, PHYS_STATES)
            if warning:
                port['warnings'].append('phys_state: %s' % warning)
        elif key == 'rate':
            port.update(split_rate(value))
        elif key == 'link_layer':
            port['link_layer'] = _value(value)
    if not devices:
        raise ParseError('ibstatus', "no \"Infiniband device '<name>' port <n> status:\" block found",
                         text.strip().splitlines()[0] if text.strip() else None)
    return {'devices': devices}


_DEVINFO_GID = re.compile(r'^GID\[\s*(\d+)\]$')


def _coded(value):
    """'PORT_ACTIVE (4)' -> ('PORT_ACTIVE', 4); 'InfiniBand' -> ('InfiniBand', None)."""
    if value is None:
        return None, None
    head, sep, code = value[:-1].rpartition('(') if value.endswith(')') else ('', '', '')
    if sep and re.match(r'^-?\d{1,9}$', code):
        return head.strip() or None, int(code)
    return value, None


def _devinfo_port(device, number):
    return device['ports'].setdefault(number, {
        'state': None, 'state_code': None, 'max_mtu': None, 'active_mtu': None, 'sm_lid': None,
        'port_lid': None, 'port_lmc': None, 'link_layer': None, 'phys_state': None, 'phys_state_code': None,
        'active_width': None, 'active_speed': None, 'gids': [], 'fields': {}})


@tool_parser('ibv_devinfo')
def parse_ibv_devinfo(text):
    """``ibv_devinfo`` or ``ibv_devinfo -v`` -> {devices: {HCA_ID: {transport, transport_code, fw_ver,
    node_guid, sys_image_guid, vendor_id, vendor_part_id, hw_ver, board_id, phys_port_cnt, fields,
    ports: {N: {state ('PORT_ACTIVE'), state_code (4), max_mtu, active_mtu (bytes), sm_lid, port_lid,
    port_lmc, link_layer, phys_state, phys_state_code, active_width, active_speed, gids, fields}}}}}.

    ``fields`` keeps every other ``key: value`` line as printed (the many -v capabilities); flag lists
    printed on their own lines by -v are skipped.  ``gids`` (-v only) are {index, gid, type}.
    'No IB devices found' or no output is ``{devices: {}}``; text without any hca_id raises ParseError.
    """
    devices = {}
    device = port = None
    for line in _ANSI.sub('', text).splitlines():
        pair = _key_value(line, gid_keys=True)
        if not pair:
            continue
        key, value = pair[0], _value(pair[1])
        if key == 'hca_id':
            if value is None:
                device = None
                continue
            device = devices.setdefault(value, {
                'transport': None, 'transport_code': None, 'fw_ver': None, 'node_guid': None,
                'sys_image_guid': None, 'vendor_id': None, 'vendor_part_id': None, 'hw_ver': None,
                'board_id': None, 'phys_port_cnt': None, 'fields': {}, 'ports': {}})
            port = None
            continue
        if device is None:
            continue
        if key == 'port':
            number = _int(value)
            port = _devinfo_port(device, number) if number is not None else None
            continue
        gid = _DEVINFO_GID.match(key)
        if gid:
            if port is not None and value:
                address, _sep, gid_type = value.partition(',')
                port['gids'].append({'index': int(gid.group(1)), 'gid': address.strip(),
                                     'type': gid_type.strip() or None})
            continue
        if port is None:
            if key == 'transport':
                device['transport'], device['transport_code'] = _coded(value)
            elif key in ('vendor_part_id', 'phys_port_cnt'):
                device[key] = _int(value)
            elif key in device and key not in ('fields', 'ports'):
                device[key] = value
            else:
                device['fields'][key] = value
            continue
        if key in ('state', 'phys_state'):
            port[key], port[key + '_code'] = _coded(value)
        elif key in ('max_mtu', 'active_mtu'):
            port[key] = _int(_coded(value)[0])
        elif key in ('sm_lid', 'port_lid'):
            port[key] = _int(value)
        elif key in ('port_lmc', 'link_layer', 'active_width', 'active_speed'):
            port[key] = value
        else:
            port['fields'][key] = value
    if not devices and text.strip() and 'No IB devices found' not in text:
        raise ParseError('ibv_devinfo', 'no "hca_id:" block found', text.strip().splitlines()[0])
    return {'devices': devices}


_SHOW_GIDS_GID = re.compile(r'^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$')
_IPV4 = re.compile(r'^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$')


@tool_parser('show_gids')
def parse_show_gids(text):
    """``show_gids`` (NVIDIA MLNX_OFED / DOCA script) -> {gids: [{device, port, index, gid, ipv4, roce_version,
    netdev}], roce_v2_ipv4: {DEVICE: {port, index, ipv4, netdev}}, n_gids_found, complete}.

    Columns are DEV PORT INDEX GID IPv4 VER DEV; IPv4, VER and the netdev column may be empty.
    ``roce_v2_ipv4`` picks, per device, the lowest (port, index) GID that is RoCE v2 with an IPv4 address:
    the GID index to give perftest (-x) and NCCL (NCCL_IB_GID_INDEX).  ``complete`` is False when the
    ``n_gids_found=`` trailer is missing (truncated output) or disagrees with the rows.
    """
    gids = []
    seen_header = False
    n_gids_found = None
    for number, line in enumerate(_ANSI.sub('', text).splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == 'DEV' and 'GID' in tokens:
            seen_header = True
            continue
        if set(line.strip()) <= set('-\t '):
            continue
        trailer = re.match(r'^n_gids_found=(\d+)\s*$', line.strip())
        if trailer:
            n_gids_found = int(trailer.group(1))
            continue
        if len(tokens) < 4 or not tokens[1].isdecimal() or not tokens[2].isdecimal() or not _SHOW_GIDS_GID.match(tokens[3]):
            if not seen_header and not gids:
                continue
            raise ParseError('show_gids', 'line %d is not "DEV PORT INDEX GID [IPv4] [VER] [DEV]"' % number, line)
        rest = tokens[4:]
        ipv4 = rest.pop(0) if rest and _IPV4.match(rest[0]) else None
        version = rest.pop(0) if rest and re.match(r'^[vV]\d$', rest[0]) else None
        netdev = rest.pop(0) if rest else None
        if rest:
            raise ParseError('show_gids', 'line %d has unexpected columns' % number, line)
        gids.append({'device': tokens[0], 'port': int(tokens[1]), 'index': int(tokens[2]), 'gid': tokens[3],
                     'ipv4': ipv4 or ipv4_from_gid(tokens[3]), 'roce_version': version.lower() if version else None,
                     'netdev': netdev})
    if not seen_header and not gids:
        raise ParseError('show_gids', 'no "DEV PORT INDEX GID IPv4 VER DEV" header or GID rows found',
                         text.strip().splitlines()[0] if text.strip() else None)
    return {'gids': gids, 'roce_v2_ipv4': pick_roce_v2_ipv4(gids), 'n_gids_found': n_gids_found,
            'complete': n_gids_found is not None and n_gids_found == len(gids)}


def pick_roce_v2_ipv4(gids):
    """From [{device, port, index, ipv4, roce_version, netdev}], per device the first RoCE v2 GID with IPv4."""
    chosen = {}
    for entry in sorted(gids, key=lambda g: (g['device'], g['port'], g['index'])):
        if entry.get('roce_version') == 'v2' and entry.get('ipv4') and entry['device'] not in chosen:
            chosen[entry['device']] = {'port': entry['port'], 'index': entry['index'],
                                       'ipv4': entry['ipv4'], 'netdev': entry.get('netdev')}
    return chosen


_IP_ADDR = re.compile(r'^(\d{1,10}):\s+([^\s@]{1,64})(?:@\S{1,64})?\s+(inet6?)\s+([0-9a-fA-F.:]+)/(\d+)(.*)$')


@tool_parser('ip')
def parse_ip_addr(text):
    """``ip -o addr show`` (one line per address; ``-4`` for IPv4 only) -> {addresses: [{ifindex, ifname,
    family, address, prefixlen, scope, secondary, label}], ipv4_by_netdev: {IFNAME: [address, ...]},
    ipv4_prefixlen_by_netdev: {IFNAME: {address: prefixlen}}}.

    Other ``ip`` output (without ``-o``) raises ParseError.
    """
    addresses = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _IP_ADDR.match(line.strip())
        if not match:
            raise ParseError('ip', 'line %d is not "<index>: <ifname> inet <address>/<prefix> ..." (ip -o addr)'
                             % number, line)
        attrs = match.group(6).split('\\')[0].split()
        scope = attrs[attrs.index('scope') + 1] if 'scope' in attrs and attrs.index('scope') + 1 < len(attrs) else None
        label = None
        if match.group(3) == 'inet' and attrs and attrs[-1] not in ('secondary', 'dynamic', 'noprefixroute', 'permanent'):
            label = attrs[-1] if attrs[-1] != scope else None
        addresses.append({'ifindex': int(match.group(1)), 'ifname': match.group(2), 'family': match.group(3),
                          'address': match.group(4), 'prefixlen': int(match.group(5)), 'scope': scope,
                          'secondary': 'secondary' in attrs, 'label': label})
    by_netdev = {}
    prefixlens = {}
    for entry in addresses:
        if entry['family'] == 'inet':
            by_netdev.setdefault(entry['ifname'], []).append(entry['address'])
            prefixlens.setdefault(entry['ifname'], {})[entry['address']] = entry['prefixlen']
    return {'addresses': addresses, 'ipv4_by_netdev': by_netdev, 'ipv4_prefixlen_by_netdev': prefixlens}


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def _numeric_sorted(names):
    return sorted((name for name in names or () if name.isdecimal()), key=int)


def _pci_address(device_dir):
    """BDF of the RDMA device's PCI function: the resolved ``device`` link, else device/uevent PCI_SLOT_NAME."""
    link = os.path.join(device_dir, 'device')
    if os.path.islink(link):
        name = os.path.basename(os.path.realpath(link))
        if _PCI_BDF.match(name):
            return name
    uevent = _read(os.path.join(link, 'uevent'))
    if uevent:
        match = re.search(r'^PCI_SLOT_NAME=(\S+)$', uevent, re.M)
        if match:
            return match.group(1)
    return None


def _read_gids(port_dir):
    gids = []
    for index in _numeric_sorted(_listdir(os.path.join(port_dir, 'gids'))):
        gid = _read(os.path.join(port_dir, 'gids', index))
        if not gid or _ZERO_GID.match(gid):
            continue
        gid_type = _read(os.path.join(port_dir, 'gid_attrs', 'types', index))
        gids.append({'index': int(index), 'gid': gid, 'type': gid_type, 'roce_version': roce_version(gid_type),
                     'netdev': _value(_read(os.path.join(port_dir, 'gid_attrs', 'ndevs', index))),
                     'ipv4': ipv4_from_gid(gid)})
    return gids


def _read_counters(directory):
    counters = {}
    for name in _listdir(directory) or ():
        value = _int(_read(os.path.join(directory, name)))
        if value is not None:
            counters[name] = value
    return counters


def read_infiniband_port(port_dir, counters=False):
    """One /sys/class/infiniband/<dev>/ports/<n> directory -> {state, state_code, phys_state, phys_state_code,
    rate_gbps, rate_text, width, speed, link_layer, lid, sm_lid, gids, warnings[, counters, hw_counters]}."""
    port = {'warnings': []}
    for name, names in (('state', PORT_STATES), ('phys_state', PHYS_STATES)):
        raw = _read(os.path.join(port_dir, name))
        port[name + '_code'], port[name], warning = split_state(raw, names)
        if warning:
            port['warnings'].append('%s: %s' % (name, warning))
    port.update(split_rate(_read(os.path.join(port_dir, 'rate'))))
    port['link_layer'] = _value(_read(os.path.join(port_dir, 'link_layer')))
    port['lid'] = _lid(_read(os.path.join(port_dir, 'lid')))
    port['sm_lid'] = _lid(_read(os.path.join(port_dir, 'sm_lid')))
    port['gids'] = _read_gids(port_dir)
    if counters:
        port['counters'] = _read_counters(os.path.join(port_dir, 'counters'))
        port['hw_counters'] = _read_counters(os.path.join(port_dir, 'hw_counters'))
    return port


def rdma_pci_addresses(sysfs_root='/sys'):
    """Sorted PCI addresses (BDF) of the RDMA devices under <sysfs_root>/class/infiniband (read_infiniband_sysfs's
    ``pci_address``, without reading the rest); [] without RDMA devices."""
    base = os.path.join(sysfs_root, 'class', 'infiniband')
    found = set()
    for name in _listdir(base) or ():
        device_dir = os.path.join(base, name)
        address = _pci_address(device_dir) if os.path.isdir(device_dir) else None
        if address:
            found.add(address)
    return sorted(found)


def read_infiniband_sysfs(sysfs_root='/sys', counters=False):
    """Read <sysfs_root>/class/infiniband -> {devices: {NAME: {fw_ver, hca_type, board_id, node_guid,
    node_type, netdevs, numa_node, pci_address, ports: {N: {...read_infiniband_port...}}}}}.

    A tree without class/infiniband (no RDMA hardware, no driver) gives {devices: {}}.  Missing files are
    None; ``netdevs`` is None when the device has no readable ``device`` directory (fixture trees) and []
    when the PCI function has no netdev.  ``numa_node`` -1 means the kernel knows no affinity.
    """
    base = os.path.join(sysfs_root, 'class', 'infiniband')
    devices = {}
    for name in _listdir(base) or ():
        device_dir = os.path.join(base, name)
        if not os.path.isdir(device_dir):
            continue
        pci_dir = os.path.join(device_dir, 'device')
        netdevs = None
        if os.path.isdir(pci_dir):
            netdevs = _listdir(os.path.join(pci_dir, 'net')) or []
        device = {
            'fw_ver': _value(_read(os.path.join(device_dir, 'fw_ver'))),
            'hca_type': _value(_read(os.path.join(device_dir, 'hca_type'))),
            'board_id': _value(_read(os.path.join(device_dir, 'board_id'))),
            'node_guid': _value(_read(os.path.join(device_dir, 'node_guid'))),
            'node_type': _value(_read(os.path.join(device_dir, 'node_type'))),
            'netdevs': netdevs,
            'numa_node': _int(_read(os.path.join(pci_dir, 'numa_node'))),
            'pci_address': _pci_address(device_dir),
            'ports': {},
        }
        for port in _numeric_sorted(_listdir(os.path.join(device_dir, 'ports'))):
            device['ports'][int(port)] = read_infiniband_port(os.path.join(device_dir, 'ports', port), counters)
        devices[name] = device
    return {'devices': devices}


def roce_v2_gid_indexes(devices):
    """{device: {port, index, ipv4, netdev} or None}: per device the first RoCE v2 GID with an IPv4 address
    (sysfs gid_attrs), taken from an ACTIVE port when there is one."""
    chosen = {}
    for name, device in sorted(devices.items()):
        candidates = []
        for number, port in sorted(device.get('ports', {}).items()):
            for gid in port.get('gids') or ():
                if gid.get('roce_version') == 'v2' and gid.get('ipv4'):
                    candidates.append((port.get('state_code') != STATE_ACTIVE, number, gid['index'], gid))
        if candidates:
            _inactive, number, index, gid = sorted(candidates, key=lambda c: c[:3])[0]
            chosen[name] = {'port': number, 'index': index, 'ipv4': gid['ipv4'], 'netdev': gid.get('netdev')}
        else:
            chosen[name] = None
    return chosen


def device_netdevs(device, port=None):
    """The netdevs of a device (device/net) followed by those its GIDs name (gid_attrs/ndevs: a bond, a VLAN),
    for every port or just ``port``."""
    names = list(device.get('netdevs') or [])
    for number, entry in sorted(device.get('ports', {}).items()):
        if port is not None and number != port:
            continue
        for gid in entry.get('gids') or ():
            if gid.get('netdev') and gid['netdev'] not in names:
                names.append(gid['netdev'])
    return names


def _port_gid_index(port, ipv4=None):
    """The RoCE v2 IPv4 GID index of one port: the one carrying ``ipv4`` when given, else the first; None if none."""
    candidates = [gid for gid in port.get('gids') or () if gid.get('roce_version') == 'v2' and gid.get('ipv4')]
    for gid in candidates:
        if ipv4 and gid['ipv4'] == ipv4:
            return gid['index']
    return candidates[0]['index'] if candidates else None


def select_live_ports(devices, ipv4_by_netdev=None, require_ipv4=False, prefixlen_by_netdev=None):
    """The live port(s): state ACTIVE (4) and phys_state LinkUp (5), from read_infiniband_sysfs()['devices'].

    ``ipv4_by_netdev`` ({netdev: [address, ...]}, from parse_ip_addr) adds each port's netdev IPv4; ports
    whose netdev has an IPv4 come first (on a two-box RoCE pair the cabled, addressed port is the live one,
    and it may be f0 on one box and f1 on the other).  With ``require_ipv4`` ports without one are left out.
    Returns [{device, port, netdev, ipv4, ipv4_prefixlen, rate_gbps, link_layer, gid_index}] where ``gid_index`` is the
    port's RoCE v2 GID carrying that IPv4 (else its first RoCE v2 IPv4 GID; None on InfiniBand or without an address) and
    ``ipv4_prefixlen`` the address's prefix length from ``prefixlen_by_netdev`` ({netdev: {address: prefixlen}}; None unknown).
    A port whose phys_state is not LinkUp (or is unreadable) is never live.
    """
    live = []
    for name, device in sorted(devices.items()):
        for number, port in sorted(device.get('ports', {}).items()):
            if port.get('state_code') != STATE_ACTIVE or port.get('phys_state_code') != PHYS_LINK_UP \
                    or port.get('phys_state') != PHYS_STATES[PHYS_LINK_UP]:
                continue
            candidates = device_netdevs(device, number)
            netdev = candidates[0] if candidates else None
            ipv4 = None
            for candidate in candidates:
                addresses = (ipv4_by_netdev or {}).get(candidate)
                if addresses:
                    netdev, ipv4 = candidate, addresses[0]
                    break
            if require_ipv4 and ipv4 is None:
                continue
            prefixlen = ((prefixlen_by_netdev or {}).get(netdev) or {}).get(ipv4) if ipv4 else None
            live.append({'device': name, 'port': number, 'netdev': netdev, 'ipv4': ipv4, 'ipv4_prefixlen': prefixlen,
                         'rate_gbps': port.get('rate_gbps'), 'link_layer': port.get('link_layer'),
                         'gid_index': _port_gid_index(port, ipv4)})
    live.sort(key=lambda entry: entry['ipv4'] is None)
    return live


# Route types ``ip route get`` may print before the destination ("local 10.0.0.1 dev lo ...").
_ROUTE_TYPES = ('unicast', 'local', 'broadcast', 'multicast', 'unreachable', 'prohibit', 'blackhole', 'throw', 'nat', 'anycast')
_ROUTE_ERROR = re.compile(r'^(?:RTNETLINK answers|Error):\s*(.+?)\.?$')


@tool_parser('ip')
def parse_ip_route_get(text):
    """``ip route get DEST [from SRC]`` -> {dest, type, from, via, dev, src, error}: the interface (``dev``) the kernel sends
    DEST's packets through, the gateway (``via``) when it is not on-link, the source address it would use.

    The kernel's refusal ("RTNETLINK answers: Network is unreachable", "Error: ipv4: Address not found.") gives
    ``error`` and no ``dev``.  Anything else raises ParseError.
    """
    result = {'dest': None, 'type': 'unicast', 'from': None, 'via': None, 'dev': None, 'src': None, 'error': None}
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError('ip', 'no output from ip route get')
    for line in lines:
        match = _ROUTE_ERROR.match(line)
        if match:
            result['error'] = match.group(1)
            return result
    tokens = lines[0].split()
    if tokens[0] in _ROUTE_TYPES:
        result['type'] = tokens.pop(0)
    if not tokens or not re.match(r'^[0-9a-fA-F:.]+$', tokens[0]):
        raise ParseError('ip', 'the first line is not "<destination> [from ...] [via ...] dev <ifname> ..." (ip route get)', lines[0])
    result['dest'] = tokens.pop(0)
    index = 0
    while index < len(tokens) - 1:
        key = tokens[index]
        if key in ('from', 'via', 'dev', 'src'):
            result[key] = tokens[index + 1]
            index += 2
            continue
        index += 1
    if result['dev'] is None and result['type'] == 'unicast':
        raise ParseError('ip', 'no "dev <ifname>" in the route', lines[0])
    return result
