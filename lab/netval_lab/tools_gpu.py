"""GPU tools: nvidia-smi (table, -q, -q -x, topo -m, --query-gpu) and dcgmi diag.

Part of the netval lab's emulated tools (see tools.py); standard library only.
"""

import json
import os
import re
import sys
import time

from netval_lab.tool_common import node_dir, out


# ============================================================================ nvidia-smi

def _gpu_arch(model):
    for key, arch in (('H100', 'Hopper'), ('B200', 'Blackwell'), ('GB10', 'Blackwell'), ('A100', 'Ampere')):
        if key in model:
            return arch
    return 'Hopper'


def _gpu_mem(model):
    return 81559 if '80GB' in model else (183359 if 'B200' in model else 122502)


def _bus_long(bdf):
    return ('0000' + bdf).upper() if len(bdf) == 12 else bdf.upper()


def tool_nvidia_smi(state, args):
    gpus = state['gpus']
    devices = gpus['devices']
    if not devices:
        out('No devices were found')
        return 6
    index_filter = None
    rest = []
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ('-i', '--id') and position + 1 < len(args):
            index_filter = args[position + 1]
            position += 2
            continue
        if arg.startswith('--id='):
            index_filter = arg.split('=', 1)[1]
        else:
            rest.append(arg)
        position += 1
    if index_filter is not None:
        devices = [gpu for gpu in devices if str(gpu['index']) == index_filter or gpu['uuid'] == index_filter]
        if not devices:
            out('No devices were found')
            return 6
    if rest[:1] == ['topo']:
        if '-m' in rest or '--matrix' in rest:
            return _nvsmi_topo(state)
        sys.stderr.write('ERROR: Option -m (matrix) is the only topo mode the lab emulates\n')
        return 2
    query = '-q' in rest or '--query' in rest or any(re.match(r'^-q?x+q?$', arg) for arg in rest if arg.startswith('-') and 'x' in arg)
    xml = '-x' in rest or '--xml-format' in rest or any(arg in ('-qx', '-xq') for arg in rest)
    for arg in rest:
        if arg in ('-q', '--query', '-x', '--xml-format', '-qx', '-xq', '-L', '--list-gpus', '-d', 'ECC', 'PCIE'):
            continue
        if arg.startswith('--query-gpu=') or arg.startswith('--format='):
            continue
        out('Invalid combination of input arguments. Please run \'nvidia-smi -h\' for help.')
        return 2
    fields = [arg.split('=', 1)[1] for arg in rest if arg.startswith('--query-gpu=')]
    if fields:
        fmt = [arg.split('=', 1)[1] for arg in rest if arg.startswith('--format=')]
        return _nvsmi_csv(state, devices, fields[0].split(','), fmt[0] if fmt else 'csv')
    if '-L' in rest or '--list-gpus' in rest:
        for gpu in devices:
            out('GPU %d: %s (UUID: %s)' % (gpu['index'], gpus['model'], gpu['uuid']))
        return 0
    if query and xml:
        return _nvsmi_xml(state, devices)
    if query:
        return _nvsmi_query(state, devices)
    return _nvsmi_table(state, devices)


def _persistence(state):
    return 'Enabled' if state['gpus'].get('persistence_mode', True) else 'Disabled'


# nvidia-smi's Fabric state of a GPU on an NVSwitch board: Completed once nvidia-fabricmanager has configured it; a GPU waiting
# for a fabric manager that is not running stays In Progress; a board without NVSwitch reports N/A.
FABRIC = {'running': ('Completed', 'Success'), 'stopped': ('In Progress', 'N/A'), 'absent': ('N/A', 'N/A')}


def _fabric(state):
    return FABRIC[state['gpus'].get('fabric_manager') or 'absent']


