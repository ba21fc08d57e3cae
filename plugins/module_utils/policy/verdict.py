# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn measurements and preflight findings into verdicts an operator can act on.

Pure functions, no Ansible import.  Every number the policy uses is data in
the resolved tier profile: ``thresholds`` grade each figure, ``cause_rules``
hold the ratios the likely-cause rules compare with, ``tests`` say what the
tier enables.  A threshold entry, one per metric:

    ib_send_bw_gbs: {healthy: [46, 48], reject_below: 42, unit: GB/s, direction: one-way}
    ib_write_lat_us: {healthy: [null, 3], reject_above: 10, unit: us, direction: one-way}

A value inside the healthy range is ``healthy``; past the reject threshold it
is ``reject``; in between it is ``marginal``.  The healthy upper bound of a
higher-is-better metric (and the lower bound of a lower-is-better one) is
informational: beating the contract is not a fault.

One status vocabulary for preflight findings and graded figures:
healthy / marginal / reject / unknown (plus ``info``: recorded, not graded).

"Could not measure" is never the provider's fault.  A figure whose test did
not run, did not finish or gave unreadable output is ``unknown``, whichever
side failed: the node goes to bucket B with a cause that says what to fix.
A failure the module pins on the node (``error_side: node``) is also
``unknown``, with a cause that points at the node; it never rejects, because
a test that could not run proves no shortfall.  Rejects (bucket C, a vendor
letter) come only from measured figures and measured facts.

Only a line the seeds or the operator's contract state may send a node back:
every threshold says where it comes from (``source``).  A figure past a reject
line this project chose (``source: 'project: ...'``) is ``marginal`` with
``reject_line: project`` and the cause ``project_line`` (investigate, bucket B);
a contract adopts such a line by giving it a source of its own
(``source: contract ...``).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
from collections import namedtuple
from collections.abc import Mapping

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import figure_text
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import failure_text
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import combine_repeats

HEALTHY = 'healthy'
MARGINAL = 'marginal'
REJECT = 'reject'
UNKNOWN = 'unknown'
STATUSES = (HEALTHY, MARGINAL, REJECT, UNKNOWN)
# A measurement the profile sets no threshold for: recorded, not graded.
INFO = 'info'
BAD = (MARGINAL, REJECT)
GRADED = (HEALTHY, MARGINAL, REJECT)

BUCKET_ACCEPT = 'A'
BUCKET_INVESTIGATE = 'B'
BUCKET_RETURN = 'C'

# Who a failed test's ``error_side`` blames: our tooling and the known-good peer, the node, or nobody yet.
SIDE_OURS = 'ours'
SIDE_NODE = 'node'

# The graded entry for the transport NCCL used (from its NCCL_DEBUG=INFO log), not a catalogue metric.
NCCL_TRANSPORT = 'nccl_transport'
# The finding and cause of a node whose run broke (unreachable, a task that failed, a crash of our own code).
RUN_INCOMPLETE = 'run_incomplete'
NCCL_TEST = 'nccl'
# nccl-tests' count of wrong results: its own cause, apart from the nccl family's bandwidth and time.
NCCL_WRONG = 'nccl_wrong'
# A figure that meets the contract but lies far below its siblings' (policy/fleet.py marks it): marginal, bucket B, never C.
FLEET_OUTLIER = 'fleet_outlier'
# How many HCAs NCCL used on the node: graded against the rails the run tested (its own cause, nccl_rails).
NCCL_HCAS = 'nccl_hcas_used'
NCCL_BUSBW = 'nccl_busbw_gbs'
# The graded entry for GPUDirect RDMA in NCCL's run (tests.nccl.require_gdr), not a catalogue metric.
NCCL_GDR = 'nccl_gdr'
# nccl family figures that are counts, not throughput a slow NIC or platform drags down.
NCCL_COUNTS = (NCCL_WRONG, NCCL_HCAS)
# The per-HCA families: a node whose figures here are all healthy has proven each rail usable on its own.
PER_HCA_FAMILIES = ('rdma_bw', 'gdr_bw')

# Preflight checks (plugins/module_utils/policy/preflight.py) each cause reads.  A check in no group is still
# named, by the catch-all rule, when it is marginal or reject.
GPU_HARDWARE_CHECKS = ('gpu_count', 'gpu_xid', 'gpu_ecc')
GPU_MEMORY_WEAR_CHECKS = ('gpu_ecc_correctable', 'gpu_pages_pending')
NIC_LINK_CHECKS = ('port_state', 'port_rate', 'nic_count')
LINK_QUALITY_CHECKS = ('link_fec', 'link_ber')
# What the GPU tests need on the node (preflight.check_gpudirect and the GPU prerequisite checks): each its own cause.
GPU_PREREQUISITE_CHECKS = ('gdr_mode', 'dcgm_hostengine', 'fabric_manager', 'persistence_mode', 'pcie_acs')
# The error_class of a figure the plan did not run because a GPU prerequisite failed (its cause is that prerequisite's).
GPU_PREREQUISITE = 'gpu_prerequisite'
PLATFORM_TUNING_CHECKS = ('cmdline', 'hugepages', 'hugepages_cmdline', 'governor', 'no_turbo', 'memlock', 'thermal_throttle')
HOST_CONFIGURATION_CHECKS = PLATFORM_TUNING_CHECKS + ('modules', 'cqe_compression', 'rx_ring', 'channels', 'firmware_min_version',
                                                      'firmware_uniform', 'roce_v2_gid', 'irq_locality')

# Families whose figures a slow NIC or a slow platform drags down with it.
THROUGHPUT_FAMILIES = ('gdr_bw', 'aggregate_bw', 'tcp', 'nccl')

# What to fix on our side, by the failure class the modules report.
OUR_SIDE_FIXES = {
    'tool_missing': 'install the missing tool named above on the host that lacks it',
    'connect_failed': 'check that our test server started on the receiving side, the address and port, and that no firewall is in between',
    'port_in_use': 'free the port (stop the leftover test server) or let the test plan use another port',
    'timeout': 'our time limit ran out: check that the peer is alive and reachable, and that the timeout fits the test duration',
    'peer_unreachable': 'check the known-good peer (SSH, an Active RDMA port) or re-run against another peer',
    'parse_error': 'the tool\'s output could not be read: keep the raw output from the evidence bundle and report it against the parser',
    'not_measured': 'the test plan expected this figure but no test produced it: check the tier_tests run log',
    'transport_unknown': 'run nccl-tests with NCCL_DEBUG=INFO so the log names NET/IB or NET/Socket',
    # The launcher of the NCCL test (Open MPI over SSH from the node to the peer): ours to set up, never the node's fault.
    'launcher_unreachable': 'the node could not open the launcher\'s SSH session to the peer: check the peer\'s address '
                            '(netval_mpi_address), its SSH host keys (netval_ssh_host_keys) and that sshd accepts the test '
                            'user\'s key; or give the node trust of its own (netval_nccl_launcher_trust: false)',
    'launcher_missing': 'install Open MPI and nccl-tests where the launcher looks for them on both boxes, or point netval_mpirun '
                        '(an absolute path: Open MPI starts orted under the same prefix on the peer) and netval_nccl_binary at them',
    'launcher_failed': 'mpirun could not start the job on both boxes: read the message (orted, the hostfile, Open MPI\'s out-of-band '
                       'network); check netval_mpirun, netval_mpirun_args and netval_fabric_subnet',
    'nccl_socket_unproven': 'NCCL fell back to NET/Socket and the node\'s per-HCA RDMA tests did not prove IB usable: fix what they '
                            'report first; then check NCCL_IB_HCA, the GID index and NCCL_NET_PLUGIN and re-run',
    'gdr_unknown': 'run nccl-tests with NCCL_DEBUG=INFO so the log says whether NCCL used GPUDirect RDMA (GDRDMA)',
    # dcgmi diag -r N where only the software checks ran: the level could not run, which proves nothing about the GPUs.
    'diag_level_not_run': 'the dcgmi level could not run (its hardware and stress tests were all skipped): install the DCGM '
                          'release and diag package that support these GPUs, free the GPUs (no other process, persistence mode on) '
                          'and re-run the tier\'s dcgmi level',
    # The plan knew up front (its reason says why): nothing to fix in the run itself.
    'not_measurable': 'the test plan could not include it; resolve the reason given, then re-run',
    'cpu_bound': 'the iperf3 processes ran out of CPU, so the figure measures the CPU and not the link: run more processes '
                 '(tests.iperf3.processes) pinned to the NIC\'s NUMA cores, iperf3 3.16 or later (one thread per stream), '
                 'the performance governor, then re-run',
    'counters_unavailable': 'the port counters could not be read before and after the test on both boxes: check rdma_info / '
                            'ethtool -S on the box named, then re-run',
}
DEFAULT_OUR_SIDE_FIX = 'read the error, fix the test setup on our side and re-run'


