# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare a node's inventory facts with its tier profile: the preflight findings.

Input is what the info modules returned (rdma_info, pcie_info, nic_info,
mlx_fw_info, gpu_info, host_tuning_info); expectations come from the
profile.  Each finding is {check, subject, status, expected, actual, detail,
blocking, verbatim}, its status in the verdict's vocabulary (healthy, marginal,
reject, unknown).  A blocking finding means throughput
numbers from this node would be meaningless (GPUs gone, ports down, RDMA
modules missing): the tier tests are skipped and the node still gets a
verdict and evidence.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.kernel_log import APPLICATION_XIDS, FATAL_XIDS, ROW_REMAP_XIDS
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.pcie import normalize_bdf
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.rdma import STATE_ACTIVE
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import gpudirect
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import rails
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.verdict import HEALTHY, INFO, MARGINAL, REJECT, UNKNOWN, line_may_reject

# What validate.yml's tests play reads of a node's preflight facts once its preflight is done: the pass's plan (the
# GPU-NIC pairs; GPUDirect's mode from gdr_support and the kernel modules; the GPUs' bus ids), the NCCL launcher's rails
# (live_ports) and the verdict's SKU and NIC addresses (gpus, devices).  The whole reads wait for the evidence, packed.
KEPT_FOR_TESTS = (('rdma', ('devices', 'live_ports')), ('gpu', ('gpus', 'gpu_nic_pairs', 'gdr_support')), ('host', ('modules',)))


def facts_for_tests(facts):
    """The part of a node's preflight facts the tests play reads (KEPT_FOR_TESTS): those keys of those sections, as they
    were; a section that is not a dict (a read that gave nothing) stays as it was, one that is absent stays absent."""
    if not isinstance(facts, dict):
        return {}
    kept = {}
    for section, keys in KEPT_FOR_TESTS:
        if section in facts:
            read = facts[section]
            kept[section] = dict((key, read[key]) for key in keys if key in read) if isinstance(read, dict) else read
    return kept


# A provider's burn-in leaves application Xids behind (information); row-remapping events are graded by the remapping state.
# Modules without which RDMA tests cannot run at all.
RDMA_CORE_MODULES = ('mlx5_core', 'mlx5_ib', 'ib_uverbs', 'ib_core')


def finding(check, subject, status, expected, actual, detail, blocking=False, verbatim=None):
    # Blocking stops the tier tests: for a hardware fact (reject) or a setup that makes every figure meaningless (marginal).
    return {'check': check, 'subject': subject, 'status': status, 'expected': expected, 'actual': actual,
            'detail': detail, 'blocking': bool(blocking and status in (REJECT, MARGINAL)), 'verbatim': verbatim or []}


def _ports(rdma):
    for device, info in sorted(((rdma or {}).get('devices') or {}).items()):
        for port, pinfo in sorted((info.get('ports') or {}).items(), key=lambda kv: str(kv[0])):
            yield device, port, info, pinfo


def _state_active(pinfo):
    state = str(pinfo.get('state') or '')
    return pinfo.get('state_code') == STATE_ACTIVE or state.upper().endswith('ACTIVE')


def check_gpus(gpu, profile):
    findings = []
    expected = (profile.get('gpus') or {}).get('count')
    if gpu is None:
        return findings
    count = gpu.get('gpu_count')
    if expected:
        if count is None or count < expected:
            findings.append(finding('gpu_count', 'gpus', REJECT, expected, count,
                                    '%s of %s GPUs visible to nvidia-smi' % (count or 0, expected), blocking=True))
        else:
            findings.append(finding('gpu_count', 'gpus', HEALTHY, expected, count, '%s GPUs visible' % count))
    by_bus = dict((entry.get('bus_id'), entry) for entry in gpu.get('gpus') or [] if entry.get('bus_id'))
    for event in gpu.get('xid_events') or []:
        findings.append(xid_finding(event, by_bus, gpu.get('nvidia_smi') == 'present'))
    for entry in gpu.get('gpus') or []:
        subject = entry.get('bus_id') or str(entry.get('index'))
        uncorrectable = _ecc_total(entry, 'uncorrectable_total')
        remap = entry.get('remapped_rows') or {}
        if uncorrectable or remap.get('failure'):
            findings.append(finding('gpu_ecc', subject, REJECT, 'no uncorrectable ECC errors', '%s uncorrectable' % uncorrectable,
                                    'GPU %s: %s uncorrectable ECC errors, row remapping failure=%s'
                                    % (subject, uncorrectable, remap.get('failure'))))
    return findings


def _gpu_state(entry):
    """(status, words) of what a GPU shows now: uncorrectable ECC or a remapping failure (reject), pages or rows waiting
    for a reset (marginal), else healthy."""
    remap = entry.get('remapped_rows') or {}
    uncorrectable = _ecc_total(entry, 'uncorrectable_total')
    if uncorrectable or remap.get('failure'):
        return REJECT, '%s uncorrectable ECC errors, row remapping failure %s' % (uncorrectable, bool(remap.get('failure')))
    pending = [name for name, value in (('retired pages', (entry.get('retired_pages') or {}).get('pending')),
                                        ('remapped rows', remap.get('pending'))) if value]
    if pending:
        return MARGINAL, '%s pending a GPU reset' % ' and '.join(pending)
    return HEALTHY, 'no uncorrectable ECC error and nothing pending'


def xid_finding(event, gpus_by_bus, inventory_read):
    """One Xid of the kernel log before the tests, graded by what it left: an application's Xid is information; a row-remapping
    event by the remapping state; any other fatal Xid by the GPU's state now (gone from nvidia-smi: reject, blocking; uncorrectable
    ECC or a remapping failure: reject; something pending a reset: marginal; clean: information).  Another Xid is marginal."""
    code = event.get('code')
    bus = event.get('bus_id')
    line = (event.get('line') or event.get('message') or 'Xid %s' % code).strip()
    subject = bus or 'gpu'
    verbatim = [event.get('line')] if event.get('line') else None
    if code in APPLICATION_XIDS:
        return finding('gpu_xid', subject, INFO, 'no GPU-fault Xid', 'Xid %s' % code,
                       'kernel log: %s (Xid %s is raised by a program, not a GPU fault: recorded)' % (line, code), verbatim=verbatim)
    if code not in FATAL_XIDS:
        return finding('gpu_xid', subject, MARGINAL, 'no Xid errors', 'Xid %s' % code, 'kernel log: %s' % line, verbatim=verbatim)
    entry = gpus_by_bus.get(bus)
    if entry is None:
        if not inventory_read or bus is None:
            return finding('gpu_xid', subject, UNKNOWN, 'the GPU state after Xid %s' % code, 'Xid %s' % code,
                           'kernel log: %s; the GPU state it left could not be read (no nvidia-smi inventory)' % line, verbatim=verbatim)
        return finding('gpu_xid', subject, REJECT, 'GPU %s present after Xid %s' % (bus, code), 'Xid %s' % code,
                       'kernel log: %s; GPU %s is gone from nvidia-smi' % (line, bus), blocking=True, verbatim=verbatim)
    status, words = _gpu_state(entry)
    if code in ROW_REMAP_XIDS:
        remap = entry.get('remapped_rows') or {}
        status = REJECT if remap.get('failure') else MARGINAL if remap.get('pending') else INFO
        words = 'row remapping failure %s, remapping pending %s' % (bool(remap.get('failure')), bool(remap.get('pending')))
    elif status == HEALTHY:
        status = INFO
    return finding('gpu_xid', subject, status, 'the GPU left without damage', 'Xid %s' % code,
                   'kernel log: %s; GPU %s now: %s' % (line, bus, words), verbatim=verbatim)


