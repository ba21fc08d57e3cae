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


def read_device(runner, device, tools, link_info, timeout):
    """{firmware, config: (result, parsed, parse_error), link} of one device, its calls in turn, up to the first that fails
    the module; never fails it itself."""
    firmware_tool, config_tool, link_tool = tools
    found = {}
    for name, tool, parser in (('firmware', firmware_tool, mlx.parse_flint), ('config', config_tool, mlx.parse_mlxconfig)):
        if tool is None:
            continue
        found[name] = query(runner, tool, device, parser, timeout)
        result, _parsed, parse_error = found[name]
        if result.timed_out or result.rc != 0 or parse_error is not None:
            return found
    if link_info:
        found['link'] = query_link(runner, link_tool, device, timeout)
    return found


def judged(runner, found, name):
    """The parsed output of a query of read_device, or the module fails as a checked run would (host, command, rc)."""
    result, parsed, parse_error = found[name]
    if result.timed_out or result.rc != 0:
        runner.fail(result)
    if parse_error is not None:
        runner.fail_parse(result, parse_error)
    return parsed


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
    # The devices are queried side by side (each device's tools in turn: mlxlink alone takes about a second per port on
    # hardware); the results are judged in the devices' order, so the first failure is the same one as one by one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL_DEVICES, len(devices)))) as pool:
        found = list(pool.map(lambda device: read_device(runner, device, tools, params['link_info'], params['timeout']), devices))
    results = {}
    for device, queried in zip(devices, found):
        firmware = judged(runner, queried, 'firmware')
        config = None
        cqe = None
        if config_tool:
            config = judged(runner, queried, 'config')
            cqe = mlx.cqe_compression(config['parameters'])
        results[device] = {
            'firmware': firmware,
            'config': config,
            'cqe_compression': cqe,
            'tool': 'mft' if firmware_tool == 'flint' else 'mstflint',
            'tools': {'firmware': firmware_tool, 'config': config_tool, 'link': link_tool},
        }
        if params['link_info']:
            results[device]['link'] = queried['link']
    return dict(devices=results)