def _nvsmi_csv(state, devices, fields, fmt):
    gpus = state['gpus']
    noheader = 'noheader' in fmt
    nounits = 'nounits' in fmt
    mem = _gpu_mem(gpus['model'])
    values = {
        'index': lambda g: str(g['index']), 'name': lambda g: gpus['model'], 'uuid': lambda g: g['uuid'],
        'serial': lambda g: g['serial'], 'pci.bus_id': lambda g: '0000' + _bus_long(g['bus_id']) if len(g['bus_id']) == 12 else '',
        'driver_version': lambda g: gpus['driver_version'], 'count': lambda g: str(len(devices)),
        'memory.total': lambda g: '%d%s' % (mem, '' if nounits else ' MiB'),
        'pcie.link.gen.current': lambda g: str(gpus['pcie_gen']), 'pcie.link.gen.max': lambda g: str(gpus['pcie_gen']),
        'pcie.link.width.current': lambda g: str(gpus['pcie_width']), 'pcie.link.width.max': lambda g: str(gpus['pcie_width']),
        'ecc.errors.uncorrected.volatile.total': lambda g: str(gpus['ecc']['volatile_dram_uncorrectable']),
        'ecc.errors.corrected.volatile.total': lambda g: str(gpus['ecc']['volatile_dram_correctable']),
        'persistence_mode': lambda g: _persistence(state), 'temperature.gpu': lambda g: '31',
    }
    values['pci.bus_id'] = lambda g: '0000' + g['bus_id'].upper()
    for field in fields:
        if field.strip() not in values:
            out('Field "%s" is not a valid field to query.' % field.strip())
            out('')
            return 2
    if not noheader:
        out(', '.join(field.strip() + ('' if nounits or field.strip() != 'memory.total' else ' [MiB]') for field in fields))
    for gpu in devices:
        out(', '.join(values[field.strip()](gpu) for field in fields))
    return 0


def _nvsmi_table(state, devices):
    gpus = state['gpus']
    mem = _gpu_mem(gpus['model'])
    out(time.strftime('%a %b %d %H:%M:%S %Y'))
    rule = '+-----------------------------------------+------------------------+----------------------+'
    out('+' + '-' * 89 + '+')
    title = ' NVIDIA-SMI %-21s Driver Version: %-14s CUDA Version: %s' % (
        gpus['driver_version'], gpus['driver_version'], gpus['cuda_version'])
    out('|' + title.ljust(89) + '|')
    out('|-----------------------------------------+------------------------+----------------------+')
    out('| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |')
    out('| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |')
    out('|                                         |                        |               MIG M. |')
    out('|=========================================+========================+======================|')
    for gpu in devices:
        first = ' %3d  %-31s%-3s ' % (gpu['index'], gpus['model'][:31], 'On' if gpus.get('persistence_mode', True) else 'Off')
        out('|%s|%s|%s|' % (first, ('%s Off ' % ('0000' + gpu['bus_id'].upper())).rjust(24),
                            ('%d ' % gpus['ecc']['volatile_dram_uncorrectable']).rjust(22)))
        left = ' N/A   %2dC    P0' % (30 + gpu['index'] % 5)
        left += ('%dW / %dW' % (70 + gpu['index'], 700)).rjust(40 - len(left)) + ' '
        out('|%s|%s|%s|' % (left, ('%s / %s ' % ('1MiB', '%dMiB' % mem)).rjust(24), '      0%      Default '))
        out('|                                         |                        |             Disabled |')
        out(rule)
    out('')
    out('+-----------------------------------------------------------------------------------------+')
    out('| Processes:                                                                              |')
    out('|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |')
    out('|        ID   ID                                                               Usage      |')
    out('|=========================================================================================|')
    out('|  No running processes found                                                             |')
    out('+-----------------------------------------------------------------------------------------+')
    return 0


def _kv(indent, key, value, width=42):
    return '%s%s: %s' % (' ' * indent, key.ljust(width - indent), value)


