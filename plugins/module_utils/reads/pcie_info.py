# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCIe links of a node's NICs and GPUs from sysfs (and lspci -vvv), with the bridges above them.

``read(module)`` is the work of the pcie_info module: ``module`` is the AnsibleModule, or one read's stand-in inside
preflight_info (reads/context.py), with ``params`` validated against ``ARGUMENT_SPEC``.  It returns the module's result
(without ``changed``) or fails through ``module.fail_json``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import concurrent.futures

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import pcie
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname

LSPCI_TIMEOUT = 60


def _discover(sysfs_root, all_network_devices):
    """(the devices to inspect, the SR-IOV virtual functions found): a VF has no link of its own, so it is not inspected."""
    vendors = {pcie.CLASS_VGA: [pcie.VENDOR_NVIDIA], pcie.CLASS_3D: [pcie.VENDOR_NVIDIA]}
    if all_network_devices:
        classes = [pcie.CLASS_NETWORK] + list(pcie.GPU_CLASSES)
    else:
        classes = list(pcie.NIC_CLASSES) + list(pcie.GPU_CLASSES)
        vendors[pcie.CLASS_ETHERNET] = [pcie.VENDOR_MELLANOX, pcie.VENDOR_NVIDIA]
        vendors[pcie.CLASS_INFINIBAND] = [pcie.VENDOR_MELLANOX, pcie.VENDOR_NVIDIA]
    found = pcie.read_pci_devices(sysfs_root, classes, vendors)
    return ([entry['bdf'] for entry in found if not entry['virtual_function']],
            [entry['bdf'] for entry in found if entry['virtual_function']])


def _lspci_all(runner, bdfs):
    """{bdf: result} of ``lspci -vvv -s <bdf>`` for every device, run side by side (one lspci each, up to eight at once);
    never fails the module: _lspci judges each result in the devices' order."""
    runner.find('lspci')
    runner.find('timeout')   # before the threads start, so they only read the runner's cache
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL_LSPCI, len(bdfs)))) as pool:
        results = list(pool.map(lambda bdf: runner.run('lspci', ['-vvv', '-s', bdf], timeout=LSPCI_TIMEOUT, check=False), bdfs))
    return dict(zip(bdfs, results))


# How many lspci run at once.
MAX_PARALLEL_LSPCI = 8


def _lspci(module, runner, result):
    """The device's parsed lspci output, or the module fails as a checked run would (host, command, rc)."""
    if result.timed_out or result.rc != 0:
        runner.fail(result)
    bdf = result.argv[-1]
    try:
        parsed = pcie.parse_lspci(result.stdout)
    except ParseError as exc:
        runner.fail_parse(result, exc)
    if not parsed['devices']:
        module.warn('%s: `%s` printed nothing for a device that sysfs lists' % (hostname(), result.cmd))
        return None
    wanted = pcie.normalize_bdf(bdf)
    found = parsed['devices'][0]
    for device in parsed['devices']:
        if pcie.normalize_bdf(device['bdf'] or '') == wanted:
            found = device
            break
    # The link lines exactly as lspci printed them, for evidence and letters.
    found['link_lines'] = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith(('LnkCap:', 'LnkSta:'))]
    found['cmd'] = result.cmd
    return found


def _acs_of(result):
    """{ctl, redirects, line, cmd, error} of one bridge's ``lspci -vvv -s <bdf>``: its Access Control Services controls."""
    found = {'ctl': None, 'redirects': None, 'line': None, 'cmd': result.cmd, 'error': None}
    if result.timed_out or result.rc != 0:
        found['error'] = '%s: `%s` %s' % (hostname(), result.cmd, 'timed out' if result.timed_out else 'exited rc=%s' % result.rc)
        return found
    try:
        parsed = pcie.parse_lspci(result.stdout)
    except ParseError as exc:
        found['error'] = '%s: `%s`: %s' % (hostname(), result.cmd, exc)
        return found
    bridge = parsed['devices'][0] if parsed['devices'] else {}
    if bridge.get('acs_ctl') is None:
        # No ACS capability (a bridge without one cannot redirect), or lspci could not read it (not root).
        found['error'] = None if bridge.get('capabilities_readable', True) and bridge else (
            '%s: `%s` could not read the capabilities (run as root)' % (hostname(), result.cmd))
        return found
    found.update(ctl=bridge['acs_ctl'], redirects=pcie.acs_redirects(bridge['acs_ctl']), line=bridge['acs_line'])
    return found