class ThresholdError(ValueError):
    """A threshold or cause-rule entry in the profile is malformed; the message names the key."""


# ---------------------------------------------------------------------------------------------------------------
# Thresholds


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


def _limits(metric, threshold):
    """(direction, healthy floor, healthy ceiling, reject line) of a well-formed threshold; ThresholdError otherwise."""
    if not isinstance(threshold, dict):
        raise ThresholdError('threshold %s must be a mapping' % metric)
    direction = threshold_direction(metric, threshold)
    healthy = threshold.get('healthy') or [None, None]
    if not isinstance(healthy, (list, tuple)) or len(healthy) != 2:
        raise ThresholdError('threshold %s.healthy must be [low, high]' % metric)
    low = _number(metric, 'healthy[0]', healthy[0])
    high = _number(metric, 'healthy[1]', healthy[1])
    if direction == 'higher':
        if low is None:
            raise ThresholdError('threshold %s: a higher-is-better metric needs healthy[0]' % metric)
        return direction, low, high, _number(metric, 'reject_below', threshold['reject_below'])
    if high is None:
        raise ThresholdError('threshold %s: a lower-is-better metric needs healthy[1]' % metric)
    return direction, low, high, _number(metric, 'reject_above', threshold['reject_above'])


def threshold_errors(thresholds):
    """What is wrong with a profile's thresholds: a list of plain sentences, empty when every entry is usable."""
    if not isinstance(thresholds, dict):
        return ['thresholds must be a mapping of metric name to threshold, got %r' % (thresholds,)]
    errors = []
    for metric in sorted(thresholds):
        try:
            _limits(metric, thresholds[metric])
        except ThresholdError as exc:
            errors.append(str(exc))
            continue
        factor = thresholds[metric].get('per_rail')
        if factor is not None and (not _finite(factor) or not 0 < factor <= 1):
            errors.append('threshold %s.per_rail must be a fraction above 0 and at most 1 (the node\'s line is that times the '
                          'rails times each figure), got %r' % (metric, factor))
    return errors


def node_threshold(metric, threshold, rails):
    """The line one node's figure is graded against.

    A threshold stated per rail (``per_rail: f``: its figures are one rail's, the runbook's per-NIC line) becomes the
    node's: each figure times ``f`` times ``rails``, the rails the run tested and the collective must use.  Any other
    threshold is returned as it is.  None when the threshold is per rail and the rails are not known."""
    factor = (threshold or {}).get('per_rail')
    if factor is None:
        return threshold
    if isinstance(rails, bool) or not isinstance(rails, int) or rails < 1:
        return None
    scale = float(factor) * rails
    derived = dict((key, value) for key, value in threshold.items() if key != 'per_rail')
    # The node's line carries how it was derived (``derived``), not ``per_rail``: it is a plain line now.

    def scaled(value):
        return None if value is None else round(float(value) * scale, 6)
    derived['healthy'] = [scaled(value) for value in (threshold.get('healthy') or [None, None])]
    for key in ('reject_below', 'reject_above'):
        if key in threshold:
            derived[key] = scaled(threshold[key])
    derived['derived'] = {'per_rail': factor, 'rails': rails, 'healthy': list(threshold.get('healthy') or [None, None]),
                          'reject': threshold.get('reject_below', threshold.get('reject_above'))}
    return derived


def describe_per_rail(threshold):
    """' (0.85 x 8 rails x the per-rail 45-47, reject 40)' for a node's line derived per rail, '' otherwise."""
    origin = (threshold or {}).get('derived')
    if not isinstance(origin, dict):
        return ''
    low, high = origin['healthy']
    return ' (%s x %d rails x the per-rail %s%s%s)' % (
        figure_text(origin['per_rail']), origin['rails'], figure_text(low), '-%s' % figure_text(high) if high is not None else '',
        ', reject %s' % figure_text(origin['reject']) if origin.get('reject') is not None else '')


def classify(metric, value, threshold):
    """healthy / marginal / reject / unknown for one value against one threshold entry."""
    direction, low, high, reject = _limits(metric, threshold)
    if value is None:
        return UNKNOWN
    value = float(value)
    if direction == 'higher':
        if value >= low:
            return HEALTHY
        return REJECT if reject is not None and value < reject else MARGINAL
    if value <= high:
        return HEALTHY
    return REJECT if reject is not None and value > reject else MARGINAL


def describe_threshold(metric, threshold):
    """Human text such as 'healthy >= 46 GB/s (46-48), reject < 42 GB/s, one-way'."""
    unit = threshold.get('unit', '')
    low, high = (threshold.get('healthy') or [None, None])
    direction = threshold.get('direction', 'one-way')
    if threshold_direction(metric, threshold) == 'higher':
        text = 'healthy >= %s %s' % (figure_text(low), unit)
        if high is not None:
            text += ' (%s-%s)' % (figure_text(low), figure_text(high))
        if threshold.get('reject_below') is not None:
            text += ', reject < %s %s' % (figure_text(threshold['reject_below']), unit)
    else:
        text = 'healthy <= %s %s' % (figure_text(high), unit)
        if threshold.get('reject_above') is not None:
            text += ', reject > %s %s' % (figure_text(threshold['reject_above']), unit)
    return '%s, %s' % (text.replace('  ', ' ').strip(), direction)


# ---------------------------------------------------------------------------------------------------------------
# Grading


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# A threshold whose source starts so is a line this project chose: it may not send a node back.
PROJECT_SOURCE = 'project'


def line_may_reject(threshold):
    """Whether a threshold's reject line may send a node back: the seeds' or the contract's, not one this project chose."""
    return not str((threshold or {}).get('source') or '').strip().lower().startswith(PROJECT_SOURCE)


def grade_measurements(measurements, thresholds):
    """Grade each measurement against its metric's threshold.

    ``measurements``: [{id, kind, metric, subject, peer, peer_device, value, unit, as_printed, verbatim, cmd,
    error, error_class, error_side, raw, preset_status}].  Returns the same dicts with ``status``, ``expected``
    and ``threshold`` added.  A figure that is missing, not a finite number, or below its line while its test
    reported an error (an aggregate with NICs that did not run) is ``unknown``: nothing was proven short.
    """
    graded = []
    for item in measurements:
        entry = dict(item)
        metric = entry.get('metric')
        threshold = node_threshold(metric, thresholds.get(metric), entry.get('rails'))
        value = entry.get('value')
        entry['threshold'] = threshold
        if threshold is not None:
            entry['expected'] = describe_threshold(metric, threshold) + describe_per_rail(threshold)
        elif thresholds.get(metric) is not None and _finite(value) and not entry.get('preset_status'):
            # A per-rail line needs the rails the run tested; without them the figure cannot be judged (ours).
            entry['status'] = UNKNOWN
            entry['expected'] = describe_threshold(metric, thresholds[metric]) + ' per rail'
            entry['error'] = entry.get('error') or 'the rails the run tested are not known, so the node\'s line cannot be derived'
            entry['error_class'] = entry.get('error_class') or 'not_measurable'
            entry['error_side'] = entry.get('error_side') or SIDE_OURS
            graded.append(entry)
            continue
        if entry.get('preset_status'):
            # Tools that grade themselves (dcgmi diag pass/warn/fail).
            entry['status'] = entry['preset_status']
            entry['expected'] = 'pass'
        elif value is None:
            entry['status'] = UNKNOWN
            entry['error'] = entry.get('error') or 'no figure'
        elif not _finite(value):
            entry['status'] = UNKNOWN
            entry['error'] = 'the figure %r is not a finite number' % (value,)
            entry['error_class'] = entry.get('error_class') or 'parse_error'
        elif entry.get('ungraded'):
            # The plan records this figure without grading it (iperf3 over IPoIB, unless the contract grades it).
            entry['status'] = INFO
            entry['expected'] = entry['ungraded']
        elif threshold is None:
            entry['status'] = INFO
            entry['expected'] = 'no threshold for %s in this profile' % metric
        else:
            entry['status'] = classify(metric, value, threshold)
            if entry['status'] != HEALTHY and entry.get('error'):
                entry['status'] = UNKNOWN
            elif entry['status'] == REJECT and not line_may_reject(threshold):
                # Past a line the seeds do not give and the contract has not adopted: investigated, never returned.
                entry['status'] = MARGINAL
                entry['reject_line'] = PROJECT_SOURCE
        graded.append(entry)
    return graded


