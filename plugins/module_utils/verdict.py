# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn measurements and preflight findings into verdicts an operator can act on.

Pure functions, no Ansible import.  Thresholds are never literals here: they
come from the tier profile (data), one entry per metric:

    ib_send_bw_gbs: {healthy: [46, 48], reject_below: 42, unit: GB/s, direction: one-way}
    ib_write_lat_us: {healthy: [null, 3], reject_above: 10, unit: us, direction: one-way}

A value inside the healthy range is ``healthy``; past the reject threshold it
is ``reject``; in between it is ``marginal``.  The healthy upper bound of a
higher-is-better metric (and the lower bound of a lower-is-better one) is
informational: beating the contract is not a fault.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

HEALTHY = 'healthy'
MARGINAL = 'marginal'
REJECT = 'reject'
UNKNOWN = 'unknown'
# A measurement the profile sets no threshold for: recorded, not graded.
INFO = 'info'

BUCKET_ACCEPT = 'A'
BUCKET_INVESTIGATE = 'B'
BUCKET_RETURN = 'C'


class ThresholdError(ValueError):
    """A threshold entry in the profile is malformed; the message names the metric."""


def _number(metric, field, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ThresholdError('threshold %s.%s must be a number or null, got %r' % (metric, field, value))
    return float(value)


def threshold_direction(metric, threshold):
    """'higher' when bigger is better (bandwidth), 'lower' when smaller is better (latency, loss)."""
    has_below = 'reject_below' in threshold
    has_above = 'reject_above' in threshold
    if has_below == has_above:
        raise ThresholdError('threshold %s needs exactly one of reject_below / reject_above' % metric)
    return 'higher' if has_below else 'lower'


def classify(metric, value, threshold):
    """healthy / marginal / reject / unknown for one value against one threshold entry."""
    if not isinstance(threshold, dict):
        raise ThresholdError('threshold %s must be a mapping' % metric)
    direction = threshold_direction(metric, threshold)
    healthy = threshold.get('healthy') or [None, None]
    if not isinstance(healthy, (list, tuple)) or len(healthy) != 2:
        raise ThresholdError('threshold %s.healthy must be [low, high]' % metric)
    low = _number(metric, 'healthy[0]', healthy[0])
    high = _number(metric, 'healthy[1]', healthy[1])
    if value is None:
        return UNKNOWN
    value = float(value)
    if direction == 'higher':
        reject_below = _number(metric, 'reject_below', threshold['reject_below'])
        if low is None:
            raise ThresholdError('threshold %s: a higher-is-better metric needs healthy[0]' % metric)
        if value >= low:
            return HEALTHY
        if reject_below is not None and value < reject_below:
            return REJECT
        return MARGINAL
    reject_above = _number(metric, 'reject_above', threshold['reject_above'])
    if high is None:
        raise ThresholdError('threshold %s: a lower-is-better metric needs healthy[1]' % metric)
    if value <= high:
        return HEALTHY
    if reject_above is not None and value > reject_above:
        return REJECT
    return MARGINAL


def describe_threshold(metric, threshold):
    """Human text such as 'healthy >= 46 GB/s (46-48), reject < 42 GB/s, one-way'."""
    unit = threshold.get('unit', '')
    low, high = (threshold.get('healthy') or [None, None])
    direction = threshold.get('direction', 'one-way')
    if threshold_direction(metric, threshold) == 'higher':
        text = 'healthy >= %s %s' % (_fmt(low), unit)
        if high is not None:
            text += ' (%s-%s)' % (_fmt(low), _fmt(high))
        if threshold.get('reject_below') is not None:
            text += ', reject < %s %s' % (_fmt(threshold['reject_below']), unit)
    else:
        text = 'healthy <= %s %s' % (_fmt(high), unit)
        if threshold.get('reject_above') is not None:
            text += ', reject > %s %s' % (_fmt(threshold['reject_above']), unit)
    return '%s, %s' % (text.replace('  ', ' ').strip(), direction)


def _fmt(value):
    if value is None:
        return '-'
    if float(value) == int(value):
        return str(int(value))
    return ('%.3f' % value).rstrip('0').rstrip('.')


def grade_measurements(measurements, thresholds):
    """Grade each measurement against its metric's threshold.

    ``measurements``: [{id, metric, subject, value, unit, as_printed, cmd, peer, error}]
    Returns the same dicts with ``status``, ``threshold`` and ``expected`` added.
    A measurement whose test could not run (``error`` set, value None) is a reject
    when ``fail_is_reject`` is true on the measurement, else unknown.
    """
    graded = []
    for item in measurements:
        entry = dict(item)
        metric = entry.get('metric')
        threshold = thresholds.get(metric)
        if entry.get('preset_status'):
            # Tools that grade themselves (dcgmi diag pass/warn/fail).
            entry['status'] = entry['preset_status']
            entry['expected'] = 'pass'
        elif threshold is None:
            entry['status'] = INFO
            entry['expected'] = 'no threshold for %s in this profile' % metric
        else:
            entry['status'] = classify(metric, entry.get('value'), threshold)
            entry['expected'] = describe_threshold(metric, threshold)
            entry['threshold'] = threshold
        if entry.get('value') is None and entry.get('error') and entry.get('fail_is_reject', True):
            entry['status'] = REJECT
        graded.append(entry)
    return graded


def bucket_for(statuses):
    """A when every status is healthy, C when any is reject, else B."""
    statuses = [s for s in statuses if s != INFO]
    if any(status == REJECT for status in statuses):
        return BUCKET_RETURN
    if all(status == HEALTHY for status in statuses):
        return BUCKET_ACCEPT
    return BUCKET_INVESTIGATE


def _by_metric(graded, prefix):
    return [m for m in graded if str(m.get('metric', '')).startswith(prefix)]


def _healthy_low(item):
    threshold = item.get('threshold') or {}
    healthy = threshold.get('healthy') or [None, None]
    return healthy[0]


def likely_causes(graded, findings, context=None):
    """The likely causes, from the pattern of results (the runbook's failure modes).

    ``findings``: preflight findings [{check, subject, status: ok|marginal|reject, detail, ...}].
    ``context``: {nccl_transport, host: {governor, hugepages_total, ...}, pcie: {subject: finding}}.
    Returns a list of {cause, detail, subjects} ordered by severity.
    """
    context = context or {}
    causes = []

    def add(cause, detail, subjects=()):
        causes.append({'cause': cause, 'detail': detail, 'subjects': sorted(set(subjects))})

    bad_findings = [f for f in findings if f.get('status') in (REJECT, MARGINAL)]
    by_check = {}
    for finding in bad_findings:
        by_check.setdefault(finding.get('check'), []).append(finding)

    gpu_bad = by_check.get('gpu_count', []) + by_check.get('gpu_xid', []) + by_check.get('gpu_ecc', [])
    if gpu_bad:
        add('gpu_hardware',
            'GPU hardware: %s. A GPU that fell off the bus or has ECC errors at delivery is a hardware fault '
            '(PCIe slot or riser, PSU rail, thermal trip, firmware); return the node.'
            % '; '.join(f.get('detail', '').rstrip('.') for f in gpu_bad),
            [f.get('subject') for f in gpu_bad])
    if by_check.get('dcgmi_diag'):
        add('gpu_diagnostics', 'dcgmi diag failed: %s' % '; '.join(f.get('detail', '') for f in by_check['dcgmi_diag']),
            [f.get('subject') for f in by_check['dcgmi_diag']])
    if by_check.get('link_flap'):
        add('link_instability',
            'Link instability during validation: %s. Replace the cable/transceiver; if it persists, return the node.'
            % '; '.join(f.get('detail', '') for f in by_check['link_flap']),
            [f.get('subject') for f in by_check['link_flap']])
    if by_check.get('port_state') or by_check.get('port_rate'):
        items = by_check.get('port_state', []) + by_check.get('port_rate', [])
        add('nic_link', 'RDMA ports not Active at the expected rate: %s (NIC, cable or firmware).'
            % '; '.join(f.get('detail', '') for f in items), [f.get('subject') for f in items])

    rdma = [m for m in graded if m.get('metric') in ('ib_send_bw_gbs', 'ib_write_bw_gbs', 'ib_write_bw_gbps', 'ib_read_bw_gbs')
            and m.get('value') is not None]
    slow = [m for m in rdma if m['status'] != HEALTHY]
    pcie_bad = dict((f.get('subject'), f) for f in by_check.get('pcie_link', []))
    for finding in by_check.get('pcie_link', []):
        add('pcie_link', 'PCIe link of %s: %s' % (finding.get('subject'), finding.get('detail')), [finding.get('subject')])

    ratios = []
    for item in rdma:
        low = _healthy_low(item)
        if low:
            ratios.append(float(item['value']) / float(low))
    if rdma and slow:
        if len(slow) == len(rdma) and len(rdma) > 1:
            mean_ratio = sum(ratios) / len(ratios) if ratios else None
            spread = (max(ratios) - min(ratios)) if ratios else None
            if mean_ratio is not None and spread is not None and spread < 0.08 and mean_ratio >= 0.75:
                tuning = [f for f in bad_findings if f.get('check') in ('cmdline', 'hugepages', 'governor', 'no_turbo', 'memlock')]
                detail = ('every NIC is about %d%% below the healthy range (%s): a platform-wide cause, not one NIC. '
                          'Check the kernel cmdline, the hugepage pool, the CPU governor, the BIOS power profile and NUMA pinning.'
                          % (round((1 - mean_ratio) * 100), ', '.join('%s %.1f' % (m.get('subject'), m['value']) for m in rdma)))
                if tuning:
                    detail += ' Found: %s.' % '; '.join(f.get('detail', '') for f in tuning)
                add('platform_tuning', detail, [m.get('subject') for m in rdma])
            elif not any(m.get('metric') == 'ib_write_bw_gbps' and m['status'] == REJECT for m in rdma):
                # (a throttled RoCE pair gets its own, more specific cause below)
                add('rdma_all_slow', 'every NIC is below the healthy range: %s'
                    % ', '.join('%s %.1f' % (m.get('subject'), m['value']) for m in rdma), [m.get('subject') for m in rdma])
        else:
            for item in slow:
                subject = item.get('subject')
                detail = ('%s is slow (%s %s) while the other NICs are healthy: check its PCIe link (lspci LnkSta), '
                          'the cable, mlxlink BER and the switch port.' % (subject, _fmt(item['value']), item.get('unit', '')))
                if subject in pcie_bad:
                    detail += ' Its PCIe link is below what the NIC and its slot can do (%s), which explains it.' % (
                        pcie_bad[subject].get('actual') or 'see the PCIe finding')
                add('single_nic_slow', detail, [subject])

    iperf = [m for m in graded if m.get('metric') == 'iperf3_gbps' and m.get('value') is not None]
    platform = any(c['cause'] == 'platform_tuning' for c in causes)
    if iperf and not platform and all(m['status'] == HEALTHY for m in iperf) and slow and len(slow) == len(rdma) and len(rdma) > 0:
        add('rdma_specific', 'TCP (iperf3) is healthy but RDMA is slow: check memlock limits (ulimit -l unlimited), '
            'the GID index (show_gids: RoCE v2 with IPv4), and PFC/pause counters on the switch.',
            [m.get('subject') for m in slow])

    throttle = [m for m in graded if m.get('metric') == 'ib_write_bw_gbps' and m.get('value') is not None
                and m['status'] == REJECT]
    for item in throttle:
        add('firmware_throttle', '%s runs at %s Gb/s per rail (%s): the ConnectX-7 firmware-throttle trap. '
            'Update the NIC firmware and fully power-drain the NIC (not just a reboot), then re-test.'
            % (item.get('subject'), _fmt(item['value']), describe_threshold(item['metric'], item['threshold'])), [item.get('subject')])

    transport = context.get('nccl_transport')
    if transport == 'Socket':
        add('nccl_socket_fallback', 'NCCL ran over NET/Socket (a silent TCP fallback), not NET/IB: check NCCL_IB_HCA '
            '(both boxes\' device names), NCCL_NET_PLUGIN=none, NCCL_IB_GID_INDEX and that the RDMA devices are Active.',
            ['nccl'])
    gdr = [m for m in graded if m.get('metric') == 'gdr_bw_gbs' and m['status'] != HEALTHY]
    if gdr and not slow:
        add('gdr', 'GPUDirect RDMA is slow or failing while host-memory RDMA is fine: check nvidia_peermem is loaded, '
            'reboot and re-test.', [m.get('subject') for m in gdr])
    pause = [m for m in graded if m.get('metric') == 'pause_per_s' and m['status'] != HEALTHY]
    if pause:
        add('pfc_pause', 'Pause/PFC counters grew fast during the sustained test (%s): the switch is not draining; '
            'check PFC configuration on the switch.' % ', '.join('%s %s/s' % (m.get('subject'), _fmt(m['value'])) for m in pause),
            [m.get('subject') for m in pause])
    tuning_only = [f for f in bad_findings if f.get('check') in ('cmdline', 'hugepages', 'governor', 'no_turbo', 'memlock',
                                                                 'modules', 'cqe_compression', 'rx_ring', 'channels', 'firmware')]
    if tuning_only and not any(c['cause'] == 'platform_tuning' for c in causes):
        add('host_configuration', 'Host configuration differs from the profile: %s'
            % '; '.join(f.get('detail', '') for f in tuning_only), [f.get('subject') for f in tuning_only])
    return causes


def node_verdict(measurements, findings, thresholds, context=None):
    """The whole verdict for one node.

    Returns {bucket, tests: [...graded measurements and findings...], causes: [...], counts: {healthy, marginal, reject, unknown}}.
    """
    graded = grade_measurements(measurements, thresholds)
    statuses = [m['status'] for m in graded] + [f.get('status', UNKNOWN) for f in findings]
    statuses = [HEALTHY if s == 'ok' else s for s in statuses]
    counts = {HEALTHY: 0, MARGINAL: 0, REJECT: 0, UNKNOWN: 0, INFO: 0}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return {
        'bucket': bucket_for(statuses),
        'tests': graded,
        'findings': list(findings),
        'causes': likely_causes(graded, findings, context),
        'counts': counts,
    }
