#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: jumbo_ping
short_description: Check that full-size (jumbo) frames reach a peer without fragmentation
version_added: 0.1.0
description:
  - Runs C(ping -M do -s SIZE -c COUNT -W 1 [-I INTERFACE] DEST), that is full-size packets with fragmentation prohibited.
  - The payload size is O(size), or O(mtu) minus the IP and ICMP headers (28 bytes for IPv4, 48 for IPv6), or the MTU
    of O(interface) read from C(<sysfs_root>/class/net/<interface>/mtu) minus those headers.
  - "Returns the ping statistics, whether the check RV(passed) (every packet answered, no fragmentation reported)
    and a plain-text RV(reason), for example 'fragmentation needed: path MTU 1500 < 9000 (size 8972)'."
  - Packet loss and errors are results, not module failures (ping exits 1 on loss and 2 on errors), unless O(fail_on_loss) is set.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  dest:
    description: IP address or host name of the peer.
    type: str
    required: true
  interface:
    description:
      - Interface to send from (C(-I)); when neither O(size) nor O(mtu) is given, its MTU sets the payload size.
    type: str
  mtu:
    description: MTU to test (68-65535); the payload is this minus the header bytes. Overrides the MTU of O(interface).
    type: int
  size:
    description: ICMP payload size in bytes (0-65507); overrides O(mtu) and O(interface).
    type: int
  count:
    description: Number of packets to send (1-1000).
    type: int
    default: 5
  interval:
    description: Seconds between packets (C(-i)); below 0.2 needs root.
    type: float
  deadline:
    description: Stop after this many seconds whatever the count (C(-w)).
    type: int
  timeout:
    description: Hard limit in seconds for the ping command; default from O(count), O(interval) and O(deadline) plus 10.
    type: int
  sysfs_root:
    description: Root of the sysfs tree to read the interface MTU from (tests point this at a fixture tree).
    type: path
    default: /sys
  fail_on_loss:
    description: Fail the task when the check does not pass, instead of returning RV(passed=false).
    type: bool
    default: false
notes:
  - Runs in check mode too; it only sends a few ICMP echo requests and changes nothing.
attributes:
  check_mode:
    description: Can run in check mode; the module only measures.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
seealso:
  - module: gpufleet.netval.iperf3
'''

EXAMPLES = r'''
- name: Jumbo frames from the RDMA/TCP test NIC to the peer
  gpufleet.netval.jumbo_ping:
    dest: "{{ hostvars[netval_peer].netval_test_ip }}"
    interface: ens1f0np0
  register: jumbo

- name: Require a 9000-byte path whatever the local MTU says
  gpufleet.netval.jumbo_ping:
    dest: 10.0.0.2
    mtu: 9000
    count: 10
    fail_on_loss: true
'''

RETURN = r'''
cmd:
  description: The command line that was run.
  returned: always
  type: str
  sample: /usr/bin/ping -M do -s 8972 -c 5 -W 1 -I ens1f0np0 10.0.0.2
passed:
  description: True when every packet was answered and no fragmentation was reported.
  returned: always
  type: bool
reason:
  description: Plain-text verdict.
  returned: always
  type: str
  sample: "fragmentation needed: path MTU 1500 < 9000 (size 8972) towards 10.0.0.2"
size:
  description: ICMP payload size that was sent.
  returned: always
  type: int
  sample: 8972
mtu:
  description: MTU the size was derived from (size plus headers when only O(size) was given).
  returned: always
  type: int
  sample: 9000
mtu_source:
  description: Where the MTU came from, V(size), V(mtu) or V(interface).
  returned: always
  type: str
transmitted:
  description: Packets sent (null when ping printed no statistics).
  returned: always
  type: int
received:
  description: Replies received.
  returned: always
  type: int
loss_percent:
  description: Packet loss in percent.
  returned: always
  type: float
errors:
  description: Errors ping counted (local errors, ICMP errors).
  returned: always
  type: int
rtt_avg_ms:
  description: Average round-trip time in ms (also rtt_min_ms, rtt_max_ms, rtt_mdev_ms).
  returned: always
  type: float
rtt_replies_ms:
  description:
    - Each reply's own round-trip time in ms, in order, duplicates left out (empty when ping printed no reply line).
    - The verdict grades their median, which one reply delayed by a host (its first neighbour lookup, a busy core) does
      not move as it moves the average.
  returned: always
  type: list
  elements: float
frag_needed:
  description: True when ping reported that the packet needs fragmenting (local error or ICMP Frag needed / Packet too big).
  returned: always
  type: bool
path_mtu:
  description: The smaller MTU ping was told about, or null.
  returned: always
  type: int
  sample: 1500
dest_unreachable:
  description:
    - True for an unreachable message or 100% loss not explained by fragmentation; null when unknown.
    - Not C(unreachable), which Ansible reads as "the host this task ran on cannot be reached".
  returned: always
  type: bool
stdout:
  description: The tool's raw output (client runs), kept for the evidence bundle.
  returned: success
  type: str
stats:
  description: Everything parsed from the ping output (destination, messages, error...).
  returned: always
  type: dict
rc:
  description: Exit status of ping (0 all answered, 1 loss, 2 errors).
  returned: always
  type: int