def _covers(entry, expected):
    return entry.get('metric') == expected.get('metric') and expected.get('subject') in (None, entry.get('subject'))


def missing_figures(graded, expected, thresholds):
    """An ``unknown`` entry for every figure the test plan expected and no measurement gave.

    ``expected``: [{id, metric, subject, test, reason}]; ``subject: None`` asks for at least one figure of the
    metric; ``reason`` is why the plan already knows it cannot be measured.
    """
    missing = []
    for wanted in expected or []:
        if any(_covers(entry, wanted) for entry in graded):
            continue
        metric = wanted.get('metric')
        threshold = thresholds.get(metric)
        missing.append({
            'id': wanted.get('id') or '%s:%s' % (metric, wanted.get('subject')),
            'kind': None, 'metric': metric, 'subject': wanted.get('subject'), 'peer': None, 'peer_device': None,
            'test': wanted.get('test') or (catalogue.test_of_metric(metric) if metric in catalogue.METRICS else None),
            'value': None, 'unit': catalogue.unit(metric) if metric in catalogue.METRICS else None,
            'as_printed': None, 'verbatim': [], 'cmd': None, 'raw': '',
            'error': wanted.get('reason') or 'not measured',
            'error_class': wanted.get('error_class') or ('not_measured' if not wanted.get('reason') else 'not_measurable'),
            'error_side': SIDE_OURS if not wanted.get('reason') or wanted.get('error_class') else None,
            'status': UNKNOWN, 'threshold': threshold,
            'expected': describe_threshold(metric, threshold) if threshold else 'a figure',
        })
    return missing


def _nccl_entry(graded, metric, expected):
    """A graded entry of the NCCL run as a whole (transport, GDR), on the subject and peer of its figures."""
    ran = [e for e in graded if e.get('metric') in catalogue.METRICS and catalogue.test_of_metric(e['metric']) == NCCL_TEST
           and e.get('value') is not None]
    if not ran:
        return None
    return {'id': '%s:%s' % (metric, ran[0].get('subject')), 'kind': None, 'metric': metric,
            'subject': ran[0].get('subject'), 'peer': ran[0].get('peer'), 'peer_device': None, 'test': NCCL_TEST,
            'value': None, 'unit': None, 'as_printed': None, 'verbatim': [], 'cmd': ran[0].get('cmd'), 'raw': '', 'error': None,
            'error_class': None, 'error_side': None, 'expected': expected, 'threshold': None}


def ib_proven(graded):
    """Whether the node's own per-HCA RDMA tests proved IB usable: host-memory RDMA figures, every one healthy."""
    figures = [e for e in graded if catalogue.family(e.get('metric')) == 'rdma_bw' and e.get('status') in GRADED]
    return bool(figures) and all(e['status'] == HEALTHY for e in figures)


def nccl_transport_entry(graded, profile, transport):
    """The graded NCCL transport, or None when NCCL is not enabled, not required to use one transport, or gave no figure.

    ``tests.nccl.require_transport`` (default IB; null: any) is what the tier requires; ``transport`` is what the
    NCCL log showed (IB, Socket, or None when it could not be read).  Another transport is a reject only when the
    node's per-HCA RDMA tests were all healthy (IB proven usable there, so NCCL's fallback is the node's); otherwise
    it is unknown and ours: our own settings may have caused it.
    """
    settings = ((profile.get('tests') or {}).get(NCCL_TEST) or {})
    required = settings.get('require_transport', 'IB')
    entry = _nccl_entry(graded, NCCL_TRANSPORT, 'NET/%s' % required)
    if not settings.get('enabled') or required is None or entry is None:
        return None
    entry.update(value=transport, as_printed='NET/%s' % transport if transport else None)
    if transport is None:
        entry.update(status=UNKNOWN, error='the NCCL log does not say which transport it used',
                     error_class='transport_unknown', error_side=SIDE_OURS)
    elif transport == required:
        entry['status'] = HEALTHY
    elif ib_proven(graded):
        entry['status'] = REJECT
    else:
        entry.update(status=UNKNOWN, error_class='nccl_socket_unproven', error_side=SIDE_OURS,
                     error='NCCL ran over NET/%s, and the node\'s per-HCA RDMA tests did not all pass, so IB is not proven '
                           'usable on it: the fallback may be ours (the settings, the tools), not the node\'s' % transport)
    return entry


def over_unproven_transport(graded, transport):
    """The NCCL figures of a run whose transport is unknown and ours (an unproven NET/Socket): measured over sockets our
    settings may have caused, they are not the node's to answer for; each becomes unknown, naming why."""
    if not transport or transport.get('status') != UNKNOWN or transport.get('error_class') != 'nccl_socket_unproven':
        return graded
    out = []
    for entry in graded:
        if catalogue.family(entry.get('metric')) == 'nccl' and entry.get('metric') != NCCL_WRONG and entry.get('status') in GRADED:
            entry = dict(entry, status=UNKNOWN, error=transport['error'], error_class='nccl_socket_unproven', error_side=SIDE_OURS)
        out.append(entry)
    return out


def nccl_gdr_entry(graded, profile, transport):
    """Whether NCCL used GPUDirect RDMA, graded when the tier requires it (``tests.nccl.require_gdr``) and NCCL rode
    NET/IB: not used is marginal (investigate: nvidia_peermem, dma-buf, PCIe ACS), not said is unknown (ours)."""
    settings = ((profile.get('tests') or {}).get(NCCL_TEST) or {})
    if not settings.get('enabled') or not settings.get('require_gdr') or transport != 'IB':
        return None
    busbw = [e for e in graded if e.get('metric') == NCCL_BUSBW and e.get('value') is not None]
    entry = _nccl_entry(busbw, NCCL_GDR, 'GPUDirect RDMA (GDRDMA connections)')
    if entry is None:
        return None
    gdr = busbw[0].get('gdr')
    entry.update(value=gdr, as_printed={True: 'GDRDMA', False: 'no GPUDirect RDMA', None: None}[gdr])
    if gdr is None:
        entry.update(status=UNKNOWN, error='the NCCL log does not say whether NCCL used GPUDirect RDMA',
                     error_class='gdr_unknown', error_side=SIDE_OURS)
    else:
        entry['status'] = HEALTHY if gdr else MARGINAL
    return entry


def bucket_for(statuses):
    """A when every status is healthy (info aside), C when any is reject, else B."""
    statuses = [s for s in statuses if s != INFO]
    if any(status == REJECT for status in statuses):
        return BUCKET_RETURN
    if all(status == HEALTHY for status in statuses):
        return BUCKET_ACCEPT
    return BUCKET_INVESTIGATE


# ---------------------------------------------------------------------------------------------------------------
# Cause rules: each names one likely cause from the pattern of results (the runbook's failure modes).

# The cause_rules keys of a tier profile, with the values each may take.
CAUSE_RULE_KEYS = {
    'platform_max_spread': 'a fraction above 0 and below 1',
    'platform_min_ratio': 'a fraction above 0 and below 1',
    'platform_aggregate_shortfall': 'a fraction above 0 and below 1',
    'firmware_throttle_max_ratio': 'a fraction above 0 and below 1, or null to turn the rule off',
}
_NULLABLE_RULE_KEYS = ('firmware_throttle_max_ratio',)