def _nvsmi_query(state, devices):
    gpus = state['gpus']
    ecc = gpus['ecc']
    lines = ['', '==============NVSMI LOG==============', '',
             'Timestamp                                 : %s' % time.strftime('%a %b %d %H:%M:%S %Y'),
             'Driver Version                            : %s' % gpus['driver_version'],
             'CUDA Version                              : %s' % gpus['cuda_version'], '',
             'Attached GPUs                             : %d' % len(gpus['devices'])]
    for gpu in devices:
        bus = '0000' + gpu['bus_id'].upper()
        lines.append('GPU %s' % bus)
        lines.append(_kv(4, 'Product Name', gpus['model']))
        lines.append(_kv(4, 'Product Brand', 'NVIDIA'))
        lines.append(_kv(4, 'Product Architecture', _gpu_arch(gpus['model'])))
        lines.append(_kv(4, 'Persistence Mode', _persistence(state)))
        lines.append(_kv(4, 'MIG Mode', '').rstrip(': ').rstrip())
        lines.append(_kv(8, 'Current', 'Disabled'))
        lines.append(_kv(8, 'Pending', 'Disabled'))
        lines.append(_kv(4, 'Serial Number', gpu['serial']))
        lines.append(_kv(4, 'GPU UUID', gpu['uuid']))
        lines.append(_kv(4, 'Minor Number', gpu['index']))
        lines.append(_kv(4, 'VBIOS Version', '96.00.74.00.0D'))
        lines.append(_kv(4, 'Module ID', gpu['slot'] + 1))
        lines.append('    PCI')
        lines.append(_kv(8, 'Bus', '0x%s' % gpu['bus_id'][5:7].upper()))
        lines.append(_kv(8, 'Device', '0x00'))
        lines.append(_kv(8, 'Domain', '0x%s' % gpu['bus_id'][:4]))
        lines.append(_kv(8, 'Device Id', '0x%s10DE' % gpus['pci_device_id'][2:].upper()))
        lines.append(_kv(8, 'Bus Id', bus))
        lines.append('        GPU Link Info')
        lines.append('            PCIe Generation')
        for key in ('Max', 'Current', 'Device Current', 'Device Max', 'Host Max'):
            lines.append(_kv(16, key, gpus['pcie_gen']))
        lines.append('            Link Width')
        lines.append(_kv(16, 'Max', '%dx' % gpus['pcie_width']))
        lines.append(_kv(16, 'Current', '%dx' % gpus['pcie_width']))
        lines.append(_kv(8, 'Replays Since Reset', 0))
        lines.append(_kv(8, 'Replay Number Rollovers', 0))
        lines.append(_kv(4, 'Performance State', 'P0'))
        lines.append('    FB Memory Usage')
        lines.append(_kv(8, 'Total', '%d MiB' % _gpu_mem(gpus['model'])))
        lines.append(_kv(8, 'Used', '1 MiB'))
        lines.append('    ECC Mode')
        lines.append(_kv(8, 'Current', 'Enabled'))
        lines.append(_kv(8, 'Pending', 'Enabled'))
        lines.append('    ECC Errors')
        for scope in ('Volatile', 'Aggregate'):
            low = scope.lower()
            lines.append('        %s' % scope)
            lines.append(_kv(12, 'SRAM Correctable', 0))
            lines.append(_kv(12, 'SRAM Uncorrectable Parity', 0))
            lines.append(_kv(12, 'SRAM Uncorrectable SEC-DED', 0))
            lines.append(_kv(12, 'DRAM Correctable', ecc['%s_dram_correctable' % low]))
            lines.append(_kv(12, 'DRAM Uncorrectable', ecc['%s_dram_uncorrectable' % low]))
        lines.append(_kv(12, 'SRAM Threshold Exceeded', 'No'))
        lines.append('    Retired Pages')
        lines.append(_kv(8, 'Single Bit ECC', 'N/A'))
        lines.append(_kv(8, 'Double Bit ECC', 'N/A'))
        lines.append(_kv(8, 'Pending Page Blacklist', 'N/A'))
        lines.append('    Remapped Rows')
        lines.append(_kv(8, 'Correctable Error', 0))
        lines.append(_kv(8, 'Uncorrectable Error', 0))
        lines.append(_kv(8, 'Pending', 'No'))
        lines.append(_kv(8, 'Remapping Failure Occurred', 'No'))
        lines.append('    Fabric')
        lines.append(_kv(8, 'State', _fabric(state)[0]))
        lines.append(_kv(8, 'Status', _fabric(state)[1]))
        lines.append('')
    out('\n'.join(lines))
    return 0


