# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's GPUs (nvidia-smi -q -x), their topology to the NICs, the kernel log's Xid, link and AER events, what
GPUDirect RDMA can run on (the driver's kernel modules, perftest's CUDA options) and whether the DCGM host engine answers.

``read(module)`` is the work of the gpu_info module: ``module`` is the AnsibleModule, or one read's stand-in inside
preflight_info (reads/context.py), with ``params`` validated against ``ARGUMENT_SPEC``.  It returns the module's result
(without ``changed``) or fails through ``module.fail_json``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import kernel_log as klog
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import perftest
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import nvidia
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, package_hint

# journalctl --since accepts absolute times, relative ones (-1h, +5min) and words (today, yesterday).
# It is passed as --since=VALUE, so a leading - (a relative time) cannot be read as an option.
SINCE_RE = re.compile(r'[0-9A-Za-z][0-9A-Za-z :.+_-]{0,63}|[-+][0-9][0-9A-Za-z ]{0,30}|@[0-9]{1,12}')
# The perftest tools whose usage can say whether this perftest was built with CUDA.
PERFTEST_TOOLS = ('ib_send_bw', 'ib_write_bw', 'ib_read_bw')


def _read_kernel_log(runner, since, timeout):
    """Run journalctl -k (falling back to dmesg); returns the kernel_log dict (events or an error)."""
    info = {'source': None, 'cmd': None, 'since_applied': False, 'error': None}
    errors = []
    if runner.find('journalctl', required=False):
        args = ['-k', '-o', 'short-iso', '--no-pager']
        if since:
            args.append('--since=%s' % since)
        result = runner.run('journalctl', args, timeout=timeout, check=False)
        no_journal = 'No journal files were found' in (result.stderr or '')
        if result.rc == 0 and not result.timed_out and not no_journal:
            info.update({'source': 'journalctl', 'cmd': result.cmd, 'since_applied': bool(since)})
            return info, result.stdout
        reason = 'no journal files' if no_journal else ('timed out' if result.timed_out else 'rc=%s' % result.rc)
        detail = (result.stderr or '').strip().splitlines()
        errors.append('`%s` %s%s' % (result.cmd, reason, (': ' + detail[-1][:200]) if detail and not no_journal else ''))
    else:
        errors.append('journalctl not found')
    if runner.find('dmesg', required=False):
        result = runner.run('dmesg', [], timeout=timeout, check=False)
        if result.rc == 0 and not result.timed_out:
            info.update({'source': 'dmesg', 'cmd': result.cmd})
            return info, result.stdout
        detail = (result.stderr or '').strip().splitlines()
        errors.append('`%s` %s%s' % (result.cmd, 'timed out' if result.timed_out else 'rc=%s' % result.rc,
                                     (': ' + detail[-1][:200]) if detail else ''))
    else:
        errors.append('dmesg not found (%s)' % package_hint('dmesg'))
    info['error'] = '%s: kernel log unreadable: %s' % (hostname(), '; '.join(errors))
    return info, None


def _driver(procfs_root):
    """{version, open_kernel_module, banner, error} of the loaded NVIDIA kernel module (/proc/driver/nvidia/version)."""
    path = os.path.join(procfs_root, 'driver', 'nvidia', 'version')
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            text = handle.read(65536)
    except (IOError, OSError) as exc:
        return {'version': None, 'open_kernel_module': None, 'banner': None,
                'error': '%s: %s unreadable (%s): the NVIDIA kernel module is not loaded' % (hostname(), path, exc.strerror or exc)}
    try:
        return dict(nvidia.parse_nvidia_driver_version(text), error=None)
    except ParseError as exc:
        return {'version': None, 'open_kernel_module': None, 'banner': None, 'error': '%s: %s: %s' % (hostname(), path, exc)}


def _perftest_cuda(runner, tool, timeout):
    """{tool, cmd, cuda, cuda_bus_id, cuda_dmabuf, error} from ``tool --help``: which GPU options this perftest has."""
    found = {'tool': tool, 'cmd': None, 'cuda': None, 'cuda_bus_id': None, 'cuda_dmabuf': None, 'error': None}
    if not runner.find(tool, required=False):
        found['error'] = '%s: %s is not installed (%s)' % (hostname(), tool, package_hint(tool))
        return found
    # perftest prints its usage and exits 1 (Debian's 6.06 does): the text, not the status, says what it supports.
    result = runner.run(tool, ['--help'], timeout=timeout, check=False)
    found['cmd'] = result.cmd
    try:
        parsed = perftest.parse_perftest_help((result.stdout or '') + '\n' + (result.stderr or ''))
    except ParseError as exc:
        found['error'] = '%s: `%s` printed no perftest usage (rc=%s): %s' % (hostname(), result.cmd, result.rc, exc)
        return found
    found.update((key, parsed[key]) for key in ('cuda', 'cuda_bus_id', 'cuda_dmabuf'))
    return found


