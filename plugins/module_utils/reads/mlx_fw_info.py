# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NICs' firmware (flint/mstflint), mlxconfig settings and mlxlink link state, read side by side.

``read(module)`` is the work of the mlx_fw_info module: ``module`` is the AnsibleModule, or one read's stand-in inside
preflight_info (reads/context.py), with ``params`` validated against ``ARGUMENT_SPEC``.  It returns the module's result
(without ``changed``) or fails through ``module.fail_json``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import concurrent.futures
import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import mlx
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, package_hint

DEVICE_RES = (
    re.compile(r'/dev/mst/[A-Za-z0-9_][A-Za-z0-9_.:-]*'),
    checks.PCI_ADDRESS_RE,
    re.compile(r'[A-Za-z][A-Za-z0-9_]{0,63}'),
)
PCI_RE = re.compile(r'[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]')

FAMILIES = {'mft': ('flint', 'mlxconfig'), 'mstflint': ('mstflint', 'mstconfig')}


def discover_devices(sysfs_root):
    """PCI addresses of /sys/class/infiniband/*/device, sorted and without duplicates."""
    base = os.path.join(sysfs_root, 'class', 'infiniband')
    found = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return found
    for name in names:
        target = os.path.basename(os.path.realpath(os.path.join(base, name, 'device')))
        if checks.fullmatch(PCI_RE, target) and target not in found:
            found.append(target)
    return found


def choose_tools(module, runner, tool, query_config):
    """(firmware tool, config tool or None) for the requested family; fails naming the packages when missing."""
    needs_config = query_config
    if tool == 'auto':
        firmware = runner.first_available(['flint', 'mstflint'])
        config = runner.first_available(['mlxconfig', 'mstconfig']) if needs_config else None
        if firmware is None:
            module.fail_json(msg='%s: neither flint nor mstflint was found on PATH; for flint %s, for mstflint %s'
                             % (hostname(), package_hint('flint'), package_hint('mstflint')), missing_tool=True)
        if needs_config and config is None:
            module.fail_json(msg='%s: neither mlxconfig nor mstconfig was found on PATH; for mlxconfig %s, for mstconfig %s'
                             % (hostname(), package_hint('mlxconfig'), package_hint('mstconfig')), missing_tool=True)
        return firmware, config
    firmware, config = FAMILIES[tool]
    runner.find(firmware)
    if needs_config:
        runner.find(config)
    return firmware, (config if needs_config else None)


def query(runner, tool, device, parser, timeout):
    """(result, parsed, parse_error) of ``tool -d device q``; never fails the module (read_device's caller judges)."""
    result = runner.run(tool, ['-d', device, 'q'], timeout=timeout, check=False)
    if result.timed_out or result.rc != 0:
        return result, None, None
    try:
        return result, parser(result.stdout), None
    except ParseError as exc:
        return result, None, exc


def adapter_of(device, sysfs_root):
    """The adapter a device belongs to: ``DDDD:BB:DD`` of its PCI address (the functions of one card, whose flash and lock
    flint, mlxconfig and mlxlink share), the RDMA device's address read from sysfs; the device itself when it has none."""
    pci = device
    if not checks.fullmatch(checks.PCI_ADDRESS_RE, device):
        target = os.path.basename(os.path.realpath(os.path.join(sysfs_root, 'class', 'infiniband', device, 'device')))
        pci = target if checks.fullmatch(PCI_RE, target) else None
    if pci is None:
        return device
    if pci.count(':') == 1:
        pci = '0000:' + pci
    return pci.lower().rsplit('.', 1)[0]


def group_by_adapter(devices, sysfs_root):
    """[(adapter, [its devices in the order given])] in the order the adapters first appear."""
    groups = []
    index = {}
    for device in devices:
        adapter = adapter_of(device, sysfs_root)
        if adapter not in index:
            index[adapter] = len(groups)
            groups.append((adapter, []))
        groups[index[adapter]][1].append(device)
    return groups


def query_failure(runner, found):
    """Why a query of read_device did not give its parsed output (host, command, rc or parse error), or None."""
    result, _parsed, parse_error = found
    if result.timed_out or result.rc != 0:
        return runner.failure(result)['msg']
    if parse_error is not None:
        return runner.failure(result, reason='gave output that could not be parsed (%s)' % parse_error, error_class='parse_error')['msg']
    return None


