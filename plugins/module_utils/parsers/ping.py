# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for iputils ``ping`` output (stdout and stderr together) and the
verdict of a jumbo-frame check.  Pure functions; no Ansible import.

A jumbo check sends full-size packets with fragmentation prohibited
(``-M do -s MTU-28``).  Three ways it fails on real hosts:

* the sender's own interface or cached path MTU is smaller:
  ``ping: local error: message too long, mtu=1500``;
* a router on the path has a smaller MTU:
  ``From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1500)``;
* the peer on the same L2 segment has a smaller MTU and drops the frames
  silently (100% loss, on a veth ``sendmsg: No buffer space available``).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

TOOL = 'ping'

_NUM = r'\d+(?:\.\d+)?'
# iputils: "PING 10.0.0.2 (10.0.0.2) from 10.0.0.1 eth0: 8972(9000) bytes of data." / IPv6: "PING ::1(::1) 56 data bytes"
_HEADER_RE = re.compile(r'^PING (?P<dest>[^\s(]+) ?\((?P<ip>[^)]+)\)(?: from (?P<src>\S+)(?: (?P<dev>[^\s:]+))?:)?:? '
                        r'(?P<size>\d+)(?:\((?P<packet>\d+)\))? (?:bytes of data|data bytes)', re.M)
_STATS_HEAD_RE = re.compile(r'^--- (?P<dest>\S+) ping statistics ---', re.M)
_SENT_RE = re.compile(r'^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) (?:packets )?received(?P<rest>.*)$', re.M)
_LOSS_RE = re.compile(r'(?P<loss>\d{1,3}(?:\.\d{1,6})?)% packet loss')
_ERRORS_RE = re.compile(r'\+(?P<n>\d+) errors')
_DUPS_RE = re.compile(r'\+(?P<n>\d+) duplicates')
_TIME_RE = re.compile(r'time (?P<ms>\d+)ms')
_RTT_RE = re.compile(r'^(?:rtt|round-trip) min/avg/max(?:/(?:mdev|stddev))? = (?P<min>%s)/(?P<avg>%s)/(?P<max>%s)(?:/(?P<mdev>%s))? ms'
                     % (_NUM, _NUM, _NUM, _NUM), re.M)
_MTU_RES = (
    re.compile(r'Frag needed and DF set \(mtu = (?P<mtu>\d+)\)'),
    re.compile(r'message too long, mtu[= ]\s*(?P<mtu>\d+)'),
    re.compile(r'Packet too big: mtu[= ]\s*(?P<mtu>\d+)'),
)
_UNREACHABLE_RE = re.compile(r'Destination (?:Host|Net|Network|Port|Protocol) Unreachable|Destination unreachable|'
                             r'Network is unreachable|No route to host|Host is unreachable', re.I)
_REPLY_RE = re.compile(r'^\d+ bytes from ', re.M)
# A reply's own round trip; a duplicate (DUP!) answers a packet already counted.
_REPLY_TIME_RE = re.compile(r'^\d+ bytes from .*\btime=(?P<ms>\d+(?:\.\d+)?) ms(?! \(DUP!\))', re.M)
_PROBLEM_RE = re.compile(r'^(?:From \S+ icmp_seq=\d+ .+|ping: .+)$', re.M)
_CONNECT_ERROR_RE = re.compile(r'^ping: (?P<msg>(?:connect|sendmsg|bind|socket|setsockopt|unknown host|\S+: (?:Name or service not known|'
                               r'Temporary failure in name resolution|No address associated with hostname)).*)$', re.M)


def _float(text):
    return float(text) if text is not None else None


@tool_parser(TOOL)
def parse_ping(text):
    """iputils ``ping`` output -> dict.

    Keys: destination, destination_ip, size, transmitted, received, errors,
    duplicates, loss_percent, time_ms, rtt_min_ms, rtt_avg_ms, rtt_max_ms,
    rtt_mdev_ms, rtt_replies_ms, frag_needed, path_mtu, dest_unreachable, error, messages.
    ``rtt_replies_ms`` are the replies' own round trips in order, duplicates left
    out ([] under ``ping -q``).  Counts missing from the output are None (unknown).  ``dest_unreachable`` is
    true for an explicit unreachable message, or for 100% loss that is not
    explained by fragmentation.
    """
    try:
        return _parse(text)
    except ParseError:
        raise
    except (OverflowError, ValueError) as exc:
        # absurd numbers (thousands of digits): not a ping output we can read
        raise ParseError(TOOL, 'a number is out of range (%s)' % exc)


