# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for nvidia-smi: the XML query (``-q -x``), the text query (``-q``),
the default table and the topology matrix (``topo -m``), and the pairing of
RDMA NICs with their closest GPU.  Pure functions; no Ansible import.

Values nvidia-smi prints as ``N/A`` (or ``[N/A]``, ``Not Supported``) are
returned as None: unknown, never 0 and never healthy.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

_UNKNOWN = ('', 'n/a', '[n/a]', 'not supported', '[not supported]', 'unknown error', '[unknown error]',
            'requested functionality has been deprecated', '[requested functionality has been deprecated]')
_BUS_RE = re.compile(r'^(?:(?:PCI:)?([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?$')
_ANSI_RE = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
# Rank of a GPU-NIC path in `nvidia-smi topo -m`, closest first.  SOC is the
# pre-2017 name of SYS.  NV# links only join GPUs.
LINK_RANK = {'PIX': 0, 'PXB': 1, 'PHB': 2, 'NODE': 3, 'SYS': 4, 'SOC': 4}
_LINK_RE = re.compile(r'^(X|SYS|SOC|NODE|PHB|PXB|PIX|NV\d+|N/A)$')
_ECC_STANDARD = ('sram_correctable', 'sram_uncorrectable', 'dram_correctable', 'dram_uncorrectable',
                 'single_bit', 'double_bit')


def _value(raw):
    """Strip a value; N/A and friends become None."""
    if raw is None:
        return None
    value = raw.strip()
    if value.lower() in _UNKNOWN:
        return None
    return value


def _int(raw):
    value = _value(raw)
    if value is None:
        return None
    match = re.match(r'^(-?\d+)(?:\s*(?:x|bank\(s\)|%))?$', value)
    return int(match.group(1)) if match else None


def _number(raw, unit):
    """'67.03 W' -> 67.03, '27 C' -> 27.0; None for N/A or another unit."""
    value = _value(raw)
    if value is None:
        return None
    match = re.match(r'^(-?\d+(?:\.\d+)?)\s*%s$' % re.escape(unit), value)
    return float(match.group(1)) if match else None


def _yes_no(raw):
    value = _value(raw)
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ('yes', 'true', 'enabled', 'active'):
        return True
    if lowered in ('no', 'false', 'disabled', 'not active'):
        return False
    return None


def _key(name):
    """'SRAM Uncorrectable SEC-DED' -> 'sram_uncorrectable_sec_ded'."""
    return re.sub(r'[^0-9a-z]+', '_', name.lower()).strip('_')


def _sum_known(values):
    known = [value for value in values if isinstance(value, int)]
    return sum(known) if known else None


def normalize_bus_id(raw):
    """'00000000:1B:00.0' or 'PCI:0000:1b:00' -> '0000:1b:00.0' (domain 4 hex digits, lower case); None if not a bus id."""
    if not isinstance(raw, str):
        return None
    match = _BUS_RE.match(raw.strip())
    if not match:
        return None
    domain = int(match.group(1), 16) if match.group(1) else 0
    if domain > 0xffff:
        return None
    return '%04x:%s:%s.%s' % (domain, match.group(2).lower(), match.group(3).lower(), match.group(4) or '0')


def _ecc_scope(counters):
    """Fill the standard ECC keys (None when the layout lacks them) and derive totals."""
    scope = dict((name, None) for name in _ECC_STANDARD)
    scope.update(counters)
    if scope.get('sram_uncorrectable') is None:
        # -q prints "SRAM Uncorrectable SEC-DED" (sec_ded); the XML of R550+ drivers spells it sram_uncorrectable_secded.
        sec_ded = counters.get('sram_uncorrectable_sec_ded')
        if sec_ded is None:
            sec_ded = counters.get('sram_uncorrectable_secded')
        scope['sram_uncorrectable'] = _sum_known([counters.get('sram_uncorrectable_parity'), sec_ded])
    if scope.get('single_bit') is None:
        scope['single_bit'] = counters.get('single_bit_total')
    if scope.get('double_bit') is None:
        scope['double_bit'] = counters.get('double_bit_total')
    scope['uncorrectable_total'] = _sum_known([scope['sram_uncorrectable'], scope['dram_uncorrectable'], scope['double_bit']])
    scope['correctable_total'] = _sum_known([scope['sram_correctable'], scope['dram_correctable'], scope['single_bit']])
    return scope