def read_adapter(runner, adapter, functions, tools, link_info, timeout):
    """{device: its result} for the functions of one adapter, one call at a time: flint and mlxconfig once (on its first function:
    the card has one flash and one configuration), then mlxlink per function.  A failed query is recorded on the adapter's
    functions, never raised."""
    firmware_tool, config_tool, link_tool = tools
    first = functions[0]
    shared = {'firmware': None, 'config': None, 'cqe_compression': None, 'error': None}
    for name, tool, parser in (('firmware', firmware_tool, mlx.parse_flint), ('config', config_tool, mlx.parse_mlxconfig)):
        if tool is None:
            continue
        found = query(runner, tool, first, parser, timeout)
        shared['error'] = query_failure(runner, found)
        if shared['error']:
            break
        shared[name] = found[1]
    if shared['config'] is not None:
        shared['cqe_compression'] = mlx.cqe_compression(shared['config']['parameters'])
    results = {}
    for device in functions:
        entry = dict(shared, tool='mft' if firmware_tool == 'flint' else 'mstflint',
                     tools={'firmware': firmware_tool, 'config': config_tool, 'link': link_tool},
                     adapter=adapter, firmware_from=first if device != first else None)
        if link_info:
            entry['link'] = query_link(runner, link_tool, device, timeout)
        results[device] = entry
    return results


# How many devices are queried at once (threads that each wait on their own flint, mlxconfig and mlxlink children).
MAX_PARALLEL_DEVICES = 8


LINK_TOOLS = {'auto': ['mlxlink', 'mstlink'], 'mft': ['mlxlink'], 'mstflint': ['mstlink']}


def query_link(runner, tool, device, timeout):
    """{cmd, error, operational, counters, module, troubleshooting, truncated} of one device's link; a failure is recorded."""
    empty = {'cmd': None, 'error': None, 'operational': None, 'counters': None, 'module': None, 'troubleshooting': None, 'truncated': None}
    if tool is None:
        return dict(empty, error='mlxlink (%s) or mstlink (%s) is not installed on %s: FEC and BER not read'
                    % (package_hint('mlxlink'), package_hint('mstlink'), hostname()))
    args = ['-d', device, '-m', '-c', '-e']
    result = runner.run(tool, args, timeout=timeout, check=False)
    shown = ' '.join([tool] + args)
    if result.timed_out or result.rc != 0:
        how = 'timed out' if result.timed_out else 'exited %d' % result.rc
        said = (result.stderr or result.stdout or '').strip()[-300:] or 'no message'
        return dict(empty, cmd=shown, error='%s on %s %s: %s' % (shown, hostname(), how, said))
    try:
        parsed = mlx.parse_mlxlink(result.stdout)
    except ParseError as exc:
        return dict(empty, cmd=shown, error='%s on %s: %s' % (shown, hostname(), exc))
    return dict(empty, cmd=shown, **dict((key, parsed[key]) for key in ('operational', 'counters', 'module', 'troubleshooting', 'truncated')))


ARGUMENT_SPEC = dict(
    devices=dict(type='list', elements='str'),
    tool=dict(type='str', choices=['auto', 'mft', 'mstflint'], default='auto'),
    query_config=dict(type='bool', default=True),
    link_info=dict(type='bool', default=True),
    sysfs_root=dict(type='path', default='/sys'),
    timeout=dict(type='int', default=120),
)


def option_problems(params):
    """What is wrong with the (type-checked) options, before anything is read: sentences, empty when none."""
    problems = checks.control_characters(params)
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=3600))
    bad = [device for device in params['devices'] or [] if not any(checks.fullmatch(regex, device) for regex in DEVICE_RES)]
    if bad:
        problems.append('invalid device(s) %s: expected /dev/mst/<name>, a PCI address such as 0000:af:00.0, or an RDMA device '
                        'name such as mlx5_0' % ', '.join(repr(device) for device in bad))
    return checks.problems_of(problems)


def read(module):
    """The mlx_fw_info module's result (see its RETURN), without ``changed``."""
    params = module.params
    checks.fail_if_invalid(module, 'mlx_fw_info', option_problems(params))
    devices = params['devices']
    if devices is None:
        devices = discover_devices(params['sysfs_root'])
    bad = [device for device in devices if not any(checks.fullmatch(regex, device) for regex in DEVICE_RES)]
    if bad:
        module.fail_json(msg='%s: invalid device(s) %s: expected /dev/mst/<name>, a PCI address such as 0000:af:00.0, '
                         'or an RDMA device name such as mlx5_0' % (hostname(), ', '.join(repr(device) for device in bad)))
    if not devices:
        return dict(devices={})

    runner = ToolRunner(module)
    firmware_tool, config_tool = choose_tools(module, runner, params['tool'], params['query_config'])
    link_tool = runner.first_available(LINK_TOOLS[params['tool']]) if params['link_info'] else None
    tools = (firmware_tool, config_tool, link_tool)
    if params['timeout']:
        runner.find('timeout')   # before the threads start, so they only read the runner's cache
    # Adapters are queried side by side (mlxlink alone takes about a second per port on hardware); the functions of one adapter
    # one after another, as the tools lock the card while they read it (evidence_bundle serialises them for the same reason).
    groups = group_by_adapter(devices, params['sysfs_root'])
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL_DEVICES, len(groups)))) as pool:
        found = list(pool.map(lambda group: read_adapter(runner, group[0], group[1], tools, params['link_info'], params['timeout']), groups))
    results = {}
    for adapter_results in found:
        results.update(adapter_results)
    return dict(devices=dict((device, results[device]) for device in devices))