def _ecc_total(gpu, key):
    """The larger of the volatile and aggregate ECC count ``key`` (0 when nvidia-smi reports neither)."""
    ecc = gpu.get('ecc_errors') or {}
    return max([(ecc.get(scope) or {}).get(key) or 0 for scope in ('volatile', 'aggregate')])


# The checks a tier's ``preflight:`` mapping configures, with what each entry needs besides its severity.
CONFIGURED_CHECKS = {
    'hugepages_cmdline': {'default_size': 'a page size such as 1G or 2M, or null for any'},
    'firmware_min_version': {'versions': 'a mapping of NIC model (PSID, part number or model name such as ConnectX-7) to its minimum '
                                         'firmware version'},
    'firmware_uniform': {},
    'gpu_ecc_correctable': {'max': 'the most correctable ECC errors a GPU may have at delivery'},
    'gpu_pages_pending': {},
    'memlock': {'min_kib': "the least locked-memory limit (KiB, or 'unlimited') a login session of the test user may have"},
    'roce_v2_gid': {},
    'irq_locality': {'min_fraction_local': "the least fraction of a NIC's IRQs whose affinity lies on the NIC's own NUMA node"},
    'link_fec': {'allowed': 'the FEC modes mlxlink may report on a live link (matched ignoring case, spaces and punctuation)'},
    'rail_mtu': {'ethernet_min': 'the least MTU an Ethernet (RoCE) rail netdev may have (IPoIB rails keep their own)'},
    'link_ber': {'effective_max': "the highest effective (post-FEC) physical BER mlxlink may report on a live link",
                 'raw_max': 'the highest raw (pre-FEC) physical BER, or null not to grade it'},
    'dcgm_hostengine': {},
    'fabric_manager': {},
    'persistence_mode': {},
    'pcie_acs': {},
    'thermal_throttle': {'clock_reasons': 'the nvidia-smi clock event reasons that count as throttling (hw_slowdown, ...)'},
}


def preflight_errors(profile):
    """What makes a tier's ``preflight:`` mapping unusable: plain sentences, empty when fine."""
    checks = (profile or {}).get('preflight') or {}
    if not isinstance(checks, dict):
        return ['preflight must be a mapping of check name to its settings, got %r' % (checks,)]
    errors = rails.selector_errors(((profile or {}).get('nics') or {}).get('select'))
    for check in sorted(checks):
        spec = checks[check]
        if check not in CONFIGURED_CHECKS:
            errors.append('preflight.%s is not a configurable check (known: %s)' % (check, ', '.join(sorted(CONFIGURED_CHECKS))))
            continue
        if spec is None:
            continue
        if not isinstance(spec, dict) or spec.get('severity') not in (MARGINAL, REJECT):
            errors.append('preflight.%s.severity must be marginal or reject' % check)
            continue
        for key, meaning in sorted(CONFIGURED_CHECKS[check].items()):
            if key not in spec:
                errors.append('preflight.%s.%s is missing: %s' % (check, key, meaning))
    return errors


def _spec(profile, check):
    """A preflight check's profile entry ({..., severity}), or None when the tier does not run it."""
    return (profile.get('preflight') or {}).get(check)


def check_gpu_memory(gpu, profile):
    """Correctable ECC errors above the profile's limit, and retired pages or remapped rows waiting for a GPU reset."""
    findings = []
    correctable = _spec(profile, 'gpu_ecc_correctable')
    pending = _spec(profile, 'gpu_pages_pending')
    for entry in (gpu or {}).get('gpus') or []:
        subject = entry.get('bus_id') or str(entry.get('index'))
        if correctable:
            count = _ecc_total(entry, 'correctable_total')
            status = HEALTHY if count <= correctable['max'] else correctable['severity']
            findings.append(finding('gpu_ecc_correctable', subject, status, '<= %s correctable ECC errors' % correctable['max'], count,
                                    'GPU %s: %s correctable ECC errors (limit %s)' % (subject, count, correctable['max'])))
        if pending:
            waiting = [name for name, value in (('retired pages', (entry.get('retired_pages') or {}).get('pending')),
                                                ('remapped rows', (entry.get('remapped_rows') or {}).get('pending'))) if value]
            findings.append(finding('gpu_pages_pending', subject, pending['severity'] if waiting else HEALTHY, 'nothing pending',
                                    ', '.join(waiting) or 'nothing pending',
                                    'GPU %s: %s pending (a GPU reset applies them)' % (subject, ' and '.join(waiting))
                                    if waiting else 'GPU %s: no retirement or remapping pending' % subject))
    return findings


def rail_selection(rdma, profile, devices=None):
    """Which RDMA ports of the box are its compute rails (policy/rails.py), None when rdma_info gave nothing."""
    if rdma is None:
        return None
    return rails.select_rails(rdma, rails.rail_selector(profile, devices))


def _rail_pcis(selection):
    """PCI addresses (lower case) of the devices with a rail port; None grades every device (no selection made)."""
    if selection is None:
        return None
    return set(str(p.get('pci_address')).lower() for p in selection['ports'] if p['selected'] and p.get('pci_address'))


def _rail_devices(selection):
    return None if selection is None else set(selection['devices'])


def _not_a_rail(port):
    subject = '%s/%s' % (port['device'], port['port'])
    return finding('rail_selection', subject, INFO, 'a compute rail', port.get('why'),
                   '%s is not a compute rail (%s): recorded in the evidence, not graded' % (subject, port.get('why')))


def check_ports(rdma, profile, live_only=False, selection=None):
    """The compute rails' ports: Active at the tier's rate, and at least the tier's count of them.

    Only the rails (``selection``, policy/rails.py) are graded; every other port is an ``info`` finding.  A rail that
    is not Active blocks only when the box has fewer Active rails than the tier's count: a second port of a storage
    card that is not cabled, which a selector by rate cannot tell from a rail, changes nothing.  ``live_only`` (the
    two-box pair) never rejects a port that is not Active.
    """
    if rdma is None:
        # rdma_info gave nothing: its 'tool' finding says so; 0 Active ports would blame the node for our failure.
        return []
    selection = selection or rail_selection(rdma, profile)
    findings = []
    nics = profile.get('nics') or {}
    rate = nics.get('rate_gbps')
    layer = nics.get('link_layer') or 'any'
    expected = nics.get('count')
    chosen = [p for p in selection['ports'] if p['selected']]
    active = [p for p in chosen if p['active']]
    short = bool(expected) and len(active) < expected
    for port in chosen:
        device, number = port['device'], port['port']
        subject = '%s/%s' % (device, number)
        if not port['active']:
            if short and not live_only:
                findings.append(finding('port_state', device, REJECT, 'Active', port.get('state'),
                                        '%s port %s is %s (%s), expected Active' % (device, number, port.get('state'), port.get('phys_state')),
                                        blocking=True))
            else:
                findings.append(finding('port_state', subject, INFO, 'Active', port.get('state'),
                                        '%s is %s (%s): not counted, the node has the %s Active rails the tier needs'
                                        % (subject, port.get('state'), port.get('phys_state'), expected or len(active))))
            continue
        if rate and port.get('rate_gbps') is not None and float(port['rate_gbps']) < float(rate):
            findings.append(finding('port_rate', device, REJECT, '%s Gb/s' % rate, '%s Gb/s' % port['rate_gbps'],
                                    '%s port %s runs at %s Gb/s, expected %s' % (device, number, port['rate_gbps'], rate)))
        elif layer != 'any' and port.get('link_layer') and port['link_layer'] != layer:
            findings.append(finding('port_rate', device, MARGINAL, layer, port['link_layer'],
                                    '%s port %s link layer %s, expected %s' % (device, number, port['link_layer'], layer)))
        else:
            findings.append(finding('port_state', subject, HEALTHY, 'Active', port.get('state'), '%s Active at %s Gb/s' % (subject, port.get('rate_gbps'))))
    findings.extend(_not_a_rail(port) for port in selection['ports'] if not port['selected'])
    if short:
        others = ['%s/%s %s' % (p['device'], p['port'], p['why']) for p in selection['ports'] if not p['selected'] and p['active']]
        findings.append(finding('nic_count', 'nics', REJECT, expected, len(active),
                                '%s of %s compute rails Active%s' % (len(active), expected, ' (left out: %s)' % '; '.join(others) if others else ''),
                                blocking=True))
    elif expected and len(active) > expected:
        findings.append(finding('nic_count', 'nics', INFO, expected, len(active),
                                '%d Active ports match the rail selector, the tier counts %d: every one is tested; name the rails '
                                '(netval_rdma_devices or nics.select.netdev_pattern) to leave the others out' % (len(active), expected)))
    return findings