def _dcgm(runner, timeout):
    """{hostengine, gpu_count, cmd, error} of ``dcgmi discovery -l``: does the DCGM host engine answer."""
    found = {'hostengine': None, 'gpu_count': None, 'cmd': None, 'error': None}
    if not runner.find('dcgmi', required=False):
        found['error'] = '%s: dcgmi is not installed (%s)' % (hostname(), package_hint('dcgmi'))
        return found
    result = runner.run('dcgmi', ['discovery', '-l'], timeout=timeout, check=False)
    found['cmd'] = result.cmd
    if result.timed_out:
        found['error'] = '%s: `%s` timed out after %s s' % (hostname(), result.cmd, timeout)
        return found
    try:
        parsed = dcgmi.parse_dcgmi_discovery((result.stdout or '') + '\n' + (result.stderr or ''))
    except ParseError as exc:
        found['error'] = '%s: `%s` (rc=%s): %s' % (hostname(), result.cmd, result.rc, exc)
        return found
    found.update(hostengine=parsed['hostengine'], gpu_count=parsed['gpu_count'], error=parsed['error'])
    return found


ARGUMENT_SPEC = dict(
    gpus=dict(type='bool', default=True),
    topology=dict(type='bool', default=True),
    kernel_log=dict(type='bool', default=True),
    since=dict(type='str'),
    required=dict(type='bool', default=False),
    timeout=dict(type='int', default=60),
    gdr=dict(type='bool', default=False),
    perftest_tool=dict(type='str', default='ib_send_bw', choices=list(PERFTEST_TOOLS)),
    procfs_root=dict(type='path', default='/proc'),
    dcgm=dict(type='bool', default=False),
)


def option_problems(params):
    """What is wrong with the (type-checked) options, before anything is read: sentences, empty when none."""
    since = params['since']
    problems = checks.control_characters(params)
    if since is not None and not checks.fullmatch(SINCE_RE, since):
        problems.append('since=%r is not a journalctl time (use forms like -1h, today, @1764582300, "2024-05-01 10:00:00 UTC")' % since)
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=3600))
    if not params['gpus'] and (params['topology'] or not params['kernel_log'] or params['required'] or params['gdr'] or params['dcgm']):
        problems.append('gpus=false reads only the kernel log: it needs topology=false, kernel_log=true, required=false, gdr=false '
                        'and dcgm=false')
    return checks.problems_of(problems)


def read(module):
    """The gpu_info module's result (see its RETURN), without ``changed``."""
    params = module.params
    since = params['since']
    timeout = params['timeout']
    checks.fail_if_invalid(module, 'gpu_info', option_problems(params))

    runner = ToolRunner(module)
    result = {
        'nvidia_smi': 'missing', 'driver_version': None, 'cuda_version': None,
        'gpu_count': 0, 'gpu_count_mismatch': False, 'gpus': [], 'topology': None, 'gpu_nic_pairs': [],
        'xid_events': None, 'thermal_events': None, 'kernel_log': None, 'gdr_support': None, 'dcgm': None,
    }

    if not params['gpus']:
        result['nvidia_smi'] = 'skipped'
    elif runner.find('nvidia-smi', required=params['required']):
        query = runner.run('nvidia-smi', ['-q', '-x'], timeout=timeout)
        try:
            inventory = nvidia.parse_nvidia_smi_xml(query.stdout)
        except ParseError as exc:
            runner.fail_parse(query, exc)
        result.update({
            'nvidia_smi': 'present',
            'driver_version': inventory['driver_version'],
            'cuda_version': inventory['cuda_version'],
            'gpu_count': inventory['gpu_count'] if inventory['gpu_count'] is not None else len(inventory['gpus']),
            'gpu_count_mismatch': inventory['gpu_count_mismatch'],
            'gpus': inventory['gpus'],
        })
        if params['topology']:
            topo = runner.run('nvidia-smi', ['topo', '-m'], timeout=timeout)
            try:
                result['topology'] = nvidia.parse_nvidia_smi_topo(topo.stdout)
            except ParseError as exc:
                runner.fail_parse(topo, exc)
            result['gpu_nic_pairs'] = nvidia.pair_gpus_with_nics(result['topology'])

    if params['gdr']:
        result['gdr_support'] = {'driver': _driver(params['procfs_root']),
                                 'perftest': _perftest_cuda(runner, params['perftest_tool'], timeout)}
    if params['dcgm']:
        result['dcgm'] = _dcgm(runner, timeout)

    if params['kernel_log']:
        info, text = _read_kernel_log(runner, since, timeout)
        if text is not None:
            events = klog.parse_kernel_log(text)
            result['xid_events'] = events['xid']
            result['thermal_events'] = events['thermal']
            for name in ('fallen_off_bus', 'sxid', 'link_events', 'aer', 'pcie_link_changes', 'line_count'):
                info[name] = events[name]
            by_bus = {}
            for event in events['xid']:
                by_bus.setdefault(event['bus_id'], []).append(event)
            for gpu in result['gpus']:
                gpu['xid'] = by_bus.get(gpu['bus_id'], [])
        result['kernel_log'] = info
    return result
