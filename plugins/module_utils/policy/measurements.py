# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn the test modules' results into measurements the verdict can grade.

A measurement is {id, kind, metric, subject, peer, peer_device, test, value,
unit, as_printed, verbatim, cmd, error, error_class, error_side}: ``value`` is
in the catalogue's unit of the metric (GB/s decimal, Gb/s decimal, us, ms, %,
/s), ``as_printed`` keeps the tool's own figure next to the converted one, and
``verbatim`` holds the raw output lines the figure came from, for the vendor
letter.  Which reader handles a metric, and in which unit, is the catalogue's
(plugins/module_utils/policy/catalogue.py) to say.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, fleet
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi as dcgmi_parser
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import counter_deltas
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.kernel_log import APPLICATION_XIDS, FATAL_XIDS, time_epoch

_ROW = re.compile(r'^\s*\d+\s+\d+\s')


def _num(value):
    """A converted figure with up to 8 significant digits, no trailing zeros (47 -> '47', 41.99999966 -> '41.999999')."""
    return '%.8g' % float(value)


def _base(kind, subject, metric, peer, result):
    result = result or {}
    return {
        'id': '%s:%s' % (metric, subject),
        'kind': kind,
        'metric': metric,
        'test': catalogue.test_of_metric(metric) if metric in catalogue.METRICS else None,
        'subject': subject,
        'peer': peer,
        'value': None,
        'unit': None,
        'as_printed': None,
        'verbatim': [],
        'cmd': result.get('cmd') if isinstance(result.get('cmd'), str) else None,
        'error': None,
        # The failure shape every test module shares: what failed, and on whose side.
        'error_class': result.get('error_class'),
        'error_side': result.get('error_side'),
        # The whole raw output, for the evidence bundle.
        'raw': ''.join(part for part in (result.get('stdout'), result.get('stderr')) if isinstance(part, str)),
    }


def _error_of(result):
    """The failure text of a module result, or None when it succeeded."""
    if not isinstance(result, dict):
        return 'no result'
    if result.get('skipped'):
        return 'skipped: %s' % (result.get('skip_reason') or 'condition false')
    if result.get('failed') or result.get('error_class') or (result.get('msg') and result.get('rc') not in (None, 0)):
        return result.get('msg') or result.get('error_text') or result.get('error_class') or 'test failed'
    return None


def _perftest_lines(text, limit=6):
    """The table header and result rows of a perftest output, verbatim."""
    lines = []
    take = False
    for line in (text or '').splitlines():
        if '#bytes' in line:
            lines.append(line.rstrip())
            take = True
            continue
        if take and _ROW.match(line):
            lines.append(line.rstrip())
    return lines[-limit:]


def _rows(result):
    """Result rows of a perftest result: the module nests its parse under ``perftest``."""
    for key in ('perftest', 'parsed'):
        if isinstance(result.get(key), dict) and result[key].get('results') is not None:
            return result[key]['results']
    return result.get('results') or []


def perftest_bw(result, subject, metric, peer):
    entry = _base('perftest_bw', subject, metric, peer, result)
    rows = _rows(result)
    entry['verbatim'] = _perftest_lines(result.get('stdout'))
    if not rows:
        entry['error'] = _error_of(result) or 'no result rows in the perftest output'
        return entry
    row = rows[-1]
    spec = catalogue.metric(metric)
    entry['value'], entry['unit'] = row.get(spec['field']), spec['unit']
    printed = row.get('bw_avg_as_printed')
    unit = row.get('bw_unit') or (result.get('perftest') or {}).get('bw_unit') or result.get('bw_unit')
    if entry['value'] is not None:
        # Enough digits that a value a hair under a threshold does not read as equal to it.
        entry['as_printed'] = '%s %s (perftest printed %s %s)' % (_num(entry['value']), entry['unit'], printed, unit)
    error = _error_of(result)
    if error:
        entry['error'] = error
    return entry


def perftest_lat(result, subject, metric, peer):
    entry = _base('perftest_lat', subject, metric, peer, result)
    rows = _rows(result)
    entry['verbatim'] = _perftest_lines(result.get('stdout'))
    if not rows:
        entry['error'] = _error_of(result) or 'no result rows in the perftest output'
        return entry
    row = rows[0]
    entry['value'], entry['unit'] = row.get('t_typical_us'), 'us'
    if entry['value'] is not None:
        entry['as_printed'] = '%s us typical for %s-byte messages' % (entry['value'], row.get('bytes'))
    return entry


def _cpu_bound(clients, limit):
    """'client 98.9 %' / 'server 97.2 %' of the iperf3 processes at or above ``limit`` percent of a core (None: not graded)."""
    if not limit:
        return []
    found = []
    for index, client in enumerate(clients):
        cpu = client.get('cpu') or {}
        for side, key in (('client', 'host_total'), ('server', 'remote_total')):
            value = cpu.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= float(limit):
                found.append('process %d %s at %s %% CPU' % (index + 1, side, _num(value)))
    return found