ARGUMENT_SPEC = dict(
    sysfs_root=dict(type='path', default='/sys'),
    devices=dict(type='list', elements='str'),
    all_network_devices=dict(type='bool', default=False),
    lspci=dict(type='bool', default=False),
    acs=dict(type='bool', default=False),
)


def option_problems(params):
    """What is wrong with the (type-checked) options, before anything is read: sentences, empty when none."""
    problems = checks.control_characters(params)
    problems.extend('devices: %r is not a PCI address; expected DDDD:BB:DD.F or BB:DD.F such as 0000:1b:00.0' % (raw,)
                    for raw in params['devices'] or [] if pcie.normalize_bdf(raw) is None)
    return checks.problems_of(problems)


def read(module):
    """The pcie_info module's result (see its RETURN), without ``changed``."""
    checks.fail_if_invalid(module, 'pcie_info', option_problems(module.params))
    sysfs_root = module.params['sysfs_root']
    requested = module.params['devices']

    skipped_vfs = []
    if requested is not None:
        bdfs = []
        for bdf in (pcie.normalize_bdf(raw) for raw in requested):
            if bdf not in bdfs:
                bdfs.append(bdf)
    else:
        bdfs, skipped_vfs = _discover(sysfs_root, module.params['all_network_devices'])

    runner = ToolRunner(module) if module.params['lspci'] or module.params['acs'] else None
    lspci = _lspci_all(runner, sorted(bdfs)) if module.params['lspci'] else {}
    devices = []
    for bdf in sorted(bdfs):
        link = pcie.read_pci_link(sysfs_root, bdf)
        if link is None:
            module.fail_json(msg='%s: PCI device %s not found under %s (looked in bus/pci/devices and devices/pci*)'
                             % (hostname(), bdf, sysfs_root), bdf=bdf)
        kind = pcie.classify_kind(link['class'])
        upstream = pcie.walk_upstream(sysfs_root, bdf)
        entry = {
            'bdf': bdf,
            'kind': kind,
            'link': link,
            'upstream': upstream,
            'assessment': pcie.assess_link(link, upstream, is_gpu=(kind == 'gpu')),
        }
        if bdf in lspci:
            entry['lspci'] = _lspci(module, runner, lspci[bdf])
            if (entry['lspci'] or {}).get('virtual_function') and not link.get('virtual_function'):
                # lspci names it a VF where sysfs did not say (no physfn link): it has no link of its own either way.
                link['virtual_function'] = True
                entry['assessment'] = pcie.assess_link(link, upstream, is_gpu=(kind == 'gpu'))
        devices.append(entry)

    if module.params['acs']:
        # Each bridge above a NIC or a GPU once (a switch serves several), its ACS controls on every hop that crosses it.
        bridges = sorted(set(hop['bdf'] for entry in devices for hop in entry['upstream']))
        found = dict((bdf, _acs_of(result)) for bdf, result in _lspci_all(runner, bridges).items()) if bridges else {}
        for entry in devices:
            for hop in entry['upstream']:
                hop['acs'] = found.get(hop['bdf'])

    def having(status):
        return [entry['bdf'] for entry in devices if entry['assessment']['status'] == status]

    return dict(
        devices=devices,
        degraded=having('degraded'),
        slot_limited=having('slot_limited'),
        unknown=having('unknown'),
        virtual_functions=sorted(set(skipped_vfs + having('virtual_function'))),
    )
