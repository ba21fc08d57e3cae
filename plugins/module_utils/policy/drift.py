# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""After acceptance: compare a node's current state with its baseline, and re-validation figures with the baseline's.

How a playbook is meant to call it (all through filters, on the controller, no arithmetic in YAML):

1. At acceptance (validate.yml, bucket A), build the baseline once and keep it beside the evidence::

       netval_baseline_doc: >-
         {{ verdict_node_result | gpufleet.netval.netval_baseline(preflight_facts, tier_profile_resolved) }}

   and write it (``ansible.builtin.copy`` with ``content: "{{ netval_baseline_doc | to_nice_json }}"``) to
   ``evidence/<node>/<stamp>/baseline.json``; ``evidence/<node>/baseline`` already points at the accepted bundle.
   An old bundle can be baselined later from its files: ``results.json`` (the node result), ``preflight.json``
   (the facts), ``thresholds.json`` (the profile) and ``commands/ethtool.<netdev>.counters.txt`` (``ethtool_stats``).

2. A drift run (drift.yml) resolves the tier profile (role tier_profile), reads the node as preflight does (its
   preflight_info, with counters and the kernel log since the baseline's time, so every Xid in the capture is new since
   the baseline; Xids with a readable time are also filtered here), then::

       netval_current: "{{ preflight_facts | gpufleet.netval.drift_current(inventory_hostname, netval_run_timestamp, tier_profile_resolved) }}"
       netval_drift: >-
         {{ netval_baseline | gpufleet.netval.drift_findings(netval_current, tier_profile_resolved.drift_rules, netval_maintenance | default(none)) }}

   where ``netval_baseline`` is the baseline's JSON (``lookup('file', ...) | from_json``), or ``{}`` for a node without
   one: it gets one red ``baseline`` finding of kind ``baseline_missing``, never an error: red, because a node nobody
   can compare is a node nobody watches, and the CI job that fails on red findings should say so until the node is
   validated (a job that wants to tolerate it filters on the kind); a malformed baseline (not a dict, another schema
   or schema_version) is an error naming what was expected.  The report play then writes, once for all nodes, the
   drift report through the ``drift_report`` module (JSON, per-node Markdown, JUnit XML and the node_exporter
   textfile, reporting/drift_writers.py) and fails the play when any finding is red; a node whose run broke is one
   red ``run_incomplete`` finding there.

3. Re-validation (revalidate.yml) re-runs validate's tests and compares the new node result's figures with the
   baseline's: ``baseline.figures | gpufleet.netval.figure_deltas(new_node_result, tier_profile_resolved.drift_rules.figure_tolerances)``
   gives the rows of a delta table; ``as_findings=true`` gives findings for the same writers.

Findings: ``{check, subject, severity, kind, baseline, current, detail, maintenance}`` (counter findings add
``growth``, ``hours``, ``rate_per_hour`` and ``limit_per_hour``).  ``severity``: ``red`` (a fault or a lost
setting: the CI job fails), ``expected`` (a difference a maintenance record lists, with the value it reached) or
``info`` (anything else that differs).  ``kind``: ``fault`` (something physical got worse or went away: a device,
a link, a rate, errors), ``spec_mismatch`` (the configuration differs from the accepted one: cmdline, modules,
firmware, mlxconfig, rings, ...), ``baseline_missing`` (nothing to compare with) or ``not_captured`` (a tool of the
capture, or of the baseline, gave nothing, so that part was not compared).

The limits are data, ``drift_rules`` (defaults in roles/tier_profile/defaults/main.yml, merged under every tier
as ``tier_profile_resolved.drift_rules``)::

    counter_limits_per_hour: {link_downed: 0, symbol_error: 10, ...}   # growth per hour above which it is red
    min_window_hours: 1          # growth is divided by at least this many hours
    escalate_checks: []          # checks whose info differences are red (for example [modules])
    figure_tolerances: {default_pct: 5, metrics: {ib_send_bw_gbs: 3, nccl_busbw_gbs: {pct: 5, by_bytes: {...}}}}

No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import math

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline as base

RED = 'red'
EXPECTED = 'expected'
INFO = 'info'
SEVERITIES = (RED, EXPECTED, INFO)

FAULT = 'fault'
SPEC_MISMATCH = 'spec_mismatch'
BASELINE_MISSING = 'baseline_missing'
NOT_CAPTURED = 'not_captured'
RUN_INCOMPLETE = 'run_incomplete'
KINDS = (FAULT, SPEC_MISMATCH, BASELINE_MISSING, NOT_CAPTURED, RUN_INCOMPLETE)