def iperf3(result, subject, metric, peer, cpu_bound_percent=None):
    """The TCP figure of one iperf3 run: the receivers' sum over its processes (the module's ``clients`` when it ran
    several).  A run whose processes ran out of CPU proves no network shortfall: its figure carries that error (ours),
    so a figure below the line is unknown, not marginal or reject."""
    entry = _base('iperf3', subject, metric, peer, result)
    clients = [c for c in result.get('clients') or [] if isinstance(c, dict)] or [result]
    bps = result.get('received_bps')
    if bps is None:
        entry['error'] = _error_of(result) or 'no receiver figure in the iperf3 output'
        return entry
    entry['value'], entry['unit'] = float(bps) / 1e9, 'Gb/s'
    retransmits = [c.get('retransmits') for c in clients]
    entry['as_printed'] = '%s Gb/s received (%s bits/s over %d process(es), %s retransmits)' % (
        _num(entry['value']), int(bps), len(clients), sum(r for r in retransmits if isinstance(r, int)) if any(
            isinstance(r, int) for r in retransmits) else None)
    unpinned = [c['affinity_note'] for c in clients if c.get('affinity_note')]
    if unpinned:
        # The module could not pin them (the core is not one the host lets it run on): said next to the figure.
        entry['as_printed'] += '; %d process(es) unpinned: %s' % (len(unpinned), unpinned[0])
    text = '\n'.join(c.get('stdout') or '' for c in clients)
    entry['verbatim'] = [line.rstrip() for line in text.splitlines() if 'receiver' in line or 'SUM' in line][-3:]
    if len(clients) > 1:
        entry['raw'] = ''.join('# iperf3 process %d: %s\n%s\n' % (i + 1, c.get('cmd'), (c.get('stdout') or '').rstrip('\n'))
                               for i, c in enumerate(clients))
    bound = _cpu_bound(clients, cpu_bound_percent)
    if bound:
        entry['error'] = 'CPU-bound: %s; the figure measures the CPU, not the link' % ', '.join(bound)
        entry['error_class'], entry['error_side'] = 'cpu_bound', 'ours'
    return entry


def ping(result, subject, metric, peer, which):
    entry = _base('ping', subject, metric, peer, result)
    text = result.get('stdout') or ''
    lines = [line.rstrip() for line in text.splitlines()]
    entry['verbatim'] = [line for line in lines if 'packets transmitted' in line or 'rtt' in line or 'mtu' in line][-3:]
    if which == 'rtt':  # the replies the median is taken from, bounded as the count may be large
        entry['verbatim'] = [line for line in lines if ' bytes from ' in line][:16] + entry['verbatim']
    if which == 'loss':
        entry['value'], entry['unit'] = result.get('loss_percent'), '%'
        if entry['value'] is not None:
            entry['as_printed'] = '%s%% loss (%s/%s received)' % (entry['value'], result.get('received'), result.get('transmitted'))
            if result.get('frag_needed'):
                entry['as_printed'] += ', fragmentation needed'
    else:
        # The path's round trip is the replies' median, as perftest's latency is t_typical: one reply delayed by the
        # host (its first neighbour lookup, a busy core) is not the fabric.  A result without it (ping -q) has the mean.
        replies = result.get('rtt_replies_ms') or []
        median = round(fleet.median(replies), 6) if replies else None
        entry['value'], entry['unit'] = (median if median is not None else result.get('rtt_avg_ms')), 'ms'
        if median is not None:
            entry['as_printed'] = 'rtt median %s ms (min %s, avg %s, max %s)' % (
                median, result.get('rtt_min_ms'), result.get('rtt_avg_ms'), result.get('rtt_max_ms'))
        elif entry['value'] is not None:
            entry['as_printed'] = 'rtt avg %s ms (min %s, max %s)' % (entry['value'], result.get('rtt_min_ms'), result.get('rtt_max_ms'))
    if entry['value'] is None:
        entry['error'] = result.get('reason') or _error_of(result) or 'no ping statistics'
    return entry


def aggregate_bw(results, subject, metric, peer):
    entry = _base('aggregate_bw', subject, metric, peer, {})
    total = 0.0
    parts = []
    errors = []
    for result in results or []:
        rows = _rows(result)
        device = (result.get('invocation') or {}).get('module_args', {}).get('device') or result.get('device') or '?'
        if rows and rows[-1].get('bw_avg_gbytes_s') is not None:
            total += rows[-1]['bw_avg_gbytes_s']
            parts.append('%s %s' % (device, _num(rows[-1]['bw_avg_gbytes_s'])))
        else:
            errors.append('%s: %s' % (device, _error_of(result) or 'no result'))
    if not parts:
        entry['error'] = '; '.join(errors) or 'no concurrent results'
        return entry
    entry['value'], entry['unit'] = total, 'GB/s'
    entry['as_printed'] = '%s GB/s aggregate (%s)' % (_num(total), ', '.join(parts))
    if errors:
        entry['error'] = '; '.join(errors)
    return entry