def _empty_gpu(index):
    return {
        'index': index, 'bus_id': None, 'bus_id_raw': None, 'name': None, 'uuid': None, 'serial': None,
        'persistence_mode': None, 'mig_mode_current': None, 'fabric': {'state': None, 'status': None},
        'pcie': {'gen_current': None, 'gen_max': None, 'width_current': None, 'width_max': None, 'replays': None},
        'ecc_mode_current': None, 'ecc_mode_pending': None,
        'ecc_errors': {'volatile': _ecc_scope({}), 'aggregate': _ecc_scope({})},
        'retired_pages': {'single_bit': None, 'double_bit': None, 'pending': None},
        'remapped_rows': {'correctable': None, 'uncorrectable': None, 'pending': None, 'failure': None},
        'temperature_c': None, 'power_draw_w': None, 'power_average_w': None, 'clocks_throttle_reasons': None,
    }


def _power(read, blocks, names):
    """(power draw, average power draw) in W from whichever power block and layout the driver printed.

    Older drivers print one ``power_draw``; recent ones (XML ``gpu_power_readings`` with ``instant_power_draw`` and
    ``average_power_draw``, ``-q`` "Instant Power Draw" / "Average Power Draw") print two and no ``power_draw``: the
    draw is the instant reading then, falling back to the average.  ``read(block, name)`` returns the raw value.
    """
    draw_name, instant_name, average_name = names
    for block in blocks:
        draw, instant, average = (_number(read(block, name), 'W') for name in (draw_name, instant_name, average_name))
        if draw is not None or instant is not None or average is not None:
            return next((value for value in (draw, instant, average) if value is not None)), average
    return None, None


def _pending(values):
    """True when any pending flag says Yes, False when at least one says No and none Yes, else None."""
    flags = [_yes_no(value) for value in values]
    if True in flags:
        return True
    if False in flags:
        return False
    return None


# --------------------------------------------------------------------------- XML

def _text(element, path):
    if element is None:
        return None
    found = element.find(path)
    if found is None:
        return None
    return _value(found.text or '')


def _xml_ecc(scope):
    counters = {}
    if scope is None:
        return _ecc_scope(counters)
    for child in scope:
        if len(child):
            # pre-Ampere layout: single_bit / double_bit with per-memory counters and a total
            for leaf in child:
                counters['%s_%s' % (child.tag, leaf.tag)] = _int(leaf.text or '')
        else:
            raw = child.text or ''
            counters[child.tag] = _int(raw) if _int(raw) is not None else _yes_no(raw)
    return _ecc_scope(counters)


