#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_info
short_description: Inventory the NVIDIA GPUs of a node, their topology to the RDMA NICs and GPU errors in the kernel log
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x) and returns per-GPU bus id, name, UUID, serial, PCIe generation and width,
    ECC mode and error counters, retired pages, remapped rows, temperature, power draw and active clock throttle reasons.
  - With O(topology), runs C(nvidia-smi topo -m) and pairs every RDMA NIC with its closest GPU (PIX < PXB < PHB < NODE < SYS),
    which is what GPUDirect RDMA tests (C(--use_cuda=<gpu>)) need.
  - With O(kernel_log), reads C(journalctl -k -o short-iso --no-pager) (or C(dmesg) when journalctl is absent, fails or has no journal)
    and returns NVIDIA Xid events, GPUs fallen off the bus, thermal events, NIC link events and PCIe AER errors.
  - A node without C(nvidia-smi) is not an error unless O(required=true); it reports no GPUs and C(nvidia_smi=missing).
  - With O(gpus=false) it reads only the kernel log and never runs nvidia-smi (C(nvidia_smi=skipped)), the cheap read of what
    happened during a test window; Xid events are then returned in RV(xid_events) only, not per GPU.
  - Values nvidia-smi prints as N/A are returned as null (unknown), never as 0.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  gpus:
    description:
      - Run C(nvidia-smi -q -x) for the GPU inventory. C(false) needs O(topology=false), O(kernel_log=true) and
        O(required=false) and skips nvidia-smi altogether (on a node with eight GPUs C(-q -x) takes seconds).
    type: bool
    default: true
  topology:
    description: Also run C(nvidia-smi topo -m) and return the GPU/NIC matrix and the NIC to GPU pairs.
    type: bool
    default: true
  kernel_log:
    description: Also read the kernel log for Xid, thermal, link and AER events.
    type: bool
    default: true
  since:
    description:
      - Only kernel log entries since this time, passed to C(journalctl --since) (for example C(-1h), C(today), C(2024-05-01 10:00:00)).
      - C(dmesg) has no such filter; when it is the source, the whole ring buffer is read and C(since_applied) in RV(kernel_log) is false.
    type: str
  required:
    description: Fail when C(nvidia-smi) is not installed, instead of reporting a node without GPUs.
    type: bool
    default: false
  timeout:
    description: Seconds each command may run before it is stopped (nvidia-smi can hang on a failing GPU).
    type: int
    default: 60
notes:
  - Supports check mode; it only reads.
  - Needs root (or membership of the systemd-journal/adm groups) to read the kernel log on most distributions.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads, so it runs the same commands.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Inventory GPUs, topology and kernel-log GPU errors of the last day
  gpufleet.netval.gpu_info:
    since: -24h
  register: gpu

- name: Every GPU must be present and free of Xid 79
  ansible.builtin.assert:
    that:
      - gpu.gpu_count == 8
      - gpu.gpus | length == 8
      - gpu.xid_events | selectattr('code', 'equalto', 79) | list | length == 0

- name: Run the GPUDirect test of mlx5_0 on its closest GPU
  ansible.builtin.debug:
    msg: "--use_cuda={{ (gpu.gpu_nic_pairs | selectattr('nic', 'equalto', 'mlx5_0') | first).gpu }}"

- name: Only the kernel log since the tests began (link flaps, AER, Xid), no nvidia-smi
  gpufleet.netval.gpu_info:
    gpus: false
    topology: false
    since: "2026-12-03 10:00:00"
  register: test_window
'''

RETURN = r'''
nvidia_smi:
  description: C(present) when nvidia-smi ran, C(missing) when it is not installed, C(skipped) with O(gpus=false).
  returned: always
  type: str
  sample: present
driver_version:
  description: NVIDIA driver version, null without nvidia-smi.
  returned: always
  type: str
  sample: 535.161.08
cuda_version:
  description: CUDA version the driver supports, null without nvidia-smi.
  returned: always
  type: str
  sample: "12.2"