def cause_rule_errors(cause_rules):
    """What is wrong with a profile's ``cause_rules``: a list of plain sentences, empty when usable."""
    if not isinstance(cause_rules, dict):
        return ['cause_rules must be a mapping of %s, got %r' % (', '.join(sorted(CAUSE_RULE_KEYS)), cause_rules)]
    errors = []
    for key in sorted(set(cause_rules) - set(CAUSE_RULE_KEYS)):
        errors.append('cause_rules.%s is not a cause-rule setting (known: %s)' % (key, ', '.join(sorted(CAUSE_RULE_KEYS))))
    for key in sorted(CAUSE_RULE_KEYS):
        if key not in cause_rules:
            errors.append('cause_rules.%s is missing; it must be %s' % (key, CAUSE_RULE_KEYS[key]))
            continue
        value = cause_rules[key]
        if value is None and key in _NULLABLE_RULE_KEYS:
            continue
        if not _finite(value) or not 0 < value < 1:
            errors.append('cause_rules.%s must be %s, got %r' % (key, CAUSE_RULE_KEYS[key], value))
    return errors


def profile_errors(profile):
    """Thresholds and cause rules of a resolved tier profile that the verdict cannot use (plain sentences)."""
    profile = profile if isinstance(profile, dict) else {}
    return threshold_errors(profile.get('thresholds')) + cause_rule_errors(profile.get('cause_rules'))


class Results(object):
    """What the rules read: the graded tests, the findings, the profile's cause_rules, and shared lookups."""

    def __init__(self, tests, findings, cause_rules):
        self.tests = tests
        self.findings = findings
        self.cause_rules = cause_rules

    def setting(self, key):
        return self.cause_rules[key]

    def findings_of(self, checks, statuses=BAD):
        return [f for f in self.findings if f.get('check') in checks and f.get('status') in statuses]

    def tests_of(self, families, statuses=BAD):
        return [t for t in self.tests if catalogue.family(t.get('metric')) in families and t.get('status') in statuses]

    def figures(self, families):
        """Graded figures (a value, a healthy/marginal/reject status) of the given families."""
        return [t for t in self.tests_of(families, GRADED) if t.get('value') is not None]

    def metric_tests(self, metric, statuses=BAD):
        return [t for t in self.tests if t.get('metric') == metric and t.get('status') in statuses]

    def throughput_shortfalls(self, subjects=None):
        """Non-healthy figures a slow platform drags down with it; with ``subjects`` (slow NICs), those NICs' GDR
        figures and the figures that run over every NIC (aggregate, NCCL bandwidth)."""
        found = [t for t in self.tests_of(THROUGHPUT_FAMILIES) if t.get('metric') not in NCCL_COUNTS]
        if subjects is None:
            return found
        return [t for t in found if catalogue.family(t.get('metric')) in ('aggregate_bw', 'nccl')
                or (catalogue.family(t.get('metric')) == 'gdr_bw' and t.get('subject') in subjects)]


CauseRule = namedtuple('CauseRule', 'cause condition keys find')


def _cause(name, detail, subjects, explains):
    """One named cause and the entries (tests, findings) it explains."""
    return ({'cause': name, 'detail': detail, 'subjects': sorted(set(str(s) for s in subjects if s))}, list(explains))


def _details(entries):
    return '; '.join(str(e.get('detail') or '').rstrip('.') for e in entries)


def _healthy_floor(entry):
    healthy = (entry.get('threshold') or {}).get('healthy') or [None, None]
    return healthy[0]


def _ratio(entry):
    """A figure as a fraction of its healthy floor (0.9: 10% short), None without a floor."""
    floor = _healthy_floor(entry)
    return float(entry['value']) / float(floor) if floor else None


def _figure(entry):
    return '%s %s %s' % (entry.get('subject'), figure_text(entry['value']), entry.get('unit') or '')


def _rdma(results):
    """(per-HCA host-memory RDMA figures, subjects with a non-healthy one, all their subjects)."""
    figures = results.figures(('rdma_bw',))
    slow = set(f.get('subject') for f in figures if f['status'] != HEALTHY)
    return figures, slow, set(f.get('subject') for f in figures)


def _every_nic_slow(results):
    figures, slow, subjects = _rdma(results)
    return figures if len(subjects) > 1 and slow == subjects else []


def _throttled(results):
    """RDMA rejects so far below the healthy floor that only the firmware-throttle trap explains them."""
    limit = results.setting('firmware_throttle_max_ratio')
    if limit is None:
        return []
    return [f for f in results.figures(('rdma_bw',)) if f['status'] == REJECT and (_ratio(f) or 1) <= limit]


def _platform_pattern(results):
    """Every NIC slow by about the same fraction, and not so slow that the NICs themselves are suspect."""
    figures = _every_nic_slow(results)
    ratios = [r for r in (_ratio(f) for f in figures) if r is not None]
    if not ratios:
        return None
    mean = sum(ratios) / len(ratios)
    if max(ratios) - min(ratios) < results.setting('platform_max_spread') and mean >= results.setting('platform_min_ratio'):
        return figures, mean
    return None


def rule_run_incomplete(results, _found):
    broke = results.findings_of((RUN_INCOMPLETE,), (UNKNOWN,))
    if not broke:
        return []
    return [_cause(RUN_INCOMPLETE, 'The validation run did not finish for this node: %s. Nothing here is held against the node: '
                   'fix what the message names on our side (the connection to the node, the controller, the collection) and '
                   're-run the validation; what was measured before the break is kept.' % _details(broke),
                   [f.get('subject') for f in broke], broke)]


def rule_gpu_hardware(results, _found):
    bad = results.findings_of(GPU_HARDWARE_CHECKS)
    if not bad:
        return []
    return [_cause('gpu_hardware', 'GPU hardware: %s. A GPU that fell off the bus or has ECC errors at delivery is a hardware fault '
                   '(PCIe slot or riser, PSU rail, thermal trip, firmware); return the node.' % _details(bad),
                   [f.get('subject') for f in bad], bad)]


def rule_gpu_memory_wear(results, _found):
    bad = results.findings_of(GPU_MEMORY_WEAR_CHECKS)
    if not bad:
        return []
    return [_cause('gpu_memory_wear', 'GPU memory shows wear at delivery: %s. Reset the GPU (nvidia-smi -r) to apply pending '
                   'retirements or remappings and re-test; ask the provider if the counts grow.' % _details(bad),
                   [f.get('subject') for f in bad], bad)]


def rule_gpu_diagnostics(results, _found):
    bad = results.tests_of(('gpu_diag',))
    if not bad:
        return []
    return [_cause('gpu_diagnostics', 'dcgmi diag failed: %s. A GPU failing dcgmi diag is a GPU fault (its memory test: ECC or memory '
                   'hardware): do not accept the node.' % '; '.join(t.get('as_printed') or str(t.get('subject')) for t in bad),
                   [t.get('subject') for t in bad], bad)]


def rule_link_instability(results, _found):
    bad = results.findings_of(('link_flap',))
    if not bad:
        return []
    return [_cause('link_instability', 'Link instability during validation: %s. Replace the cable/transceiver; if it persists, '
                   'return the node.' % _details(bad), [f.get('subject') for f in bad], bad)]


def rule_nic_link(results, _found):
    bad = results.findings_of(NIC_LINK_CHECKS)
    if not bad:
        return []
    return [_cause('nic_link', 'RDMA ports not Active at the expected rate: %s (NIC, cable or firmware).' % _details(bad),
                   [f.get('subject') for f in bad], bad)]


def rule_link_quality(results, _found):
    bad = results.findings_of(LINK_QUALITY_CHECKS)
    if not bad:
        return []
    return [_cause('link_quality', 'Link FEC or BER out of profile (mlxlink): %s. Check the cable or transceiver and the FEC setting '
                   'of both ends (the runbook: mlxlink output - eye opening, BER?); replace the cable and re-test that NIC.' % _details(bad),
                   [f.get('subject') for f in bad], bad)]


def rule_pcie_link(results, _found):
    return [_cause('pcie_link', 'PCIe link of %s: %s' % (f.get('subject'), f.get('detail')), [f.get('subject')], [f])
            for f in results.findings_of(('pcie_link',))]


def rule_pcie_errors(results, _found):
    bad = results.findings_of(('pcie_aer',))
    if not bad:
        return []
    return [_cause('pcie_errors', 'PCIe AER errors during validation: %s. Reseat the card; errors that persist point at the slot, '
                   'riser or card.' % _details(bad), [f.get('subject') for f in bad], bad)]