# Every check compare() runs, with its kind and what makes it red (the JUnit report lists each, passed or not).
CHECKS = {
    'baseline': (BASELINE_MISSING, 'the node has a baseline to compare with (red when it has none)'),
    RUN_INCOMPLETE: (RUN_INCOMPLETE, 'the node\'s drift run finished: it was reached and captured (red when it broke)'),
    'capture': (NOT_CAPTURED, 'a part of the capture or of the baseline that could not be compared (info)'),
    'profile': (SPEC_MISMATCH, 'the tier or tier profile digest changed since the baseline (info)'),
    'nic_present': (FAULT, 'a NIC of the baseline is missing (red)'),
    'nic_identity': (SPEC_MISMATCH, 'a NIC\'s node GUID changed: the card was swapped (info)'),
    'port_state': (FAULT, 'an Active port is not Active any more (red)'),
    'port_rate': (FAULT, 'a port runs below its baseline rate (red)'),
    'port_link_layer': (SPEC_MISMATCH, 'a port\'s link layer changed (info)'),
    'pcie_link': (FAULT, 'a NIC\'s PCIe LnkSta speed or width, or an upstream hop\'s, dropped (red)'),
    'pcie_cap': (SPEC_MISMATCH, 'a NIC\'s or an upstream hop\'s PCIe LnkCap changed (info)'),
    'pcie_path': (SPEC_MISMATCH, 'the bridges above a NIC changed (info)'),
    'firmware': (SPEC_MISMATCH, 'a NIC\'s running firmware version changed (info)'),
    'firmware_psid': (SPEC_MISMATCH, 'a NIC\'s PSID changed (info)'),
    'mlxconfig': (SPEC_MISMATCH, 'an mlxconfig parameter changed (info)'),
    'link_fec': (SPEC_MISMATCH, 'the FEC mode mlxlink reports changed (info)'),
    'cable': (SPEC_MISMATCH, 'the cable or module part or serial number changed (info)'),
    'mtu': (FAULT, 'a netdev\'s MTU dropped below its baseline: jumbo frames no longer fit (red); raised (info)'),
    'rx_ring': (SPEC_MISMATCH, 'a netdev\'s RX ring size changed (info)'),
    'tx_ring': (SPEC_MISMATCH, 'a netdev\'s TX ring size changed (info)'),
    'channels': (SPEC_MISMATCH, 'a netdev\'s combined channel count changed (info)'),
    'gpu_present': (FAULT, 'a GPU of the baseline is missing (red)'),
    'gpu_identity': (SPEC_MISMATCH, 'a GPU\'s serial or UUID changed: the GPU was swapped (info)'),
    'gpu_ecc_mode': (SPEC_MISMATCH, 'a GPU\'s ECC mode changed (info)'),
    'gpu_ecc': (FAULT, 'a GPU\'s correctable ECC counts changed (info)'),
    'gpu_remapped_rows': (FAULT, 'a GPU\'s remapped rows changed (info)'),
    'gpu_retired_pages': (FAULT, 'a GPU\'s retired pages changed (info)'),
    'gpu_pcie': (FAULT, 'a GPU\'s PCIe generation or width changed (info: GPUs train down when idle)'),
    'cmdline': (SPEC_MISMATCH, 'a kernel cmdline token of the baseline is gone (red); a new one (info)'),
    'modules': (SPEC_MISMATCH, 'a kernel module was unloaded or loaded (info)'),
    'hugepages': (SPEC_MISMATCH, 'hugepage totals, default size or pools changed (info)'),
    'governor': (SPEC_MISMATCH, 'the CPU governor changed (info)'),
    'memlock': (SPEC_MISMATCH, 'the test user\'s login memlock limit changed (info)'),
    'no_turbo': (SPEC_MISMATCH, 'intel_pstate no_turbo changed (info)'),
    'gpu_driver': (SPEC_MISMATCH, 'the NVIDIA driver or CUDA version changed (info)'),
    'port_flap': (FAULT, 'a port went down and up: link_downed grew faster than its limit per hour (red)'),
    'symbol_error': (FAULT, 'symbol errors grew faster than their limit per hour (red)'),
    'port_rcv_errors': (FAULT, 'receive errors grew faster than their limit per hour (red)'),
    'pause_frames': (FAULT, 'pause frames grew faster than their limit per hour (red)'),
    'rx_discards_phy': (FAULT, 'physical-port receive discards grew faster than their limit per hour (red)'),
    'xid': (FAULT, 'fatal Xid events (48, 63, 64, 74, 79, 92, 94, 95) came faster than their limit per hour (red)'),
    'xid_other': (FAULT, 'other Xid events came faster than their limit per hour (red)'),
    'ecc_uncorrectable': (FAULT, 'aggregate uncorrectable ECC errors grew faster than their limit per hour (red)'),
    'maintenance': (SPEC_MISMATCH, 'a maintenance record lists a change the current state does not show (info)'),
}
# The check a counter class's findings are named by.
COUNTER_CHECKS = dict((klass, 'port_flap' if klass == 'link_downed' else klass) for klass in base.COUNTER_CLASSES)
_SEVERITY_ORDER = dict((severity, index) for index, severity in enumerate(SEVERITIES))


class DriftError(ValueError):
    """Malformed drift input (a baseline, a current state, the rules, a maintenance record, tolerances); the message
    names the field and what was expected."""


def _type_name(value):
    return 'null' if value is None else type(value).__name__


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------------------------------------------
# Rules, maintenance records and tolerances


def rules_errors(rules):
    """What makes a ``drift_rules`` mapping unusable: plain sentences, empty when fine."""
    if not isinstance(rules, dict):
        return ['drift_rules must be a mapping (tier_profile_resolved.drift_rules), got %s' % _type_name(rules)]
    if 'drift_rules' in rules or 'thresholds' in rules:
        return ['drift_rules must be the drift_rules mapping of the profile (tier_profile_resolved.drift_rules), not the whole profile']
    errors = []
    limits = rules.get('counter_limits_per_hour')
    if not isinstance(limits, dict):
        errors.append('drift_rules.counter_limits_per_hour must be a mapping of counter class (%s) to a limit per hour, got %s'
                      % (', '.join(sorted(base.COUNTER_CLASSES)), _type_name(limits)))
    else:
        for klass in sorted(base.COUNTER_CLASSES):
            value = limits.get(klass)
            if not _is_number(value) or value < 0:
                errors.append('drift_rules.counter_limits_per_hour.%s must be a number >= 0 (counts per hour), got %r' % (klass, value))
        for klass in sorted(set(limits) - set(base.COUNTER_CLASSES), key=str):
            errors.append('drift_rules.counter_limits_per_hour.%s is not a counter class (known: %s)'
                          % (klass, ', '.join(sorted(base.COUNTER_CLASSES))))
    window = rules.get('min_window_hours')
    if not _is_number(window) or window <= 0:
        errors.append('drift_rules.min_window_hours must be a number of hours above 0, got %r' % (window,))
    escalate = rules.get('escalate_checks')
    if not isinstance(escalate, list) or not all(isinstance(item, str) for item in escalate):
        errors.append('drift_rules.escalate_checks must be a list of check names (or []), got %r' % (escalate,))
    else:
        for name in escalate:
            if name not in CHECKS:
                errors.append('drift_rules.escalate_checks names %s, which is not a drift check (known: %s)' % (name, ', '.join(sorted(CHECKS))))
    if 'figure_tolerances' in rules:
        errors.extend(tolerance_errors(rules['figure_tolerances']))
    for key in sorted(set(rules) - set(('counter_limits_per_hour', 'min_window_hours', 'escalate_checks', 'figure_tolerances')), key=str):
        errors.append('drift_rules.%s is not a drift rule (known: counter_limits_per_hour, min_window_hours, escalate_checks, '
                      'figure_tolerances)' % key)
    return errors


def check_rules(rules):
    errors = rules_errors(rules)
    if errors:
        raise DriftError('; '.join(errors))
    return rules


def _tolerance_spec_errors(where, spec):
    if _is_number(spec):
        return [] if spec >= 0 else ['%s must be a percentage >= 0, got %r' % (where, spec)]
    if not isinstance(spec, dict):
        return ['%s must be a percentage or a mapping with pct, abs and by_bytes, got %r' % (where, spec)]
    errors = []
    for key in ('pct', 'abs'):
        if key in spec and (not _is_number(spec[key]) or spec[key] < 0):
            errors.append('%s.%s must be a number >= 0, got %r' % (where, key, spec[key]))
    if 'pct' not in spec and 'abs' not in spec and 'by_bytes' not in spec:
        errors.append('%s needs pct, abs or by_bytes' % where)
    by_bytes = spec.get('by_bytes', {})
    if not isinstance(by_bytes, dict):
        errors.append('%s.by_bytes must be a mapping of message size (bytes) to a tolerance, got %r' % (where, by_bytes))
    else:
        for size in sorted(by_bytes, key=str):
            if not str(size).isdigit():
                errors.append('%s.by_bytes key %r must be a message size in bytes' % (where, size))
            sub = by_bytes[size]
            if isinstance(sub, dict) and 'by_bytes' in sub:
                errors.append('%s.by_bytes.%s cannot have its own by_bytes' % (where, size))
            else:
                errors.extend(_tolerance_spec_errors('%s.by_bytes.%s' % (where, size), sub))
    for key in sorted(set(spec) - set(('pct', 'abs', 'by_bytes')), key=str):
        errors.append('%s.%s is not a tolerance setting (pct, abs, by_bytes)' % (where, key))
    return errors