error_class:
  description:
    - Failure class, null on success; one of C(invalid_options), C(tool_missing), C(timeout), C(tool_failed), C(parse_error),
      C(no_interface), C(bad_mtu) or C(jumbo_failed) (with O(fail_on_loss)).
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description:
    - Whose fault RV(error_class) is, null on success; C(ours) (tooling, options, our timeout, unreadable output; never the
      provider's), C(host) (the host the module ran on) or C(unknown).
  returned: always
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ping import parse_ping, summarize_jumbo
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname

IPV4_HEADERS = 28
IPV6_HEADERS = 48


def fail(module, error_class, msg, **fields):
    module.fail_json(msg='%s: %s' % (hostname(), msg), **dict(fields, **failure(error_class)))


def read_interface_mtu(module, sysfs_root, interface):
    path = os.path.join(sysfs_root, 'class', 'net', interface, 'mtu')
    try:
        with open(path, 'r') as handle:
            raw = handle.read().strip()
    except (IOError, OSError) as exc:
        fail(module, 'no_interface', 'cannot read the MTU of interface %s from %s: %s' % (interface, path, exc))
    if not raw.isdecimal():
        fail(module, 'bad_mtu', '%s holds %r, not an MTU' % (path, raw))
    return int(raw)


def validate(module):
    params = module.params
    problems = checks.control_characters(params)
    problems.append(checks.check_host('dest', params['dest']))
    if params['interface'] is not None:
        problems.append(checks.check_netdev('interface', params['interface']))
    problems.append(checks.check_number('mtu', params['mtu'], 68, 65535))
    problems.append(checks.check_number('size', params['size'], 0, 65507))
    problems.append(checks.check_number('count', params['count'], 1, 1000))
    problems.append(checks.check_number('interval', params['interval'], 0.002, 60))
    problems.append(checks.check_number('deadline', params['deadline'], 1, 3600))
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=3600 + 60))
    checks.fail_if_invalid(module, 'jumbo_ping', checks.problems_of(problems))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='str', required=True),
            interface=dict(type='str'),
            mtu=dict(type='int'),
            size=dict(type='int'),
            count=dict(type='int', default=5),
            interval=dict(type='float'),
            deadline=dict(type='int'),
            timeout=dict(type='int'),
            sysfs_root=dict(type='path', default='/sys'),
            fail_on_loss=dict(type='bool', default=False),
        ),
        required_one_of=[('size', 'mtu', 'interface')],
        supports_check_mode=True,
    )
    validate(module)
    params = module.params
    headers = IPV6_HEADERS if checks.is_ipv6(params['dest']) else IPV4_HEADERS
    if params['size'] is not None:
        size, mtu_source = params['size'], 'size'
        mtu = params['mtu'] if params['mtu'] is not None else size + headers
    elif params['mtu'] is not None:
        mtu, mtu_source = params['mtu'], 'mtu'
        size = mtu - headers
    else:
        mtu, mtu_source = read_interface_mtu(module, params['sysfs_root'], params['interface']), 'interface'
        size = mtu - headers
    if size < 0:
        fail(module, 'bad_mtu', 'MTU %s is too small for a ping (%s header bytes)' % (mtu, headers))

    args = ['-M', 'do', '-s', size, '-c', params['count'], '-W', 1]
    if params['interval'] is not None:
        args += ['-i', params['interval']]
    if params['deadline'] is not None:
        args += ['-w', params['deadline']]
    if params['interface']:
        args += ['-I', params['interface']]
    args.append(params['dest'])
    timeout = params['timeout']
    if timeout is None:
        per_packet = params['interval'] if params['interval'] is not None else 1.0
        timeout = int(params['deadline'] or params['count'] * per_packet + 1) + 10

    runner = ToolRunner(module)
    result = runner.run('ping', args, timeout=timeout, check=False)
    if result.timed_out:
        fail(module, 'timeout', '`%s` timed out after %s s' % (result.cmd, timeout), **result.as_dict())
    output = '\n'.join(part for part in (result.stdout, result.stderr) if part)
    if result.rc not in (0, 1, 2):
        runner.fail(result)
    try:
        stats = parse_ping(output)
    except ParseError as exc:
        runner.fail_parse(result, exc)
    verdict = summarize_jumbo(stats, size, mtu)
    fields = dict(
        changed=False, cmd=result.cmd, rc=result.rc, passed=verdict['passed'], reason=verdict['reason'],
        size=size, mtu=mtu, mtu_source=mtu_source, dest=params['dest'], interface=params['interface'],
        transmitted=stats['transmitted'], received=stats['received'], loss_percent=stats['loss_percent'], errors=stats['errors'],
        rtt_min_ms=stats['rtt_min_ms'], rtt_avg_ms=stats['rtt_avg_ms'], rtt_max_ms=stats['rtt_max_ms'], rtt_mdev_ms=stats['rtt_mdev_ms'],
        rtt_replies_ms=stats['rtt_replies_ms'],
        frag_needed=stats['frag_needed'], path_mtu=stats['path_mtu'], dest_unreachable=stats['dest_unreachable'], stats=stats,
        stdout=result.stdout, stderr=result.stderr,
    )
    if params['fail_on_loss'] and not verdict['passed']:
        fields.pop('changed')
        fail(module, 'jumbo_failed', '`%s` jumbo check failed: %s' % (result.cmd, verdict['reason']), **fields)
    module.exit_json(**dict(fields, **SUCCESS))


if __name__ == '__main__':
    main()