def rule_platform_tuning(results, _found):
    pattern = _platform_pattern(results)
    if not pattern:
        return []
    figures, mean = pattern
    tuning = results.findings_of(PLATFORM_TUNING_CHECKS)
    detail = ('every NIC is about %d%% below the healthy range (%s): a platform-wide cause, not one NIC. '
              'Check the kernel cmdline, the hugepage pool, the CPU governor, the BIOS power profile and NUMA pinning.'
              % (round((1 - mean) * 100), ', '.join(_figure(f) for f in figures)))
    if tuning:
        detail += ' Found: %s.' % _details(tuning)
    return [_cause('platform_tuning', detail, [f.get('subject') for f in figures],
                   figures + tuning + results.throughput_shortfalls())]


def rule_platform_aggregate(results, _found):
    shortfall = results.setting('platform_aggregate_shortfall')
    figures = results.figures(('aggregate_bw',))
    short = [f for f in figures if (_ratio(f) or 1) <= 1 - shortfall]
    if not figures or len(short) != len(figures):
        return []
    return [_cause('platform_aggregate', 'The aggregate throughput with every NIC at once is %d%% or more below the contract (%s; %s): '
                   'a platform-level issue (PCIe topology, BIOS, memory or CPU bandwidth), not one NIC.'
                   % (round(shortfall * 100), ', '.join(_figure(f) for f in short), short[0].get('expected')),
                   [f.get('subject') for f in short], short)]


def rule_rdma_all_slow(results, found):
    figures = _every_nic_slow(results)
    throttled = set(f.get('subject') for f in _throttled(results))
    if not figures or 'platform_tuning' in found or set(f.get('subject') for f in figures) <= throttled:
        return []
    slow = [f for f in figures if f['status'] != HEALTHY]
    return [_cause('rdma_all_slow', 'every NIC is below the healthy range: %s. Too slow or too uneven for platform tuning alone: '
                   'check the NICs\' firmware, the cables and the switch ports.' % ', '.join(_figure(f) for f in figures),
                   [f.get('subject') for f in figures], slow + results.throughput_shortfalls())]


def rule_single_nic_slow(results, _found):
    figures, slow, subjects = _rdma(results)
    if not slow or (len(subjects) > 1 and slow == subjects):
        return []
    pcie = dict((f.get('subject'), f) for f in results.findings_of(('pcie_link',)))
    causes = []
    for subject in sorted(slow, key=str):
        mine = [f for f in figures if f.get('subject') == subject and f['status'] != HEALTHY]
        detail = ('%s is slow (%s) while the other NICs are healthy: check its PCIe link (lspci LnkSta), the cable, mlxlink BER '
                  'and the switch port.' % (subject, ', '.join('%s %s' % (figure_text(f['value']), f.get('unit') or '') for f in mine).strip()))
        if subject in pcie:
            detail += ' Its PCIe link is below what the NIC and its slot can do (%s), which explains it.' % (
                pcie[subject].get('actual') or 'see the PCIe finding')
        causes.append(_cause('single_nic_slow', detail, [subject], mine + results.throughput_shortfalls([subject])))
    return causes


def rule_rdma_specific(results, found):
    figures, slow, subjects = _rdma(results)
    tcp = results.figures(('tcp',))
    if not tcp or not subjects or slow != subjects or 'platform_tuning' in found or any(t['status'] != HEALTHY for t in tcp):
        return []
    bad = [f for f in figures if f['status'] != HEALTHY]
    return [_cause('rdma_specific', 'TCP (iperf3) is healthy but RDMA is slow: check memlock limits (ulimit -l unlimited), '
                   'the GID index (show_gids: RoCE v2 with IPv4), and PFC/pause counters on the switch.',
                   [f.get('subject') for f in bad], bad + results.throughput_shortfalls())]


def rule_firmware_throttle(results, _found):
    return [_cause('firmware_throttle', '%s runs at %s %s (%s): the ConnectX-7 firmware-throttle trap. Update the NIC firmware and '
                   'fully power-drain the NIC (not just a reboot), then re-test.'
                   % (f.get('subject'), figure_text(f['value']), f.get('unit') or '', f.get('expected')),
                   [f.get('subject')], [f] + results.throughput_shortfalls([f.get('subject')]))
            for f in _throttled(results)]


def rule_nccl_socket_fallback(results, _found):
    bad = results.metric_tests(NCCL_TRANSPORT, (REJECT,))
    if not bad:
        return []
    return [_cause('nccl_socket_fallback', 'NCCL ran over %s (a silent TCP fallback), not %s, although every HCA of the node passed '
                   'its own RDMA test (IB is usable there): check that NCCL finds the HCAs (its NCCL WARN lines: libibverbs, '
                   'the IB plugin, NCCL_NET_PLUGIN), the GID table of each port and that the RDMA devices are Active.'
                   % (bad[0].get('as_printed'), bad[0].get('expected')), [t.get('subject') for t in bad],
                   bad + [t for t in results.tests_of(('nccl',)) if t.get('metric') != NCCL_WRONG])]


def rule_nccl_rails(results, found):
    bad = results.metric_tests(NCCL_HCAS)
    if not bad or 'nccl_socket_fallback' in found:
        return []
    entry = bad[0]
    rails = ((entry.get('threshold') or {}).get('derived') or {}).get('rails')
    return [_cause('nccl_rails', 'NCCL used %s of the %s HCAs the run tested on the node (%s): the all_reduce rode fewer rails than '
                   'the node has, so its bus bandwidth is not the node\'s. Read the node\'s NCCL WARN lines (an HCA NCCL could not '
                   'open), check each HCA\'s port state and GID table, and NCCL\'s own view (NCCL_DEBUG_SUBSYS=INIT,NET).'
                   % (figure_text(entry['value']) if entry.get('value') is not None else '?', rails or '?', entry.get('as_printed') or '-'),
                   [entry.get('subject')], bad + [t for t in results.tests_of(('nccl',)) if t.get('metric') == NCCL_BUSBW])]


def rule_nccl_topology(results, _found):
    """NCCL's bandwidth short while every rail proved itself on its own: the shortfall is inside the node."""
    short = [t for t in results.metric_tests(NCCL_BUSBW) if t.get('value') is not None]
    rails = results.figures(PER_HCA_FAMILIES)
    if (not short or not rails or any(t['status'] != HEALTHY for t in rails) or results.metric_tests(NCCL_HCAS)
            or results.metric_tests(NCCL_TRANSPORT, (REJECT, UNKNOWN))):
        return []
    return [_cause('nccl_topology', 'NCCL\'s bus bandwidth is short (%s; %s) while every HCA of the node is healthy on its own '
                   '(host memory and GPUDirect RDMA): the collective loses its bandwidth inside the node. Check NVLink and '
                   'NVSwitch (nvidia-smi nvlink -s, nvidia-smi -q Fabric state, nvidia-fabricmanager), the GPU-NIC affinity '
                   '(nvidia-smi topo -m: each GPU with its NIC on one PCIe switch) and NCCL\'s topology detection '
                   '(NCCL_DEBUG_SUBSYS=GRAPH, NCCL_TOPO_DUMP_FILE).' % (', '.join(_figure(t) for t in short), short[0].get('expected')),
                   [t.get('subject') for t in short], short)]


def rule_nccl_gdr(results, _found):
    bad = results.metric_tests(NCCL_GDR)
    if not bad:
        return []
    return [_cause('nccl_gdr', 'NCCL rode NET/IB without GPUDirect RDMA (no GDRDMA connection), which the tier requires: check '
                   'nvidia_peermem (or dma-buf with the open GPU kernel modules), PCIe ACS on the switches between each GPU and '
                   'its NIC, and NCCL_NET_GDR_LEVEL; then re-test.', [t.get('subject') for t in bad], bad)]


def rule_nccl_wrong_results(results, _found):
    bad = results.metric_tests(NCCL_WRONG)
    if not bad:
        return []
    return [_cause('nccl_wrong_results', 'nccl-tests counted %s wrong results (#wrong): the collective returned corrupted data. '
                   'Run dcgmi diag -r 3 and check the kernel log for Xid and PCIe AER errors; do not accept the node.'
                   % ', '.join(figure_text(t['value']) for t in bad), [t.get('subject') for t in bad], bad)]