# Counters that count pause frames, and nothing else: mlx5 rx/tx_pause_ctrl_phy and rx/tx_prioN_pause, mlx4 and
# others rx/tx_pause, ice rx/tx_priority_N_xon/xoff, ixgbe/i40e link_xon/xoff.  Never *_bytes, *_packets or
# *_discards (per-priority byte counters grow by billions a second), and not *_pause_duration (microseconds)
# or *_pause_transition (state changes), which count something else.
_PAUSE_FRAME_COUNTER = re.compile(
    r'(rx|tx)_(pause_ctrl_phy|prio[0-7]_pause|pause|priority_[0-7]_x(on|off)(\.nic)?|link_x(on|off)|x(on|off)|flow_control_x(on|off))')


def is_pause_frame_counter(name):
    return bool(_PAUSE_FRAME_COUNTER.fullmatch(str(name).lower()))


def _snapshot(nic_result, netdev):
    """({counter: value}, timestamp) of one netdev in a nic_info result taken with counters: true."""
    info = ((nic_result or {}).get('nics') or {}).get(netdev) or {}
    counters = info.get('counters') or {}
    if isinstance(counters.get('counters'), dict):
        counters = counters['counters']
    stamp = info.get('timestamp', (nic_result or {}).get('timestamp'))
    return counters, stamp


def pause_rates(snapshots, subject, metric, peer, netdevs=None):
    """Pause frames per second per RDMA netdev between two nic_info snapshots (the sustained test's start and end).

    ``netdevs`` limits the figures to the node's RDMA netdevs; a netdev whose snapshots are missing gets an entry
    with the error, so a figure the plan expects is never silently absent.
    """
    before, after = snapshots.get('before') or {}, snapshots.get('after') or {}
    names = sorted(netdevs) if netdevs else sorted((after.get('nics') or {}))
    entries = []
    for netdev in names:
        entry = _base('pause_rate', netdev, metric, peer, {})
        entry['id'] = '%s:%s' % (metric, netdev)
        entry['unit'] = '/s'
        entries.append(entry)
        first, first_time = _snapshot(before, netdev)
        second, second_time = _snapshot(after, netdev)
        if not first or not second or first_time is None or second_time is None:
            entry['error'] = 'no ethtool -S counters of %s %s the sustained test' % (netdev, 'before' if not first else 'after')
            entry['error_class'], entry['error_side'] = 'counters_unavailable', 'ours'
            continue
        seconds = float(second_time) - float(first_time)
        if seconds <= 0:
            entry['error'] = 'the counter snapshots of %s are not in time order' % netdev
            entry['error_class'], entry['error_side'] = 'counters_unavailable', 'ours'
            continue
        deltas = counter_deltas(first, second, seconds)
        rates = dict((k, v) for k, v in (deltas.get('rates_per_s') or {}).items() if is_pause_frame_counter(k) and v is not None)
        entry['value'] = max(rates.values()) if rates else 0.0
        top = sorted(rates.items(), key=lambda kv: -kv[1])[:3]
        entry['as_printed'] = '%s pause frames/s over %s s (%s)' % (int(round(entry['value'])), int(round(seconds)), ', '.join(
            '%s +%s' % (k, (deltas.get('deltas') or {}).get(k)) for k, _v in top) or 'no pause-frame counters')
    return entries


def _side(snapshot, box):
    """One box's reads of a counter snapshot: {nic, rdma}.  A bare nic_info result is the node's (older callers)."""
    snapshot = snapshot or {}
    if 'node' in snapshot or 'peer' in snapshot:
        reads = snapshot.get(box) or {}
        reads = reads.get('reads', reads) if isinstance(reads, dict) else {}
        return {'nic': reads.get('nic') or {}, 'rdma': reads.get('rdma') or {}}
    return {'nic': snapshot if box == 'node' else {}, 'rdma': {}}


def _pause_rate(before, after, netdev):
    """(rate, seconds, top counters text) of one netdev between two nic_info snapshots, or (None, None, why)."""
    first, first_time = _snapshot(before, netdev)
    second, second_time = _snapshot(after, netdev)
    if not first or not second or first_time is None or second_time is None:
        return None, None, 'no ethtool -S counters of %s %s the sustained test' % (netdev, 'before' if not first else 'after')
    seconds = float(second_time) - float(first_time)
    if seconds <= 0:
        return None, None, 'the counter snapshots of %s are not in time order' % netdev
    deltas = counter_deltas(first, second, seconds)
    rates = dict((k, v) for k, v in (deltas.get('rates_per_s') or {}).items() if is_pause_frame_counter(k) and v is not None)
    top = sorted(rates.items(), key=lambda kv: -kv[1])[:3]
    text = ', '.join('%s +%s' % (k, (deltas.get('deltas') or {}).get(k)) for k, _v in top) or 'no pause-frame counters'
    return (max(rates.values()) if rates else 0.0), seconds, text