def tolerance_errors(tolerances):
    """What makes figure tolerances unusable: plain sentences, empty when fine."""
    where = 'figure_tolerances'
    if not isinstance(tolerances, dict):
        return ['%s must be a mapping with default_pct and metrics, got %s' % (where, _type_name(tolerances))]
    errors = []
    default = tolerances.get('default_pct')
    if not _is_number(default) or default < 0:
        errors.append('%s.default_pct must be a percentage >= 0, got %r' % (where, default))
    metrics = tolerances.get('metrics', {})
    if not isinstance(metrics, dict):
        errors.append('%s.metrics must be a mapping of metric name to tolerance, got %s' % (where, _type_name(metrics)))
    else:
        for metric in sorted(metrics, key=str):
            errors.extend(_tolerance_spec_errors('%s.metrics.%s' % (where, metric), metrics[metric]))
    for key in sorted(set(tolerances) - set(('default_pct', 'metrics')), key=str):
        errors.append('%s.%s is not a tolerance setting (default_pct, metrics)' % (where, key))
    return errors


def check_maintenance(maintenance):
    """Maintenance records as a list: ``{reason, changes: [{check, subject, to, from?}]}`` or a list of them.

    ``subject`` may be a shell pattern (``mlx5_*``, ``*``) for a change made to many devices.
    """
    if maintenance is None or maintenance == {} or maintenance == []:
        return []
    records = maintenance if isinstance(maintenance, list) else [maintenance]
    problems = []
    for index, record in enumerate(records):
        where = 'maintenance[%d]' % index if isinstance(maintenance, list) else 'maintenance'
        if not isinstance(record, dict):
            problems.append('%s must be a dict with reason and changes, got %s' % (where, _type_name(record)))
            continue
        if not isinstance(record.get('reason'), str) or not record['reason'].strip():
            problems.append('%s.reason must be non-empty text (why the node was changed), got %r' % (where, record.get('reason')))
        changes = record.get('changes')
        if not isinstance(changes, list) or not changes:
            problems.append('%s.changes must be a non-empty list of {check, subject, to}, got %r' % (where, changes))
            continue
        for number, change in enumerate(changes):
            at = '%s.changes[%d]' % (where, number)
            if not isinstance(change, dict):
                problems.append('%s must be a dict with check, subject and to, got %s' % (at, _type_name(change)))
                continue
            if change.get('check') not in CHECKS:
                problems.append('%s.check must be a drift check (%s), got %r' % (at, ', '.join(sorted(CHECKS)), change.get('check')))
            if not isinstance(change.get('subject'), str) or not change['subject']:
                problems.append('%s.subject must be text (a device, port, token or pattern such as mlx5_*), got %r' % (at, change.get('subject')))
            if 'to' not in change:
                problems.append('%s.to is missing: the value the change made (for example the new firmware version)' % at)
    if problems:
        raise DriftError('; '.join(problems))
    return records


# ---------------------------------------------------------------------------------------------------------------
# Findings


def finding(check, subject, severity, kind, baseline, current, detail, **extra):
    entry = {'check': check, 'subject': subject, 'severity': severity, 'kind': kind, 'baseline': baseline, 'current': current,
             'detail': detail, 'maintenance': None}
    entry.update(extra)
    return entry


def _info(check, subject, baseline, current, detail):
    return finding(check, subject, INFO, CHECKS[check][0], baseline, current, detail)


def _red(check, subject, baseline, current, detail):
    return finding(check, subject, RED, CHECKS[check][0], baseline, current, detail)


def baseline_missing(node, current=None):
    """The one finding of a node without a baseline: red, so that an unmonitored node fails the drift check."""
    return finding('baseline', node or 'node', RED, BASELINE_MISSING, None, (current or {}).get('timestamp') if isinstance(current, dict) else None,
                   '%s has no baseline: nothing to compare its state with. Validate it (validate.yml; bucket A keeps the '
                   'baseline) before it is drift-checked.' % (node or 'the node'))


def run_incomplete(where, why, timestamp=None):
    """The one finding of a node whose drift run broke (unreachable, a task that failed): red, since an accepted node that
    cannot be checked is not known to be what was accepted."""
    where = ' '.join(str(where or 'the run').split())
    why = ' '.join(str(why or 'no reason was recorded').split())
    return finding(RUN_INCOMPLETE, where, RED, RUN_INCOMPLETE, None, timestamp,
                   'the drift run broke at %s (%s): the node\'s state was not compared with its baseline; fix what the message '
                   'names and run the check again' % (where, why))


def _not_captured(subject, side, detail):
    return finding('capture', subject, INFO, NOT_CAPTURED, 'captured' if side == 'current' else None,
                   None if side == 'current' else 'captured', detail)


def _link(speed, width):
    if speed is None and width is None:
        return None
    return '%sGT/s x%s' % (_g(speed), _g(width))


def _g(value):
    if value is None:
        return '?'
    if _is_number(value) and float(value) == int(value):
        return str(int(value))
    return str(value)


def _worse_link(b_speed, b_width, c_speed, c_width):
    return ((_is_number(b_speed) and _is_number(c_speed) and c_speed < b_speed) or
            (_is_number(b_width) and _is_number(c_width) and c_width < b_width))


def _match(baseline_entries, current_entries, by_name=False):
    """[(baseline entry, current entry or None)] by id (then, for NICs, by RDMA device name); and the current entries left over."""
    by_id = dict((e.get('id'), e) for e in current_entries)
    names = dict((e.get('name'), e) for e in current_entries if e.get('name')) if by_name else {}
    used = set()
    pairs = []
    for entry in baseline_entries:
        other = by_id.get(entry.get('id'))
        if other is None and by_name and entry.get('name') and entry.get('present'):
            candidate = names.get(entry['name'])
            # A name match only when the current entry has no PCI address of its own to say otherwise.
            if candidate is not None and (not candidate.get('pci_address') or not entry.get('pci_address')):
                other = candidate
        if other is not None and id(other) in used:
            other = None
        if other is not None:
            used.add(id(other))
        pairs.append((entry, other))
    return pairs, [e for e in current_entries if id(e) not in used]