def rule_gdr(results, found):
    acs = set(found['pcie_acs'][0]['subjects']) if 'pcie_acs' in found else set()
    bad = [t for t in results.tests_of(('gdr_bw',)) if t.get('subject') not in acs]
    if not bad or _rdma(results)[1]:
        return []
    return [_cause('gdr', 'GPUDirect RDMA is slow or failing while host-memory RDMA is fine (%s): check the node\'s GPUDirect path '
                   '(nvidia_peermem loaded, or dma-buf with the open kernel modules), reboot and re-test.'
                   % ', '.join(_figure(t) for t in bad), [t.get('subject') for t in bad], bad)]


def rule_pfc_pause(results, _found):
    bad = results.tests_of(('pause',))
    if not bad:
        return []
    return [_cause('pfc_pause', 'Pause/PFC counters grew fast during the sustained test (%s): the switch is not draining; '
                   'check PFC configuration on the switch.' % ', '.join('%s %s/s' % (t.get('subject'), figure_text(t['value'])) for t in bad),
                   [t.get('subject') for t in bad], bad)]


def rule_ib_link_errors(results, _found):
    bad = results.tests_of(('ib_errors',))
    if not bad:
        return []
    return [_cause('ib_link_errors', 'InfiniBand port error counters grew on the node during the sustained test (%s): the link of '
                   'that rail drops or corrupts symbols under load; check and replace its cable or transceiver (mlxlink BER), '
                   'then re-test that rail.' % '; '.join(t.get('as_printed') or _figure(t) for t in bad),
                   [t.get('subject') for t in bad], bad)]


def rule_ib_congestion(results, _found):
    bad = results.tests_of(('ib_congestion',))
    if not bad:
        return []
    return [_cause('ib_congestion', 'InfiniBand PortXmitWait grew fast on the node during the sustained test (%s): the port waited '
                   'for credits - congestion on the rail\'s switch ports or a slow receiver; check the switch port and the '
                   'peer\'s counters.' % '; '.join(t.get('as_printed') or _figure(t) for t in bad), [t.get('subject') for t in bad], bad)]


def rule_jumbo_path(results, _found):
    bad = results.tests_of(('ping',))
    if not bad:
        return []
    return [_cause('jumbo_path', 'The jumbo-frame ping to the peer failed or was slow (%s): check that the MTU is 9000 on the node\'s '
                   'interface, the switch ports (9216) and the peer.' % '; '.join(t.get('as_printed') or _figure(t) for t in bad),
                   [t.get('subject') for t in bad], bad)]


GPU_PREREQUISITE_WORDS = {
    'gdr_mode': 'GPUDirect RDMA has no path on this node',
    'dcgm_hostengine': 'the DCGM host engine is not running',
    'fabric_manager': 'the NVSwitch fabric is not ready (nvidia-fabricmanager)',
    'persistence_mode': 'GPU persistence mode is off',
    'pcie_acs': 'PCIe ACS redirects GPUDirect traffic through the root complex',
}


def prerequisite_rule(check):
    """The rule of one GPU prerequisite: its cause is named after its check and explains the figures it kept from running."""
    def rule(results, _found):
        bad = results.findings_of((check,), (MARGINAL, REJECT, UNKNOWN))
        if not bad:
            return []
        blocked = [t for t in results.tests if t.get('error_class') == GPU_PREREQUISITE and str(t.get('error') or '').startswith(check + ':')]
        words = GPU_PREREQUISITE_WORDS[check]
        detail = '%s: %s.' % (words[:1].upper() + words[1:], _details(bad))
        if check == 'pcie_acs':
            # GPUDirect through the root complex runs slow: the ACS finding explains that NIC's GPUDirect figure.
            subjects = set(f.get('subject') for f in bad)
            slowed = [t for t in results.tests_of(('gdr_bw',)) if t.get('subject') in subjects]
            if slowed:
                detail += ' It explains %s.' % ', '.join(_figure(t) for t in slowed)
            return [_cause(check, detail, [f.get('subject') for f in bad], bad + slowed)]
        if blocked:
            detail += ' Not run because of it: %s; fix it on the node and re-run (no shortfall of the node was measured).' % ', '.join(
                sorted(set('%s on %s' % (catalogue.label(t['metric']) if t.get('metric') in catalogue.METRICS else t.get('metric'),
                                         t.get('subject') or 'the node') for t in blocked)))
        return [_cause(check, detail, [f.get('subject') for f in bad], bad + blocked)]
    return rule


def rule_project_line(results, _found):
    bad = [t for t in results.tests if t.get('reject_line') == PROJECT_SOURCE]
    if not bad:
        return []
    return [_cause('project_line', '%s: past a reject line this project chose (%s), not one the runbook or the contract states: '
                   'investigated here, not returned to the provider. A contract that wants such a node returned adopts the line '
                   '(thresholds.<metric>.source: contract ...).' % (', '.join(_figure(t) for t in bad), '; '.join(
                       sorted(set(str((t.get('threshold') or {}).get('source')) for t in bad)))),
                   [t.get('subject') for t in bad], bad)]


def rule_host_configuration(results, found):
    platform = set()
    for cause, explains in found.values():
        if cause['cause'] == 'platform_tuning':
            platform.update(_key(e) for e in explains)
    bad = [f for f in results.findings_of(HOST_CONFIGURATION_CHECKS) if _key(f) not in platform]
    if not bad:
        return []
    return [_cause('host_configuration', 'Host configuration differs from the profile: %s' % _details(bad),
                   [f.get('subject') for f in bad], bad)]


def _fleet_part(metric, tests):
    """One metric's outliers: '<label> mlx5_0, mlx5_1 at 11.01 GB/s, 9.0 % worse than the median 12.1 GB/s of 16 figures (...)'."""
    mark = tests[0][FLEET_OUTLIER]
    unit = mark.get('unit') or tests[0].get('unit') or ''
    values = sorted(set(figure_text(t['value']) for t in tests))
    if len(values) == 1:
        figures = '%s at %s %s' % (', '.join(str(t.get('subject')) for t in tests), values[0], unit)
    else:
        figures = '%s %s' % (', '.join('%s %s' % (t.get('subject'), figure_text(t['value'])) for t in tests), unit)
    spread = mark.get('spread') or 0
    return '%s %s, %s %% worse than the median %s %s of %d figures (robust spread %s)' % (
        catalogue.label(metric), figures.strip(), '-'.join(sorted(set('%.1f' % t[FLEET_OUTLIER].get('shortfall_pct', 0) for t in tests))),
        figure_text(mark.get('median')), unit, mark.get('batch_figures', 0),
        '%s %s' % (figure_text(spread), unit) if spread else '0: the siblings do not vary')


def _fleet_marked(results):
    return [t for t in results.tests if t.get('status') == MARGINAL and isinstance(t.get(FLEET_OUTLIER), Mapping)]


def rule_fleet_outlier(results, _found):
    marked = _fleet_marked(results)
    if not marked:
        return []
    metrics = []
    for test in marked:
        if test.get('metric') not in metrics:
            metrics.append(test.get('metric'))
    parts = [_fleet_part(metric, [t for t in marked if t.get('metric') == metric]) for metric in metrics]
    first = marked[0][FLEET_OUTLIER]
    baselines = max(t[FLEET_OUTLIER].get('baseline_nodes') or 0 for t in marked)
    siblings = 'The siblings: %d nodes of tier %s, SKU %s%s' % (
        max(t[FLEET_OUTLIER].get('batch_nodes') or 0 for t in marked), first.get('tier'), first.get('sku'),
        ', %d of them accepted baselines' % baselines if baselines else '')
    contract = '; '.join(sorted(set(str(t.get('expected_contract') or t.get('expected') or '?') for t in marked)))
    return [_cause(FLEET_OUTLIER, 'Far below its siblings while above the contract line: %s. %s. An outlier is more than %s robust '
                   'spreads (1.4826 x MAD) and at least %s %% worse than the median of the same figure on the same tier and SKU. Every '
                   'such figure still meets the contract (%s), so nothing here is held against the provider: compare the node with '
                   'its siblings (BIOS and power profile, NIC firmware and settings, PCIe placement, cables and switch ports) before '
                   'it takes jobs.' % ('; '.join(parts), siblings, figure_text(first.get('max_mads')), figure_text(first.get('min_shortfall_pct')), contract),
                   [t.get('subject') for t in marked], marked)]