def _xml_gpu(index, gpu):
    record = _empty_gpu(index)
    raw_bus = gpu.get('id') or _text(gpu, 'pci/pci_bus_id')
    record.update({
        'bus_id_raw': raw_bus,
        'bus_id': normalize_bus_id(raw_bus),
        'name': _text(gpu, 'product_name'),
        'uuid': _text(gpu, 'uuid'),
        'serial': _text(gpu, 'serial'),
        'persistence_mode': _text(gpu, 'persistence_mode'),
        'mig_mode_current': _text(gpu, 'mig_mode/current_mig'),
        'ecc_mode_current': _text(gpu, 'ecc_mode/current_ecc'),
        'ecc_mode_pending': _text(gpu, 'ecc_mode/pending_ecc'),
        'temperature_c': _number(_text(gpu, 'temperature/gpu_temp'), 'C'),
        # The GPU's handshake with nvidia-fabricmanager on NVSwitch systems (Completed / In Progress / Not Started, N/A elsewhere).
        'fabric': {'state': _text(gpu, 'fabric/state'), 'status': _text(gpu, 'fabric/status')},
    })
    link = gpu.find('pci/pci_gpu_link_info')
    record['pcie'] = {
        'gen_current': _int(_text(link, 'pcie_gen/current_link_gen')),
        'gen_max': _int(_text(link, 'pcie_gen/max_link_gen')),
        'width_current': _int(_text(link, 'link_widths/current_link_width')),
        'width_max': _int(_text(link, 'link_widths/max_link_width')),
        'replays': _int(_text(gpu, 'pci/replay_counter')),
    }
    errors = gpu.find('ecc_errors')
    record['ecc_errors'] = {
        'volatile': _xml_ecc(errors.find('volatile') if errors is not None else None),
        'aggregate': _xml_ecc(errors.find('aggregate') if errors is not None else None),
    }
    retired = gpu.find('retired_pages')
    record['retired_pages'] = {
        'single_bit': _int(_text(retired, 'multiple_single_bit_retirement/retired_count')),
        'double_bit': _int(_text(retired, 'double_bit_retirement/retired_count')),
        'pending': _pending([_text(retired, 'pending_blacklist'), _text(retired, 'pending_retirement')]),
    }
    remapped = gpu.find('remapped_rows')
    record['remapped_rows'] = {
        'correctable': _int(_text(remapped, 'remapped_row_corr')),
        'uncorrectable': _int(_text(remapped, 'remapped_row_unc')),
        'pending': _yes_no(_text(remapped, 'remapped_row_pending')),
        'failure': _yes_no(_text(remapped, 'remapped_row_failure')),
    }
    record['power_draw_w'], record['power_average_w'] = _power(
        lambda block, name: _text(gpu, '%s/%s' % (block, name)),
        ('gpu_power_readings', 'power_readings'), ('power_draw', 'instant_power_draw', 'average_power_draw'))
    reasons = gpu.find('clocks_event_reasons')
    if reasons is None:
        reasons = gpu.find('clocks_throttle_reasons')
    if reasons is not None:
        active = []
        for child in reasons:
            if _value(child.text or '') == 'Active':
                active.append(re.sub(r'^clocks_(?:event|throttle)_reason_', '', child.tag))
        record['clocks_throttle_reasons'] = active
    return record


@tool_parser('nvidia-smi -q -x')
def parse_nvidia_smi_xml(text):
    """``nvidia-smi -q -x`` -> {driver_version, cuda_version, gpu_count, gpus: [...], gpu_count_mismatch}.

    ``gpu_count`` is ``attached_gpus`` as the driver reports it; ``gpus``
    holds one record per ``<gpu>`` element, so a trimmed or partial file shows
    up as ``gpu_count_mismatch``.
    """
    tool = 'nvidia-smi -q -x'
    text = text.strip()
    if not text.startswith('<'):
        raise ParseError(tool, 'not XML (expected <nvidia_smi_log>)', text.splitlines()[0] if text else None)
    if '<!ENTITY' in text:
        raise ParseError(tool, 'XML entity declarations are not accepted')
    try:
        root = ET.fromstring(text)
    except (SyntaxError, ValueError, LookupError) as exc:
        raise ParseError(tool, 'not well-formed XML: %s' % exc)
    if root.tag != 'nvidia_smi_log':
        raise ParseError(tool, 'root element is <%s>, expected <nvidia_smi_log>' % root.tag)
    gpus = [_xml_gpu(index, gpu) for index, gpu in enumerate(root.findall('gpu'))]
    attached = _int(_text(root, 'attached_gpus'))
    return {
        'driver_version': _text(root, 'driver_version'),
        'cuda_version': _text(root, 'cuda_version'),
        'timestamp': _text(root, 'timestamp'),
        'gpu_count': attached,
        'gpus': gpus,
        'gpu_count_mismatch': attached is not None and attached != len(gpus),
    }