def pause_figures(snapshots, metric, peer, netdevs, peer_of=None):
    """Pause frames per second of each node RoCE netdev between the snapshots, with the peer's own rate beside it (the
    report says which end's counters moved); the node's rate is the figure."""
    before, after = snapshots.get('before') or {}, snapshots.get('after') or {}
    node = (_side(before, 'node')['nic'], _side(after, 'node')['nic'])
    far = (_side(before, 'peer')['nic'], _side(after, 'peer')['nic'])
    entries = []
    for netdev in netdevs:
        entry = _base('pause_rate', netdev, metric, peer, {})
        entry['id'] = '%s:%s' % (metric, netdev)
        entry['unit'] = '/s'
        entries.append(entry)
        value, seconds, text = _pause_rate(node[0], node[1], netdev)
        if value is None:
            entry['error'], entry['error_class'], entry['error_side'] = text, 'counters_unavailable', 'ours'
            continue
        entry['value'] = value
        entry['as_printed'] = '%s pause frames/s over %s s (%s)' % (int(round(value)), int(round(seconds)), text)
        other = (peer_of or {}).get(netdev)
        if other:
            far_value, _far_seconds, far_text = _pause_rate(far[0], far[1], other)
            entry['peer_value'] = far_value
            entry['as_printed'] += '; %s %s: %s' % (peer, other, '%s pause frames/s (%s)' % (int(round(far_value)), far_text)
                                                    if far_value is not None else far_text)
    return entries


# InfiniBand port counters (sysfs counters/) that count errors on the link: the figure is their sum over the run.
IB_ERROR_COUNTERS = ('symbol_error', 'link_downed', 'port_rcv_errors')


def _ib_counters(rdma, device):
    ports = (((rdma or {}).get('devices') or {}).get(device) or {}).get('ports') or {}
    for _number, port in sorted(ports.items()):
        return port.get('counters') or {}
    return {}


def _ib_deltas(before, after, device):
    """({counter: delta}, seconds) of one device's port between two rdma_info snapshots, or (None, why)."""
    first, second = _ib_counters(before, device), _ib_counters(after, device)
    if not first or not second:
        return None, 'no port counters of %s %s the sustained test' % (device, 'before' if not first else 'after')
    seconds = None
    if before.get('counters_at') is not None and after.get('counters_at') is not None:
        seconds = float(after['counters_at']) - float(before['counters_at'])
    deltas = {}
    for name in IB_ERROR_COUNTERS + ('port_xmit_wait',):
        if first.get(name) is None or second.get(name) is None:
            continue
        if second[name] < first[name]:
            return None, '%s of %s went back from %s to %s during the test (reset or wrapped)' % (name, device, first[name], second[name])
        deltas[name] = second[name] - first[name]
    return (deltas, seconds), None


def ib_counter_figures(snapshots, metrics, peer, devices, peer_of=None):
    """Per node InfiniBand rail, the port error counters' growth (``ib_port_errors``) and PortXmitWait ticks per second
    (``ib_xmit_wait_per_s``) over the sustained test, read on the node and on the peer's paired port; the node's growth
    is the figure, and ``moved`` / the printed line say which end's counters grew."""
    errors_metric, wait_metric = metrics
    before, after = snapshots.get('before') or {}, snapshots.get('after') or {}
    node = (_side(before, 'node')['rdma'], _side(after, 'node')['rdma'])
    far = (_side(before, 'peer')['rdma'], _side(after, 'peer')['rdma'])
    entries = []
    for device in devices:
        errors, wait = _base('ib_counters', device, errors_metric, peer, {}), _base('ib_counters', device, wait_metric, peer, {})
        errors['unit'], wait['unit'] = 'errors', '/s'
        entries += [errors, wait]
        found, why = _ib_deltas(node[0], node[1], device)
        if found is None:
            for entry in (errors, wait):
                entry['error'], entry['error_class'], entry['error_side'] = why, 'counters_unavailable', 'ours'
            continue
        deltas, seconds = found
        other = (peer_of or {}).get(device)
        far_found, far_why = _ib_deltas(far[0], far[1], other) if other else (None, 'no peer port')
        total = sum(deltas.get(name, 0) for name in IB_ERROR_COUNTERS)
        errors['value'] = total
        far_errors, far_text, far_deltas = None, far_why, {}
        if far_found:
            far_deltas = far_found[0]
            far_errors = sum(far_deltas.get(name, 0) for name in IB_ERROR_COUNTERS)
            far_text = '+%d (%s)' % (far_errors, ', '.join('%s +%d' % (n, far_deltas.get(n, 0)) for n in IB_ERROR_COUNTERS))
        errors['moved'] = [box for box, grew in (('node', total), (peer, far_errors)) if grew]
        errors['as_printed'] = '%s +%d (%s); %s %s %s' % (
            device, total, ', '.join('%s +%d' % (n, deltas.get(n, 0)) for n in IB_ERROR_COUNTERS), peer, other, far_text)
        if errors['moved']:
            errors['as_printed'] += '; grew on: %s' % ', '.join(errors['moved'])
        if 'port_xmit_wait' not in deltas or not seconds or seconds <= 0:
            wait['error'] = 'no PortXmitWait counter of %s, or no time between its snapshots' % device
            wait['error_class'], wait['error_side'] = 'counters_unavailable', 'ours'
            continue
        wait['value'] = deltas['port_xmit_wait'] / seconds
        far_wait = far_deltas.get('port_xmit_wait') if far_found else None
        wait['as_printed'] = '%s %s ticks/s over %s s; %s %s %s' % (
            device, _num(wait['value']), int(round(seconds)), peer, other,
            '+%s ticks' % far_wait if far_wait is not None else (far_why or 'no PortXmitWait'))
    return entries


