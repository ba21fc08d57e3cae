# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA netdevs' ethtool settings and counters, read side by side.

``read(module)`` is the work of the nic_info module: ``module`` is the AnsibleModule, or one read's stand-in inside
preflight_info (reads/context.py), with ``params`` validated against ``ARGUMENT_SPEC``.  It returns the module's result
(without ``changed``) or fails through ``module.fail_json``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import concurrent.futures
import os
import re
import time

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import ethtool
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


ARGUMENT_SPEC = dict(
    netdevs=dict(type='list', elements='str'),
    include=dict(type='list', elements='str', default=[]),
    sysfs_root=dict(type='path', default='/sys'),
    counters=dict(type='bool', default=False),
    settings=dict(type='bool', default=True),
    features=dict(type='bool', default=False),
    timeout=dict(type='int', default=15),
)


def option_problems(params):
    """What is wrong with the (type-checked) options, before anything is read: sentences, empty when none."""
    problems = checks.control_characters(params)
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=600))
    if not (params['settings'] or params['counters'] or params['features']):
        problems.append('settings, counters and features are all false: nothing to read')
    problems.extend(checks.check_netdev('netdev', name) for name in (params['netdevs'] or []) + params['include'])
    return checks.problems_of(problems)


def read(module):
    """The nic_info module's result (see its RETURN), without ``changed``."""
    params = module.params
    checks.fail_if_invalid(module, 'nic_info', option_problems(params))
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
    return dict(nics=nics, netdevs=netdevs)