# --------------------------------------------------------------------------- -q text

def _spaced_colon_pair(line):
    """'Product Name    : H100' -> ('Product Name', 'H100'): split at the first colon that follows whitespace."""
    colon = line.find(':', 1)
    while colon > 0:
        if line[colon - 1].isspace() and line[:colon].strip():
            return line[:colon].rstrip(), line[colon + 1:].strip()
        colon = line.find(':', colon + 1)
    return None


def _text_tree(text):
    """Indentation tree of ``nvidia-smi -q``: (header dict, [(block name, block dict)])."""
    header = {}
    blocks = []
    stack = [(-1, header)]
    for line in text.expandtabs(8).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith('====='):
            continue
        indent = len(line) - len(line.lstrip(' '))
        if indent == 0 and re.match(r'^GPU [0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$', stripped):
            block = {}
            blocks.append((stripped[4:], block))
            stack = [(-1, header), (0, block)]
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        current = stack[-1][1]
        pair = _spaced_colon_pair(stripped)
        if pair:
            current.setdefault(pair[0], pair[1])
        else:
            child = current.get(stripped)
            if not isinstance(child, dict):
                child = {}
                current.setdefault(stripped, child)
            stack.append((indent, child))
    return header, blocks


def _get(tree, *path):
    node = tree
    for name in path:
        if not isinstance(node, dict):
            return None
        node = node.get(name)
    return node if isinstance(node, str) else None


def _section(tree, *path):
    node = tree
    for name in path:
        if not isinstance(node, dict):
            return None
        node = node.get(name)
    return node if isinstance(node, dict) else None


def _text_ecc(scope):
    counters = {}
    for name, value in (scope or {}).items():
        if isinstance(value, dict):
            for leaf, leaf_value in value.items():
                if isinstance(leaf_value, str):
                    counters['%s_%s' % (_key(name), _key(leaf))] = _int(leaf_value)
        else:
            counters[_key(name)] = _int(value) if _int(value) is not None else _yes_no(value)
    return _ecc_scope(counters)


def _text_gpu(index, raw_bus, tree):
    record = _empty_gpu(index)
    raw_bus = _get(tree, 'PCI', 'Bus Id') or raw_bus
    record.update({
        'bus_id_raw': raw_bus,
        'bus_id': normalize_bus_id(raw_bus),
        'name': _value(_get(tree, 'Product Name')),
        'uuid': _value(_get(tree, 'GPU UUID')),
        'serial': _value(_get(tree, 'Serial Number')),
        'persistence_mode': _value(_get(tree, 'Persistence Mode')),
        'mig_mode_current': _value(_get(tree, 'MIG Mode', 'Current')),
        'ecc_mode_current': _value(_get(tree, 'ECC Mode', 'Current')),
        'ecc_mode_pending': _value(_get(tree, 'ECC Mode', 'Pending')),
        'temperature_c': _number(_get(tree, 'Temperature', 'GPU Current Temp'), 'C'),
        'fabric': {'state': _value(_get(tree, 'Fabric', 'State')), 'status': _value(_get(tree, 'Fabric', 'Status'))},
    })
    record['pcie'] = {
        'gen_current': _int(_get(tree, 'PCI', 'GPU Link Info', 'PCIe Generation', 'Current')),
        'gen_max': _int(_get(tree, 'PCI', 'GPU Link Info', 'PCIe Generation', 'Max')),
        'width_current': _int(_get(tree, 'PCI', 'GPU Link Info', 'Link Width', 'Current')),
        'width_max': _int(_get(tree, 'PCI', 'GPU Link Info', 'Link Width', 'Max')),
        'replays': _int(_get(tree, 'PCI', 'Replays Since Reset')),
    }
    record['ecc_errors'] = {
        'volatile': _text_ecc(_section(tree, 'ECC Errors', 'Volatile')),
        'aggregate': _text_ecc(_section(tree, 'ECC Errors', 'Aggregate')),
    }
    record['retired_pages'] = {
        'single_bit': _int(_get(tree, 'Retired Pages', 'Single Bit ECC')),
        'double_bit': _int(_get(tree, 'Retired Pages', 'Double Bit ECC')),
        'pending': _pending([_get(tree, 'Retired Pages', 'Pending Page Blacklist'),
                             _get(tree, 'Retired Pages', 'Pending Retirement')]),
    }
    record['remapped_rows'] = {
        'correctable': _int(_get(tree, 'Remapped Rows', 'Correctable Error')),
        'uncorrectable': _int(_get(tree, 'Remapped Rows', 'Uncorrectable Error')),
        'pending': _yes_no(_get(tree, 'Remapped Rows', 'Pending')),
        'failure': _yes_no(_get(tree, 'Remapped Rows', 'Remapping Failure Occurred')),
    }
    record['power_draw_w'], record['power_average_w'] = _power(
        lambda block, name: _get(tree, block, name),
        ('GPU Power Readings', 'Power Readings'), ('Power Draw', 'Instant Power Draw', 'Average Power Draw'))
    reasons = _section(tree, 'Clocks Event Reasons') or _section(tree, 'Clocks Throttle Reasons')
    if reasons is not None:
        record['clocks_throttle_reasons'] = [_key(name) for name, value in reasons.items()
                                             if isinstance(value, str) and value.strip() == 'Active']
    return record