def _nic_findings(b_nic, c_nic, captured):
    subject = b_nic.get('name') or b_nic.get('pci_address') or b_nic.get('id')
    out = []
    if c_nic is None or c_nic.get('present') is False:
        if b_nic.get('present'):
            why = (c_nic or {}).get('reason') or 'no RDMA device and no PCIe function at %s' % (b_nic.get('pci_address') or 'its address')
            out.append(_red('nic_present', subject, 'present', 'missing', 'NIC %s (%s) is missing: %s' % (subject, b_nic.get('pci_address'), why)))
        return out
    if c_nic.get('present') is None:
        return out
    if not b_nic.get('present'):
        out.append(_info('nic_present', subject, 'missing', 'present', 'NIC %s is present now; the baseline had it missing (%s)'
                         % (subject, b_nic.get('reason'))))
        return out
    if b_nic.get('node_guid') and c_nic.get('node_guid') and b_nic['node_guid'] != c_nic['node_guid']:
        out.append(_info('nic_identity', subject, b_nic['node_guid'], c_nic['node_guid'],
                         'NIC %s node GUID %s -> %s: another card is in its place' % (subject, b_nic['node_guid'], c_nic['node_guid'])))
    c_ports = dict((p.get('port'), p) for p in c_nic.get('ports') or [])
    for b_port in b_nic.get('ports') or []:
        port_subject = '%s/%s' % (subject, b_port.get('port'))
        c_port = c_ports.get(b_port.get('port'))
        if c_port is None:
            if b_port.get('active'):
                out.append(_red('port_state', port_subject, b_port.get('state'), 'missing', 'port %s is gone (it was %s)'
                                % (port_subject, b_port.get('state'))))
            continue
        if b_port.get('active') and not c_port.get('active'):
            detail = 'port %s is %s (%s), it was Active at %s Gb/s' % (port_subject, c_port.get('state'), c_port.get('phys_state'),
                                                                       _g(b_port.get('rate_gbps')))
            out.append(_red('port_state', port_subject, b_port.get('state'), c_port.get('state'), detail))
            continue
        if b_port.get('state') != c_port.get('state'):
            out.append(_info('port_state', port_subject, b_port.get('state'), c_port.get('state'),
                             'port %s state %s -> %s' % (port_subject, b_port.get('state'), c_port.get('state'))))
        b_rate, c_rate = b_port.get('rate_gbps'), c_port.get('rate_gbps')
        if _is_number(b_rate) and _is_number(c_rate) and c_rate != b_rate:
            if c_rate < b_rate and b_port.get('active'):
                out.append(_red('port_rate', port_subject, b_rate, c_rate, 'port %s runs at %s Gb/s, it ran at %s Gb/s (%s -> %s)'
                                % (port_subject, _g(c_rate), _g(b_rate), b_port.get('speed'), c_port.get('speed'))))
            else:
                out.append(_info('port_rate', port_subject, b_rate, c_rate, 'port %s rate %s -> %s Gb/s' % (port_subject, _g(b_rate), _g(c_rate))))
        if b_port.get('link_layer') and c_port.get('link_layer') and b_port['link_layer'] != c_port['link_layer']:
            out.append(_info('port_link_layer', port_subject, b_port['link_layer'], c_port['link_layer'],
                             'port %s link layer %s -> %s' % (port_subject, b_port['link_layer'], c_port['link_layer'])))
    if captured.get('pcie'):
        out.extend(_pcie_findings(subject, b_nic.get('pcie'), c_nic.get('pcie')))
    if captured.get('firmware') or captured.get('rdma'):
        out.extend(_firmware_findings(subject, b_nic, c_nic))
    if captured.get('nic'):
        out.extend(_interface_findings(b_nic, c_nic))
    return out


def _pcie_findings(subject, b_pcie, c_pcie):
    out = []
    if not b_pcie or not c_pcie:
        return out
    hops = [(subject, 'NIC %s' % subject, b_pcie, c_pcie)]
    c_up = dict((h.get('bdf'), h) for h in c_pcie.get('upstream') or [])
    for hop in b_pcie.get('upstream') or []:
        if hop.get('bdf') in c_up:
            hops.append(('%s (upstream %s)' % (subject, hop['bdf']), 'upstream hop %s of NIC %s' % (hop['bdf'], subject), hop, c_up[hop['bdf']]))
    for where, label, b_link, c_link in hops:
        b_sta = _link(b_link.get('lnksta_speed_gts'), b_link.get('lnksta_width'))
        c_sta = _link(c_link.get('lnksta_speed_gts'), c_link.get('lnksta_width'))
        if b_sta and c_sta and b_sta != c_sta:
            if _worse_link(b_link.get('lnksta_speed_gts'), b_link.get('lnksta_width'), c_link.get('lnksta_speed_gts'), c_link.get('lnksta_width')):
                out.append(_red('pcie_link', where, b_sta, c_sta, '%s PCIe LnkSta %s, it was %s (LnkCap %s)'
                                % (label, c_sta, b_sta, _link(c_link.get('lnkcap_speed_gts'), c_link.get('lnkcap_width')))))
            else:
                out.append(_info('pcie_link', where, b_sta, c_sta, '%s PCIe LnkSta %s -> %s' % (label, b_sta, c_sta)))
        b_cap = _link(b_link.get('lnkcap_speed_gts'), b_link.get('lnkcap_width'))
        c_cap = _link(c_link.get('lnkcap_speed_gts'), c_link.get('lnkcap_width'))
        if b_cap and c_cap and b_cap != c_cap:
            out.append(_info('pcie_cap', where, b_cap, c_cap, '%s PCIe LnkCap %s -> %s' % (label, b_cap, c_cap)))
    b_path = [str(h.get('bdf')) for h in b_pcie.get('upstream') or []]
    c_path = [str(h.get('bdf')) for h in c_pcie.get('upstream') or []]
    if b_path != c_path:
        out.append(_info('pcie_path', subject, ' > '.join(b_path) or 'none', ' > '.join(c_path) or 'none',
                         'the bridges above NIC %s changed: %s -> %s' % (subject, ' > '.join(b_path) or 'none', ' > '.join(c_path) or 'none')))
    return out


def _firmware_findings(subject, b_nic, c_nic):
    out = []
    b_fw, c_fw = b_nic.get('firmware') or {}, c_nic.get('firmware') or {}
    if b_fw.get('version') and c_fw.get('version') and b_fw['version'] != c_fw['version']:
        out.append(_info('firmware', subject, b_fw['version'], c_fw['version'],
                         'NIC %s runs firmware %s, it ran %s' % (subject, c_fw['version'], b_fw['version'])))
    if b_fw.get('psid') and c_fw.get('psid') and b_fw['psid'] != c_fw['psid']:
        out.append(_info('firmware_psid', subject, b_fw['psid'], c_fw['psid'], 'NIC %s PSID %s -> %s' % (subject, b_fw['psid'], c_fw['psid'])))
    b_cfg, c_cfg = b_nic.get('mlxconfig'), c_nic.get('mlxconfig')
    if isinstance(b_cfg, dict) and isinstance(c_cfg, dict):
        for name in sorted(set(b_cfg) | set(c_cfg)):
            if b_cfg.get(name) != c_cfg.get(name):
                out.append(_info('mlxconfig', '%s:%s' % (subject, name), b_cfg.get(name), c_cfg.get(name),
                                 'NIC %s mlxconfig %s %s -> %s' % (subject, name, b_cfg.get(name), c_cfg.get(name))))
    b_link, c_link = b_nic.get('link') or {}, c_nic.get('link') or {}
    if b_link.get('fec') and c_link.get('fec') and b_link['fec'] != c_link['fec']:
        out.append(_info('link_fec', subject, b_link['fec'], c_link['fec'], 'NIC %s link FEC %s -> %s' % (subject, b_link['fec'], c_link['fec'])))
    for key, label in (('cable_part_number', 'part number'), ('cable_serial_number', 'serial number')):
        if b_link.get(key) and c_link.get(key) and b_link[key] != c_link[key]:
            out.append(_info('cable', '%s %s' % (subject, key.replace('cable_', '')), b_link[key], c_link[key],
                             'NIC %s cable %s %s -> %s: the cable or module was replaced' % (subject, label, b_link[key], c_link[key])))
    return out


