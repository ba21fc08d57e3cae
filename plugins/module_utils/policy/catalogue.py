# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tier tests and their metrics, each defined once.

Everything that lists tests or metrics reads this module: the test plan
(which runs, on which ports), the measurement dispatch (which reader turns a
module result into a figure, in which unit), the report's labels, the
verdict's metric families, the re-test decision and the tier profile's schema
check.  Thresholds are NOT here: they are data in the tier profiles
(roles/tier_profile/vars/main.yml); this module only says which metrics exist.

A test entry:

    name        the key under a tier profile's ``tests:`` (``enabled: true`` turns it on)
    module      the collection module that runs it
    tool        the program it runs (perftest tests), else None
    scope       node: one run per node; hca: one run per node HCA, each against a peer HCA;
                gpu_nic: one run per node HCA with its NUMA-local GPU (GPUDirect RDMA);
                first_hca: one run on the node's first HCA; all_hcas: every HCA at once
    needs_peer  whether it measures against a known-good peer; a test that does not runs while the node waits for
                one (or after it gave its peer back), never holding a peer
    beside_network
                whether it may run at the same time as the node's own network tests without disturbing them:
                false for dcgmi (its PCIe and stress tests share the node's PCIe complexes with the NICs); a
                check that only reads files could be true.  Every network test is false (they need the node alone).
    retest      whether a second peer re-runs it before a reject is final: every test whose figure depends on the
                peer's HCA or the cable to it; not NCCL (long, and its failures are configuration) nor dcgmi (local)
    ports       which TCP port range its runs use: perftest, iperf3, or None
    metrics     the metric names it produces (keys of METRICS)

A metric entry:

    unit        the unit of the figure and of its threshold
    label       how it reads in reports and letters
    reads       the measurement reader (plugins/module_utils/policy/measurements.py) that extracts it
    field       for perftest bandwidth: the parsed row field holding the figure
    family      rdma_bw (per-HCA host-memory RDMA), gdr_bw, rdma_lat, tcp, aggregate_bw, pause, ib_errors, ib_congestion, ping,
                nccl, gpu_diag
    graded_by   'threshold' (the profile's threshold) or 'tool' (the tool grades itself: dcgmi pass/warn/fail)

Pure data and lookups; no Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

SCOPE_NODE = 'node'
SCOPE_HCA = 'hca'
SCOPE_GPU_NIC = 'gpu_nic'
SCOPE_FIRST_HCA = 'first_hca'
SCOPE_ALL_HCAS = 'all_hcas'

PORTS_PERFTEST = 'perftest'
PORTS_IPERF3 = 'iperf3'


# Repeated runs of one perftest test (its samples give re-validation a spread); more would only cost peer time.
MAX_REPEATS = 10


def _test(name, module, scope, metrics, tool=None, needs_peer=True, retest=False, ports=None, beside_network=False):
    return {'name': name, 'module': module, 'tool': tool, 'scope': scope, 'needs_peer': needs_peer, 'retest': retest,
            'ports': ports, 'metrics': tuple(metrics), 'beside_network': beside_network}


def _metric(unit, label, reads, family, field=None, graded_by='threshold'):
    return {'unit': unit, 'label': label, 'reads': reads, 'family': family, 'field': field, 'graded_by': graded_by}


# In the order a node runs them: cheap reachability first, the sustained all-NIC test late.  The GPU
# diagnostics need no peer: validate.yml runs them while the node waits for one, or after it gave it back,
# never during the node's own network tests (they load the GPUs and the PCIe complexes the NICs sit on).
TESTS = (
    _test('jumbo_ping', 'jumbo_ping', SCOPE_NODE, ['jumbo_ping_loss_pct', 'jumbo_ping_rtt_ms'], retest=True),
    _test('iperf3', 'iperf3', SCOPE_NODE, ['iperf3_gbps'], retest=True, ports=PORTS_IPERF3),
    _test('ib_send_bw', 'perftest', SCOPE_HCA, ['ib_send_bw_gbs'], tool='ib_send_bw', retest=True, ports=PORTS_PERFTEST),
    _test('ib_write_bw', 'perftest', SCOPE_HCA, ['ib_write_bw_gbps'], tool='ib_write_bw', retest=True, ports=PORTS_PERFTEST),
    _test('ib_read_bw', 'perftest', SCOPE_HCA, ['ib_read_bw_gbs'], tool='ib_read_bw', retest=True, ports=PORTS_PERFTEST),
    _test('gdr', 'perftest', SCOPE_GPU_NIC, ['gdr_bw_gbs'], tool='ib_send_bw', retest=True, ports=PORTS_PERFTEST),
    _test('ib_write_lat', 'perftest', SCOPE_FIRST_HCA, ['ib_write_lat_us'], tool='ib_write_lat', retest=True, ports=PORTS_PERFTEST),
    # Pause frames on RoCE netdevs; on InfiniBand ports (no pause frames) the port error counters and PortXmitWait.
    _test('all_nics', 'perftest', SCOPE_ALL_HCAS, ['all_nics_gbs', 'pause_per_s', 'ib_port_errors', 'ib_xmit_wait_per_s'],
          tool='ib_send_bw', retest=True, ports=PORTS_PERFTEST),
    _test('nccl', 'nccl_tests', SCOPE_NODE, ['nccl_busbw_gbs', 'nccl_small_allreduce_us', 'nccl_wrong', 'nccl_hcas_used']),
    _test('dcgmi', 'dcgmi_diag', SCOPE_NODE, ['dcgmi_diag'], needs_peer=False),
)

METRICS = {
    'jumbo_ping_loss_pct': _metric('%', 'jumbo-frame ping loss', 'ping_loss', 'ping'),
    'jumbo_ping_rtt_ms': _metric('ms', 'jumbo-frame ping round trip (median of the replies)', 'ping_rtt', 'ping'),
    'iperf3_gbps': _metric('Gb/s', 'iperf3 multi-stream TCP', 'iperf3', 'tcp'),
    'ib_send_bw_gbs': _metric('GB/s', 'ib_send_bw per HCA', 'perftest_bw', 'rdma_bw', field='bw_avg_gbytes_s'),
    'ib_write_bw_gbps': _metric('Gb/s', 'ib_write_bw per rail', 'perftest_bw', 'rdma_bw', field='bw_avg_gbps'),
    'ib_read_bw_gbs': _metric('GB/s', 'ib_read_bw per HCA', 'perftest_bw', 'rdma_bw', field='bw_avg_gbytes_s'),
    'gdr_bw_gbs': _metric('GB/s', 'GPUDirect RDMA (ib_send_bw --use_cuda) per NIC and its NUMA-local GPU', 'perftest_bw', 'gdr_bw',
                          field='bw_avg_gbytes_s'),
    'ib_write_lat_us': _metric('us', 'ib_write_lat typical latency', 'perftest_lat', 'rdma_lat'),
    'all_nics_gbs': _metric('GB/s', 'aggregate RDMA throughput with every NIC running at once', 'aggregate_bw', 'aggregate_bw'),
    'pause_per_s': _metric('/s', 'pause/PFC frame rate during the sustained test', 'pause_rate', 'pause'),
    'ib_port_errors': _metric('errors', 'InfiniBand port errors (symbol_error, link_downed, port_rcv_errors) during the sustained test',
                              'ib_counters', 'ib_errors'),
    'ib_xmit_wait_per_s': _metric('/s', 'InfiniBand PortXmitWait ticks per second during the sustained test', 'ib_counters', 'ib_congestion'),
    'nccl_busbw_gbs': _metric('GB/s', 'nccl-tests all_reduce bus bandwidth', 'nccl', 'nccl'),
    'nccl_small_allreduce_us': _metric('us', 'nccl-tests small-message all_reduce time', 'nccl', 'nccl'),
    'nccl_wrong': _metric('errors', 'nccl-tests #wrong', 'nccl', 'nccl'),
    'nccl_hcas_used': _metric('HCAs', 'HCAs NCCL used on the node (its NET/IB : Using line)', 'nccl', 'nccl'),
    'dcgmi_diag': _metric('pass/warn/fail', 'dcgmi diag', 'dcgmi', 'gpu_diag', graded_by='tool'),
}

_TESTS_BY_NAME = dict((entry['name'], entry) for entry in TESTS)
_TEST_OF_METRIC = dict((metric, entry['name']) for entry in TESTS for metric in entry['metrics'])


class CatalogueError(ValueError):
    """A name that is not in the catalogue, or a tier profile that does not fit it; the message says which."""


def figure_text(value):
    """A figure as verdicts and reports write it: an integer without decimals, else up to three decimals; None is '-'."""
    if value is None:
        return '-'
    if float(value) == int(value):
        return str(int(value))
    return ('%.3f' % value).rstrip('0').rstrip('.')


def threshold_direction(threshold):
    """Which way a graded figure is better, read from its threshold: 'higher' (reject_below), 'lower' (reject_above), or
    None for a threshold that says neither (the caller's own rule decides)."""
    if isinstance(threshold, Mapping):
        if 'reject_below' in threshold:
            return 'higher'
        if 'reject_above' in threshold:
            return 'lower'
    return None


def test(name):
    """The catalogue entry of one test."""
    try:
        return _TESTS_BY_NAME[name]
    except KeyError:
        raise CatalogueError('unknown tier test %r; known tests: %s' % (name, ', '.join(test_names())))


def test_names():
    return [entry['name'] for entry in TESTS]


def metric(name):
    """The catalogue entry of one metric."""
    try:
        return METRICS[name]
    except KeyError:
        raise CatalogueError('unknown metric %r; known metrics: %s' % (name, ', '.join(sorted(METRICS))))


def test_of_metric(name):
    """The name of the test that produces ``name``."""
    metric(name)
    return _TEST_OF_METRIC[name]


def unit(name):
    return metric(name)['unit']


def label(name):
    """How a metric reads in prose; the metric's own name for one the catalogue does not know."""
    entry = METRICS.get(name)
    return entry['label'] if entry else name


def family(name):
    """The family of a metric (rdma_bw, gdr_bw, ...), None for a name the catalogue does not know (nccl_transport)."""
    entry = METRICS.get(name)
    return entry['family'] if entry else None


def metrics_in_family(family):
    return sorted(name for name, entry in METRICS.items() if entry['family'] == family)


def retest_metrics():
    """Metrics a second peer re-measures before a throughput reject is final."""
    return sorted(name for entry in TESTS if entry['retest'] for name in entry['metrics'])


def needs_peer(name):
    """Whether a tier test measures against a known-good peer."""
    return test(name)['needs_peer']


def enabled_tests(profile):
    """The catalogue entries of the tests a resolved tier profile enables, in run order."""
    tests = (profile or {}).get('tests') or {}
    return [entry for entry in TESTS if (tests.get(entry['name']) or {}).get('enabled')]


def ungraded_metrics(profile, name):
    """Metrics of test ``name`` the profile records without grading (``ungraded: [...]`` under the test)."""
    return list(((profile or {}).get('tests') or {}).get(name, {}).get('ungraded') or [])


def profile_errors(profile, tier=None):
    """What makes a resolved tier profile unusable with this catalogue: a list of plain sentences (empty when fine).

    Every test the profile names must exist; every metric of an enabled test needs a threshold unless the tool grades
    itself or the profile lists it under the test's ``ungraded``; every threshold must belong to a known metric and
    state the catalogue's unit.
    """
    where = 'tier %s' % tier if tier else 'the tier profile'
    errors = []
    if not isinstance(profile, dict):
        return ['%s is not a mapping' % where]
    tests = profile.get('tests') or {}
    thresholds = profile.get('thresholds') or {}
    if not isinstance(tests, dict) or not isinstance(thresholds, dict):
        return ['%s: tests and thresholds must be mappings' % where]
    for name in sorted(tests):
        if name not in _TESTS_BY_NAME:
            errors.append('%s: tests.%s is not a known tier test (known: %s)' % (where, name, ', '.join(test_names())))
    for entry in enabled_tests(profile):
        repeats = (tests.get(entry['name']) or {}).get('repeats')
        if repeats is not None and (entry['module'] != 'perftest' or entry['scope'] == SCOPE_ALL_HCAS):
            errors.append('%s: tests.%s.repeats applies to the one-HCA-at-a-time perftest tests only' % (where, entry['name']))
        elif repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS):
            errors.append('%s: tests.%s.repeats must be a whole number from 1 to %d, got %r' % (where, entry['name'], MAX_REPEATS, repeats))
        ungraded = ungraded_metrics(profile, entry['name'])
        for name in ungraded:
            if name not in entry['metrics']:
                errors.append('%s: tests.%s.ungraded names %s, which that test does not produce' % (where, entry['name'], name))
        for name in entry['metrics']:
            if METRICS[name]['graded_by'] == 'tool' or name in ungraded:
                continue
            if name not in thresholds:
                errors.append('%s enables %s but has no threshold for its metric %s (%s)' % (where, entry['name'], name, METRICS[name]['unit']))
    for name, threshold in sorted(thresholds.items()):
        if name not in METRICS:
            errors.append('%s: thresholds.%s is not a known metric' % (where, name))
            continue
        declared = (threshold or {}).get('unit') if isinstance(threshold, dict) else None
        if declared is not None and declared != METRICS[name]['unit']:
            errors.append('%s: thresholds.%s is in %s, the metric is measured in %s' % (where, name, declared, METRICS[name]['unit']))
        if isinstance(threshold, dict) and not str(threshold.get('source') or '').strip():
            # Who may send a node back depends on it (verdict.line_may_reject).
            errors.append('%s: thresholds.%s has no source: say whether the runbook, the contract or this project ("project: <why>") '
                          'states the line' % (where, name))
    return errors