def _xml_escape(text):
    return str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _nvsmi_xml(state, devices):
    gpus = state['gpus']
    ecc = gpus['ecc']
    lines = ['<?xml version="1.0" ?>', '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">', '<nvidia_smi_log>',
             '\t<timestamp>%s</timestamp>' % time.strftime('%a %b %d %H:%M:%S %Y'),
             '\t<driver_version>%s</driver_version>' % gpus['driver_version'],
             '\t<cuda_version>%s</cuda_version>' % gpus['cuda_version'],
             '\t<attached_gpus>%d</attached_gpus>' % len(gpus['devices'])]

    def el(depth, tag, value):
        lines.append('%s<%s>%s</%s>' % ('\t' * depth, tag, _xml_escape(value), tag))

    def open_(depth, tag):
        lines.append('%s<%s>' % ('\t' * depth, tag))

    def close(depth, tag):
        lines.append('%s</%s>' % ('\t' * depth, tag))

    for gpu in devices:
        bus = '0000' + gpu['bus_id'].upper()
        lines.append('\t<gpu id="%s">' % bus)
        el(2, 'product_name', gpus['model'])
        el(2, 'product_brand', 'NVIDIA')
        el(2, 'product_architecture', _gpu_arch(gpus['model']))
        el(2, 'persistence_mode', _persistence(state))
        open_(2, 'mig_mode')
        el(3, 'current_mig', 'Disabled')
        el(3, 'pending_mig', 'Disabled')
        close(2, 'mig_mode')
        el(2, 'serial', gpu['serial'])
        el(2, 'uuid', gpu['uuid'])
        el(2, 'minor_number', gpu['index'])
        el(2, 'vbios_version', '96.00.74.00.0D')
        el(2, 'gpu_module_id', gpu['slot'] + 1)
        open_(2, 'pci')
        el(3, 'pci_bus', gpu['bus_id'][5:7].upper())
        el(3, 'pci_device', '00')
        el(3, 'pci_domain', gpu['bus_id'][:4])
        el(3, 'pci_device_id', '%s10DE' % gpus['pci_device_id'][2:].upper())
        el(3, 'pci_bus_id', bus)
        open_(3, 'pci_gpu_link_info')
        open_(4, 'pcie_gen')
        for tag in ('max_link_gen', 'current_link_gen', 'device_current_link_gen', 'max_device_link_gen', 'max_host_link_gen'):
            el(5, tag, gpus['pcie_gen'])
        close(4, 'pcie_gen')
        open_(4, 'link_widths')
        el(5, 'max_link_width', '%dx' % gpus['pcie_width'])
        el(5, 'current_link_width', '%dx' % gpus['pcie_width'])
        close(4, 'link_widths')
        close(3, 'pci_gpu_link_info')
        el(3, 'replay_counter', 0)
        el(3, 'replay_rollover_counter', 0)
        close(2, 'pci')
        el(2, 'performance_state', 'P0')
        open_(2, 'fb_memory_usage')
        el(3, 'total', '%d MiB' % _gpu_mem(gpus['model']))
        el(3, 'used', '1 MiB')
        close(2, 'fb_memory_usage')
        open_(2, 'ecc_mode')
        el(3, 'current_ecc', 'Enabled')
        el(3, 'pending_ecc', 'Enabled')
        close(2, 'ecc_mode')
        open_(2, 'ecc_errors')
        for scope in ('volatile', 'aggregate'):
            open_(3, scope)
            el(4, 'sram_correctable', 0)
            el(4, 'sram_uncorrectable_parity', 0)
            el(4, 'sram_uncorrectable_secded', 0)
            el(4, 'dram_correctable', ecc['%s_dram_correctable' % scope])
            el(4, 'dram_uncorrectable', ecc['%s_dram_uncorrectable' % scope])
            if scope == 'aggregate':
                el(4, 'sram_threshold_exceeded', 'No')
            close(3, scope)
        close(2, 'ecc_errors')
        open_(2, 'retired_pages')
        open_(3, 'multiple_single_bit_retirement')
        el(4, 'retired_count', 'N/A')
        el(4, 'retired_pagelist', 'N/A')
        close(3, 'multiple_single_bit_retirement')
        open_(3, 'double_bit_retirement')
        el(4, 'retired_count', 'N/A')
        el(4, 'retired_pagelist', 'N/A')
        close(3, 'double_bit_retirement')
        el(3, 'pending_blacklist', 'N/A')
        el(3, 'pending_retirement', 'N/A')
        close(2, 'retired_pages')
        open_(2, 'remapped_rows')
        el(3, 'remapped_row_corr', 0)
        el(3, 'remapped_row_unc', 0)
        el(3, 'remapped_row_pending', 'No')
        el(3, 'remapped_row_failure', 'No')
        close(2, 'remapped_rows')
        open_(2, 'fabric')
        el(3, 'state', _fabric(state)[0])
        el(3, 'status', _fabric(state)[1])
        close(2, 'fabric')
        lines.append('\t</gpu>')
        lines.append('')
    lines.append('</nvidia_smi_log>')
    out('\n'.join(lines))
    return 0