def _failure_line(entry):
    what = catalogue.label(entry['metric']) if entry.get('metric') else entry.get('check')
    reason = entry.get('error') or entry.get('detail') or 'not measured'
    klass = entry.get('error_class')
    return '%s on %s: %s%s' % (what, entry.get('subject') or 'the node', reason.rstrip('.'), ' (%s)' % klass if klass else '')


def rule_node_side_failure(results, _found):
    bad = [t for t in results.tests if t.get('status') == UNKNOWN and t.get('error_side') == SIDE_NODE]
    if not bad:
        return []
    return [_cause('node_side_failure', 'A test could not run because of something on the node: %s. Fix it on the node (the error '
                   'says what: a driver, module or device) and re-test; a test that could not run proves no shortfall, so it does '
                   'not return the node on its own.' % '; '.join(_failure_line(t) for t in bad),
                   [t.get('subject') for t in bad], bad)]


def rule_measurement_incomplete(results, _found):
    # A figure a failed GPU prerequisite kept from running, and that prerequisite, have their own cause (rule_gpu_prerequisites).
    tests = [t for t in results.tests if t.get('status') == UNKNOWN and t.get('error_side') != SIDE_NODE
             and t.get('error_class') != GPU_PREREQUISITE]
    findings = [f for f in results.findings if f.get('status') == UNKNOWN and f.get('check') not in GPU_PREREQUISITE_CHECKS]
    if not tests and not findings:
        return []
    lines = []
    for entry in tests:
        fix = OUR_SIDE_FIXES.get(entry.get('error_class'), DEFAULT_OUR_SIDE_FIX)
        lines.append('%s: %s' % (_failure_line(entry), fix))
    for entry in findings:
        lines.append('%s (%s): %s' % (entry.get('check'), entry.get('subject'), str(entry.get('detail') or 'unavailable').rstrip('.')))
    return [_cause('measurement_incomplete', 'Not everything could be measured, and a gap is not held against the node (it is not '
                   'a shortfall the provider must answer for); fix on our side and re-run: %s.' % '; '.join(lines),
                   [e.get('subject') for e in tests + findings], tests + findings)]


CAUSE_RULES = (
    CauseRule(RUN_INCOMPLETE, 'the run broke for this node (a run_incomplete finding): where and why', (), rule_run_incomplete),
    CauseRule('gpu_hardware', 'a GPU count, Xid or ECC finding is marginal or reject', (), rule_gpu_hardware),
    CauseRule('gpu_memory_wear', 'a GPU has more correctable ECC errors than the profile allows, or pages or rows pending', (),
              rule_gpu_memory_wear),
    CauseRule('gpu_diagnostics', 'a dcgmi diag test (gpu_diag family) warns or fails', (), rule_gpu_diagnostics),
    CauseRule('link_instability', 'a link went down or a module event was logged during the tests', (), rule_link_instability),
    CauseRule('nic_link', 'an RDMA port is not Active, below its rate, or fewer ports are Active than the tier needs', (), rule_nic_link),
    CauseRule('link_quality', 'an mlxlink FEC mode outside the allowed list or a BER above the profile limit on a live link', (),
              rule_link_quality),
    CauseRule('pcie_link', 'a NIC\'s PCIe link is below the contract or its capability (one cause per NIC)', (), rule_pcie_link),
    CauseRule('pcie_errors', 'PCIe AER errors were logged during the tests', (), rule_pcie_errors),
    CauseRule('pfc_pause', 'a pause-family figure above healthy', (), rule_pfc_pause),
    CauseRule('ib_link_errors', 'an InfiniBand rail\'s port error counters (ib_errors family) grew during the sustained test', (),
              rule_ib_link_errors),
    CauseRule('ib_congestion', 'an InfiniBand rail\'s PortXmitWait (ib_congestion family) above a contract\'s line', (), rule_ib_congestion),
    CauseRule('platform_tuning', 'every HCA\'s rdma_bw figure is below healthy by about the same fraction, not too far',
              ('platform_max_spread', 'platform_min_ratio'), rule_platform_tuning),
    CauseRule('platform_aggregate', 'every aggregate_bw figure is the given fraction or more below its healthy floor',
              ('platform_aggregate_shortfall',), rule_platform_aggregate),
    CauseRule('rdma_all_slow', 'every HCA slow, but not the platform pattern and not all firmware-throttled',
              ('platform_max_spread', 'platform_min_ratio', 'firmware_throttle_max_ratio'), rule_rdma_all_slow),
    CauseRule('single_nic_slow', 'some HCAs\' rdma_bw figures are below healthy while others are healthy (one cause per HCA)', (),
              rule_single_nic_slow),
    CauseRule('rdma_specific', 'every tcp figure healthy, every HCA\'s rdma_bw figure below healthy, not platform_tuning', (),
              rule_rdma_specific),
    CauseRule('firmware_throttle', 'an rdma_bw reject at or below the given fraction of its healthy floor (one cause per rail)',
              ('firmware_throttle_max_ratio',), rule_firmware_throttle),
    CauseRule('nccl_socket_fallback', 'NCCL used another transport than the tier requires (tests.nccl.require_transport)', (),
              rule_nccl_socket_fallback),
    CauseRule('nccl_wrong_results', 'nccl-tests counted wrong results beyond the nccl_wrong threshold', (), rule_nccl_wrong_results),
    CauseRule('gdr_mode', 'GPUDirect RDMA has no path on the node (perftest without CUDA or dma-buf, no nvidia_peermem)', (),
              prerequisite_rule('gdr_mode')),
    CauseRule('fabric_manager', 'the NVSwitch fabric handshake is not complete (nvidia-fabricmanager)', (), prerequisite_rule('fabric_manager')),
    CauseRule('dcgm_hostengine', 'the DCGM host engine does not answer dcgmi', (), prerequisite_rule('dcgm_hostengine')),
    CauseRule('persistence_mode', 'persistence mode is off on a GPU', (), prerequisite_rule('persistence_mode')),
    CauseRule('pcie_acs', 'ACS redirects peer-to-peer traffic between a tested NIC and its GPUDirect GPU', (), prerequisite_rule('pcie_acs')),
    CauseRule('nccl_rails', 'NCCL used fewer HCAs on the node than the run tested (nccl_hcas_used below its per-rail line)', (),
              rule_nccl_rails),
    CauseRule('nccl_topology', 'NCCL bandwidth below healthy while every per-HCA figure (rdma_bw, gdr_bw) is healthy, NCCL used '
              'every tested rail and rode the required transport', (), rule_nccl_topology),
    CauseRule('nccl_gdr', 'NCCL rode NET/IB without GPUDirect RDMA where the tier requires it (tests.nccl.require_gdr)', (),
              rule_nccl_gdr),
    CauseRule('gdr', 'a gdr_bw figure below healthy while every rdma_bw figure is healthy', (), rule_gdr),
    CauseRule('jumbo_path', 'a ping-family figure (jumbo-frame loss or round trip) not healthy', (), rule_jumbo_path),
    CauseRule('host_configuration', 'a host or NIC configuration finding not already explained by platform_tuning', (),
              rule_host_configuration),
    CauseRule('project_line', 'a figure past a reject line this project chose (source: project), graded marginal', (),
              rule_project_line),
    # After the node's own faults and before what we could not measure: a sibling comparison is ours to look into.
    CauseRule(FLEET_OUTLIER, 'a figure that meets the contract lies far below its siblings\' (marked by policy/fleet.py)', (),
              rule_fleet_outlier),
    CauseRule('node_side_failure', 'a test could not run and its module blames the node (error_side node)', (), rule_node_side_failure),
    CauseRule('measurement_incomplete', 'a figure is unknown (not run, failed on our side, unreadable) or a finding is unknown', (),
              rule_measurement_incomplete),
)


def _key(entry):
    return (entry.get('check'), entry.get('metric'), entry.get('subject'), entry.get('id'))