def _nccl_row(parsed, at_bytes):
    rows = [r for r in parsed.get('rows') or [] if r.get('size_bytes') is not None]
    if not rows:
        return None
    if at_bytes:
        below = [r for r in rows if r['size_bytes'] <= int(at_bytes)]
        if below:
            return below[-1]
    return rows[-1]


def nccl(result, subject, peer, at_bytes=None, rails=None):
    """The nccl-tests figures: bus bandwidth and time at ``at_bytes``, #wrong, and the HCAs NCCL used on the node.

    ``rails``: the node HCAs the run tested (the plan's), which NCCL must use: it goes with the bandwidth and HCA figures,
    whose lines are per rail (verdict.grade_measurements scales them)."""
    entries = []
    row = _nccl_row(result, at_bytes)
    transport = result.get('transport')
    busbw = _base('nccl', subject, 'nccl_busbw_gbs', peer, result)
    busbw['rails'] = rails
    text = result.get('stdout') or ''
    header = [line.rstrip() for line in text.splitlines() if line.lstrip().startswith('#') and 'size' in line and 'count' in line][:1]
    if row is None:
        busbw['error'] = _error_of(result) or 'no nccl-tests rows'
        hcas = _base('nccl', subject, 'nccl_hcas_used', peer, result)
        hcas.update(rails=rails, error=busbw['error'])
        return [busbw, hcas]
    values = [v for v in (row.get('oop_busbw_gbs'), row.get('ip_busbw_gbs')) if v is not None]
    busbw['value'], busbw['unit'] = (max(values) if values else None), 'GB/s'
    size_text = str(row.get('size_bytes'))
    row_lines = [line.rstrip() for line in text.splitlines() if line.split()[:1] == [size_text]]
    busbw['verbatim'] = header + row_lines[:1] + [line.rstrip() for line in text.splitlines() if 'Avg bus bandwidth' in line][:1]
    busbw['as_printed'] = '%s GB/s busbw at %s bytes over NET/%s' % (busbw['value'], row.get('size_bytes'), transport or '?')
    # What NCCL's log says of the run as a whole: the verdict grades GPUDirect RDMA from it (tests.nccl.require_gdr).
    busbw['gdr'] = result.get('gdr') if isinstance(result.get('gdr'), bool) else None
    entries.append(busbw)
    latency = _base('nccl', subject, 'nccl_small_allreduce_us', peer, result)
    times = [v for v in (row.get('oop_time_us'), row.get('ip_time_us')) if v is not None]
    latency['value'], latency['unit'] = (min(times) if times else None), 'us'
    latency['as_printed'] = '%s us at %s bytes' % (latency['value'], row.get('size_bytes'))
    latency['verbatim'] = busbw['verbatim']
    entries.append(latency)
    wrong = _base('nccl', subject, 'nccl_wrong', peer, result)
    total = sum(r.get('wrong') or 0 for r in result.get('rows') or [])
    wrong['value'], wrong['unit'] = total, 'errors'
    wrong['as_printed'] = '#wrong total %s' % total
    entries.append(wrong)
    entries.append(nccl_hcas_used(result, subject, peer, rails))
    return entries


_USING_LINE = re.compile(r'NCCL INFO NET/IB\w{0,12}\s*:\s*Using\s')


def nccl_hcas_used(result, subject, peer, rails=None):
    """How many HCAs NCCL used on the node (its ``NET/IB : Using`` lines, the module's ``local_ib_hcas``): none when it
    rode NET/Socket (the transport is graded on its own); unknown when its log names none for the node."""
    entry = _base('nccl', subject, 'nccl_hcas_used', peer, result)
    entry['rails'] = rails
    used = result.get('local_ib_hcas')
    if result.get('transport') == 'Socket':
        entry['value'], entry['unit'] = 0, 'HCAs'
        entry['as_printed'] = 'no HCA: NCCL rode NET/Socket'
        return entry
    if not isinstance(used, list) or not used:
        entry['error'] = _error_of(result) or ('the NCCL log names no HCA NCCL used on this node (NCCL_DEBUG=INFO prints '
                                               'its "NET/IB : Using" lines)')
        entry['error_class'] = entry['error_class'] or 'transport_unknown'
        entry['error_side'] = entry['error_side'] or 'ours'
        return entry
    entry['value'], entry['unit'] = len(used), 'HCAs'
    entry['as_printed'] = '%d HCA(s) NCCL used on the node: %s' % (len(used), ', '.join(used))
    host = result.get('local_host')
    entry['verbatim'] = [line.rstrip() for line in (result.get('stdout') or '').splitlines()
                         if _USING_LINE.search(line) and (not host or line.startswith(host + ':'))][:2]
    return entry