def _nvsmi_topo(state):
    gpus = state['gpus']['devices']
    nics = state['nics']
    hw = state['host_hw']
    names = ['GPU%d' % gpu['index'] for gpu in gpus] + ['NIC%d' % index for index in range(len(nics))]
    nvlink = state['gpus'].get('nvlink') or 'NV18'

    def cpus(numa):
        per = max(1, hw['cpus'] // max(1, hw['numa_nodes']))
        return '%d-%d' % (numa * per, numa * per + per - 1)

    def relation(a, b):
        if a is b:
            return 'X'
        if a['kind'] == 'gpu' and b['kind'] == 'gpu':
            return nvlink if len(gpus) > 1 else 'X'
        pair = {a['kind']: a, b['kind']: b}
        if 'gpu' in pair and 'nic' in pair:
            if pair['gpu']['obj'].get('nic') == pair['nic']['obj']['name']:
                return 'PXB'
        numa_a, numa_b = a['numa'], b['numa']
        if a['kind'] == 'nic' and b['kind'] == 'nic' and a['obj']['pci_address'][:10] == b['obj']['pci_address'][:10]:
            return 'PIX'
        return 'NODE' if numa_a == numa_b else 'SYS'

    items = [{'kind': 'gpu', 'obj': gpu, 'numa': gpu['numa_node']} for gpu in gpus]
    items += [{'kind': 'nic', 'obj': nic, 'numa': nic['numa_node']} for nic in nics]
    header = '\t' + '\t'.join(names) + '\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID'
    out(header)
    for name, item in zip(names, items):
        row = [name] + [relation(item, other) if relation(item, other) != 'X' else ' X ' for other in items]
        if item['kind'] == 'gpu':
            row += [cpus(item['numa']), str(item['numa']), 'N/A']
        else:
            row += ['', '', '']
        out(('\t'.join(row)).rstrip('\t') if item['kind'] == 'nic' else '\t'.join(row))
    out('')
    out('Legend:')
    out('')
    out('  X    = Self')
    out('  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)')
    out('  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node')
    out('  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)')
    out('  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)')
    out('  PIX  = Connection traversing at most a single PCIe bridge')
    out('  NV#  = Connection traversing a bonded set of # NVLinks')
    out('')
    out('NIC Legend:')
    out('')
    for index, nic in enumerate(nics):
        out('  NIC%d: %s' % (index, nic['name']))
    out('')
    return 0


# ============================================================================ dcgmi

DCGMI_CATEGORIES = (
    ('Deployment', 1, ['Denylist', 'NVML Library', 'CUDA Main Library', 'Permissions and OS Blocks', 'Persistence Mode',
                       'Environment Variables', 'Page Retirement/Row Remap', 'Graphics Processes', 'Inforom']),
    ('Integration', 2, ['PCIe']),
    ('Hardware', 2, ['GPU Memory']),
    ('Stress', 3, ['Targeted Stress', 'Targeted Power', 'Memory Bandwidth']),
)


def _diagnose(state, level):
    """The diagnostic's run time (the profile's seconds_by_level), logged as '<start> <end> level <N>' in the host's
    log/dcgmi.log so a lab test can tell when it loaded the GPUs and the PCIe complexes."""
    seconds = float((state['dcgmi'].get('seconds_by_level') or {}).get(str(level)) or 0)
    start = time.time()
    if seconds > 0:
        time.sleep(seconds)
    folder = os.path.join(node_dir(), 'log')
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'dcgmi.log'), 'a', encoding='utf-8') as handle:
        handle.write('%.3f %.3f level %d\n' % (start, time.time(), level))


# What dcgmi prints when no host engine answers (nv-hostengine / nvidia-dcgm.service stopped), as a real one does.
HOSTENGINE_DOWN = ('Error: unable to establish a connection to the specified host: localhost\n'
                   'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')