@tool_parser('nvidia-smi -q')
def parse_nvidia_smi_q(text):
    """Plain ``nvidia-smi -q`` (also ``-q -d ECC``/``PAGE_RETIRED``) -> the same shape as parse_nvidia_smi_xml."""
    tool = 'nvidia-smi -q'
    header, blocks = _text_tree(text)
    if 'Driver Version' not in header and 'Attached GPUs' not in header and not blocks:
        first = text.strip().splitlines()[0] if text.strip() else None
        raise ParseError(tool, 'no "Driver Version", "Attached GPUs" or "GPU <bus id>" block found', first)
    gpus = [_text_gpu(index, raw_bus, tree) for index, (raw_bus, tree) in enumerate(blocks)]
    attached = _int(header.get('Attached GPUs') if isinstance(header.get('Attached GPUs'), str) else None)
    return {
        'driver_version': _value(_get(header, 'Driver Version')),
        'cuda_version': _value(_get(header, 'CUDA Version')),
        'timestamp': _value(_get(header, 'Timestamp')),
        'gpu_count': attached,
        'gpus': gpus,
        'gpu_count_mismatch': attached is not None and attached != len(gpus),
    }


@tool_parser('nvidia-smi')
def parse_nvidia_smi(text):
    """Either form of the query: XML (``-q -x``) when the text starts with '<', else the text form (``-q``)."""
    if text.lstrip().startswith('<'):
        return parse_nvidia_smi_xml(text)
    return parse_nvidia_smi_q(text)


# --------------------------------------------------------------------------- default table

