# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for iperf3 results, JSON (``-J``) or the text people paste, and the
argument list of an iperf3 server or client.  Pure functions; no Ansible import.

Units: iperf3 prints transfers in binary units (``MBytes`` = 2**20 bytes) and
rates in decimal bits (``Gbits/sec`` = 1e9 bits/s); JSON gives bytes and bits
per second directly.  Results are taken from the side that can know them:
received figures from the receiver, retransmits from the sender.  A server's
own empty side (a ``sender`` line of 0 bytes on a server that only received)
is unknown (None), never a zero result.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

TOOL = 'iperf3'

_BYTE_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4}
_BIT_UNITS = {'': 1, 'K': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12}
_NUM = r'\d+(?:\.\d+)?'

# [  5]   0.00-1.00   sec   662 MBytes  5.55 Gbits/sec    0    402 KBytes   (and [SUM], [  5][TX-C] with --bidir)
_LINE_RE = re.compile(
    r'^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<dir>[TR]X-[CS])\])?\s+(?P<start>%s)-\s*(?P<end>%s)\s+sec\s+'
    r'(?P<xfer>%s)\s+(?P<xunit>[KMGT]?)Bytes\s+(?P<rate>%s)\s+(?P<runit>[KMGT]?)bits/sec(?P<rest>.*)$'
    % (_NUM, _NUM, _NUM, _NUM))
# Searched anywhere in the rest of a line: bounded, so a hostile run of digits costs linear time.
_JITTER_RE = re.compile(r'(?P<jitter>\d{1,9}(?:\.\d{1,9})?)\s{1,16}ms\s{1,16}(?P<lost>-?\d{1,19})/(?P<total>\d{1,19})'
                        r'\s{1,16}\((?P<pct>[^)%]{0,32})%\)')
_RETR_RE = re.compile(r'^\s*(?P<n>\d+)(?:\s+(?P<cwnd>%s)\s+(?P<cunit>[KMGT]?)Bytes)?\s*$' % _NUM)
_HEADER_RE = re.compile(r'^\[\s*ID\]\s+Interval\s+Transfer\s+(?P<cols>.*)$')
_ERROR_RE = re.compile(r'^iperf3: (?:error|interrupt) - (?P<msg>\S(?:.*\S)?)', re.M)
_CPU_RE = re.compile(r'CPU Utilization: local/\w+ (?P<host>%s)%%.*remote/\w+ (?P<remote>%s)%%' % (_NUM, _NUM))
_VERSION_RE = re.compile(r'^(iperf \d+\.\d+\S*)', re.M)


def _num(value):
    """A JSON number as float, None for anything else (bools, strings, null)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _int(value):
    number = _num(value)
    return int(number) if number is not None else None


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _empty_result(fmt):
    return {
        'format': fmt, 'role': None, 'version': None, 'protocol': None, 'streams': None, 'reverse': None,
        'duration_s': None, 'sent_bps': None, 'received_bps': None, 'sent_bytes': None, 'received_bytes': None,
        'sent_printed': None, 'received_printed': None, 'retransmits': None, 'lost_percent': None,
        'lost_packets': None, 'packets': None, 'jitter_ms': None, 'lost_printed': None, 'per_stream': [], 'intervals': [],
        'min_interval_bps': None, 'cpu': {'host_total': None, 'remote_total': None}, 'error': None,
    }


def _is_empty_side(side_bytes, other_bytes, role):
    """A side that moved 0 bytes while the other side moved data, or a server's 0-byte side, is not measured here."""
    if side_bytes is None or side_bytes > 0:
        return False
    return (other_bytes is not None and other_bytes > 0) or role == 'server'


def _min_interval(intervals):
    """Slowest full interval: omitted (-O) intervals and short tails (under half the longest interval) do not count."""
    usable = [i for i in intervals if not i.get('omitted') and i['bps'] is not None
              and i['start'] is not None and i['end'] is not None]
    if not usable:
        return None
    longest = max(i['end'] - i['start'] for i in usable)
    full = [i['bps'] for i in usable if longest > 0 and (i['end'] - i['start']) >= longest / 2.0]
    return min(full) if full else None