def _pcie_ok(link, alternatives, capability=None):
    """Whether ``link`` meets one of the profile's alternatives; an alternative with ``card_max_gts`` applies only to a card whose
    own capability (LnkCap) is at most that (100GbE on a Gen3 x16 card: the lab notes call 8GT/s x16 the right negotiation)."""
    for alt in alternatives:
        if alt.get('card_max_gts') is not None and (capability is None or float(capability) > float(alt['card_max_gts'])):
            continue
        if (link.get('speed') or 0) >= alt.get('speed_gts', 0) and (link.get('width') or 0) >= alt.get('width', 0):
            return True
    return False


def _lspci_verbatim(device):
    lspci = device.get('lspci') or {}
    lines = lspci.get('link_lines') or []
    if not lines:
        return None
    return (['$ %s' % lspci['cmd']] if lspci.get('cmd') else []) + lines


def is_virtual_function(device):
    """True when pcie_info says the device is an SR-IOV VF: its assessment, its sysfs facts or its lspci block."""
    return ((device.get('assessment') or {}).get('status') == 'virtual_function' or bool((device.get('link') or {}).get('virtual_function'))
            or bool((device.get('lspci') or {}).get('virtual_function')))


def check_pcie(pcie, profile, rdma=None, selection=None):
    """Each NIC's PCIe link: below its own capability (degraded) is a hardware fact (reject); at its capability but below the
    profile's line is a reject where the line is the runbook's or the contract's (``pcie.source``), marginal where it is ours.
    Only the rails are graded (``selection``, policy/rails.py)."""
    findings = []
    rail_pcis = _rail_pcis(selection)
    alternatives = (profile.get('pcie') or {}).get('nic') or []
    below_line = REJECT if line_may_reject(profile.get('pcie')) else MARGINAL
    # Name NICs the way operators and perftest do (mlx5_0), not only by PCI address.
    names = {}
    for name, info in ((rdma or {}).get('devices') or {}).items():
        if info.get('pci_address'):
            names.setdefault(str(info['pci_address']).lower(), name)
    for device in (pcie or {}).get('devices') or []:
        if device.get('kind') != 'nic' or is_virtual_function(device):
            # An SR-IOV VF has no link of its own (lspci: "Speed unknown (downgraded), Width x0"): never graded as one.
            continue
        if rail_pcis is not None and str(device.get('bdf')).lower() not in rail_pcis:
            continue  # a storage or front-end NIC: its rail_selection finding says why it is not graded
        link = device.get('link') or {}
        assessment = device.get('assessment') or {}
        current = {'speed': link.get('current_speed_gts'), 'width': link.get('current_width')}
        label = names.get(str(device.get('bdf')).lower()) or device.get('bdf')
        device = dict(device, lspci_lines=_lspci_verbatim(device))
        actual = 'LnkSta %sGT/s x%s, LnkCap %sGT/s x%s' % (_g(link.get('current_speed_gts')), link.get('current_width'),
                                                           _g(link.get('max_speed_gts')), link.get('max_width'))
        capability = link.get('max_speed_gts')
        expected = ' or '.join('%sGT/s x%s%s' % (_g(a['speed_gts']), a['width'], _card(a)) for a in alternatives) or 'its capability'
        status = assessment.get('status')
        if status == 'degraded':
            findings.append(finding('pcie_link', label, REJECT, expected, actual,
                                    'NIC %s at %s: %s (%s)' % (label, device.get('bdf'), actual, assessment.get('reason', 'link below capability')),
                                    verbatim=device.get('lspci_lines')))
        elif status == 'slot_limited':
            findings.append(finding('pcie_link', label, below_line if alternatives and not _pcie_ok(current, alternatives, capability) else MARGINAL,
                                    expected, actual, 'NIC %s at %s: slot limit, not a faulty NIC: %s' % (label, device.get('bdf'), assessment.get('reason')),
                                    verbatim=device.get('lspci_lines')))
        elif alternatives and current['speed'] is not None and not _pcie_ok(current, alternatives, capability):
            findings.append(finding('pcie_link', label, below_line, expected, actual,
                                    'NIC %s at %s runs %s, the contract needs %s' % (label, device.get('bdf'), actual, expected),
                                    verbatim=device.get('lspci_lines')))
        else:
            findings.append(finding('pcie_link', label, HEALTHY, expected, actual, '%s %s' % (label, actual)))
    return findings


def _card(alternative):
    """' (a Gen3 card)' for an alternative that applies to cards of at most that capability, else ''."""
    if alternative.get('card_max_gts') is None:
        return ''
    return ' (a Gen%s card)' % {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}.get(float(alternative['card_max_gts']), '?')


def _g(value):
    if value is None:
        return '?'
    value = float(value)
    return str(int(value)) if value == int(value) else str(value)


def _cmdline_has(tokens, wanted):
    """The cmdline token that satisfies ``wanted``: the same token, or for ``name=`` (any value) the first ``name=<value>``."""
    if wanted.endswith('='):
        return next((token for token in tokens if token.startswith(wanted) and len(token) > len(wanted)), None)
    return wanted if wanted in tokens else None