@tool_parser('nvidia-smi')
def parse_nvidia_smi_table(text):
    """The default ``nvidia-smi`` table -> {driver_version, cuda_version, gpu_count, gpus: [{index, name, bus_id, ...}]}.

    ``gpu_count`` counts the complete GPU rows found; a cut table gives fewer.
    Long product names are cut by nvidia-smi itself ('NVIDIA RTX 6000 Ada Gene...').
    """
    tool = 'nvidia-smi'
    head = re.search(r'NVIDIA-SMI\s+(\S+)\s+Driver Version:\s+(\S+)(?:\s+CUDA Version:\s+(\S+))?', text)
    if not head:
        first = text.strip().splitlines()[0] if text.strip() else None
        raise ParseError(tool, 'no "NVIDIA-SMI ... Driver Version:" header line', first)
    gpus = []
    lines = text.splitlines()
    row = re.compile(r'^\|\s+(\d{1,4})\s+(.{1,96}?)\s+(On|Off)\s+\|\s+([0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(\S+)\s+\|\s+(\S+)\s+\|')
    second = re.compile(r'^\|\s*(\S+)\s+(\d+|N/A)C?\s+(P\d+|N/A)\s+(?:(\d+|N/A)W?\s*/\s*(\d+|N/A)W?\s*)?\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|')
    for number, line in enumerate(lines):
        match = row.match(line)
        if not match:
            continue
        gpu = {
            'index': int(match.group(1)), 'name': match.group(2), 'persistence_mode': match.group(3),
            'bus_id_raw': match.group(4), 'bus_id': normalize_bus_id(match.group(4)), 'display_active': match.group(5),
            'volatile_uncorrected_ecc': _int(match.group(6)), 'ecc_supported': _value(match.group(6)) is not None,
            'temperature_c': None, 'power_draw_w': None, 'power_cap_w': None, 'memory_used_mib': None, 'memory_total_mib': None,
        }
        if gpu['volatile_uncorrected_ecc'] is None and match.group(6) == 'Off':
            gpu['ecc_supported'] = False
        nxt = second.match(lines[number + 1]) if number + 1 < len(lines) else None
        if nxt:
            gpu.update({'temperature_c': _int(nxt.group(2)), 'power_draw_w': _int(nxt.group(4)), 'power_cap_w': _int(nxt.group(5)),
                        'memory_used_mib': int(nxt.group(6)), 'memory_total_mib': int(nxt.group(7))})
        gpus.append(gpu)
    return {
        'smi_version': head.group(1),
        'driver_version': head.group(2),
        'cuda_version': head.group(3),
        'gpu_count': len(gpus),
        'gpus': gpus,
    }


# --------------------------------------------------------------------------- topo -m

def _affinity_value(raw, integer):
    value = _value(raw)
    if value is None or not integer:
        return value
    return int(value) if value.isdecimal() else value


@tool_parser('nvidia-smi topo -m')
def parse_nvidia_smi_topo(text):
    """``nvidia-smi topo -m`` -> {devices, matrix, affinity, nic_legend}.

    ``devices`` are the column names in order (GPU0.., NIC0.. or, on older
    drivers, mlx5_0..); ``matrix[row][col]`` the link ('X', 'NV12', 'PIX',
    'PXB', 'PHB', 'NODE', 'SYS'); ``affinity[GPUn]`` the CPU Affinity, NUMA
    Affinity and GPU NUMA ID columns (None where absent or N/A);
    ``nic_legend`` maps NIC0 to its RDMA device name.  A row cut short keeps
    only the columns it has.
    """
    tool = 'nvidia-smi topo -m'
    text = _ANSI_RE.sub('', text).expandtabs(8)
    lines = text.splitlines()
    header_at = None
    for number, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == 'GPU0' and (len(tokens) == 1 or not _LINK_RE.match(tokens[1])):
            header_at = number
            break
    if header_at is None:
        first = text.strip().splitlines()[0] if text.strip() else None
        raise ParseError(tool, 'no header row starting with GPU0', first)
    header = lines[header_at]
    devices = []
    for token in header.split():
        if token in ('CPU', 'NUMA', 'GPU'):
            break
        devices.append(token)
    extra = [name for name in ('CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID') if name in header]
    if len(set(devices)) != len(devices):
        raise ParseError(tool, 'repeated column names in the header row', header.strip())
    known = set(devices)
    matrix = {}
    affinity = {}
    legend = {}
    in_legend = False
    for line in lines[header_at + 1:]:
        stripped = line.strip()
        if stripped.startswith('NIC Legend'):
            in_legend = True
            continue
        if in_legend:
            match = re.match(r'^(NIC\d+):\s*(\S+)$', stripped)
            if match:
                legend[match.group(1)] = match.group(2)
            continue
        tokens = stripped.split()
        if not tokens or tokens[0] not in known or tokens[0] in matrix:
            continue
        name = tokens[0]
        row = {}
        rest = tokens[1:]
        while rest and len(row) < len(devices) and _LINK_RE.match(rest[0]):
            row[devices[len(row)]] = rest.pop(0)
        matrix[name] = row
        if name.startswith('GPU'):
            values = dict(zip(extra, rest)) if len(row) == len(devices) else {}
            affinity[name] = {
                'cpu_affinity': _affinity_value(values.get('CPU Affinity'), False),
                'numa_affinity': _affinity_value(values.get('NUMA Affinity'), True),
                'gpu_numa_id': _affinity_value(values.get('GPU NUMA ID'), True),
            }
    if not matrix:
        raise ParseError(tool, 'header row found but no device rows', header.strip())
    return {'devices': devices, 'matrix': matrix, 'affinity': affinity, 'nic_legend': legend}


