# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn the test modules' results into measurements the verdict can grade.

A measurement is {id, metric, subject, peer, value, unit, as_printed,
verbatim, cmd, error}: ``value`` is in the unit of the profile's threshold
(GB/s decimal, Gb/s decimal, us, ms, %, /s), ``as_printed`` keeps the tool's
own figure next to the converted one, and ``verbatim`` holds the raw output
lines the figure came from, for the vendor letter.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.netval.plugins.module_utils.ethtool import counter_deltas

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
        'subject': subject,
        'peer': peer,
        'value': None,
        'unit': None,
        'as_printed': None,
        'verbatim': [],
        'cmd': result.get('cmd') if isinstance(result.get('cmd'), str) else None,
        'error': None,
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
    if metric.endswith('_gbps'):
        entry['value'], entry['unit'] = row.get('bw_avg_gbps'), 'Gb/s'
    else:
        entry['value'], entry['unit'] = row.get('bw_avg_gbytes_s'), 'GB/s'
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


def iperf3(result, subject, metric, peer):
    entry = _base('iperf3', subject, metric, peer, result)
    bps = result.get('received_bps')
    if bps is None:
        entry['error'] = _error_of(result) or 'no receiver figure in the iperf3 output'
        return entry
    entry['value'], entry['unit'] = float(bps) / 1e9, 'Gb/s'
    entry['as_printed'] = '%s Gb/s received (%s bits/s, %s retransmits)' % (_num(entry['value']), int(bps), result.get('retransmits'))
    text = result.get('stdout') or ''
    entry['verbatim'] = [line.rstrip() for line in text.splitlines() if 'receiver' in line or 'SUM' in line][-3:]
    return entry


def ping(result, subject, metric, peer, which):
    entry = _base('ping', subject, metric, peer, result)
    text = result.get('stdout') or ''
    entry['verbatim'] = [line.rstrip() for line in text.splitlines() if 'packets transmitted' in line or 'rtt' in line or 'mtu' in line][-3:]
    if which == 'loss':
        entry['value'], entry['unit'] = result.get('loss_percent'), '%'
        if entry['value'] is not None:
            entry['as_printed'] = '%s%% loss (%s/%s received)' % (entry['value'], result.get('received'), result.get('transmitted'))
            if result.get('frag_needed'):
                entry['as_printed'] += ', fragmentation needed'
    else:
        entry['value'], entry['unit'] = result.get('rtt_avg_ms'), 'ms'
        if entry['value'] is not None:
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


def _counters(nic_result, netdev):
    info = ((nic_result or {}).get('nics') or {}).get(netdev) or {}
    counters = info.get('counters') or {}
    if isinstance(counters.get('counters'), dict):
        counters = counters['counters']
    return counters


def pause_rates(snapshots, subject, metric, peer):
    before, after = snapshots.get('before') or {}, snapshots.get('after') or {}
    seconds = None
    if before.get('timestamp') is not None and after.get('timestamp') is not None:
        seconds = float(after['timestamp']) - float(before['timestamp'])
    entries = []
    for netdev in sorted((after.get('nics') or {})):
        first, second = _counters(before, netdev), _counters(after, netdev)
        if not first or not second or not seconds:
            continue
        deltas = counter_deltas(first, second, seconds)
        rates = deltas.get('rates_per_s') or {}
        pause = dict((k, v) for k, v in rates.items() if 'pause' in k or 'pfc' in k or 'prio' in k)
        entry = _base('pause_rate', netdev, metric, peer, {})
        entry['id'] = '%s:%s' % (metric, netdev)
        entry['value'] = max(pause.values()) if pause else 0.0
        entry['unit'] = '/s'
        top = sorted(pause.items(), key=lambda kv: -kv[1])[:3]
        entry['as_printed'] = '%s pause frames/s over %s s (%s)' % (int(round(entry['value'])), int(round(seconds)), ', '.join(
            '%s +%s' % (k, (deltas.get('deltas') or {}).get(k)) for k, _v in top) or 'no pause counters')
        entries.append(entry)
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


def nccl(result, subject, peer, at_bytes=None):
    entries = []
    row = _nccl_row(result, at_bytes)
    transport = result.get('transport')
    busbw = _base('nccl', subject, 'nccl_busbw_gbs', peer, result)
    text = result.get('stdout') or ''
    header = [line.rstrip() for line in text.splitlines() if line.lstrip().startswith('#') and 'size' in line and 'count' in line][:1]
    if row is None:
        busbw['error'] = _error_of(result) or 'no nccl-tests rows'
        return [busbw]
    values = [v for v in (row.get('oop_busbw_gbs'), row.get('ip_busbw_gbs')) if v is not None]
    busbw['value'], busbw['unit'] = (max(values) if values else None), 'GB/s'
    size_text = str(row.get('size_bytes'))
    row_lines = [line.rstrip() for line in text.splitlines() if line.split()[:1] == [size_text]]
    busbw['verbatim'] = header + row_lines[:1] + [line.rstrip() for line in text.splitlines() if 'Avg bus bandwidth' in line][:1]
    busbw['as_printed'] = '%s GB/s busbw at %s bytes over NET/%s' % (busbw['value'], row.get('size_bytes'), transport or '?')
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
    return entries


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
        failing = [g for g, r in (test.get('per_gpu') or {}).items() if str(r.get('status')).lower() in ('fail', 'warn')]
        if failing:
            entry['as_printed'] += ' on GPU %s' % ', '.join(str(g) for g in failing)
        entries.append(entry)
    if not entries and _error_of(result):
        entry = _base('dcgmi', subject, 'dcgmi_diag', peer, result)
        entry['error'] = _error_of(result)
        entries.append(entry)
    return entries