def _parse(text):
    header = _HEADER_RE.search(text)
    stats_head = _STATS_HEAD_RE.search(text)
    sent = _SENT_RE.search(text)
    rtt = _RTT_RE.search(text)
    connect_error = _CONNECT_ERROR_RE.search(text)
    mtus = [int(m.group('mtu')) for regex in _MTU_RES for m in regex.finditer(text)]
    unreachable_msg = _UNREACHABLE_RE.search(text)
    if not (header or stats_head or sent or rtt or connect_error or mtus):
        raise ParseError(TOOL, 'no PING header, statistics, replies or ping error found', text.strip()[:120] or None)

    result = {
        'destination': None, 'destination_ip': None, 'size': None, 'packet_size': None,
        'transmitted': None, 'received': None, 'errors': None, 'duplicates': None, 'loss_percent': None,
        'time_ms': None, 'rtt_min_ms': None, 'rtt_avg_ms': None, 'rtt_max_ms': None, 'rtt_mdev_ms': None,
        'rtt_replies_ms': [float(m.group('ms')) for m in _REPLY_TIME_RE.finditer(text)],
        'replies': len(_REPLY_RE.findall(text)), 'frag_needed': bool(mtus), 'path_mtu': min(mtus) if mtus else None,
        'dest_unreachable': None, 'error': None, 'messages': [],
    }
    if header:
        result['destination'] = header.group('dest')
        result['destination_ip'] = header.group('ip')
        result['size'] = int(header.group('size'))
        if header.group('packet') is not None:
            result['packet_size'] = int(header.group('packet'))
    if stats_head and result['destination'] is None:
        result['destination'] = stats_head.group('dest')
    if sent:
        rest = sent.group('rest')
        result['transmitted'] = int(sent.group('tx'))
        result['received'] = int(sent.group('rx'))
        errors = _ERRORS_RE.search(rest)
        dups = _DUPS_RE.search(rest)
        loss = _LOSS_RE.search(rest)
        elapsed = _TIME_RE.search(rest)
        result['errors'] = int(errors.group('n')) if errors else 0
        result['duplicates'] = int(dups.group('n')) if dups else 0
        if loss:
            result['loss_percent'] = float(loss.group('loss'))
        elif result['transmitted']:
            result['loss_percent'] = 100.0 * (result['transmitted'] - result['received']) / result['transmitted']
        result['time_ms'] = int(elapsed.group('ms')) if elapsed else None
    if rtt:
        result.update(rtt_min_ms=_float(rtt.group('min')), rtt_avg_ms=_float(rtt.group('avg')),
                      rtt_max_ms=_float(rtt.group('max')), rtt_mdev_ms=_float(rtt.group('mdev')))
    if connect_error:
        result['error'] = connect_error.group('msg').strip()
    seen = set()
    for line in _PROBLEM_RE.findall(text):
        message = re.sub(r'icmp_seq=\d+ ', '', line.strip())
        if message not in seen:
            seen.add(message)
            result['messages'].append(message)

    if unreachable_msg:
        result['dest_unreachable'] = True
    elif result['loss_percent'] is not None:
        result['dest_unreachable'] = result['loss_percent'] >= 100.0 and not result['frag_needed']
    elif result['replies']:
        result['dest_unreachable'] = False
    return result


def summarize_jumbo(stats, size, mtu=None):
    """Verdict of a jumbo check from parse_ping's ``stats``: {passed, reason}.

    ``size`` is the ICMP payload sent, ``mtu`` the MTU it was derived from
    (size + 28 for IPv4 when not given).  Passing needs every packet
    answered and no fragmentation report.
    """
    mtu = mtu if mtu is not None else size + 28
    dest = stats.get('destination_ip') or stats.get('destination') or 'the destination'
    transmitted, received = stats.get('transmitted'), stats.get('received')
    if stats.get('frag_needed'):
        path = stats.get('path_mtu')
        return {'passed': False, 'reason': 'fragmentation needed: path MTU %s < %s (size %s) towards %s'
                % (path if path is not None else 'unknown', mtu, size, dest)}
    if stats.get('error') and not transmitted:
        return {'passed': False, 'reason': 'ping failed before sending: %s' % stats['error']}
    if transmitted is None or received is None:
        return {'passed': False, 'reason': 'no ping statistics in the output: result unknown'}
    if transmitted == 0:
        return {'passed': False, 'reason': 'no packet was sent to %s' % dest}
    if received == 0:
        why = [m for m in stats.get('messages') or [] if 'Unreachable' in m or 'unreachable' in m]
        reason = '100%% loss: %s unreachable with %s-byte payloads (DF set, MTU %s)' % (dest, size, mtu)
        if why:
            reason += '; %s' % why[0]
        elif size > 1472:
            reason += '; if it answers a plain ping, a device on the path has a smaller MTU and drops jumbo frames'
        return {'passed': False, 'reason': reason}
    if received < transmitted:
        return {'passed': False, 'reason': '%d of %d jumbo pings to %s lost (%s%% loss, size %s, MTU %s)'
                % (transmitted - received, transmitted, dest, _short(stats.get('loss_percent')), size, mtu)}
    if stats.get('errors'):
        return {'passed': False, 'reason': '%d errors reported while pinging %s' % (stats['errors'], dest)}
    avg = stats.get('rtt_avg_ms')
    return {'passed': True, 'reason': 'all %d pings to %s answered with %s-byte payloads (DF set, MTU %s)%s'
            % (transmitted, dest, size, mtu, ', avg rtt %s ms' % avg if avg is not None else '')}


def _short(number):
    if number is None:
        return 'unknown'
    return ('%.4f' % number).rstrip('0').rstrip('.')