def dcgmi(result, subject, peer):
    entries = []
    mapping = {'pass': 'healthy', 'warn': 'marginal', 'fail': 'reject'}
    for test in result.get('tests') or []:
        status = mapping.get(str(test.get('overall')).lower())
        if status is None:
            continue
        entry = _base('dcgmi', test.get('name'), 'dcgmi_diag', peer, result)
        entry['id'] = 'dcgmi_diag:%s' % test.get('name')
        entry['preset_status'] = status
        entry['as_printed'] = '%s: %s' % (test.get('name'), test.get('overall'))
        failing = sorted((g for g, r in (test.get('per_gpu') or {}).items() if str(r.get('status')).lower() in ('fail', 'warn')),
                         key=lambda gpu: (len(str(gpu)), str(gpu)))
        # A "Fail - All" row (all_gpus) failed every GPU of the run at once: say so, then name them.
        if failing and test.get('all_gpus'):
            entry['as_printed'] += ' on all GPUs (GPU %s)' % ', '.join(str(g) for g in failing)
        elif failing:
            entry['as_printed'] += ' on GPU %s' % ', '.join(str(g) for g in failing)
        elif test.get('all_gpus') and status != 'healthy':
            entry['as_printed'] += ' on all GPUs'
        entries.append(entry)
    not_run = _level_not_run(result)
    if not_run and not _error_of(result):
        entries.append(_dcgmi_level_entry(result, subject, peer, not_run))
    if not entries and _error_of(result):
        entry = _base('dcgmi', subject, 'dcgmi_diag', peer, result)
        entry['error'] = _error_of(result)
        entries.append(entry)
    return entries


def _level_not_run(result):
    """Why the dcgmi run did not run its level: the module's word, else read from the parsed result itself."""
    if result.get('level_not_run'):
        return result['level_not_run']
    if result.get('tests'):
        return dcgmi_parser.level_not_run(result)
    return None


def _dcgmi_level_entry(result, subject, peer, reason):
    """An unknown figure for the level itself: its hardware tests did not run, so the level proves nothing (ours to fix)."""
    level = result.get('level')
    entry = _base('dcgmi', 'level %s' % level if level is not None else (subject or 'dcgmi diag'), 'dcgmi_diag', peer, result)
    entry['id'] = 'dcgmi_diag:level'
    entry['error'] = 'dcgmi diag%s did not run its level: %s' % (' -r %s' % level if level is not None else '', reason)
    entry['error_class'] = 'diag_level_not_run'
    entry['error_side'] = 'ours'
    skipped = result.get('hardware_tests_skipped') or []
    what = 'skipped: %s' % ', '.join(skipped) if skipped else 'no hardware test in the output'
    entry['as_printed'] = 'level %s: %s' % (level if level is not None else '?', what)
    entry['verbatim'] = [line.rstrip() for line in (result.get('stdout') or '').splitlines()
                         if any(name in line for name in skipped) and 'Skip' in line][:12]
    return entry


def _box_of(run, end):
    """Which box ran the module: ``end`` is the box itself ('node', 'peer') or an end of the run ('client', 'server')."""
    if end in ('client', 'server'):
        return ((run or {}).get(end) or {}).get('on') or (run or {}).get('%s_on' % end) or 'node'
    return end or 'node'


def _sided(entry, box):
    """The modules say a failure is their host's; a failure on the known-good peer is never the node's (it is ours)."""
    if entry.get('error_side') == 'host':
        entry['error_side'] = 'node' if box == 'node' else 'ours'
    return entry


def run_measurements(result, run, peer=None, end=None):
    """The measurements of one planned run (an entry of the test plan's ``runs``) from its module result.

    ``result`` is the registered module result; for the all-NIC test it is {clients: [client results], before,
    after} (the counter snapshots).  ``end`` says where the module ran: 'node' (the default), 'peer', or the run's
    'client' / 'server' end.  Which reader applies, and in which unit, comes from the catalogue.
    """
    box = _box_of(run, end)
    return [_sided(entry, box) for entry in _run_measurements(result, run, peer)]


def _run_measurements(result, run, peer):
    result = result if isinstance(result, dict) else {}
    entry = catalogue.test(run.get('test'))
    module = entry['module']
    if entry['scope'] == catalogue.SCOPE_ALL_HCAS:
        counters = run.get('counters')
        if counters is None:  # a run planned before the rails carried their link layer: every netdev's pause frames
            netdevs = sorted(set(c.get('netdev') for c in run.get('clients') or [] if c.get('netdev')))
            return ([aggregate_bw(result.get('clients'), run.get('subject'), run['metric'], peer)]
                    + pause_rates(result, run.get('subject'), run['pause_metric'], peer, netdevs))
        pairs = dict((c.get('netdev'), c.get('peer_netdev')) for c in run.get('clients') or [] if c.get('netdev'))
        return ([aggregate_bw(result.get('clients'), run.get('subject'), run['metric'], peer)]
                + pause_figures(result, run['pause_metric'], peer, counters.get('node_netdevs') or [], pairs)
                + ib_counter_figures(result, (run['ib_error_metric'], run['ib_wait_metric']), peer, counters.get('node_devices') or [],
                                     counters.get('peer_of')))
    if module == 'perftest':
        reader = perftest_lat if catalogue.metric(run['metric'])['reads'] == 'perftest_lat' else perftest_bw
        return [_directed(reader(result, run.get('subject'), run['metric'], peer), run)]
    subject = run.get('subject')
    if module == 'iperf3':
        return [_directed(iperf3(result, subject, 'iperf3_gbps', peer, run.get('cpu_bound_percent')), run)]
    if module == 'jumbo_ping':
        return [ping(result, subject, 'jumbo_ping_loss_pct', peer, 'loss'), ping(result, subject, 'jumbo_ping_rtt_ms', peer, 'rtt')]
    if module == 'nccl_tests':
        return nccl(result, subject, peer, run.get('at_bytes'), run.get('rails'))
    if module == 'dcgmi_diag':
        return dcgmi(result, subject, peer)
    raise ValueError('no measurement reader for test %r' % run.get('test'))