def check_host(host, profile, gdr=None):
    """cmdline tokens, hugepages, kernel modules, governor and turbo.  ``gdr`` (gpudirect.decide): nvidia_peermem is required
    only where it is the node's GPUDirect path."""
    findings = []
    if host is None:
        return findings
    spec = profile.get('host') or {}
    tokens = (host.get('cmdline') or {}).get('tokens') or []
    for token in spec.get('cmdline_tokens') or []:
        present = _cmdline_has(tokens, token)
        shown = token + 'N' if token.endswith('=') else token
        findings.append(finding('cmdline', token, HEALTHY if present else MARGINAL, shown, present or 'missing',
                                'kernel cmdline %s %s' % ('has', present) if present else 'kernel cmdline lacks %s' % shown))
    want = spec.get('hugepages_total')
    have = (host.get('hugepages') or {}).get('total')
    if want:
        status = HEALTHY if (have or 0) >= want else MARGINAL
        findings.append(finding('hugepages', 'hugepages', status, want, have, 'HugePages_Total %s, expected %s' % (have, want)))
    modules = host.get('modules') or {}
    if modules:
        for name in spec.get('modules') or []:
            if name == gpudirect.PEERMEM_MODULE and (gdr or {}).get('needs_peermem') is False:
                continue  # the open kernel modules reach the NIC through dma-buf: nvidia_peermem is not needed
            if name not in modules:
                # Our driver stack, not the provider's hardware: B, and without the RDMA core no figure means anything.
                blocking = name in RDMA_CORE_MODULES
                findings.append(finding('modules', name, MARGINAL, 'loaded', 'missing',
                                        'kernel module %s is not loaded' % name, blocking=blocking))
    governor = spec.get('governor')
    actual = (host.get('cpu_governor') or {}).get('uniform')
    counts = (host.get('cpu_governor') or {}).get('counts') or {}
    if governor and counts:
        status = HEALTHY if actual == governor else MARGINAL
        findings.append(finding('governor', 'cpu', status, governor, actual or counts,
                                'CPU governor %s, expected %s' % (actual or ', '.join('%s x%s' % kv for kv in sorted(counts.items())), governor)))
    if host.get('no_turbo') is True:
        findings.append(finding('no_turbo', 'cpu', MARGINAL, 'turbo on', 'no_turbo=1', 'intel_pstate/no_turbo is 1 (turbo off)'))
    return findings


def _kib_at_least(value, floor):
    if floor == 'unlimited':
        return value == 'unlimited'
    return value == 'unlimited' or (isinstance(value, int) and value >= int(floor))


def check_memlock(host, profile):
    """The locked-memory limit of a login session of the test user (host_tuning_info memlock_login), not the module's own."""
    spec = _spec(profile, 'memlock')
    if spec is None or host is None:
        return []
    login = host.get('memlock_login') or {}
    user = login.get('user') or 'the test user'
    soft = login.get('soft_kib')
    if soft is None:
        why = '; '.join(login.get('errors') or []) or 'no login shell, no pam_limits line'
        return [finding('memlock', user, UNKNOWN, '>= %s KiB' % spec['min_kib'], None,
                        'memlock of a login session of %s could not be read: %s' % (user, why))]
    ok = _kib_at_least(soft, spec['min_kib'])
    where = login.get('source')
    if where == 'pam_limits':
        where = 'pam_limits %s' % ((login.get('pam_limits') or {}).get('soft_from') or '')
    return [finding('memlock', user, HEALTHY if ok else spec['severity'], '%s KiB' % spec['min_kib'] if spec['min_kib'] != 'unlimited'
                    else 'unlimited', soft, 'memlock (ulimit -l) of a login session of %s is %s%s, expected %s (from %s)'
                    % (user, soft, '' if soft == 'unlimited' else ' KiB', spec['min_kib'], where))]


def check_roce_gids(rdma, profile, selection=None):
    """Every live, addressed RoCE port has a GID index carrying RoCE v2 with its IPv4 (what perftest -x and NCCL_IB_GID_INDEX use).

    A live port without an IPv4 address is not graded: it carries no test traffic (the second PCI path of a DGX Spark's
    cable is ACTIVE and unaddressed by design), and the port and NIC-count checks say whether enough ports are usable.
    """
    spec = _spec(profile, 'roce_v2_gid')
    if spec is None or rdma is None:
        return []
    roce_profile = (profile.get('nics') or {}).get('link_layer') == 'Ethernet'
    rail_devices = _rail_devices(selection)
    findings = []
    for device, port, info, pinfo in _ports(rdma):
        if rail_devices is not None and device not in rail_devices:
            continue
        layer = pinfo.get('link_layer')
        if not _state_active(pinfo) or not (layer == 'Ethernet' or (roce_profile and layer is None)):
            continue
        subject = '%s/%s' % (device, port)
        # rdma_info's IPv4 addresses of the device's netdevs (None: not read).
        addresses = info.get('ipv4')
        v2 = [g for g in pinfo.get('gids') or [] if g.get('roce_version') == 'v2' and g.get('ipv4')]
        if addresses is None:
            findings.append(finding('roce_v2_gid', subject, UNKNOWN, 'a RoCE v2 GID with the port IPv4', None,
                                    '%s: the netdevs\' IPv4 addresses were not read (rdma_info ipv4=false)' % subject))
            continue
        if not addresses:
            continue
        matching = [g for g in v2 if g['ipv4'] in addresses]
        if matching:
            findings.append(finding('roce_v2_gid', subject, HEALTHY, 'a RoCE v2 GID with the port IPv4', 'index %s' % matching[0]['index'],
                                    '%s: GID index %s is RoCE v2 with %s' % (subject, matching[0]['index'], matching[0]['ipv4'])))
            continue
        have = ', '.join('%s %s %s' % (g.get('index'), g.get('type') or g.get('roce_version'), g.get('ipv4') or '-')
                         for g in pinfo.get('gids') or []) or 'no GIDs'
        findings.append(finding('roce_v2_gid', subject, spec['severity'], 'a RoCE v2 GID with the port IPv4', have,
                                '%s is live but no RoCE v2 GID carries %s (GIDs: %s); show_gids should list a v2 IPv4 GID for RoCE'
                                % (subject, ', '.join(addresses), have)))
    return findings


def _names_by_pci(rdma):
    names = {}
    for name, info in sorted(((rdma or {}).get('devices') or {}).items()):
        if info.get('pci_address'):
            names.setdefault(str(info['pci_address']).lower(), name)
    return names


def check_irq_locality(host, rdma, profile, selection=None):
    """The fraction of each RDMA NIC's IRQs whose affinity lies on the NIC's NUMA node (host_tuning_info irq_placement)."""
    spec = _spec(profile, 'irq_locality')
    if spec is None or host is None:
        return []
    names = _names_by_pci(rdma)
    floor = float(spec['min_fraction_local'])
    rail_pcis = _rail_pcis(selection)
    findings = []
    for bdf, placement in sorted((host.get('irq_placement') or {}).items()):
        if rail_pcis is not None and bdf.lower() not in rail_pcis:
            continue
        subject = names.get(bdf.lower(), bdf)
        fraction = placement.get('fraction_local')
        expected = '>= %s of IRQs on NUMA node %s' % (floor, placement.get('numa_node'))
        if fraction is None:
            why = placement.get('error') or ('no IRQ names %s' % bdf if not placement.get('count')
                                             else 'the NUMA-local CPUs or the IRQ affinities could not be read')
            findings.append(finding('irq_locality', subject, UNKNOWN, expected, None, '%s (%s): IRQ placement unknown: %s' % (subject, bdf, why)))
            continue
        off = placement.get('off_node') or []
        findings.append(finding('irq_locality', subject, HEALTHY if fraction >= floor else spec['severity'], expected, round(fraction, 3),
                                '%s (%s): %d of %d IRQs on NUMA node %s%s' % (
                                    subject, bdf, placement.get('count', 0) - len(off) - len(placement.get('unknown') or []),
                                    placement.get('count', 0), placement.get('numa_node'),
                                    ', off-node: %s' % ', '.join(off[:8]) if off else '')))
    return findings