def _interface_findings(b_nic, c_nic):
    out = []
    c_ifaces = dict((i.get('netdev'), i) for i in c_nic.get('interfaces') or [])
    for b_if in b_nic.get('interfaces') or []:
        c_if = c_ifaces.get(b_if.get('netdev'))
        if c_if is None:
            continue
        b_mtu, c_mtu = b_if.get('mtu'), c_if.get('mtu')
        if _is_number(b_mtu) and _is_number(c_mtu) and b_mtu != c_mtu:
            if c_mtu < b_mtu:
                out.append(_red('mtu', b_if['netdev'], b_mtu, c_mtu, '%s MTU %s -> %s: frames above %s bytes no longer fit'
                                % (b_if['netdev'], b_mtu, c_mtu, c_mtu)))
            else:
                out.append(_info('mtu', b_if['netdev'], b_mtu, c_mtu, '%s MTU %s -> %s' % (b_if['netdev'], b_mtu, c_mtu)))
        for check, key, label in (('rx_ring', 'ring_rx', 'RX ring'), ('tx_ring', 'ring_tx', 'TX ring'),
                                  ('channels', 'channels_combined', 'combined channels')):
            if _is_number(b_if.get(key)) and _is_number(c_if.get(key)) and b_if[key] != c_if[key]:
                out.append(_info(check, b_if['netdev'], b_if[key], c_if[key], '%s %s %s -> %s' % (b_if['netdev'], label, b_if[key], c_if[key])))
    return out


def _gpu_findings(b_gpu, c_gpu):
    subject = b_gpu.get('bus_id') or b_gpu.get('id')
    out = []
    if c_gpu is None or c_gpu.get('present') is False:
        if b_gpu.get('present'):
            why = (c_gpu or {}).get('reason') or 'neither nvidia-smi nor the PCIe bus shows it'
            out.append(_red('gpu_present', subject, 'present', 'missing', 'GPU %s (index %s, serial %s) is missing: %s'
                            % (subject, b_gpu.get('index'), b_gpu.get('serial'), why)))
        return out
    if c_gpu.get('present') is None:
        return out
    if not b_gpu.get('present'):
        out.append(_info('gpu_present', subject, 'missing', 'present', 'GPU %s is present now; the baseline had it missing (%s)'
                         % (subject, b_gpu.get('reason'))))
        return out
    for key in ('serial', 'uuid'):
        if b_gpu.get(key) and c_gpu.get(key) and b_gpu[key] != c_gpu[key]:
            out.append(_info('gpu_identity', '%s %s' % (subject, key), b_gpu[key], c_gpu[key],
                             'GPU %s %s %s -> %s: another GPU is in its place' % (subject, key, b_gpu[key], c_gpu[key])))
    if b_gpu.get('ecc_mode') and c_gpu.get('ecc_mode') and b_gpu['ecc_mode'] != c_gpu['ecc_mode']:
        out.append(_info('gpu_ecc_mode', subject, b_gpu['ecc_mode'], c_gpu['ecc_mode'],
                         'GPU %s ECC mode %s -> %s' % (subject, b_gpu['ecc_mode'], c_gpu['ecc_mode'])))
    for check, section, keys in (('gpu_ecc', 'ecc', ('volatile_correctable', 'aggregate_correctable', 'volatile_uncorrectable')),
                                 ('gpu_remapped_rows', 'remapped_rows', ('correctable', 'uncorrectable', 'pending', 'failure')),
                                 ('gpu_retired_pages', 'retired_pages', ('single_bit', 'double_bit', 'pending')),
                                 ('gpu_pcie', 'pcie', ('gen_current', 'gen_max', 'width_current', 'width_max'))):
        b_part, c_part = b_gpu.get(section) or {}, c_gpu.get(section) or {}
        for key in keys:
            if b_part.get(key) is not None and c_part.get(key) is not None and b_part[key] != c_part[key]:
                out.append(_info(check, '%s %s' % (subject, key), b_part[key], c_part[key],
                                 'GPU %s %s %s %s -> %s' % (subject, section.replace('_', ' '), key.replace('_', ' '), b_part[key], c_part[key])))
    return out


def _host_findings(b_host, c_host):
    out = []
    b_tokens, c_tokens = b_host.get('cmdline_tokens'), c_host.get('cmdline_tokens')
    if isinstance(b_tokens, list) and isinstance(c_tokens, list):
        for token in b_tokens:
            if token not in c_tokens:
                out.append(_red('cmdline', token, 'present', 'missing', 'the kernel cmdline lost %s (it has: %s)' % (token, ' '.join(c_tokens))))
        for token in c_tokens:
            if token not in b_tokens:
                out.append(_info('cmdline', token, 'missing', 'present', 'the kernel cmdline gained %s' % token))
    b_mods, c_mods = b_host.get('modules'), c_host.get('modules')
    if isinstance(b_mods, list) and isinstance(c_mods, list):
        for name in b_mods:
            if name not in c_mods:
                out.append(_info('modules', name, 'loaded', 'missing', 'kernel module %s is not loaded any more' % name))
        for name in c_mods:
            if name not in b_mods:
                out.append(_info('modules', name, 'missing', 'loaded', 'kernel module %s is loaded now' % name))
    b_huge, c_huge = b_host.get('hugepages') or {}, c_host.get('hugepages') or {}
    for key, label in (('total', 'HugePages_Total'), ('page_size_kib', 'default hugepage size (kB)')):
        if b_huge.get(key) is not None and c_huge.get(key) is not None and b_huge[key] != c_huge[key]:
            out.append(_info('hugepages', key, b_huge[key], c_huge[key], '%s %s -> %s' % (label, b_huge[key], c_huge[key])))
    b_pools, c_pools = b_huge.get('pools_kib') or {}, c_huge.get('pools_kib') or {}
    for size in sorted(set(b_pools) | set(c_pools), key=lambda s: int(s) if str(s).isdigit() else 0):
        if b_pools.get(size) != c_pools.get(size):
            out.append(_info('hugepages', 'hugepages-%skB' % size, b_pools.get(size), c_pools.get(size),
                             'the %s kB hugepage pool %s -> %s' % (size, b_pools.get(size), c_pools.get(size))))
    b_gov, c_gov = (b_host.get('governor') or {}), (c_host.get('governor') or {})
    if (b_gov.get('uniform') or b_gov.get('counts')) and (c_gov.get('uniform') or c_gov.get('counts')):
        b_text = b_gov.get('uniform') or _counts(b_gov.get('counts'))
        c_text = c_gov.get('uniform') or _counts(c_gov.get('counts'))
        if b_text != c_text:
            out.append(_info('governor', 'cpu', b_text, c_text, 'CPU governor %s -> %s' % (b_text, c_text)))
    b_lock, c_lock = b_host.get('memlock') or {}, c_host.get('memlock') or {}
    if b_lock.get('login_soft_kib') is not None and c_lock.get('login_soft_kib') is not None and b_lock['login_soft_kib'] != c_lock['login_soft_kib']:
        out.append(_info('memlock', 'login', b_lock['login_soft_kib'], c_lock['login_soft_kib'],
                         'the test user\'s login memlock %s -> %s KiB' % (b_lock['login_soft_kib'], c_lock['login_soft_kib'])))
    if b_host.get('no_turbo') is not None and c_host.get('no_turbo') is not None and b_host['no_turbo'] != c_host['no_turbo']:
        out.append(_info('no_turbo', 'cpu', b_host['no_turbo'], c_host['no_turbo'],
                         'intel_pstate no_turbo %s -> %s' % (b_host['no_turbo'], c_host['no_turbo'])))
    for key, label in (('gpu_driver', 'NVIDIA driver'), ('cuda_version', 'CUDA')):
        if b_host.get(key) and c_host.get(key) and b_host[key] != c_host[key]:
            out.append(_info('gpu_driver', key, b_host[key], c_host[key], '%s %s -> %s' % (label, b_host[key], c_host[key])))
    return out