def _directed(entry, run):
    """A one-session figure keeps its run's id and direction (the reverse direction's id is marked), both devices and how
    the plan paired them, and why the plan records it without grading it (``ungraded``: iperf3 over IPoIB)."""
    entry['id'] = run.get('id') or entry['id']
    entry['direction'] = run.get('direction')
    entry['peer_device'] = run.get('peer_device')
    if run.get('paired_by'):
        # How the plan matched the node's rail with the peer's (netval_rails, device name, subnet).
        entry['paired_by'] = run['paired_by']
    if run.get('ungraded'):
        entry['ungraded'] = run['ungraded']
    return entry


def _planned_run(result):
    """The plan's run a looped result belongs to: the nearest item along its ``item`` chain that names a test."""
    item = result
    for _depth in range(4):
        item = item.get('item') if isinstance(item, dict) else None
        if not isinstance(item, dict):
            return None
        if item.get('test') and item.get('metric'):
            return item
    return None


def loop_measurements(results, peer=None, end=None):
    """The measurements of a registered loop over plan runs (its ``results``), each read against its own run."""
    found = []
    for result in results or []:
        run = _planned_run(result)
        if run is None:
            raise ValueError('a looped result without its planned run: loop over the test plan\'s runs')
        found.extend(run_measurements(result, run, peer, end))
    return found


# Kernel link events that mean a port was unstable during the test window, with how a finding names them:
# link down/up (netdev or IB port) and the runbook's cable-module lines (unplugged, plugged_enabled, Cable error).
LINK_FLAP_EVENTS = (('down', 'link down'), ('up', 'link up'), ('cable_error', 'cable error'),
                    ('module_unplugged', 'module unplugged'), ('module_plugged', 'module plugged'),
                    ('module_disabled', 'module disabled'))


def _session_entry(run, servers, clients, servers_result, clients_result):
    """The result a planned session is read from: its client entry, else its server entry when that server did not start,
    else the failed call itself."""
    if run['id'] in clients:
        return clients[run['id']], 'client'
    if run['id'] in servers and not servers[run['id']].get('pid'):
        return servers[run['id']], 'server'
    if (servers_result or {}).get('failed') or not servers:
        return servers_result or {}, 'server'
    return clients_result or {}, 'client'


def _entries_by_id(result, key):
    return dict((e.get('id'), e) for e in (result or {}).get(key) or [] if isinstance(e, dict))


def batch_measurements(batch, servers_result, clients_result, peer=None):
    """The measurements of one perftest batch (plan.perftest_batches) from its three module calls' results.

    Each run is read from its client entry (by id) when its client ran, else from its server entry (a server that did
    not start), else from the failed call itself (a missing tool fails the whole call): nothing planned is dropped.
    """
    servers, clients = _entries_by_id(servers_result, 'servers'), _entries_by_id(clients_result, 'clients')
    found = []
    for run in (batch or {}).get('runs') or []:
        result, end = _session_entry(run, servers, clients, servers_result, clients_result)
        measured = run_measurements(result, run, peer, end)
        # The other end's command too: a GPUDirect figure's GPU options are on the server's (the node's) command line.
        server_cmd = (servers.get(run['id']) or {}).get('cmd')
        for entry in measured:
            if server_cmd and server_cmd != entry.get('cmd'):
                entry['server_cmd'] = server_cmd
        found.extend(measured)
    return found


def all_nics_measurements(run, servers_result, clients_result, before=None, after=None, peer=None):
    """The aggregate and pause-rate figures of the all-NICs run from its batch's three calls (the clients run at once)
    and the node's counter snapshots before and after; a session that failed is named in the aggregate's error."""
    batch = (run or {}).get('batch') or {}
    servers, clients = _entries_by_id(servers_result, 'servers'), _entries_by_id(clients_result, 'clients')
    sessions = []
    for session in batch.get('runs') or []:
        result, _end = _session_entry(session, servers, clients, servers_result, clients_result)
        sessions.append(dict(result, device=session['client']['device']))
    return run_measurements({'clients': sessions, 'before': before or {}, 'after': after or {}}, run, peer)