def _fec_key(text):
    return re.sub(r'[^a-z0-9]', '', str(text or '').lower())


def _live_pcis(rdma):
    """PCI addresses of RDMA devices with an Active port (None when rdma_info gave nothing: grade every link)."""
    if rdma is None:
        return None
    return set(str(info.get('pci_address')).lower() for device, _port, info, pinfo in _ports(rdma) if _state_active(pinfo))


def check_link_quality(firmware, rdma, profile, selection=None):
    """FEC mode and BER of each live link as mlxlink reports them (mlx_fw_info ``link``); a missing mlxlink is our gap."""
    fec = _spec(profile, 'link_fec')
    ber = _spec(profile, 'link_ber')
    if (fec is None and ber is None) or firmware is None:
        return []
    names = _names_by_pci(rdma)
    live = _live_pcis(rdma)
    rail_pcis = _rail_pcis(selection)
    findings = []
    for device, info in sorted((firmware.get('devices') or {}).items()):
        if 'link' not in info or (rail_pcis is not None and str(device).lower() not in rail_pcis):
            continue
        link = info.get('link') or {}
        subject = names.get(str(device).lower(), device)
        if link.get('error'):
            findings.append(finding('link_fec' if fec else 'link_ber', subject, UNKNOWN, 'mlxlink output', None,
                                    '%s: FEC and BER unknown: %s' % (subject, link['error'])))
            continue
        state = str((link.get('operational') or {}).get('state') or 'Active')
        known_down = live is not None and subject != device and str(device).lower() not in live
        if known_down or state.lower() != 'active':
            continue  # a port that is not up has no FEC or BER to grade; port_state names it
        cmd = ['$ %s' % link['cmd']] if link.get('cmd') else []
        if fec:
            mode = (link.get('operational') or {}).get('fec')
            allowed = [_fec_key(a) for a in fec['allowed']]
            if mode is None:
                findings.append(finding('link_fec', subject, UNKNOWN, ' or '.join(fec['allowed']), None, '%s: mlxlink printed no FEC mode' % subject))
            else:
                ok = any(a and a in _fec_key(mode) for a in allowed)
                findings.append(finding('link_fec', subject, HEALTHY if ok else fec['severity'], ' or '.join(fec['allowed']), mode,
                                        '%s link FEC %s%s' % (subject, mode, '' if ok else ', expected %s' % ' or '.join(fec['allowed'])),
                                        verbatim=None if ok else cmd + ['FEC : %s' % mode]))
        if ber:
            counters = link.get('counters') or {}
            for key, limit, label in (('effective_physical_ber', ber.get('effective_max'), 'effective'),
                                      ('raw_physical_ber', ber.get('raw_max'), 'raw')):
                if limit is None:
                    continue
                value = counters.get(key)
                if value is None:
                    findings.append(finding('link_ber', subject, UNKNOWN, '<= %g' % float(limit), None,
                                            '%s: mlxlink printed no %s physical BER (-c)' % (subject, label)))
                    continue
                ok = value <= float(limit)
                findings.append(finding('link_ber', subject, HEALTHY if ok else ber['severity'], '<= %g' % float(limit), value,
                                        '%s %s physical BER %g (limit %g)' % (subject, label, value, float(limit)),
                                        verbatim=None if ok else cmd + ['%s Physical BER : %g' % (label.capitalize(), value)]))
    return findings


_PAGE_SIZE_KIB = {'K': 1, 'M': 1024, 'G': 1024 * 1024}


def page_size_kib(text):
    """'1G' -> 1048576, '2M' -> 2048, '2048K' -> 2048 (the kernel's hugepagesz syntax); None when it is not one."""
    text = str(text or '').strip().upper().rstrip('B')
    if text[-1:] in _PAGE_SIZE_KIB and text[:-1].isdigit():
        return int(text[:-1]) * _PAGE_SIZE_KIB[text[-1]]
    return None


def requested_hugepages(tokens):
    """{page size in KiB, or None for the default size: count} that kernel cmdline tokens reserve, in the kernel's order.

    ``hugepages=N`` applies to the ``hugepagesz=`` before it, or to the default size when none came before.
    """
    pools = {}
    size = None
    for token in tokens or []:
        key, _sep, value = token.partition('=')
        if key == 'hugepagesz':
            size = page_size_kib(value)
        elif key == 'hugepages' and value.isdigit():
            pools[size] = int(value)
    return pools


def check_hugepages_cmdline(host, profile):
    """The kernel cmdline's hugepage tokens agree with the pools the kernel reserved, at the profile's default page size."""
    spec = _spec(profile, 'hugepages_cmdline')
    if spec is None or host is None:
        return []
    findings = []
    hugepages = host.get('hugepages') or {}
    default_kib = (hugepages.get('page_size_bytes') or 0) // 1024 or None
    wanted = page_size_kib(spec.get('default_size')) if spec.get('default_size') else None
    if wanted and default_kib:
        status = HEALTHY if default_kib == wanted else spec['severity']
        findings.append(finding('hugepages_cmdline', 'default_hugepagesz', status, '%s kB' % wanted, '%s kB' % default_kib,
                                'default hugepage size %s kB (Hugepagesize), expected %s kB (default_hugepagesz=%s)'
                                % (default_kib, wanted, spec['default_size'])))
    pools = dict((int(size), count) for size, count in (hugepages.get('pools_kib') or {}).items())
    tokens = (host.get('cmdline') or {}).get('tokens') or []
    for size, count in sorted(requested_hugepages(tokens).items(), key=lambda kv: kv[0] or 0):
        size = size or default_kib
        have = pools.get(size)
        findings.append(finding('hugepages_cmdline', 'hugepages-%skB' % size, HEALTHY if have == count else spec['severity'],
                                count, have, 'kernel cmdline reserves %s hugepages of %s kB, the pool has %s' % (count, size, have)))
    return findings


def _version(text):
    return tuple(int(part) for part in re.findall(r'\d+', str(text or '')))


def _rdma_names(rdma):
    """PCI address (lower case) -> RDMA device name, from rdma_info's devices."""
    names = {}
    for name, info in ((rdma or {}).get('devices') or {}).items():
        if info.get('pci_address'):
            names.setdefault(str(info['pci_address']).lower(), name)
    return names


# The HCA types sysfs reports (rdma_info hca_type) and the NIC model each is, for firmware floors given per model.
HCA_MODELS = {'MT4119': 'ConnectX-5', 'MT4121': 'ConnectX-5 Ex', 'MT4123': 'ConnectX-6', 'MT4125': 'ConnectX-6 Dx',
              'MT4127': 'ConnectX-6 Lx', 'MT4129': 'ConnectX-7', 'MT4131': 'ConnectX-8', 'MT41686': 'BlueField-2',
              'MT41692': 'BlueField-3'}


def _model_key(text):
    return re.sub(r'[^a-z0-9]', '', str(text or '').lower())


def _models_of(device, info, rdma):
    """The names a contract may give this NIC's model by: PSID, part number, mlxconfig's device type (ConnectX7) and the model
    of its sysfs HCA type (MT4129: ConnectX-7), each compared without case or punctuation."""
    fw = info.get('firmware') or {}
    names = [fw.get('psid'), fw.get('part_number'), (info.get('config') or {}).get('device_type')]
    for _name, rinfo in sorted(((rdma or {}).get('devices') or {}).items()):
        if str(rinfo.get('pci_address') or '').lower() == str(device).lower():
            names.append(HCA_MODELS.get(str(rinfo.get('hca_type') or '').upper()))
    return [_model_key(name) for name in names if name]