def _counts(counts):
    return ', '.join('%s x%s' % kv for kv in sorted((counts or {}).items())) or None


# ---------------------------------------------------------------------------------------------------------------
# Counters


def _growth(b_counter, c_counter, baseline_seconds):
    """(growth, note) of one counter between the baseline and now."""
    if c_counter.get('source') == 'kernel_log':
        times = c_counter.get('times') or []
        seconds = [base.stamp_seconds(t) for t in times]
        if times and baseline_seconds is not None and all(s is not None for s in seconds):
            return len([s for s in seconds if s > baseline_seconds]), 'events after the baseline'
        return c_counter.get('value') or 0, 'events in the capture\'s kernel log'
    b_value, c_value = b_counter.get('value'), c_counter.get('value')
    if c_value < b_value:
        return c_value, 'the counter went back (%s -> %s: a reboot, driver reload or clear); growth counted from zero' % (b_value, c_value)
    return c_value - b_value, None


def _counter_findings(baseline_doc, current_doc, rules):
    limits = rules['counter_limits_per_hour']
    floor = float(rules['min_window_hours'])
    b_counters = baseline_doc['facts']['counters']
    c_counters = current_doc['facts']['counters']
    b_map = dict(((c.get('source'), c.get('subject'), c.get('counter')), c) for c in b_counters)
    b_sources = set(c.get('source') for c in b_counters)
    c_sources = set(c.get('source') for c in c_counters)
    out = []
    for source in sorted(b_sources - c_sources, key=str):
        out.append(_not_captured('counters:%s' % source, 'current', 'the capture has no %s counters; the baseline has: their growth '
                                 'was not judged (read them in the capture: %s)' % (source, _HOW_TO_READ.get(source, 'see drift.py'))))
    groups = {}
    missing_sources = set()
    for c_counter in c_counters:
        key = (c_counter.get('source'), c_counter.get('subject'), c_counter.get('counter'))
        b_counter = b_map.get(key)
        if b_counter is None:
            if c_counter.get('source') != 'kernel_log' and c_counter.get('source') not in b_sources:
                missing_sources.add(c_counter.get('source'))
                continue
            if c_counter.get('source') != 'kernel_log':
                continue
            b_counter = {'value': 0, 'timestamp': baseline_doc['timestamp_seconds']}
        if not _is_number(b_counter.get('value')) or not _is_number(c_counter.get('value')):
            continue
        growth, note = _growth(b_counter, c_counter, baseline_doc.get('timestamp_seconds'))
        if not growth:
            continue
        b_time = b_counter.get('timestamp') if _is_number(b_counter.get('timestamp')) else baseline_doc['timestamp_seconds']
        c_time = c_counter.get('timestamp') if _is_number(c_counter.get('timestamp')) else current_doc['timestamp_seconds']
        hours = max((c_time - b_time) / 3600.0, 0.0)
        rate = growth / max(hours, floor)
        klass = c_counter.get('class')
        limit = limits.get(klass)
        groups.setdefault((klass, c_counter.get('subject')), []).append({
            'counter': c_counter, 'baseline': b_counter, 'growth': growth, 'hours': hours, 'rate': rate, 'limit': limit, 'note': note})
    for source in sorted(missing_sources, key=str):
        out.append(_not_captured('counters:%s' % source, 'baseline', 'the baseline has no %s counters: their growth since acceptance is '
                                 'unknown until a baseline carries them (%s)' % (source, _HOW_TO_READ.get(source, 'see drift.py'))))
    for (klass, subject), entries in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        check = COUNTER_CHECKS.get(klass, klass)
        worst = max(entries, key=lambda e: (e['limit'] is not None and e['rate'] > e['limit'], e['rate']))
        over = worst['limit'] is not None and worst['rate'] > worst['limit']
        parts = []
        for entry in sorted(entries, key=lambda e: str(e['counter'].get('counter'))):
            note = '; %s' % entry['note'] if entry['note'] else ''
            # Three significant digits: a window of minutes reads as 0.0211 h, not 0.0 h.
            parts.append('%s %s +%s in %.3g h (%s/h%s)' % (entry['counter'].get('source'), entry['counter'].get('counter'),
                                                           _g(entry['growth']), entry['hours'], _rate(entry['rate']), note))
        detail = '%s %s: %s; limit %s/h' % (subject, check.replace('_', ' '), ', '.join(parts), _g(worst['limit']))
        if check == 'port_flap' and over:
            detail = '%s flapped (link down counter grew): %s' % (subject, detail)
        out.append(finding(check, subject, RED if over else INFO, FAULT, worst['baseline'].get('value'), worst['counter'].get('value'), detail,
                           growth=worst['growth'], hours=round(worst['hours'], 3), rate_per_hour=round(worst['rate'], 3),
                           limit_per_hour=worst['limit']))
    return out


def _rate(value):
    return ('%.3f' % value).rstrip('0').rstrip('.') if value < 1000 else '%d' % round(value)


_HOW_TO_READ = {
    'rdma_sysfs': 'rdma_info counters: true',
    'ethtool': 'nic_info counters: true, or the evidence bundle\'s ethtool -S outputs as ethtool_stats',
    'mlxlink': 'mlx_fw_info with mlxlink or mstlink installed',
    'kernel_log': 'gpu_info kernel_log: true',
    'nvidia_smi': 'gpu_info',
}


# ---------------------------------------------------------------------------------------------------------------
# compare