gpu_count:
  description: Attached GPUs as the driver reports them (0 without nvidia-smi).
  returned: always
  type: int
  sample: 8
gpu_count_mismatch:
  description: True when the number of GPU records differs from gpu_count.
  returned: always
  type: bool
gpus:
  description:
    - One record per GPU with index, bus_id (0000:1b:00.0 form), bus_id_raw, name, uuid, serial, persistence_mode,
      mig_mode_current, pcie (gen/width current and max, replays), ecc_mode_current, ecc_errors (volatile and aggregate counters),
      retired_pages, remapped_rows, temperature_c, power_draw_w, clocks_throttle_reasons (active reasons) and xid (kernel-log Xid events on it).
  returned: always
  type: list
  elements: dict
topology:
  description: The parsed C(nvidia-smi topo -m) with devices, matrix, affinity and nic_legend; null when not requested or without nvidia-smi.
  returned: always
  type: dict
  sample: {"devices": ["GPU0", "NIC0"], "matrix": {"GPU0": {"GPU0": "X", "NIC0": "PIX"}}, "affinity": {}, "nic_legend": {"NIC0": "mlx5_0"}}
gpu_nic_pairs:
  description: For every NIC of the topology its closest GPU (gpu is the index for --use_cuda), the link type and NUMA locality.
  returned: always
  type: list
  elements: dict
  sample: [{"nic": "mlx5_0", "nic_column": "NIC0", "gpu": 0, "gpu_name": "GPU0", "link": "PIX", "numa_node": 0, "numa_local": true}]
xid_events:
  description: NVIDIA Xid events from the kernel log (code, bus_id, pid, process, message, time, line); null when the log could not be read.
  returned: always
  type: list
  elements: dict
thermal_events:
  description: Thermal/throttle lines from the kernel log; null when the log could not be read.
  returned: always
  type: list
  elements: dict
kernel_log:
  description:
    - Where the kernel log came from (source journalctl or dmesg, cmd, since_applied, error when unreadable) and the other events found
      (fallen_off_bus, sxid, link_events, aer, pcie_link_changes, line_count); null when O(kernel_log=false).
  returned: always
  type: dict
'''

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import kernel_log as klog
from ansible_collections.gpufleet.netval.plugins.module_utils import nvidia
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, package_hint

# journalctl --since accepts absolute times, relative ones (-1h, +5min) and words (today, yesterday).
# It is passed as --since=VALUE, so a leading - (a relative time) cannot be read as an option.
SINCE_RE = re.compile(r'[0-9A-Za-z][0-9A-Za-z :.+_-]{0,63}|[-+][0-9][0-9A-Za-z ]{0,30}')


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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type='bool', default=True),
            topology=dict(type='bool', default=True),
            kernel_log=dict(type='bool', default=True),
            since=dict(type='str'),
            required=dict(type='bool', default=False),
            timeout=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    since = params['since']
    timeout = params['timeout']
    problems = checks.control_characters(params)
    if since is not None and not checks.fullmatch(SINCE_RE, since):
        problems.append('since=%r is not a journalctl time (use forms like -1h, today, "2024-05-01 10:00:00")' % since)
    problems.append(checks.check_timeout('timeout', timeout, maximum=3600))
    if not params['gpus'] and (params['topology'] or not params['kernel_log'] or params['required']):
        problems.append('gpus=false reads only the kernel log: it needs topology=false, kernel_log=true and required=false')
    checks.fail_if_invalid(module, 'gpu_info', checks.problems_of(problems))

    runner = ToolRunner(module)
    result = {
        'changed': False, 'nvidia_smi': 'missing', 'driver_version': None, 'cuda_version': None,
        'gpu_count': 0, 'gpu_count_mismatch': False, 'gpus': [], 'topology': None, 'gpu_nic_pairs': [],
        'xid_events': None, 'thermal_events': None, 'kernel_log': None,
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
    module.exit_json(**result)


if __name__ == '__main__':
    main()