@tool_parser(TOOL)
def parse_iperf3(text):
    """iperf3 output (``-J`` JSON or text, client or server side) -> dict of results.

    Keys: sent_bps, received_bps (the receiver's figure), retransmits (sender),
    lost_percent (UDP, receiver), protocol, streams, per_stream, intervals,
    min_interval_bps, duration_s, cpu, reverse, role, error, and for text the
    printed figures (sent_printed, received_printed).  Unknown values are None.
    """
    stripped = text.strip()
    try:
        if stripped.startswith('{'):
            return _parse_json(stripped)
        return _parse_text(text)
    except ParseError:
        raise
    except (OverflowError, ValueError) as exc:
        # absurd numbers (thousands of digits, 1e400): not an iperf3 output we can read
        raise ParseError(TOOL, 'a number is out of range (%s)' % exc)


def _decode_json(stripped):
    """The last complete JSON object (a server without -1 prints one per test)."""
    decoder = json.JSONDecoder()
    docs = []
    pos = 0
    while pos < len(stripped):
        try:
            doc, end = decoder.raw_decode(stripped, pos)
        except (ValueError, RecursionError) as exc:
            if docs:
                break
            raise ParseError(TOOL, 'output starts like JSON but is not valid JSON (%s)' % exc, stripped[:120])
        docs.append(doc)
        pos = end
        while pos < len(stripped) and stripped[pos].isspace():
            pos += 1
    doc = docs[-1] if docs else None
    if not isinstance(doc, dict) or not any(key in doc for key in ('start', 'end', 'intervals', 'error')):
        raise ParseError(TOOL, 'JSON has none of the iperf3 keys start/intervals/end/error', stripped[:120])
    return doc


def _parse_json(stripped):
    doc = _decode_json(stripped)
    result = _empty_result('json')
    start = _dict(doc.get('start'))
    end = _dict(doc.get('end'))
    test = _dict(start.get('test_start'))
    if 'connecting_to' in start:
        result['role'] = 'client'
    elif 'accepted_connection' in start:
        result['role'] = 'server'
    role = result['role']
    if isinstance(start.get('version'), str):
        result['version'] = start['version']
    if isinstance(test.get('protocol'), str):
        result['protocol'] = test['protocol'].lower()
    result['streams'] = _int(test.get('num_streams'))
    if _num(test.get('reverse')) is not None:
        result['reverse'] = bool(test['reverse'])
    if isinstance(doc.get('error'), str):
        result['error'] = doc['error']

    sent = _dict(end.get('sum_sent'))
    received = _dict(end.get('sum_received'))
    udp_sum = _dict(end.get('sum'))
    if not sent and udp_sum:
        # iperf3 before 3.?: UDP ends with a single "sum" (sender rate, receiver loss).
        sent = udp_sum
    sent_bytes, received_bytes = _num(sent.get('bytes')), _num(received.get('bytes'))
    if sent and not _is_empty_side(sent_bytes, received_bytes, role):
        result['sent_bps'] = _num(sent.get('bits_per_second'))
        result['sent_bytes'] = _int(sent.get('bytes'))
        result['retransmits'] = _int(sent.get('retransmits'))
    if received and not _is_empty_side(received_bytes, sent_bytes, role):
        result['received_bps'] = _num(received.get('bits_per_second'))
        result['received_bytes'] = _int(received.get('bytes'))
    loss_side = received if received else udp_sum
    if result['protocol'] == 'udp' and loss_side:
        result['lost_percent'] = _num(loss_side.get('lost_percent'))
        result['lost_packets'] = _int(loss_side.get('lost_packets'))
        result['packets'] = _int(loss_side.get('packets'))
        result['jitter_ms'] = _num(loss_side.get('jitter_ms'))
    seconds = [_num(side.get('seconds')) for side in (received, sent) if side]
    seconds = [value for value in seconds if value is not None]
    result['duration_s'] = seconds[0] if seconds else None

    for stream in _list(end.get('streams')):
        result['per_stream'].append(_json_stream(_dict(stream), role))
    for interval in _list(doc.get('intervals')):
        summary = _dict(_dict(interval).get('sum'))
        if not summary:
            continue
        result['intervals'].append({
            'start': _num(summary.get('start')), 'end': _num(summary.get('end')),
            'bps': _num(summary.get('bits_per_second')), 'retransmits': _int(summary.get('retransmits')),
            'omitted': bool(summary.get('omitted')),
        })
    result['min_interval_bps'] = _min_interval(result['intervals'])
    cpu = _dict(end.get('cpu_utilization_percent'))
    result['cpu'] = {
        'host_total': _num(cpu.get('host_total')),
        # A server is not told the client's CPU load; its remote_total of 0 means unknown.
        'remote_total': None if role == 'server' else _num(cpu.get('remote_total')),
    }
    return result


