#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nic_info
short_description: Read link settings, driver, rings, channels, pause and counters of network interfaces with ethtool
version_added: 0.1.0
description:
  - Runs C(ethtool DEV), C(ethtool -i), C(ethtool -g), C(ethtool -l) and C(ethtool -a) for each network interface
    and returns them parsed, with the interface MTU read from C(<sysfs_root>/class/net/<netdev>/mtu);
    optionally C(ethtool -k) (offload features) and C(ethtool -S) (counters).
  - By default reads every netdev that sits behind an RDMA device (C(/sys/class/infiniband/*/device/net/*)).
  - A section the driver does not support (C(Operation not supported)) is returned as null with the error text
    under C(errors); it does not fail the module. Any other failure of ethtool does, naming host, command and rc.
  - Two runs with O(counters=true) give rates through the P(gpufleet.netval.counter_deltas#filter) filter.
  - The settings of the netdevs are read side by side (up to eight at once, each netdev's calls in turn), so a node with eight
    NICs takes about one NIC's time; the first failure, in the netdevs' order, is the one reported. The counters are read
    after them, one netdev after the other in the same order, so that two snapshots give true rates.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  netdevs:
    description:
      - Network interfaces to read. When omitted, every netdev behind C(/sys/class/infiniband/*/device/net/) plus O(include).
    type: list
    elements: str
  include:
    description: Extra network interfaces to read in addition to the discovered ones (for example a bond or a plain Ethernet NIC).
    type: list
    elements: str
    default: []
  sysfs_root:
    description: Root of the sysfs tree used to discover netdevs and read their MTU (tests point this at a fixture tree).
    type: path
    default: /sys
  settings:
    description:
      - Read the link settings, driver, rings, channels and pause settings (C(ethtool DEV), C(-i), C(-g), C(-l), C(-a))
        and the MTU (sysfs).
      - C(false) with O(counters=true) reads only the counters, one ethtool call per netdev (the cheap snapshot around a sustained test).
    type: bool
    default: true
  counters:
    description: Also run C(ethtool -S) and return the counters with a C(timestamp) (seconds since the epoch).
    type: bool
    default: false
  features:
    description: Also run C(ethtool -k) and return the offload features.
    type: bool
    default: false
  timeout:
    description: Seconds each ethtool command may run before it is killed.
    type: int
    default: 15
notes:
  - Supports check mode; it only reads.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads, so it runs the same ethtool queries.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Read every RDMA netdev
  gpufleet.netval.nic_info:
  register: nic

- name: Require 100G and a detected link
  ansible.builtin.assert:
    that:
      - item.value.link.speed_mbps == 100000
      - item.value.link.link_detected
  loop: "{{ nic.nics | dict2items }}"

- name: Counters before the test
  gpufleet.netval.nic_info:
    netdevs: [ens3np0]
    counters: true
  register: before

- name: Counters after the test
  gpufleet.netval.nic_info:
    netdevs: [ens3np0]
    counters: true
  register: after

- name: Pause and discard rates during the test
  ansible.builtin.debug:
    msg: "{{ before.nics.ens3np0 | gpufleet.netval.counter_deltas(after.nics.ens3np0, none, {'pause_per_s': 1000}) }}"
'''

RETURN = r'''
nics:
  description:
    - Per netdev the parsed C(link) (ethtool DEV), C(driver) (-i), C(ring) (-g), C(channels) (-l), C(pause) (-a),
      C(features) (-k, with O(features)), C(counters) and C(timestamp) (-S, with O(counters)), C(mtu) (an int from
      sysfs with O(settings); null with C(errors.mtu) when unreadable), C(rdma_device) when discovered through sysfs,
      and C(errors) (section to error text for sections the driver does not support).
  returned: always
  type: dict
  sample:
    ens3np0:
      mtu: 9000
      link: {"speed_mbps": 100000, "duplex": "Full", "link_detected": true, "port": "Direct Attach Copper"}
      driver: {"driver": "mlx5_core", "firmware_version": "28.43.1014 (MT_0000000838)", "bus_info": "0000:af:00.0"}
      ring: {"maximum": {"rx": 8192, "tx": 8192}, "current": {"rx": 1024, "tx": 1024}}
      channels: {"maximum": {"combined": 63}, "current": {"combined": 24}}
      pause: null
      errors: {"pause": "netlink error: Operation not supported"}
      rdma_device: mlx5_0
netdevs:
  description: The netdevs that were read, in order.
  returned: always
  type: list
  elements: str
  sample: ["ens3np0"]
'''

import concurrent.futures
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import ethtool
from ansible_collections.gpufleet.netval.plugins.module_utils import sysfs
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner

# How many netdevs are read at once (threads that each wait on their own ethtool child).
MAX_PARALLEL_NETDEVS = 8

UNSUPPORTED_RE = re.compile(r'Operation not supported|not supported|No data available', re.IGNORECASE)

# section -> (ethtool option or None, parser)
SECTIONS = [
    ('link', None, ethtool.parse_ethtool),
    ('driver', '-i', ethtool.parse_ethtool_driver),
    ('ring', '-g', ethtool.parse_ethtool_ring),
    ('channels', '-l', ethtool.parse_ethtool_channels),
    ('pause', '-a', ethtool.parse_ethtool_pause),
]


def discover_netdevs(sysfs_root):
    """{netdev: rdma_device} for every netdev under /sys/class/infiniband/*/device/net/."""
    base = os.path.join(sysfs_root, 'class', 'infiniband')
    found = {}
    try:
        rdma_devices = sorted(os.listdir(base))
    except OSError:
        return found
    for rdma in rdma_devices:
        try:
            netdevs = sorted(os.listdir(os.path.join(base, rdma, 'device', 'net')))
        except OSError:
            continue
        for netdev in netdevs:
            found.setdefault(netdev, rdma)
    return found


def read_mtu(sysfs_root, netdev):
    """(mtu, error): the netdev's MTU from sysfs, or None and why."""
    path = os.path.join(sysfs_root, 'class', 'net', netdev, 'mtu')
    raw = sysfs.read_value(path)
    if raw is None:
        return None, '%s is missing or unreadable' % path
    if not raw.isdigit():
        return None, '%s holds %r, not an MTU' % (path, raw[:40])
    return int(raw), None


def read_section(runner, netdev, option, parser, timeout):
    """(result, started, parsed, parse_error) of one ethtool call (started: when the call began, the counters' timestamp)."""
    started = time.time()
    result = runner.run('ethtool', ([option] if option else []) + [netdev], timeout=timeout, check=False)
    parsed, parse_error = None, None
    if not result.timed_out and result.rc == 0:
        try:
            parsed = parser(result.stdout)
        except ParseError as exc:
            parse_error = exc
    return result, started, parsed, parse_error


def stops(call):
    """Whether a read_section result fails the module (so the netdev's later calls need not run)."""
    result, _started, _parsed, parse_error = call
    return result.timed_out or parse_error is not None or (result.rc != 0 and not unsupported(result))


def read_netdev(runner, netdev, sections, timeout):
    """[read_section results] of the sections' ethtool calls for one netdev, in turn, up to the first that fails the
    module.  Never fails the module itself: the caller judges the results, in the netdevs' order."""
    results = []
    for _section, option, parser in sections:
        results.append(read_section(runner, netdev, option, parser, timeout))
        if stops(results[-1]):
            break   # this fails the module (main): the netdev's other calls would only add their time
    return results


def unsupported(result):
    """Whether a failed ethtool call only says the driver lacks the section (null, not a failure)."""
    return bool(UNSUPPORTED_RE.search(((result.stderr or '') + '\n' + (result.stdout or '')).strip()))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdevs=dict(type='list', elements='str'),
            include=dict(type='list', elements='str', default=[]),
            sysfs_root=dict(type='path', default='/sys'),
            counters=dict(type='bool', default=False),
            settings=dict(type='bool', default=True),
            features=dict(type='bool', default=False),
            timeout=dict(type='int', default=15),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = checks.control_characters(params)
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=600))
    if not (params['settings'] or params['counters'] or params['features']):
        problems.append('settings, counters and features are all false: nothing to read')
    checks.fail_if_invalid(module, 'nic_info', checks.problems_of(problems))
    rdma_of = {}
    if params['netdevs'] is None:
        rdma_of = discover_netdevs(params['sysfs_root'])
        netdevs = list(rdma_of)
    else:
        netdevs = list(params['netdevs'])
    for name in params['include']:
        if name not in netdevs:
            netdevs.append(name)
    checks.fail_if_invalid(module, 'nic_info', checks.problems_of(checks.check_netdev('netdev', name) for name in netdevs))

    sections = list(SECTIONS) if params['settings'] else []
    if params['features']:
        sections.append(('features', '-k', ethtool.parse_ethtool_features))
    if params['counters']:
        sections.append(('counters', '-S', ethtool.parse_ethtool_stats))

    runner = ToolRunner(module)
    # Found before the threads start, so they only read the runner's cache.
    runner.find('ethtool')
    if params['timeout']:
        runner.find('timeout')
    # The settings are read side by side (each netdev's calls in turn): on a node with eight NICs that is one NIC's
    # time instead of eight; the results are then judged in the netdevs' order, so the first failure is the same one.
    settings = [entry for entry in sections if entry[0] != 'counters']
    counters = [entry for entry in sections if entry[0] == 'counters']
    workers = max(1, min(MAX_PARALLEL_NETDEVS, len(netdevs)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        calls = list(pool.map(lambda netdev: read_netdev(runner, netdev, settings, params['timeout']), netdevs))
    # The counters one netdev after the other, always in the same order: a rate is a delta over two snapshots' timestamps,
    # and a call that waits its turn among eight at once reads its counters an unknown while after its timestamp.
    for _section, option, parser in counters:
        for results, netdev in zip(calls, netdevs):
            if not (results and stops(results[-1])):
                results.append(read_section(runner, netdev, option, parser, params['timeout']))
    nics = {}
    for netdev, results in zip(netdevs, calls):
        entry = {'errors': {}}
        if netdev in rdma_of:
            entry['rdma_device'] = rdma_of[netdev]
        if params['settings']:
            entry['mtu'], mtu_error = read_mtu(params['sysfs_root'], netdev)
            if mtu_error:
                entry['errors']['mtu'] = mtu_error
        for (section, _option, _parser), (result, started, parsed, parse_error) in zip(sections, results):
            if section == 'counters':
                entry['timestamp'] = started
            if result.timed_out:
                runner.fail(result)
            if result.rc != 0:
                detail = ((result.stderr or '') + '\n' + (result.stdout or '')).strip()
                if unsupported(result):
                    entry[section] = None
                    entry['errors'][section] = detail.splitlines()[-1] if detail else 'rc=%s' % result.rc
                    continue
                runner.fail(result, reason='exited with rc=%s reading %s of %s' % (result.rc, section, netdev))
            if parse_error is not None:
                runner.fail_parse(result, parse_error)
            entry[section] = parsed
        nics[netdev] = entry
    module.exit_json(changed=False, nics=nics, netdevs=netdevs)


if __name__ == '__main__':
    main()