def _floor_for(versions, keys):
    """(model as the contract names it, minimum version) of the first contract entry matching one of the NIC's ``keys``."""
    for model, floor in sorted((versions or {}).items()):
        if _model_key(model) in keys:
            return model, floor
    return None, None


def check_firmware(firmware, profile, rdma=None, selection=None):
    """Each NIC at or above its model's minimum firmware (contract data, by PSID, part number or model name); one version per
    model.  A NIC whose adapter could not be read (mlx_fw_info ``error``) is unknown, on that NIC alone."""
    minimum = _spec(profile, 'firmware_min_version')
    uniform = _spec(profile, 'firmware_uniform')
    names = _rdma_names(rdma)
    rail_pcis = _rail_pcis(selection)
    findings = []
    by_model = {}
    for device, info in sorted(((firmware or {}).get('devices') or {}).items()):
        if rail_pcis is not None and str(device).lower() not in rail_pcis:
            continue
        if info.get('error'):
            label = '%s (%s)' % (names[device.lower()], device) if device.lower() in names else device
            findings.append(finding('firmware_read', device, UNKNOWN, 'flint and mlxconfig output', None,
                                    '%s: firmware and configuration unknown: %s' % (label, info['error'])))
            continue
        fw = info.get('firmware') or {}
        # A newly burnt image is not active until the NIC resets: the running one is what the tests used.
        version = fw.get('fw_version_running') or fw.get('fw_version')
        model = fw.get('psid') or fw.get('part_number')
        if not version or not model:
            continue
        label = '%s (%s)' % (names[device.lower()], device) if device.lower() in names else device
        by_model.setdefault(model, []).append((label, version))
        named, floor = _floor_for((minimum or {}).get('versions'), _models_of(device, info, rdma))
        if floor:
            status = HEALTHY if _version(version) >= _version(floor) else minimum['severity']
            findings.append(finding('firmware_min_version', device, status, '>= %s' % floor, version,
                                    '%s (%s) runs firmware %s, the contract needs %s or later'
                                    % (label, model if _model_key(named) == _model_key(model) else '%s %s' % (named, model), version, floor)))
    for model, devices in sorted(by_model.items()) if uniform else []:
        seen = sorted(set(version for _device, version in devices), key=_version)
        findings.append(finding('firmware_uniform', model, HEALTHY if len(seen) == 1 else uniform['severity'], 'one version',
                                ', '.join(seen), _uniform_detail(model, devices, seen)))
    return findings


def _uniform_detail(model, devices, seen):
    """One version: say it; several: name the odd ones out first (the NICs to flash), then the majority."""
    if len(seen) == 1:
        return 'NICs of model %s run firmware %s' % (model, seen[0])
    count = dict((version, sum(1 for _d, v in devices if v == version)) for version in seen)
    majority = max(seen, key=lambda version: (count[version], _version(version)))
    odd = ['%s runs %s' % (label, version) for label, version in devices if version != majority]
    return 'NICs of model %s do not run one firmware: %s, while the other %d run %s' % (
        model, ', '.join(odd), count[majority], majority)


def _ipoib(info, layers, netdev):
    """Whether a netdev is IPoIB: its RDMA device's link layer, else its driver (mlx5_core[ib_ipoib])."""
    layer = layers.get(info.get('rdma_device'))
    if layer:
        return layer == 'InfiniBand'
    return 'ipoib' in str((info.get('driver') or {}).get('driver') or '') or str(netdev).startswith('ib')


def _against_maximum(netdev, what, current, wanted, maximum):
    """Healthy when ``current`` reaches the contract, or the NIC's pre-set maximum where the contract asks for more."""
    floor = min(wanted, maximum) if maximum else wanted
    status = HEALTHY if current >= floor else MARGINAL
    if maximum and wanted > maximum and current >= maximum:
        detail = '%s %s %s at its maximum, the contract asks %s' % (netdev, what, current, wanted)
    else:
        detail = '%s %s %s%s' % (netdev, what, current, ', maximum %s' % maximum if maximum else '')
    return status, '>= %s' % floor, detail


def check_nic_tuning(nic, firmware, profile, selection=None):
    """Ring and channels of the rails' netdevs against the contract and the NIC's own maximum; CQE compression per NIC.

    mlx5 pre-sets an RX ring maximum of 8192: a contract asking 16384 is met at the maximum ("at its maximum, the
    contract asks 16384").  IPoIB netdevs are not graded: RDMA traffic does not use their rings or channels.
    """
    findings = []
    spec = profile.get('nic_tuning') or {}
    rail_devices = _rail_devices(selection)
    layers = dict((p['device'], p.get('link_layer')) for p in (selection or {}).get('ports') or [])
    for netdev, info in sorted(((nic or {}).get('nics') or {}).items()):
        if rail_devices is not None and info.get('rdma_device') not in rail_devices:
            continue
        if _ipoib(info, layers, netdev):
            continue
        ring = info.get('ring') or {}
        current = (ring.get('current') or {}).get('rx')
        if spec.get('rx_ring_min') and current is not None:
            status, expected, detail = _against_maximum(netdev, 'RX ring', current, spec['rx_ring_min'], (ring.get('maximum') or {}).get('rx'))
            findings.append(finding('rx_ring', netdev, status, expected, current, detail))
        channels = info.get('channels') or {}
        combined = (channels.get('current') or {}).get('combined')
        if spec.get('channels_min') and combined is not None:
            status, expected, detail = _against_maximum(netdev, 'combined channels', combined, spec['channels_min'],
                                                        (channels.get('maximum') or {}).get('combined'))
            findings.append(finding('channels', netdev, status, expected, combined, detail))
    rail_pcis = _rail_pcis(selection)
    for device, info in sorted(((firmware or {}).get('devices') or {}).items()):
        if rail_pcis is not None and str(device).lower() not in rail_pcis:
            continue
        cqe = info.get('cqe_compression') or {}
        if spec.get('cqe_compression') and cqe:
            status = HEALTHY if cqe.get('enabled') else MARGINAL
            findings.append(finding('cqe_compression', device, status, 'enabled', cqe.get('value'), '%s CQE_COMPRESSION %s' % (device, cqe.get('value'))))
    return findings


def check_gpudirect(gpu, host, profile):
    """The node's GPUDirect mode (gpudirect.decide), at a tier that runs the GPUDirect test: healthy when perftest can run it
    here, unknown (our setup: what to install or load) when it cannot."""
    if not ((profile.get('tests') or {}).get('gdr') or {}).get('enabled'):
        return []
    decided = gpudirect.decide(gpu, host)
    if decided['mode'] is None:
        return []
    if decided['mode'] == gpudirect.NONE:
        return [finding('gdr_mode', 'gpudirect', UNKNOWN, 'a GPUDirect RDMA path (nvidia_peermem, or dma-buf)', 'none',
                        'GPUDirect RDMA cannot run on this node: %s' % decided['reason'])]
    how = ('nvidia_peermem' if decided['mode'] == gpudirect.PEERMEM
           else 'dma-buf of the open kernel modules (driver %s), perftest --use_cuda_dmabuf' % decided['driver_version'])
    named = 'PCI address (--use_cuda_bus_id)' if decided['cuda_bus_id'] else 'CUDA ordinal with CUDA_DEVICE_ORDER=PCI_BUS_ID'
    return [finding('gdr_mode', 'gpudirect', HEALTHY, 'a GPUDirect RDMA path', decided['mode'],
                    'GPUDirect RDMA through %s, the GPU named by %s' % (how, named))]