def _json_stream(stream, role):
    if 'udp' in stream:
        udp = _dict(stream['udp'])
        moved = (_num(udp.get('bytes')) or 0) > 0
        sender = bool(udp.get('sender'))
        lost, packets = _int(udp.get('lost_packets')), _int(udp.get('packets'))
        # iperf 3.12 servers report lost_percent 0 per stream next to real counts: trust the counts.
        lost_percent = lost * 100.0 / packets if lost is not None and packets else _num(udp.get('lost_percent'))
        return {'id': _int(udp.get('socket')),
                'sent_bps': _num(udp.get('bits_per_second')) if moved and sender else None,
                'received_bps': _num(udp.get('bits_per_second')) if moved and not sender else None,
                'retransmits': None, 'lost_percent': lost_percent,
                'jitter_ms': _num(udp.get('jitter_ms'))}
    snd, rcv = _dict(stream.get('sender')), _dict(stream.get('receiver'))
    snd_bytes, rcv_bytes = _num(snd.get('bytes')), _num(rcv.get('bytes'))
    snd_known = bool(snd) and not _is_empty_side(snd_bytes, rcv_bytes, role)
    rcv_known = bool(rcv) and not _is_empty_side(rcv_bytes, snd_bytes, role)
    return {'id': _int(snd.get('socket', rcv.get('socket'))),
            'sent_bps': _num(snd.get('bits_per_second')) if snd_known else None,
            'received_bps': _num(rcv.get('bits_per_second')) if rcv_known else None,
            'retransmits': _int(snd.get('retransmits')) if snd_known else None,
            'lost_percent': None, 'jitter_ms': None}


def _text_line(match, columns):
    """One interval or summary line -> dict (bps decimal, bytes binary)."""
    rest = match.group('rest').strip()
    tag = None
    for word in ('sender', 'receiver'):
        if rest.endswith(word):
            tag, rest = word, rest[:-len(word)].strip()
    omitted = '(omitted)' in rest
    rest = rest.replace('(omitted)', '').strip()
    entry = {
        'id': match.group('id'), 'dir': match.group('dir'), 'tag': tag, 'omitted': omitted,
        'start': float(match.group('start')), 'end': float(match.group('end')),
        'bytes': int(round(float(match.group('xfer')) * _BYTE_UNITS[match.group('xunit')])),
        'bps': float(round(float(match.group('rate')) * _BIT_UNITS[match.group('runit')])),
        'printed': '%s %sbits/sec' % (match.group('rate'), match.group('runit')),
        'retransmits': None, 'jitter_ms': None, 'lost_packets': None, 'packets': None, 'lost_percent': None,
        'lost_printed': None, 'udp': False,
    }
    jitter = _JITTER_RE.search(rest)
    if jitter:
        lost, total = int(jitter.group('lost')), int(jitter.group('total'))
        entry.update(udp=True, jitter_ms=float(jitter.group('jitter')), lost_packets=lost, packets=total,
                     lost_printed='%s%%' % jitter.group('pct'))
        entry['lost_percent'] = lost * 100.0 / total if total > 0 and lost >= 0 else _float(jitter.group('pct'))
        return entry
    counted = _RETR_RE.match(rest)
    if counted:
        if 'Datagrams' in columns and 'Retr' not in columns and counted.group('cwnd') is None:
            entry.update(udp=True, packets=int(counted.group('n')))
        else:
            entry['retransmits'] = int(counted.group('n'))
    return entry