def tool_dcgmi(state, args):
    if state['dcgmi'].get('hostengine') == 'stopped' and args and args[0] in ('discovery', 'diag'):
        sys.stdout.write(HOSTENGINE_DOWN)
        return 255
    if not args or args[0] != 'diag':
        if args and args[0] == 'discovery' and '-l' in args:
            devices = state['gpus']['devices']
            out('%d GPU%s found.' % (len(devices), '' if len(devices) == 1 else 's'))
            out('+--------+----------------------------------------------------------------------+')
            out('| GPU ID | Device Information                                                   |')
            out('+--------+----------------------------------------------------------------------+')
            for gpu in devices:
                out('| %-6d | Name: %-63s|' % (gpu['index'], state['gpus']['model']))
                out('|        | PCI Bus ID: %-57s|' % ('0000' + gpu['bus_id'].upper()))
                out('|        | Device UUID: %-56s|' % gpu['uuid'])
                out('+--------+----------------------------------------------------------------------+')
            return 0
        sys.stderr.write('ERROR: netval lab emulates only "dcgmi diag" and "dcgmi discovery -l"\n')
        return 255
    level = None
    as_json = False
    index = 1
    while index < len(args):
        arg = args[index]
        if arg in ('-r', '--run') and index + 1 < len(args):
            level = args[index + 1]
            index += 2
            continue
        if arg in ('-j', '--json'):
            as_json = True
        elif arg in ('-g', '--group', '-i', '--gpuList', '-p', '--parameters') and index + 1 < len(args):
            index += 2
            continue
        elif arg in ('-v', '--verbose'):
            pass
        else:
            sys.stderr.write('PARSE ERROR:  \n             Argument: %s\n             Couldn\'t find match for argument\n\n' % arg)
            sys.stderr.write('Brief USAGE: \n   dcgmi diag  [--host <IP/FQDN>] [-g <groupId>] [-r <diag>] [-j] [-v]\n')
            return 255
        index += 1
    names = {'short': 1, 'medium': 2, 'long': 3, 'xlong': 4}
    if level is None:
        sys.stderr.write('Error: one of -r/--run or -c/--configfile must be specified\n')
        return 255
    level_num = names.get(level) or (int(level) if level.isdigit() else None)
    if level_num not in (1, 2, 3, 4):
        sys.stderr.write('Error: Invalid value "%s" for diag run. Valid values are 1, 2, 3, 4 or short, medium, long, xlong\n' % level)
        return 255
    _diagnose(state, level_num)
    gpus = state['gpus']
    results = state['dcgmi']['results']
    devices = gpus['devices']
    categories = []
    for category, minimum, tests in DCGMI_CATEGORIES:
        if level_num >= minimum:
            categories.append((category, [(test, results.get(test, 'Pass')) for test in tests]))
    failed_gpu = devices[-1]['index'] if devices else 0
    if as_json:
        doc = {'DCGM GPU Diagnostic': {'test_categories': [], 'version': state['dcgmi']['version']},
               'Driver Version Detected': gpus['driver_version'],
               'GPU Device IDs': [gpus['pci_device_id'][2:]] * len(devices)}
        for category, tests in categories:
            entry = {'category': category, 'tests': []}
            for test, result in tests:
                if category == 'Deployment':
                    rows = [{'status': result}]
                else:
                    rows = []
                    for gpu in devices:
                        status = result if (result == 'Pass' or gpu['index'] == failed_gpu) else 'Pass'
                        row = {'gpu_ids': str(gpu['index']), 'status': status}
                        if status == 'Fail':
                            row['warnings'] = [{'warning': _dcgm_warning(test, gpu['index']), 'error_id': 28}]
                        rows.append(row)
                entry['tests'].append({'name': test, 'results': rows})
            doc['DCGM GPU Diagnostic']['test_categories'].append(entry)
        out(json.dumps(doc, indent=4))
        return 0 if all(result != 'Fail' for _c, tests in categories for _t, result in tests) else 226
    border = '+---------------------------+------------------------------------------------+'
    out('Successfully ran diagnostic for group.')
    out(border)
    out('| %-25s | %-46s |' % ('Diagnostic', 'Result'))
    out('+===========================+================================================+')
    out('|%s+------------------------------------------------|' % ('-----  Metadata  ').ljust(27, '-'))
    out('| %-25s | %-46s |' % ('DCGM Version', state['dcgmi']['version']))
    out('| %-25s | %-46s |' % ('Driver Version Detected', gpus['driver_version']))
    ids = ', '.join([gpus['pci_device_id'][2:]] * len(devices))
    if len(ids) > 46:
        ids = ','.join([gpus['pci_device_id'][2:]] * len(devices))
    out('| %-25s | %-46s |' % ('GPU Device IDs Detected', ids))
    for position, (category, tests) in enumerate(categories):
        edge = '|' if position == 0 else '+'
        out('%s%s+------------------------------------------------%s' % (edge, ('-----  %s  ' % category).ljust(27, '-'), edge))
        for test, result in tests:
            if category == 'Deployment':
                out('| %-25s | %-46s |' % (test, result))
            elif result == 'Pass':
                out('| %-25s | %-46s |' % (test, 'Pass - All'))
            else:
                out('| %-25s | %-46s |' % (test, '%s - GPU: %d' % (result, failed_gpu)))
                if result == 'Fail':
                    out('| %-25s | %-46s |' % ('Warning', _dcgm_warning(test, failed_gpu)[:46]))
    out(border)
    return 0 if all(result != 'Fail' for _c, tests in categories for _t, result in tests) else 226


def _dcgm_warning(test, gpu):
    if test == 'PCIe':
        return 'GPU %d PCIe link is degraded or GPU unreachable' % gpu
    return 'GPU %d %s check failed' % (gpu, test)