def measurement(result, kind, subject, metric, peer=None, multi=False, at_bytes=None):
    """Dispatch on ``kind``; returns one measurement dict, or a list when ``multi``."""
    result = result if result is not None else {}
    if kind == 'perftest_bw':
        found = perftest_bw(result, subject, metric, peer)
    elif kind == 'perftest_lat':
        found = perftest_lat(result, subject, metric, peer)
    elif kind == 'iperf3':
        found = iperf3(result, subject, metric, peer)
    elif kind == 'ping_loss':
        found = ping(result, subject, metric, peer, 'loss')
    elif kind == 'ping_rtt':
        found = ping(result, subject, metric, peer, 'rtt')
    elif kind == 'aggregate_bw':
        found = aggregate_bw(result, subject, metric, peer)
    elif kind == 'pause_rate':
        found = pause_rates(result, subject, metric, peer)
    elif kind == 'nccl':
        found = nccl(result, subject, peer, at_bytes)
    elif kind == 'dcgmi':
        found = dcgmi(result, subject, peer)
    else:
        raise ValueError('unknown measurement kind %r' % kind)
    if multi and not isinstance(found, list):
        return [found]
    return found


def hca_pair(ports, gpu_pairs=None):
    """Pair one node live port with one peer live port: {device, port, netdev, gid_index, peer_device, peer_port, peer_gid_index, gpu}."""
    node, peer = ports
    gpu = None
    for pair in gpu_pairs or []:
        if pair.get('nic') == node.get('device'):
            gpu = pair.get('gpu')
            break
    return {
        'device': node.get('device'), 'port': node.get('port') or 1, 'netdev': node.get('netdev'),
        'gid_index': node.get('gid_index'),
        'peer_device': peer.get('device'), 'peer_port': peer.get('port') or 1, 'peer_gid_index': peer.get('gid_index'),
        'peer_netdev': peer.get('netdev'),
        'gpu': gpu,
    }


def link_flap_findings(kernel_result):
    """Findings for link events (down/up, module errors) and AER errors seen in the kernel log during the tests."""
    findings = []
    log = (kernel_result or {}).get('kernel_log') or {}
    events = log.get('link_events') or (kernel_result or {}).get('link_events') or []
    downs = {}
    for event in events:
        if event.get('event') in ('down', 'cable_error', 'module_unplugged'):
            downs.setdefault(event.get('device') or '?', []).append(event.get('line') or '')
    for device, lines in sorted(downs.items()):
        findings.append({'check': 'link_flap', 'subject': device, 'status': 'reject', 'expected': 'no link events during validation',
                         'actual': '%d link-down events' % len(lines), 'blocking': False,
                         'detail': '%s went down %d time(s) during validation' % (device, len(lines)), 'verbatim': lines[:5]})
    for event in log.get('aer') or (kernel_result or {}).get('aer_events') or []:
        severity = str(event.get('severity') or '')
        findings.append({'check': 'pcie_aer', 'subject': event.get('bdf') or '?',
                         'status': 'reject' if severity.lower().startswith(('uncorr', 'fatal')) else 'marginal',
                         'expected': 'no PCIe AER errors', 'actual': severity, 'blocking': False,
                         'detail': 'PCIe AER %s error on %s during validation' % (severity, event.get('bdf')),
                         'verbatim': [event.get('line') or '']})
    return findings


def _loop_pair(result):
    """The HCA pair a looped result belongs to: the nearest item with a ``device`` along its ``item`` chain."""
    item = result
    for _depth in range(4):
        item = item.get('item') if isinstance(item, dict) else None
        if not isinstance(item, dict):
            return {}
        if item.get('device'):
            return item
    return {}


def loop_measurements(results, kind, metric, peer=None):
    """One measurement per looped result (a registered loop's ``results``), subject taken from each item."""
    found = []
    for result in results or []:
        pair = _loop_pair(result)
        entry = measurement(result, kind, pair.get('device') or '?', metric, peer)
        for item in entry if isinstance(entry, list) else [entry]:
            # Each box keeps its own device name (a RoCE pair's live port can differ).
            item['peer_device'] = pair.get('peer_device')
            found.append(item)
    return found