def _is_figure(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def combine_repeats(measurements):
    """One measurement per id: repeated runs of one test (a tier profile's ``repeats``) become one entry whose
    ``samples`` are every repeat's figure in run order and whose figure is the median repeat (the lower one of an
    even count for bandwidth, the higher for latency: the conservative middle), with that repeat's own output.
    A repeat that failed is named in ``error`` when no repeat gave a figure, else in ``repeat_errors``.
    Entries that ran once pass through unchanged; the order is the first appearance of each id."""
    order, groups = [], {}
    for entry in measurements or []:
        key = entry.get('id') if isinstance(entry, dict) else None
        if key is None:
            order.append([entry])
            continue
        if key not in groups:
            groups[key] = []
            order.append(groups[key])
        groups[key].append(entry)
    combined = []
    for group in order:
        if len(group) == 1:
            combined.append(group[0])
            continue
        good = [_is_figure(e.get('value')) and not e.get('error') for e in group]
        with_figure = [e for e, ok in zip(group, good) if ok]
        failed = [(index, e) for index, (e, ok) in enumerate(zip(group, good)) if not ok]
        if not with_figure:
            picked = failed[0][1]
        else:
            ranked = sorted(with_figure, key=lambda e: e['value'])
            picked = ranked[len(ranked) // 2 if group[0].get('kind') == 'perftest_lat' else (len(ranked) - 1) // 2]
        entry = dict(picked)
        entry['samples'] = [e['value'] for e in with_figure]
        entry['repeats'] = len(group)
        if with_figure and failed:
            entry['repeat_errors'] = ['repeat %d of %d: %s' % (index + 1, len(group), e.get('error') or 'no figure')
                                      for index, e in failed]
        # Every repeat's output stays in the evidence, each under its own header.
        outputs = []
        for index, repeat in enumerate(group):
            header = '# repeat %d of %d%s' % (index + 1, len(group), ' (graded)' if repeat is picked else '')
            outputs.append('%s\n%s\n' % (header, (repeat.get('raw') or '').rstrip('\n')))
        entry['raw'] = ''.join(outputs)
        combined.append(entry)
    return combined


def _since(events, since_epoch):
    """The events not known to be older than ``since_epoch`` (a second guard after journalctl --since: an event whose zoned
    journal time is before the window is never the tests')."""
    if since_epoch is None:
        return list(events or [])
    return [e for e in events or [] if not (isinstance(e, dict) and (time_epoch(e.get('time')) or since_epoch) < float(since_epoch))]


def link_flap_findings(kernel_result, since_epoch=None):
    """Findings for link events (down/up, cable-module events), AER errors and GPU Xids seen in the kernel log during the tests.

    ``since_epoch``: the window's start on the node's clock; events with a zoned time before it are dropped.  A fatal Xid
    during the tests is a reject (a GPU fault under load); an application's Xid is information.
    """
    findings = []
    log = (kernel_result or {}).get('kernel_log') or {}
    events = _since(log.get('link_events') or (kernel_result or {}).get('link_events') or [], since_epoch)
    names = dict(LINK_FLAP_EVENTS)
    by_device = {}
    for event in events:
        if event.get('event') in names:
            by_device.setdefault(event.get('device') or '?', []).append(event)
    for device, seen in sorted(by_device.items()):
        # A link coming up alone is a port's bring-up (IB INIT -> ACTIVE), not instability.
        if all(e.get('event') == 'up' for e in seen):
            continue
        counts = [(label, sum(1 for e in seen if e.get('event') == kind)) for kind, label in LINK_FLAP_EVENTS]
        counted = ', '.join('%d %s' % (count, label) for label, count in counts if count)
        downs = dict(counts)['link down']
        findings.append({'check': 'link_flap', 'subject': device, 'status': 'reject', 'expected': 'no link events during validation',
                         'actual': counted, 'blocking': False,
                         'detail': '%s %s during validation (%s)' % (
                             device, 'went down %d time(s)' % downs if downs else 'logged cable-module events', counted),
                         'verbatim': [e.get('line') or '' for e in seen[:5]]})
    for event in _since(log.get('aer') or (kernel_result or {}).get('aer_events') or [], since_epoch):
        severity = str(event.get('severity') or '')
        findings.append({'check': 'pcie_aer', 'subject': event.get('bdf') or '?',
                         'status': 'reject' if severity.lower().startswith(('uncorr', 'fatal')) else 'marginal',
                         'expected': 'no PCIe AER errors', 'actual': severity, 'blocking': False,
                         'detail': 'PCIe AER %s error on %s during validation' % (severity, event.get('bdf')),
                         'verbatim': [event.get('line') or '']})
    for event in _since((kernel_result or {}).get('xid_events') or [], since_epoch):
        code = event.get('code')
        status = 'info' if code in APPLICATION_XIDS else 'reject' if code in FATAL_XIDS else 'marginal'
        findings.append({'check': 'gpu_xid', 'subject': event.get('bus_id') or 'gpu', 'status': status, 'expected': 'no Xid during validation',
                         'actual': 'Xid %s' % code, 'blocking': False,
                         'detail': 'Xid %s on GPU %s during validation: %s' % (code, event.get('bus_id'), (event.get('line') or '').strip()),
                         'verbatim': [event.get('line') or '']})
    return findings


def nccl_outcome(steps):
    """The result the NCCL figures are read from: the first step of the launch that failed (the launcher's check on either
    box, the key, the peer's trust, the node's session check: its ``error_class`` says what and whose), else the last
    step that ran (nccl-tests itself).  Skipped steps are passed over; none ran: an empty result (no figure)."""
    last = {}
    for step in steps or []:
        if not isinstance(step, dict) or step.get('skipped'):
            continue
        if step.get('error_class') or step.get('unreachable') or step.get('failed'):
            return step
        last = step
    return last