def _runs(profile, test):
    return bool(((profile.get('tests') or {}).get(test) or {}).get('enabled'))


def check_dcgm_hostengine(gpu, profile):
    """The DCGM host engine answers dcgmi, at a tier that runs dcgmi diag (else every node's diagnostic fails at the end)."""
    spec = _spec(profile, 'dcgm_hostengine')
    dcgm = (gpu or {}).get('dcgm')
    if spec is None or not _runs(profile, 'dcgmi') or not isinstance(dcgm, dict):
        return []
    if dcgm.get('hostengine') == 'unreachable':
        return [finding('dcgm_hostengine', 'dcgm', spec['severity'], 'nv-hostengine reachable', 'unreachable',
                        'the DCGM host engine does not answer (`%s`: %s): start it (systemctl enable --now nvidia-dcgm) before dcgmi '
                        'diag can run' % (dcgm.get('cmd') or 'dcgmi discovery -l', dcgm.get('error') or 'no connection'))]
    if dcgm.get('hostengine') == 'reachable':
        return [finding('dcgm_hostengine', 'dcgm', HEALTHY, 'nv-hostengine reachable', 'reachable',
                        'the DCGM host engine answers (%s GPUs)' % dcgm.get('gpu_count'))]
    return [finding('dcgm_hostengine', 'dcgm', UNKNOWN, 'nv-hostengine reachable', None,
                    'whether the DCGM host engine answers is unknown: %s' % (dcgm.get('error') or 'dcgmi gave no answer'))]


def check_fabric_manager(gpu, profile):
    """On an NVSwitch system every GPU finished its handshake with nvidia-fabricmanager (nvidia-smi Fabric: State Completed,
    Status Success); without it CUDA fails with "system not yet initialized".  GPUs that report no fabric state are not on one."""
    spec = _spec(profile, 'fabric_manager')
    if spec is None or gpu is None:
        return []
    fabric = [(entry.get('bus_id') or str(entry.get('index')), entry.get('fabric') or {}) for entry in gpu.get('gpus') or []]
    fabric = [(bus, state) for bus, state in fabric if state.get('state') is not None]
    if not fabric:
        return []
    bad = [(bus, state) for bus, state in fabric if state.get('state') != 'Completed' or state.get('status') not in (None, 'Success')]
    if not bad:
        return [finding('fabric_manager', 'nvswitch', HEALTHY, 'Fabric State Completed, Status Success', 'Completed',
                        'every GPU (%d) finished its NVSwitch fabric handshake' % len(fabric))]
    shown = ', '.join('%s %s/%s' % (bus, state.get('state'), state.get('status')) for bus, state in bad[:8])
    return [finding('fabric_manager', 'nvswitch', spec['severity'], 'Fabric State Completed, Status Success', shown,
                    'NVSwitch fabric not ready on %d of %d GPUs (%s): start nvidia-fabricmanager (systemctl enable --now '
                    'nvidia-fabricmanager) and wait for State Completed; until then CUDA fails with "system not yet initialized"'
                    % (len(bad), len(fabric), shown))]


def check_persistence_mode(gpu, profile):
    """Persistence mode on every GPU: without it each CUDA start re-initialises the GPU (seconds, times eight servers at once)."""
    spec = _spec(profile, 'persistence_mode')
    if spec is None or gpu is None or not gpu.get('gpus'):
        return []
    off = [entry.get('bus_id') or str(entry.get('index')) for entry in gpu['gpus'] if entry.get('persistence_mode') == 'Disabled']
    unknown = [entry for entry in gpu['gpus'] if entry.get('persistence_mode') not in ('Enabled', 'Disabled')]
    if off:
        return [finding('persistence_mode', 'gpus', spec['severity'], 'Enabled', 'Disabled on %s' % ', '.join(off),
                        'persistence mode is off on %d GPU(s) (%s): enable it (nvidia-persistenced, or nvidia-smi -pm 1)'
                        % (len(off), ', '.join(off)))]
    if unknown:
        return [finding('persistence_mode', 'gpus', UNKNOWN, 'Enabled', None, 'persistence mode not reported for %d GPU(s)' % len(unknown))]
    return [finding('persistence_mode', 'gpus', HEALTHY, 'Enabled', 'Enabled', 'persistence mode on for every GPU')]


def _chain(pcie, bdf):
    """The bridges above a device (pcie_info upstream, nearest first), or None when pcie_info did not list it."""
    for device in (pcie or {}).get('devices') or []:
        if normalize_bdf(device.get('bdf') or '') == normalize_bdf(bdf or ''):
            return device.get('upstream') or []
    return None


def check_pcie_acs(pcie, gpu, rdma, profile):
    """ACS redirection on the bridges between each tested NIC and its GPUDirect GPU (below the bridge they share): it sends
    GPUDirect RDMA up to the root complex.  A NIC and GPU that share no bridge cross the host bridge anyway: not graded."""
    spec = _spec(profile, 'pcie_acs')
    if spec is None or not _runs(profile, 'gdr') or pcie is None or gpu is None:
        return []
    devices = (rdma or {}).get('devices') or {}
    gpu_bus = dict((entry.get('index'), entry.get('bus_id')) for entry in gpu.get('gpus') or [])
    findings = []
    for pair in gpu.get('gpu_nic_pairs') or []:
        nic_pci = (devices.get(pair.get('nic')) or {}).get('pci_address')
        nic_chain, gpu_chain = _chain(pcie, nic_pci), _chain(pcie, gpu_bus.get(pair.get('gpu')))
        if pair.get('gpu') is None or nic_chain is None or gpu_chain is None:
            continue
        shared = set(hop['bdf'] for hop in nic_chain) & set(hop['bdf'] for hop in gpu_chain)
        path = [hop for hop in nic_chain + gpu_chain if hop['bdf'] not in shared] if shared else []
        if not path or any('acs' not in hop for hop in path):
            continue
        subject = pair.get('nic')
        expected = 'no ACS redirection between %s and GPU%s' % (subject, pair['gpu'])
        unread = [hop for hop in path if (hop.get('acs') or {}).get('error')]
        on = [hop for hop in path if (hop.get('acs') or {}).get('redirects')]
        if on:
            verbatim = []
            for hop in on:
                verbatim += ['$ %s' % hop['acs']['cmd'], hop['acs']['line']] if hop['acs'].get('cmd') else [hop['acs']['line']]
            findings.append(finding('pcie_acs', subject, spec['severity'], expected, ', '.join(
                '%s %s' % (hop['bdf'], '+'.join(hop['acs']['redirects'])) for hop in on),
                'ACS redirects peer-to-peer traffic on %s between %s and its GPUDirect GPU %s (%s): GPUDirect RDMA goes through the '
                'root complex; turn ACS off on these switch ports (BIOS, or setpci ECAP_ACS+6.w=0 at boot)'
                % (', '.join('%s (%s)' % (hop['bdf'], '+'.join(hop['acs']['redirects'])) for hop in on), subject,
                   pair.get('gpu_name') or pair['gpu'], gpu_bus.get(pair['gpu'])),
                verbatim=verbatim))
        elif unread:
            findings.append(finding('pcie_acs', subject, UNKNOWN, expected, None, '%s: ACS of the bridges to its GPU unknown: %s'
                                    % (subject, '; '.join(hop['acs']['error'] for hop in unread))))
        else:
            findings.append(finding('pcie_acs', subject, HEALTHY, expected, 'off', '%s and GPU%s: no ACS redirection on %s'
                                    % (subject, pair['gpu'], ', '.join(hop['bdf'] for hop in path))))
    return findings