def pair_gpus_with_nics(topo):
    """For each NIC column of a parsed topology, the closest GPU (PIX < PXB < PHB < NODE < SYS, ties to the lower index).

    Returns [{nic, nic_column, gpu (index, for --use_cuda), gpu_name, link, numa_node, numa_local}];
    gpu/link are None when no GPU row gives a link to that NIC.  ``numa_local``
    is True for PIX/PXB/PHB/NODE (same NUMA node), False for SYS, None unknown.
    """
    devices = topo.get('devices') or []
    matrix = topo.get('matrix') or {}
    legend = topo.get('nic_legend') or {}
    affinity = topo.get('affinity') or {}
    gpus = [name for name in devices if re.match(r'^GPU\d+$', name)]
    pairs = []
    for column in devices:
        if column in gpus:
            continue
        best = None
        for gpu in gpus:
            link = (matrix.get(gpu) or {}).get(column) or (matrix.get(column) or {}).get(gpu)
            if link not in LINK_RANK:
                continue
            key = (LINK_RANK[link], int(gpu[3:]))
            if best is None or key < best[0]:
                best = (key, gpu, link)
        entry = {'nic': legend.get(column, column), 'nic_column': column, 'gpu': None, 'gpu_name': None,
                 'link': None, 'numa_node': None, 'numa_local': None}
        if best is not None:
            numa = (affinity.get(best[1]) or {}).get('numa_affinity')
            entry.update({'gpu': int(best[1][3:]), 'gpu_name': best[1], 'link': best[2],
                          'numa_node': numa if isinstance(numa, int) else None,
                          'numa_local': LINK_RANK[best[2]] <= LINK_RANK['NODE']})
        pairs.append(entry)
    return pairs


_DRIVER_BANNER = re.compile(r'^NVRM version:\s+NVIDIA UNIX (Open )?(?:x86_64 |aarch64 |ppc64le )?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+){1,3})\b')


@tool_parser('/proc/driver/nvidia/version')
def parse_nvidia_driver_version(text):
    """``/proc/driver/nvidia/version`` -> {version, open_kernel_module, banner}.

    ``open_kernel_module`` is True for NVIDIA's open GPU kernel modules ("NVIDIA UNIX Open Kernel Module"), which
    export GPU memory as dma-buf for GPUDirect RDMA without nvidia_peermem, False for the proprietary module.
    Raises ParseError when no NVRM banner is there.
    """
    for line in text.splitlines():
        match = _DRIVER_BANNER.match(line.strip())
        if match:
            return {'version': match.group(2), 'open_kernel_module': bool(match.group(1)), 'banner': line.strip()}
    raise ParseError('/proc/driver/nvidia/version', 'no "NVRM version: NVIDIA UNIX ... Kernel Module <version>" line',
                     text.strip().splitlines()[0] if text.strip() else None)