def _combine(lines):
    """Several streams' lines for one side -> one total (None when there are none)."""
    if not lines:
        return None
    if len(lines) == 1:
        return lines[0]
    retr = [line['retransmits'] for line in lines]
    combined = {'bps': sum(line['bps'] for line in lines), 'bytes': sum(line['bytes'] for line in lines), 'printed': None,
                'retransmits': sum(retr) if all(r is not None for r in retr) else None,
                'start': min(line['start'] for line in lines), 'end': max(line['end'] for line in lines),
                'lost_packets': None, 'packets': None, 'lost_percent': None, 'jitter_ms': None, 'lost_printed': None}
    if all(line['packets'] is not None and line['lost_packets'] is not None for line in lines):
        combined['lost_packets'] = sum(line['lost_packets'] for line in lines)
        combined['packets'] = sum(line['packets'] for line in lines)
        if combined['packets'] > 0:
            combined['lost_percent'] = combined['lost_packets'] * 100.0 / combined['packets']
        combined['jitter_ms'] = max(line['jitter_ms'] for line in lines)
    return combined


def _parse_text(text):
    result = _empty_result('text')
    if re.search(r'^Connecting to host ', text, re.M):
        result['role'] = 'client'
        result['reverse'] = bool(re.search(r'^Reverse mode, remote host .* is sending', text, re.M))
    elif re.search(r'^(Server listening on|Accepted connection from) ', text, re.M):
        result['role'] = 'server'
    errors = _ERROR_RE.findall(text)
    result['error'] = errors[-1] if errors else None
    version = _VERSION_RE.search(text)
    result['version'] = version.group(1) if version else None
    cpu = _CPU_RE.search(text)
    if cpu:
        result['cpu'] = {'host_total': float(cpu.group('host')), 'remote_total': float(cpu.group('remote'))}

    columns = ''
    headers = []
    entries = []
    for line in text.splitlines():
        header = _HEADER_RE.match(line.strip())
        if header:
            columns = header.group('cols')
            headers.append(columns)
            continue
        match = _LINE_RE.match(line.strip())
        if match:
            entries.append(_text_line(match, columns))
    if not entries and result['role'] is None and result['error'] is None:
        raise ParseError(TOOL, 'no iperf3 interval or summary lines, no banner and no error found',
                         text.strip()[:120] or None)

    plain = [e for e in entries if e['dir'] is None]
    if any(e['udp'] for e in plain) or any('Datagrams' in h or 'Jitter' in h for h in headers):
        result['protocol'] = 'udp'
    elif headers or any(e['retransmits'] is not None for e in plain):
        result['protocol'] = 'tcp'
    ids = sorted(set(int(e['id']) for e in plain if e['id'] != 'SUM'))
    result['streams'] = len(ids) if ids else None
    _text_totals(result, plain, ids)
    _text_intervals(result, plain)
    return result


def _text_totals(result, plain, ids):
    role = result['role']
    summary = {}
    for entry in plain:
        if entry['tag']:
            summary[(entry['id'], entry['tag'])] = entry
    sides = {}
    for tag in ('sender', 'receiver'):
        if ('SUM', tag) in summary:
            sides[tag] = summary[('SUM', tag)]
        else:
            sides[tag] = _combine([summary[(str(i), tag)] for i in ids if (str(i), tag) in summary])
    sent, received = sides['sender'], sides['receiver']
    sent_bytes = sent['bytes'] if sent else None
    received_bytes = received['bytes'] if received else None
    if sent and not _is_empty_side(sent_bytes, received_bytes, role):
        result.update(sent_bps=sent['bps'], sent_bytes=sent_bytes, sent_printed=sent['printed'],
                      retransmits=sent['retransmits'])
    if received and not _is_empty_side(received_bytes, sent_bytes, role):
        result.update(received_bps=received['bps'], received_bytes=received_bytes,
                      received_printed=received['printed'])
        if received['packets'] is not None:
            result.update(lost_percent=received['lost_percent'], lost_packets=received['lost_packets'],
                          packets=received['packets'], jitter_ms=received['jitter_ms'],
                          lost_printed=received['lost_printed'])
    span = received or sent
    result['duration_s'] = round(span['end'] - span['start'], 6) if span else None
    for stream_id in ids:
        snd, rcv = summary.get((str(stream_id), 'sender')), summary.get((str(stream_id), 'receiver'))
        if snd is None and rcv is None:
            continue
        snd_known = snd is not None and not _is_empty_side(snd['bytes'], rcv['bytes'] if rcv else None, role)
        rcv_known = rcv is not None and not _is_empty_side(rcv['bytes'], snd['bytes'] if snd else None, role)
        result['per_stream'].append({
            'id': stream_id,
            'sent_bps': snd['bps'] if snd_known else None,
            'received_bps': rcv['bps'] if rcv_known else None,
            'retransmits': snd['retransmits'] if snd_known else None,
            'lost_percent': rcv['lost_percent'] if rcv_known else None,
            'jitter_ms': rcv['jitter_ms'] if rcv_known else None,
        })


