#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: mlx_fw_info
short_description: Read firmware version, PSID and firmware configuration of NVIDIA (Mellanox) adapters
version_added: 0.1.0
description:
  - Runs C(flint -d DEV q) and C(mlxconfig -d DEV q) from the NVIDIA Firmware Tools (MFT), or C(mstflint -d DEV q) and
    C(mstconfig -d DEV q) from the open-source mstflint package, for each device and returns them parsed.
  - Reports the CQE compression setting of the firmware (C(CQE_COMPRESSION)) separately.
  - With O(link_info), also runs C(mlxlink -d DEV -m -c -e) (MFT) or C(mstlink) (mstflint) per device for the link's FEC mode,
    BER counters, cable module and eye; this module already speaks the MFT/mstflint tools per PCI device, nic_info only ethtool.
    A missing link tool or a failed query is recorded in the device's C(link.error) (our gap, not the node's), never fatal.
  - Only queries; nothing is burnt or set.
  - The devices are queried side by side (up to eight at once, each device's tools in turn); the first failure, in the
    devices' order, is the one reported.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  devices:
    description:
      - Devices to query, each an MST device (C(/dev/mst/mt4129_pciconf0)), a PCI address (C(0000:af:00.0) or C(af:00.0))
        or an RDMA device name (C(mlx5_0)).
      - When omitted, the PCI addresses of the devices under C(/sys/class/infiniband/) of O(sysfs_root).
    type: list
    elements: str
  tool:
    description:
      - Which tool family to use. C(auto) uses C(flint)/C(mlxconfig) where installed and falls back to
        C(mstflint)/C(mstconfig) otherwise; C(mft) and C(mstflint) insist on one family.
    type: str
    choices: [auto, mft, mstflint]
    default: auto
  query_config:
    description: Also run C(mlxconfig q) / C(mstconfig q) and return the firmware configuration.
    type: bool
    default: true
  link_info:
    description: Also query each device's physical link with C(mlxlink -m -c -e) (or C(mstlink)) and return it as C(link).
    type: bool
    default: true
  sysfs_root:
    description: Root of the sysfs tree used to find the devices when O(devices) is omitted.
    type: path
    default: /sys
  timeout:
    description: Seconds each command may run before it is killed (a firmware query can take tens of seconds).
    type: int
    default: 120
notes:
  - Supports check mode; it only queries.
  - Needs root (the tools open the PCI configuration space).
attributes:
  check_mode:
    description: Can run in check mode; the module only queries, so it runs the same commands.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Firmware of every RDMA adapter
  gpufleet.netval.mlx_fw_info:
  register: fw
  become: true

- name: Require the fleet firmware and CQE compression
  ansible.builtin.assert:
    that:
      - item.value.firmware.fw_version == '28.43.1014'
      - item.value.cqe_compression.enabled
  loop: "{{ fw.devices | dict2items }}"

- name: Query one adapter with mstflint only, without its configuration
  gpufleet.netval.mlx_fw_info:
    devices: ['0000:af:00.0']
    tool: mstflint
    query_config: false
'''

RETURN = r'''
devices:
  description:
    - Per device the parsed C(firmware) (flint/mstflint q), C(config) (mlxconfig/mstconfig q, null without O(query_config)),
      C(cqe_compression) (mode and whether it is enabled), C(tool) (C(mft) or C(mstflint)) and C(tools) (the commands used).
  returned: always
  type: dict
  sample:
    "0000:af:00.0":
      firmware: {"fw_version": "28.43.1014", "psid": "MT_0000000838", "reset_pending": false, "secure_fw": true}
      config: {"device_type": "ConnectX7", "parameters": {"SRIOV_EN": "True(1)", "CQE_COMPRESSION": "BALANCED(0)"}}
      cqe_compression: {"present": true, "value": "BALANCED(0)", "mode": "BALANCED", "code": 0, "enabled": true}
      tool: mft
      tools: {"firmware": "flint", "config": "mlxconfig", "link": "mlxlink"}
      link:
        cmd: mlxlink -d 0000:af:00.0 -m -c -e
        error: null
        operational: {"state": "Active", "physical_state": "LinkUp", "speed": "400G", "width": "4x", "fec": "Standard_RS-FEC - (544,514)"}
        counters: {"effective_physical_ber": 1.5e-254, "raw_physical_ber": 2e-09, "effective_physical_errors": 0, "link_down_counter": 0}
        module: {"identifier": "OSFP", "vendor_name": "NVIDIA", "vendor_part_number": "MMA4Z00-NS", "temperature_c": 47.0}
        troubleshooting: {"status_opcode": 0, "group_opcode": null, "recommendation": "No issue was observed"}
        truncated: false
'''

import concurrent.futures
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import mlx
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type='list', elements='str'),
            tool=dict(type='str', choices=['auto', 'mft', 'mstflint'], default='auto'),
            query_config=dict(type='bool', default=True),
            link_info=dict(type='bool', default=True),
            sysfs_root=dict(type='path', default='/sys'),
            timeout=dict(type='int', default=120),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = checks.control_characters(params)
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=3600))
    checks.fail_if_invalid(module, 'mlx_fw_info', checks.problems_of(problems))
    devices = params['devices']
    if devices is None:
        devices = discover_devices(params['sysfs_root'])
    bad = [device for device in devices if not any(checks.fullmatch(regex, device) for regex in DEVICE_RES)]
    if bad:
        module.fail_json(msg='%s: invalid device(s) %s: expected /dev/mst/<name>, a PCI address such as 0000:af:00.0, '
                         'or an RDMA device name such as mlx5_0' % (hostname(), ', '.join(repr(device) for device in bad)))
    if not devices:
        module.exit_json(changed=False, devices={})

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
    module.exit_json(changed=False, devices=results)


if __name__ == '__main__':
    main()