def unexplained(results, explained):
    """The catch-all: one cause for each result that is neither healthy nor info and that no rule explained.

    That covers a status outside the vocabulary too (a stale 'ok', a tool's 'warn'): it keeps the node out of
    bucket A, so it must be named rather than leave the summary's cause column empty.
    """
    causes = []
    for entry in list(results.findings) + list(results.tests):
        if entry.get('status') in (HEALTHY, INFO) or _key(entry) in explained:
            continue
        name = catalogue.label(entry['metric']) if entry.get('metric') else entry.get('check')
        measured = entry.get('as_printed') or entry.get('actual')
        if measured is None and entry.get('value') is not None:
            measured = '%s %s' % (figure_text(entry['value']), entry.get('unit') or '')
        detail = ('%s on %s is %s: measured %s, expected %s. No known failure pattern explains it: re-test it and investigate '
                  'this check.' % (name, entry.get('subject') or 'the node', entry.get('status'),
                                   str(measured or entry.get('detail') or '?').strip(), entry.get('expected') or '?'))
        causes.append({'cause': 'unexplained', 'detail': detail, 'subjects': [str(entry.get('subject'))] if entry.get('subject') else [],
                       'returns_node': entry.get('status') == REJECT})
    return causes


def likely_causes(tests, findings, cause_rules):
    """The likely causes, ordered as CAUSE_RULES lists them, then one per result no rule explains.

    ``tests``: graded measurements; ``findings``: preflight and test findings; ``cause_rules``: the tier profile's
    ratios.  A rule may read the causes the rules before it named.  Returns [{cause, detail, subjects, returns_node}]:
    ``returns_node`` is True for a cause that explains a reject (what a vendor letter may name), False otherwise.
    """
    results = Results(tests, findings, cause_rules)
    found = {}
    causes = []
    explained = set()
    for rule in CAUSE_RULES:
        for cause, explains in rule.find(results, found):
            cause['returns_node'] = any(e.get('status') == REJECT for e in explains)
            found.setdefault(cause['cause'], (cause, explains))
            causes.append(cause)
            explained.update(_key(e) for e in explains)
    return causes + unexplained(results, explained)


# A failed task's message can carry a whole traceback or tool output: a report line keeps its first words.
WHY_MAX_CHARS = 600


def _one_line(text, default):
    text = ' '.join(str(failure_text(text) if isinstance(text, Mapping) else text or default).split()) or default
    return text if len(text) <= WHY_MAX_CHARS else text[:WHY_MAX_CHARS - 3] + '...'


def run_incomplete_finding(where, why):
    """The finding that a node's run broke at ``where`` (a stage or task) for ``why`` (what Ansible or our code said)."""
    where, why = _one_line(where, 'the run'), _one_line(why, 'no reason was recorded')
    return {'check': RUN_INCOMPLETE, 'subject': where, 'status': UNKNOWN, 'blocking': False, 'expected': 'the validation run to finish',
            'actual': why, 'detail': 'the run broke at %s (%s)' % (where, why)}


def _counts(statuses):
    counts = dict((status, 0) for status in STATUSES + (INFO,))
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return counts


def with_run_break(result, where, why):
    """``result`` (a node's verdict) with the finding that its run broke at ``where`` afterwards, its run_incomplete cause
    first and its bucket and counts taken again: what was measured stays as it was graded."""
    result = dict(result)
    findings = list(result.get('findings') or []) + [run_incomplete_finding(where, why)]
    causes = [c for c in result.get('causes') or [] if not (isinstance(c, dict) and c.get('cause') == RUN_INCOMPLETE)]
    cause = rule_run_incomplete(Results([], findings, {}), {})[0][0]
    statuses = [t.get('status', UNKNOWN) for t in result.get('tests') or []] + [f.get('status', UNKNOWN) for f in findings]
    result.update(findings=findings, causes=[cause] + causes, bucket=bucket_for(statuses), counts=_counts(statuses),
                  run_incomplete={'where': _one_line(where, 'the run'), 'why': _one_line(why, 'no reason was recorded')})
    return result


_RANK = dict((rule.cause, index) for index, rule in enumerate(CAUSE_RULES))


def with_fleet_outliers(result, marks):
    """``result`` (a node's verdict) with the figures ``marks`` names ({test id: mark}, policy/fleet.py) marginal as
    fleet outliers, when they were healthy: each keeps its contract text in ``expected_contract`` and carries the mark
    under ``fleet_outlier``; the cause fleet_outlier takes its place among the causes (CAUSE_RULES' order) and the counts
    are taken again.  Bucket A becomes B; B and C stay: a comparison with siblings is no contract line, never C."""
    if not marks or not isinstance(result, Mapping):
        return result
    tests, changed = [], False
    for test in result.get('tests') or []:
        mark = marks.get(test.get('id')) if isinstance(test, Mapping) else None
        if mark and test.get('status') == HEALTHY:
            test = dict(test, status=MARGINAL, expected_contract=test.get('expected'))
            test[FLEET_OUTLIER] = dict(mark)
            test['expected'] = '%s; among its siblings at most %s robust spreads and %s %% worse than their median %s %s' % (
                test.get('expected') or 'the contract', figure_text(mark.get('max_mads')), figure_text(mark.get('min_shortfall_pct')),
                figure_text(mark.get('median')), mark.get('unit') or '')
            changed = True
        tests.append(test)
    if not changed:
        return result
    result = dict(result, tests=tests)
    cause = rule_fleet_outlier(Results(tests, [], {}), {})[0][0]
    causes = [c for c in result.get('causes') or [] if not (isinstance(c, Mapping) and c.get('cause') == FLEET_OUTLIER)]
    rank = _RANK[FLEET_OUTLIER]
    at = len(causes)
    for index, existing in enumerate(causes):
        if _RANK.get(existing.get('cause') if isinstance(existing, Mapping) else None, len(CAUSE_RULES)) > rank:
            at = index
            break
    statuses = [t.get('status', UNKNOWN) for t in tests if isinstance(t, Mapping)]
    statuses += [f.get('status', UNKNOWN) for f in result.get('findings') or [] if isinstance(f, Mapping)]
    result.update(causes=causes[:at] + [cause] + causes[at:], counts=_counts(statuses))
    if result.get('bucket') == BUCKET_ACCEPT:
        result['bucket'] = BUCKET_INVESTIGATE
    return result


def incomplete_verdict(node, where, why, tier=None):
    """The verdict of a node whose run broke before it had one of its own: bucket B, the cause run_incomplete.

    ``where``: the stage or task that broke (``connect``, ``preflight: <task>``, ``report``); ``why``: what Ansible or
    our code said.  Nothing in it is held against the node: it names what to fix on our side and asks for a re-run.
    """
    return with_run_break({'node': node, 'tier': tier, 'tests': [], 'findings': [], 'causes': []}, where, why)


def node_verdict(measurements, findings, profile, context=None):
    """The whole verdict for one node.

    ``profile``: the resolved tier profile (``thresholds``, ``cause_rules``, ``tests``).
    ``context``: ``expected`` (the test plan's figures, see missing_figures) and ``nccl_transport`` (IB, Socket or None).
    Repeated measurements of one id (a test's ``repeats``) are graded once, on their median (measurements.combine_repeats).
    Returns {bucket, tests: [...graded measurements...], findings, causes: [{cause, detail, subjects}],
    counts: {healthy, marginal, reject, unknown, info}}.
    """
    context = context or {}
    errors = profile_errors(profile)
    if errors:
        raise ThresholdError('; '.join(errors))
    thresholds = profile['thresholds']
    graded = grade_measurements(combine_repeats(measurements), thresholds)
    graded += missing_figures(graded, context.get('expected'), thresholds)
    transport = nccl_transport_entry(graded, profile, context.get('nccl_transport'))
    if transport:
        graded = over_unproven_transport(graded, transport) + [transport]
    gdr = nccl_gdr_entry(graded, profile, context.get('nccl_transport'))
    if gdr:
        graded.append(gdr)
    findings = list(findings)
    statuses = [m['status'] for m in graded] + [f.get('status', UNKNOWN) for f in findings]
    counts = _counts(statuses)
    return {
        'bucket': bucket_for(statuses),
        'tests': graded,
        'findings': findings,
        'causes': likely_causes(graded, findings, profile['cause_rules']),
        'counts': counts,
    }