def check_thermal(gpu, profile):
    """Thermal or clock-throttle events: kernel-log thermal lines of the preflight window (the runbook: "should be empty or only
    boot-time") and GPU clock event reasons active now."""
    spec = _spec(profile, 'thermal_throttle')
    if spec is None or gpu is None:
        return []
    findings = []
    events = gpu.get('thermal_events')
    if events:
        findings.append(finding('thermal_throttle', 'kernel log', spec['severity'], 'no thermal or throttle events', '%d line(s)' % len(events),
                                '%d thermal/throttle line(s) in the kernel log, last: %s' % (len(events), events[-1].get('message') or events[-1].get('line')),
                                verbatim=[e.get('line') for e in events[-5:] if e.get('line')]))
    throttled = set(spec.get('clock_reasons') or [])
    for entry in gpu.get('gpus') or []:
        active = sorted(set(entry.get('clocks_throttle_reasons') or []) & throttled)
        if active:
            subject = entry.get('bus_id') or str(entry.get('index'))
            findings.append(finding('thermal_throttle', subject, spec['severity'], 'no throttling clock event', ', '.join(active),
                                    'GPU %s clocks throttled now: %s' % (subject, ', '.join(active))))
    if events is not None and not findings:
        findings.append(finding('thermal_throttle', 'gpus', HEALTHY, 'no thermal or throttle events', 'none',
                                'no thermal or throttle event in the kernel log and no GPU throttled'))
    return findings


# Which tests a failed GPU prerequisite makes impossible, and why: planned as "not measurable" with the prerequisite's words.
PREREQUISITE_TESTS = {'gdr_mode': ('gdr',), 'fabric_manager': ('gdr', 'nccl', 'dcgmi'), 'dcgm_hostengine': ('dcgmi',)}


def gpu_test_blockers(findings):
    """{test name: reason} for the tests a failed GPU prerequisite rules out (GPUDirect without a path, NCCL and GPUDirect and
    dcgmi without Fabric Manager, dcgmi without its host engine): the plan expects their figures with the reason, runs nothing."""
    blocked = {}
    for item in findings or []:
        if item.get('check') in PREREQUISITE_TESTS and item.get('status') in (MARGINAL, REJECT, UNKNOWN):
            if item['check'] == 'dcgm_hostengine' and item.get('status') == UNKNOWN:
                continue  # not known to be down: dcgmi diag says for itself
            for test in PREREQUISITE_TESTS[item['check']]:
                blocked.setdefault(test, '%s: %s' % (item['check'], item.get('detail')))
    return blocked


# The key each module's result must carry to be usable.
DATA_KEYS = {'rdma': 'devices', 'pcie': 'devices', 'nic': 'nics', 'firmware': 'devices', 'gpu': 'gpu_count', 'host': 'cmdline'}


def usable_facts(facts):
    """Split module results into usable ones and 'tool' findings for the ones that failed.

    Roles register these results with ``failed_when: false`` so one missing tool
    does not stop preflight; a result without its data key is a failure whose
    ``msg`` says why, and it becomes an unknown finding instead of a silent gap.
    """
    usable = {}
    findings = []
    for key, data_key in DATA_KEYS.items():
        result = (facts or {}).get(key)
        if not isinstance(result, dict):
            usable[key] = None
            continue
        if data_key in result:
            usable[key] = result
            continue
        usable[key] = None
        if result.get('skipped'):
            continue
        findings.append(finding('tool', key, UNKNOWN, 'tool output', 'unavailable',
                                result.get('msg') or '%s facts unavailable' % key))
    return usable, findings


def preflight_findings(facts, profile, devices=None):
    """All findings for one node.  ``facts`` maps rdma/pcie/nic/firmware/gpu/host to module results (or None);
    ``devices`` is the node's explicit list of rails (inventory netval_rdma_devices), else the profile's nics.select
    chooses them.  Only the rails are graded (policy/rails.py)."""
    live_only = bool((profile.get('nics') or {}).get('live_only'))
    facts, findings = usable_facts(facts)
    selection = rail_selection(facts.get('rdma'), profile, devices)
    gdr = gpudirect.decide(facts.get('gpu'), facts.get('host'))
    findings += check_gpus(facts.get('gpu'), profile)
    findings += check_ports(facts.get('rdma'), profile, live_only, selection)
    findings += check_pcie(facts.get('pcie'), profile, facts.get('rdma'), selection)
    findings += check_host(facts.get('host'), profile, gdr)
    findings += check_hugepages_cmdline(facts.get('host'), profile)
    findings += check_nic_tuning(facts.get('nic'), facts.get('firmware'), profile, selection)
    findings += check_rail_mtu(facts.get('nic'), profile, selection)
    findings += check_firmware(facts.get('firmware'), profile, facts.get('rdma'), selection)
    findings += check_gpu_memory(facts.get('gpu'), profile)
    findings += check_memlock(facts.get('host'), profile)
    findings += check_roce_gids(facts.get('rdma'), profile, selection)
    findings += check_irq_locality(facts.get('host'), facts.get('rdma'), profile, selection)
    findings += check_link_quality(facts.get('firmware'), facts.get('rdma'), profile, selection)
    findings += check_gpudirect(facts.get('gpu'), facts.get('host'), profile)
    findings += check_dcgm_hostengine(facts.get('gpu'), profile)
    findings += check_fabric_manager(facts.get('gpu'), profile)
    findings += check_persistence_mode(facts.get('gpu'), profile)
    findings += check_pcie_acs(facts.get('pcie'), facts.get('gpu'), facts.get('rdma'), profile)
    findings += check_thermal(facts.get('gpu'), profile)
    return findings


def check_rail_mtu(nic, profile, selection=None):
    """Ethernet (RoCE) rails carry at least the contract's jumbo MTU; an IPoIB rail's own MTU (2044, 4092) is right as it is.

    The jumbo ping then tests the path at the interface's MTU: a path that carries less than the interface is the fault.
    """
    spec = _spec(profile, 'rail_mtu')
    if spec is None or nic is None:
        return []
    rail_devices = _rail_devices(selection)
    layers = dict((p['device'], p.get('link_layer')) for p in (selection or {}).get('ports') or [])
    findings = []
    for netdev, info in sorted((nic.get('nics') or {}).items()):
        if (rail_devices is not None and info.get('rdma_device') not in rail_devices) or _ipoib(info, layers, netdev):
            continue
        mtu = info.get('mtu')
        if mtu is None:
            continue
        ok = int(mtu) >= int(spec['ethernet_min'])
        findings.append(finding('rail_mtu', netdev, HEALTHY if ok else spec['severity'], '>= %s' % spec['ethernet_min'], mtu,
                                '%s MTU %s%s' % (netdev, mtu, '' if ok else ', the contract asks %s on Ethernet rails' % spec['ethernet_min'])))
    return findings


def blocking(findings):
    return [f for f in findings if f.get('blocking')]
