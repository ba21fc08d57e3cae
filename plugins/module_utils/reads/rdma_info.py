# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA devices of a node: ports from sysfs, their netdevs' IPv4 addresses, the RoCE v2 GID per port.

``read(module)`` is the work of the rdma_info module: ``module`` is the AnsibleModule, or one read's stand-in inside
preflight_info (reads/context.py), with ``params`` validated against ``ARGUMENT_SPEC``.  It returns the module's result
(without ``changed``) or fails through ``module.fail_json``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import time

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname


def _run_parsed(runner, tool, args, parser, timeout=None):
    result = runner.run(tool, args, timeout=timeout)
    try:
        return parser(result.stdout)
    except ParseError as exc:
        runner.fail_parse(result, exc)


def _device_view(device, ipv4_by_netdev):
    view = dict(device)
    view['gids'] = [dict(gid, port=number) for number, port in sorted(device['ports'].items()) for gid in port['gids']]
    if ipv4_by_netdev is None:
        view['ipv4'] = None
    else:
        addresses = []
        for netdev in rdma.device_netdevs(device):
            for address in ipv4_by_netdev.get(netdev, []):
                if address not in addresses:
                    addresses.append(address)
        view['ipv4'] = addresses
    return view


def _json_keys(value):
    """Port numbers are int keys in module_utils; say them as the strings JSON will make of them anyway."""
    if isinstance(value, dict):
        return dict((str(key) if isinstance(key, int) else key, _json_keys(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_json_keys(item) for item in value]
    return value


ARGUMENT_SPEC = dict(
    sysfs_root=dict(type='path', default='/sys'),
    ipv4=dict(type='bool', default=True),
    tool_outputs=dict(type='bool', default=False),
    devices=dict(type='list', elements='str', default=[]),
    counters=dict(type='bool', default=False),
    timeout=dict(type='int', default=30),
)


def option_problems(params):
    """What is wrong with the (type-checked) options, before anything is read: sentences, empty when none."""
    problems = checks.control_characters(params)
    problems.extend(checks.check_device('devices[%d]' % index, name) for index, name in enumerate(params['devices']))
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=3600))
    return checks.problems_of(problems)


def read(module):
    """The rdma_info module's result (see its RETURN), without ``changed``."""
    params = module.params
    checks.fail_if_invalid(module, 'rdma_info', option_problems(params))
    sysfs = params['sysfs_root']
    if not os.path.isdir(sysfs):
        module.fail_json(msg='%s: sysfs_root %s does not exist or is not a directory' % (hostname(), sysfs))

    read_at = time.time()
    inventory = rdma.read_infiniband_sysfs(sysfs, counters=params['counters'])['devices']
    missing = []
    if params['devices']:
        missing = [name for name in params['devices'] if name not in inventory]
        inventory = dict((name, inventory[name]) for name in params['devices'] if name in inventory)

    runner = ToolRunner(module)
    ipv4_by_netdev = None
    prefixlens = None
    if params['ipv4'] and inventory:
        addresses = _run_parsed(runner, 'ip', ['-4', '-o', 'addr', 'show'], rdma.parse_ip_addr, timeout=params['timeout'])
        ipv4_by_netdev = addresses['ipv4_by_netdev']
        prefixlens = addresses['ipv4_prefixlen_by_netdev']

    gid_choice = rdma.roce_v2_gid_indexes(inventory)
    devices = {}
    for name, device in inventory.items():
        devices[name] = _device_view(device, ipv4_by_netdev)
        devices[name]['roce_v2_gid'] = gid_choice[name]

    result = dict(
        devices=devices,
        live_ports=rdma.select_live_ports(inventory, ipv4_by_netdev, prefixlen_by_netdev=prefixlens),
        roce_v2_gid_index=dict((name, choice['index'] if choice else None) for name, choice in gid_choice.items()),
        missing_devices=missing,
    )
    if params['counters']:
        # When the port counters were read: a rate is a delta over two reads' times.
        result['counters_at'] = read_at
    if params['tool_outputs']:
        result['ibstat'] = _run_parsed(runner, 'ibstat', [], rdma.parse_ibstat, timeout=params['timeout'])
    return _json_keys(result)