def _same(expected, actual):
    if _is_number(expected) and _is_number(actual):
        return float(expected) == float(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return str(expected).lower() == str(actual).lower()
    return str(expected).strip().lower() == str(actual).strip().lower()


def apply_maintenance(findings, records):
    """Mark findings a maintenance record explains as ``expected``; say so when a listed change did not happen."""
    extra = []
    for record in records:
        reason = record['reason'].strip()
        for change in record['changes']:
            matches = [f for f in findings if f['check'] == change['check'] and fnmatch.fnmatchcase(str(f['subject']), change['subject'])]
            if not matches:
                extra.append(finding('maintenance', change['subject'], INFO, SPEC_MISMATCH, change.get('from'), change['to'],
                                     'the maintenance record (%s) lists %s on %s -> %s, but the current state does not differ from the '
                                     'baseline there' % (reason, change['check'], change['subject'], change['to']), maintenance=reason))
                continue
            for entry in matches:
                if _same(change['to'], entry['current']) and ('from' not in change or _same(change['from'], entry['baseline'])):
                    entry['severity'] = EXPECTED
                    entry['maintenance'] = reason
                    entry['detail'] = '%s (expected: %s)' % (entry['detail'], reason)
                else:
                    entry['detail'] = '%s; the maintenance record (%s) expected %s%s' % (
                        entry['detail'], reason, change['to'], ' from %s' % change['from'] if 'from' in change else '')
    return findings + extra


def _sort(findings):
    return sorted(findings, key=lambda f: (_SEVERITY_ORDER.get(f['severity'], 9), str(f['check']), str(f['subject'])))


def compare(baseline, current, rules, maintenance=None):
    """Findings of one node: its current state against its baseline (see the module docstring).

    ``baseline``: a baseline document, or None / {} for a node without one (one red ``baseline_missing`` finding);
    ``current``: a current-state document (or another baseline); ``rules``: the ``drift_rules`` mapping;
    ``maintenance``: a record ``{reason, changes: [{check, subject, to, from?}]}``, a list of them, or None.
    Raises DriftError naming what is wrong with malformed input.
    """
    rules = check_rules(rules)
    records = check_maintenance(maintenance)
    try:
        base.check_document(current, 'current')
    except base.BaselineError as exc:
        raise DriftError(str(exc))
    if baseline is None or baseline == {}:
        return [baseline_missing(current['node'], current)]
    try:
        base.check_document(baseline, 'baseline')
    except base.BaselineError as exc:
        raise DriftError(str(exc))
    if baseline['node'] != current['node']:
        raise DriftError('baseline is of node %r, the current state of node %r: compare a node with its own baseline'
                         % (baseline['node'], current['node']))
    findings = []
    b_facts, c_facts = baseline['facts'], current['facts']
    for section in base.SECTIONS:
        if b_facts['captured'].get(section) and not c_facts['captured'].get(section):
            findings.append(_not_captured(section, 'current', 'the capture has no %s facts (its module failed or was not run): '
                                          'not compared' % section))
        elif c_facts['captured'].get(section) and not b_facts['captured'].get(section):
            findings.append(_not_captured(section, 'baseline', 'the baseline has no %s facts: not compared' % section))
    b_ref, c_ref = baseline.get('profile') or {}, current.get('profile') or {}
    if baseline.get('tier') and current.get('tier') and baseline['tier'] != current['tier']:
        findings.append(_info('profile', 'tier', baseline['tier'], current['tier'], 'the node\'s tier %s -> %s' % (baseline['tier'], current['tier'])))
    elif b_ref.get('digest') and c_ref.get('digest') and b_ref['digest'] != c_ref['digest']:
        findings.append(_info('profile', 'digest', b_ref.get('version') or b_ref['digest'], c_ref.get('version') or c_ref['digest'],
                              'the tier profile changed since the baseline was judged against it (%s -> %s)'
                              % (b_ref.get('version') or b_ref['digest'][:19], c_ref.get('version') or c_ref['digest'][:19])))
    captured = dict((s, bool(b_facts['captured'].get(s) and c_facts['captured'].get(s))) for s in base.SECTIONS)
    if captured['rdma']:
        pairs, new = _match(b_facts['nics'], c_facts['nics'], by_name=True)
        for b_nic, c_nic in pairs:
            findings.extend(_nic_findings(b_nic, c_nic, captured))
        for c_nic in new:
            if c_nic.get('present'):
                findings.append(_info('nic_present', c_nic.get('name') or c_nic.get('id'), 'absent', 'present',
                                      'NIC %s (%s) is new since the baseline' % (c_nic.get('name'), c_nic.get('pci_address'))))
    if captured['gpu']:
        pairs, new = _match(b_facts['gpus'], c_facts['gpus'])
        for b_gpu, c_gpu in pairs:
            findings.extend(_gpu_findings(b_gpu, c_gpu))
        for c_gpu in new:
            if c_gpu.get('present'):
                findings.append(_info('gpu_present', c_gpu.get('bus_id') or c_gpu.get('id'), 'absent', 'present',
                                      'GPU %s (serial %s) is new since the baseline' % (c_gpu.get('bus_id'), c_gpu.get('serial'))))
    if isinstance(b_facts.get('host'), dict) and isinstance(c_facts.get('host'), dict):
        findings.extend(_host_findings(b_facts['host'], c_facts['host']))
    findings.extend(_counter_findings(baseline, current, rules))
    for entry in findings:
        if entry['severity'] == INFO and entry['check'] in rules['escalate_checks']:
            entry['severity'] = RED
            entry['detail'] = '%s (red: drift_rules.escalate_checks lists %s)' % (entry['detail'], entry['check'])
    return _sort(apply_maintenance(findings, records))


def counts(findings):
    """{red, expected, info}: how many findings of each severity."""
    out = dict((severity, 0) for severity in SEVERITIES)
    for entry in findings or []:
        out[entry.get('severity')] = out.get(entry.get('severity'), 0) + 1
    return out


# ---------------------------------------------------------------------------------------------------------------
# Re-validation figures


def _figures(value, what):
    if isinstance(value, dict) and value.get('schema') == base.SCHEMA:
        try:
            return base.check_document(value, what)['figures']
        except base.BaselineError as exc:
            raise DriftError(str(exc))
    if isinstance(value, dict) and 'tests' in value:
        try:
            return base.figures_from_result(value)
        except base.BaselineError as exc:
            raise DriftError('%s: %s' % (what, exc))
    if not isinstance(value, list):
        raise DriftError('%s must be a list of figures, a baseline document or a node result (with tests), got %s' % (what, _type_name(value)))
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise DriftError('%s[%d] must be a dict (a figure with metric, subject and value), got %s' % (what, index, _type_name(entry)))
        if not isinstance(entry.get('metric'), str):
            raise DriftError('%s[%d].metric must be text, got %r' % (what, index, entry.get('metric')))
        problems = base.field_problems('%s[%d]' % (what, index), entry, base.FIGURE_FIELDS)
        if problems:
            raise DriftError('; '.join(problems))
    return value


def _key(figure):
    return (figure.get('metric'), str(figure.get('subject')), figure.get('bytes'))


def _samples(entries):
    samples = []
    for entry in entries:
        values = [s for s in entry.get('samples') or [] if _is_number(s)]
        if not values and _is_number(entry.get('value')):
            values = [entry['value']]
        samples.extend(values)
    return samples


def _tolerance(tolerances, metric, size):
    """(pct, abs) for ``metric`` at message size ``size``."""
    spec = (tolerances.get('metrics') or {}).get(metric, tolerances['default_pct'])
    if _is_number(spec):
        return float(spec), 0.0
    pct = spec.get('pct', tolerances['default_pct'])
    absolute = spec.get('abs', 0)
    by_bytes = spec.get('by_bytes') or {}
    sub = by_bytes.get(str(size), by_bytes.get(size)) if size is not None else None
    if _is_number(sub):
        pct = sub
    elif isinstance(sub, dict):
        pct, absolute = sub.get('pct', pct), sub.get('abs', absolute)
    return float(pct), float(absolute)


def _spread(samples):
    if len(samples) < 2:
        return None, None
    mean = sum(samples) / len(samples)
    width = max(samples) - min(samples)
    return width, (width / abs(mean) * 100.0 if mean else None)


def _mean(samples):
    return sum(samples) / len(samples) if samples else None


def _round(value, digits=3):
    return None if value is None else round(value, digits)


def compare_figures(baseline_figures, new_figures, tolerances):
    """Rows of a delta table: each baseline figure against the re-validation's, per metric, subject and message size.

    ``baseline_figures`` / ``new_figures``: lists of figures (baseline.figures_from_result), a baseline document or a
    node result.  Repeated figures of one key (or a figure's ``samples``) are samples: their mean is compared.
    ``verdict``: ``regression`` (worse than the baseline by more than the tolerance, whatever the new figure's grade),
    ``improved``, ``within``, ``inconclusive`` (the samples spread wider than the tolerance), ``missing`` (no new
    figure) or ``new`` (no baseline figure).  ``tolerances``: {default_pct, metrics: {metric: pct | {pct, abs, by_bytes}}}.
    """
    errors = tolerance_errors(tolerances)
    if errors:
        raise DriftError('; '.join(errors))
    old = _figures(baseline_figures, 'baseline figures')
    new = _figures(new_figures, 'new figures')
    old_groups, new_groups = {}, {}
    for entry in old:
        old_groups.setdefault(_key(entry), []).append(entry)
    for entry in new:
        new_groups.setdefault(_key(entry), []).append(entry)
    rows = []
    for key in sorted(set(old_groups) | set(new_groups), key=lambda k: (str(k[0]), str(k[1]), k[2] or 0)):
        b_entries, n_entries = old_groups.get(key, []), new_groups.get(key, [])
        first = (b_entries or n_entries)[0]
        size = first.get('size') if first.get('size') is not None else key[2]
        pct, absolute = _tolerance(tolerances, key[0], size)
        b_samples, n_samples = _samples(b_entries), _samples(n_entries)
        b_value, n_value = _mean(b_samples), _mean(n_samples)
        b_width, b_spread = _spread(b_samples)
        n_width, n_spread = _spread(n_samples)
        better = first.get('better') or 'higher'
        row = {'test': first.get('test'), 'metric': key[0], 'subject': first.get('subject'), 'bytes': key[2], 'size': size,
               'unit': first.get('unit'), 'better': better,
               'peer_baseline': b_entries[0].get('peer') if b_entries else None, 'peer_new': n_entries[0].get('peer') if n_entries else None,
               'baseline': _round(b_value, 6), 'new': _round(n_value, 6), 'delta': None, 'delta_pct': None,
               'tolerance_pct': pct, 'tolerance_abs': absolute, 'spread_pct': _round(n_spread), 'baseline_spread_pct': _round(b_spread),
               'samples_baseline': len(b_samples), 'samples_new': len(n_samples),
               'status_new': n_entries[0].get('status') if n_entries else None, 'verdict': None, 'detail': None}
        label = '%s %s%s' % (key[0], first.get('subject'), ' at %s bytes' % key[2] if key[2] is not None else '')
        if n_value is None:
            row.update(verdict='missing', detail='%s: the re-validation has no figure (baseline %s %s)' % (label, _g(_round(b_value)), row['unit'] or ''))
            rows.append(row)
            continue
        if b_value is None:
            row.update(verdict='new', detail='%s: %s %s, the baseline has no figure' % (label, _g(_round(n_value)), row['unit'] or ''))
            rows.append(row)
            continue
        delta = n_value - b_value
        delta_pct = delta / abs(b_value) * 100.0 if b_value else None
        row.update(delta=_round(delta, 6), delta_pct=_round(delta_pct))
        noisy = [(name, width, spread) for name, width, spread in (('new', n_width, n_spread), ('baseline', b_width, b_spread))
                 if width is not None and ((spread is not None and spread > pct) or (spread is None and width > absolute))]
        if noisy:
            row.update(verdict='inconclusive', detail='%s: the %s samples spread %s, more than the %s%% tolerance: re-measure' % (
                label, noisy[0][0], '%s%%' % _g(_round(noisy[0][2])) if noisy[0][2] is not None else _g(_round(noisy[0][1])), _g(pct)))
            rows.append(row)
            continue
        within = abs(delta) <= absolute or (delta_pct is not None and abs(delta_pct) <= pct) or (delta == 0)
        worse = delta < 0 if better == 'higher' else delta > 0
        verdict = 'within' if within else ('regression' if worse else 'improved')
        change = '%+g %s' % (delta, row['unit'] or '') if delta_pct is None else '%+.2f%%' % float(delta_pct)
        also = ' or %s' % _g(absolute) if absolute else ''
        detail = '%s: %s -> %s %s (%s, tolerance %s%%%s)' % (label, _g(_round(b_value)), _g(_round(n_value)), row['unit'] or '', change,
                                                             _g(pct), also)
        if verdict == 'regression' and row['status_new'] == 'healthy':
            detail += '; a regression although the new figure still passes the tier'
        if row['peer_baseline'] and row['peer_new'] and row['peer_baseline'] != row['peer_new']:
            detail += '; measured against %s, the baseline against %s' % (row['peer_new'], row['peer_baseline'])
        row.update(verdict=verdict, detail=detail)
        rows.append(row)
    return rows


_FIGURE_SEVERITY = {'regression': (RED, FAULT), 'improved': (INFO, FAULT), 'inconclusive': (INFO, NOT_CAPTURED),
                    'missing': (INFO, NOT_CAPTURED), 'new': (INFO, NOT_CAPTURED)}


def figure_findings(rows):
    """Findings for the rows of compare_figures that are not ``within``: a regression is red; the check is the metric."""
    out = []
    for row in rows:
        if row.get('verdict') not in _FIGURE_SEVERITY:
            continue
        severity, kind = _FIGURE_SEVERITY[row['verdict']]
        subject = '%s%s' % (row.get('subject'), '@%s' % row['bytes'] if row.get('bytes') is not None else '')
        out.append(finding(row['metric'], subject, severity, kind, row.get('baseline'), row.get('new'), row.get('detail'),
                           verdict=row['verdict'], delta_pct=row.get('delta_pct')))
    return _sort(out)