def _text_intervals(result, plain):
    rows = [e for e in plain if not e['tag']]
    sums = [e for e in rows if e['id'] == 'SUM']
    if sums:
        rows = sums
    by_span = {}
    order = []
    for row in rows:
        key = (row['start'], row['end'])
        if key not in by_span:
            by_span[key] = []
            order.append(key)
        by_span[key].append(row)
    for key in order:
        group = by_span[key]
        retr = [row['retransmits'] for row in group]
        result['intervals'].append({
            'start': key[0], 'end': key[1], 'bps': sum(row['bps'] for row in group),
            'retransmits': sum(retr) if all(r is not None for r in retr) else None,
            'omitted': any(row['omitted'] for row in group),
        })
    result['min_interval_bps'] = _min_interval(result['intervals'])


def build_iperf3_argv(params):
    """Arguments (after the binary) for an iperf3 server or client from module-style params.

    Server: ``-s -1 -p PORT [-B BIND] [-A CPU] [-J]``.  Client: ``-c SERVER -p PORT -t DURATION
    -P PARALLEL [-i INTERVAL] [-O OMIT] [-B BIND] [-A CPU] [-R] [-u [-b BANDWIDTH]] [-J]``.
    """
    params = dict(params)
    port = params.get('port') or 5201
    affinity = ['-A', str(params['affinity'])] if params.get('affinity') is not None else []
    if params.get('role') == 'server':
        argv = ['-s', '-1', '-p', str(port)]
        if params.get('bind'):
            argv += ['-B', params['bind']]
        argv += affinity
        if params.get('json', True):
            argv.append('-J')
        return argv
    argv = ['-c', params['server'], '-p', str(port), '-t', str(params.get('duration') or 10),
            '-P', str(params.get('parallel') or 1)]
    if params.get('interval') is not None:
        argv += ['-i', _short_number(params['interval'])]
    if params.get('omit'):
        argv += ['-O', str(params['omit'])]
    if params.get('bind'):
        argv += ['-B', params['bind']]
    argv += affinity
    if params.get('reverse'):
        argv.append('-R')
    if params.get('udp'):
        argv.append('-u')
        if params.get('bandwidth'):
            argv += ['-b', str(params['bandwidth'])]
    elif params.get('bandwidth'):
        argv += ['-b', str(params['bandwidth'])]
    if params.get('json', True):
        argv.append('-J')
    return argv


def _short_number(value):
    """1.0 -> '1', 0.5 -> '0.5' (iperf3 accepts both; the short form reads better in logs)."""
    number = float(value)
    return str(int(number)) if number == int(number) else str(number)


def classify_iperf3_error(message):
    """An iperf3 error text -> cause name: connect_refused, no_route, server_busy, timeout or iperf3_error."""
    if not message:
        return None
    lowered = message.lower()
    if 'connection refused' in lowered:
        return 'connect_refused'
    if 'no route to host' in lowered or 'network is unreachable' in lowered:
        return 'no_route'
    if 'server is busy' in lowered:
        return 'server_busy'
    if 'timed out' in lowered or 'timeout' in lowered:
        return 'timeout'
    return 'iperf3_error'
