#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: iperf3
short_description: Run an iperf3 TCP or UDP test between a node and a known-good peer
version_added: 0.1.0
description:
  - With O(role=server) and O(state=started), starts C(iperf3 -s -1) detached on the peer and returns its pid and log file;
    the server exits by itself after one test.
  - With O(role=server) and O(state=stopped), stops that server (its whole process group), confirms nothing is left
    and returns its parsed output.
  - With O(role=client), runs C(iperf3 -c) against a server and returns the measured throughput taken from the receiver's side,
    retransmits, UDP loss, per-stream figures, the slowest interval and CPU load.
  - Rates are in bits per second, decimal (1 Gbit/s = 1e9 bits/s), as iperf3 reports them.
  - A client that cannot reach its server fails with a named cause (V(connect_refused), V(no_route), V(server_busy),
    V(timeout)), the host and the command line.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  role:
    description: Run the server (listening) half or the client (measuring) half of the test.
    type: str
    required: true
    choices: [server, client]
  state:
    description:
      - For O(role=server) only. V(started) starts a server; V(stopped) stops the one given by O(pid).
    type: str
    choices: [started, stopped]
    default: started
  port:
    description: TCP port of the server (1-65535).
    type: int
    default: 5201
  bind:
    description: Local IP address to bind to (C(-B)), to test one NIC of a multi-NIC node.
    type: str
  pid:
    description: Process id returned by O(state=started); required with O(state=stopped).
    type: int
  log_path:
    description:
      - File the server writes its output to. With O(state=started) a file under C(/tmp) is chosen when omitted;
        with O(state=stopped) it is read back and parsed.
    type: path
  wait_exit:
    description: With O(state=stopped), seconds to let a server that is finishing its one test write its report before it is killed.
    type: float
    default: 2
  server:
    description: Host name or IP address of the iperf3 server; required with O(role=client).
    type: str
  parallel:
    description: Number of parallel streams (C(-P), 1-128).
    type: int
    default: 1
  duration:
    description: Test length in seconds (C(-t), 1-86400).
    type: int
    default: 10
  omit:
    description: Seconds at the start to leave out of the results (C(-O)), to skip TCP slow start.
    type: int
    default: 0
  interval:
    description: Seconds between interval reports (C(-i)).
    type: float
    default: 1
  reverse:
    description: Reverse mode (C(-R)); the server sends and this client receives.
    type: bool
    default: false
  udp:
    description: Test UDP (C(-u)) instead of TCP; set O(bandwidth) as well, iperf3 defaults to 1 Mbit/s for UDP.
    type: bool
    default: false
  bandwidth:
    description: Target bitrate (C(-b)), for example V(10G) or V(500M); mostly used with O(udp).
    type: str
  json:
    description: Ask iperf3 for JSON output (C(-J)), which is exact; text output is parsed as well.
    type: bool
    default: true
  timeout:
    description: Hard limit in seconds for the client command; default O(duration) + O(omit) + 30.
    type: int
notes:
  - In check mode nothing is started, stopped or run; a client test is not run because it loads the link and uses up
    the one test a C(-1) server accepts.
  - A client test reports RV(received_bps) from the receiver's side; a server's own empty sender line is never used.
attributes:
  check_mode:
    description: Can run in check mode; it then reports what it would do and runs nothing.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
seealso:
  - module: gpufleet.netval.jumbo_ping
'''

EXAMPLES = r'''
- name: Start an iperf3 server on the known-good peer
  gpufleet.netval.iperf3:
    role: server
    state: started
    port: 5201
  delegate_to: "{{ netval_peer }}"
  register: iperf_server

- name: Measure 8 TCP streams from the new node to the peer
  gpufleet.netval.iperf3:
    role: client
    server: "{{ hostvars[netval_peer].netval_test_ip }}"
    port: 5201
    parallel: 8
    duration: 10
    omit: 2
  register: iperf

- name: Stop the server and collect its view of the test
  gpufleet.netval.iperf3:
    role: server
    state: stopped
    pid: "{{ iperf_server.pid }}"
    log_path: "{{ iperf_server.log_path }}"
  delegate_to: "{{ netval_peer }}"

- name: Require 90% of 100G
  ansible.builtin.assert:
    that: iperf.received_gbps >= 90
'''

RETURN = r'''
cmd:
  description: The command line that was run (client), started (server) or that would have been run (check mode).
  returned: always
  type: str
  sample: /usr/bin/iperf3 -c 10.0.0.2 -p 5201 -t 10 -P 8 -i 1 -J
pid:
  description: Process id (and process group) of the started server.
  returned: role=server
  type: int
log_path:
  description: File with the server's output.
  returned: role=server
  type: str
port:
  description: Server port.
  returned: always
  type: int
sent_bps:
  description: Bits per second the sender sent (null when this side cannot know it).
  returned: role=client, or role=server and state=stopped with a report
  type: float
received_bps:
  description: Bits per second the receiver received, the test result.
  returned: role=client
  type: float
  sample: 93100000000.0
received_gbps:
  description: RV(received_bps) in Gbit/s (1e9), rounded to 3 decimals.
  returned: role=client
  type: float
  sample: 93.1
sent_gbps:
  description: RV(sent_bps) in Gbit/s (1e9), rounded to 3 decimals.
  returned: role=client
  type: float
min_interval_gbps:
  description: RV(min_interval_bps) in Gbit/s (1e9), rounded to 3 decimals.
  returned: role=client
  type: float
protocol:
  description: V(tcp) or V(udp), as iperf3 reported it.
  returned: role=client
  type: str
streams:
  description: Number of parallel streams iperf3 ran.
  returned: role=client
  type: int
duration_s:
  description: Measured test length in seconds.
  returned: role=client
  type: float
retransmits:
  description: TCP retransmits counted by the sender (null for UDP or when unknown).
  returned: role=client
  type: int
lost_percent:
  description: UDP datagrams lost, in percent, counted by the receiver (null for TCP).
  returned: role=client
  type: float
per_stream:
  description: One entry per stream with id, sent_bps, received_bps, retransmits, lost_percent and jitter_ms.
  returned: role=client
  type: list
  elements: dict
intervals:
  description: Interval reports with start, end, bps, retransmits and omitted.
  returned: role=client
  type: list
  elements: dict
min_interval_bps:
  description: The slowest full, not omitted interval, to catch a link that flaps during the test.
  returned: role=client
  type: float
cpu:
  description: CPU load in percent of the local (host_total) and remote (remote_total) iperf3; above 90 the test is CPU bound.
  returned: role=client
  type: dict
  sample: {"host_total": 98.9, "remote_total": 75.5}
stdout:
  description: The tool's raw output (client runs), kept for the evidence bundle.
  returned: success
  type: str
result:
  description: Everything the parser read from the output (protocol, streams, duration_s, reverse, role, error, printed figures...).
  returned: role=client, or role=server and state=stopped
  type: dict
cause:
  description: On failure, a short name of the cause, one of connect_refused, no_route, server_busy, timeout, iperf3_error, port_in_use,
    server_failed, tool_failed.
  returned: failure
  type: str
stopped:
  description: Whether the server is gone after O(state=stopped).
  returned: role=server and state=stopped
  type: bool
was_running:
  description: Whether the server was still running when it was stopped (false when it had exited after its one test).
  returned: role=server and state=stopped
  type: bool
output:
  description: The server's raw output (its log file).
  returned: role=server and state=stopped
  type: str
'''

import os
import re
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.iperf3 import build_iperf3_argv, classify_iperf3_error, parse_iperf3
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

_HOST_RE = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$')
_BANDWIDTH_RE = re.compile(r'^\d+(?:\.\d+)?[KMGTkmgt]?(?:/\d+)?$')


def valid_ip(value):
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, value)
            return True
        except (socket.error, ValueError):
            continue
    return False


def valid_host(value):
    return bool(value) and (valid_ip(value) or bool(_HOST_RE.match(value)))


def validate(module):
    params = module.params
    where = hostname()
    problems = []
    if not 1 <= params['port'] <= 65535:
        problems.append('port must be 1-65535, got %s' % params['port'])
    if params['bind'] is not None and not valid_ip(params['bind']):
        problems.append('bind must be an IP address, got %r' % params['bind'])
    if params['role'] == 'client':
        if not params['server']:
            problems.append('server is required with role=client')
        elif not valid_host(params['server']):
            problems.append('server must be a host name or IP address, got %r' % params['server'])
        if not 1 <= params['parallel'] <= 128:
            problems.append('parallel must be 1-128, got %s' % params['parallel'])
        if not 1 <= params['duration'] <= 86400:
            problems.append('duration must be 1-86400 seconds, got %s' % params['duration'])
        if params['omit'] < 0 or params['omit'] > params['duration']:
            problems.append('omit must be 0-%s seconds (at most duration), got %s' % (params['duration'], params['omit']))
        if params['interval'] is not None and not (params['interval'] == 0 or 0.1 <= params['interval'] <= 60):
            problems.append('interval must be 0 (no interval reports) or 0.1-60 seconds, got %s' % params['interval'])
        if params['bandwidth'] is not None and not _BANDWIDTH_RE.match(params['bandwidth']):
            problems.append('bandwidth must look like 10G, 500M or 1000000, got %r' % params['bandwidth'])
        if params['timeout'] is not None and params['timeout'] < 1:
            problems.append('timeout must be at least 1 second, got %s' % params['timeout'])
    elif params['state'] == 'stopped':
        if params['pid'] is None:
            problems.append('pid is required with role=server state=stopped')
        elif params['pid'] < 2:
            problems.append('pid must be a process id above 1, got %s' % params['pid'])
    if problems:
        module.fail_json(msg='%s: invalid iperf3 options: %s' % (where, '; '.join(problems)), cause='invalid_options')


def is_iperf3_process(pid):
    """True when /proc says ``pid`` runs iperf3 (so a stale pid never kills something else)."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            argv = handle.read().split(b'\0')
    except (IOError, OSError):
        return False
    return any(os.path.basename(arg) == b'iperf3' for arg in argv[:2])


def gbps(bps):
    return round(bps / 1e9, 3) if bps is not None else None


def run_client(module, runner):
    params = module.params
    args = build_iperf3_argv(params)
    timeout = params['timeout'] or params['duration'] + params['omit'] + 30
    binary = runner.find('iperf3')
    cmd = render_cmd([binary] + args)
    if module.check_mode:
        module.exit_json(changed=False, cmd=cmd, port=params['port'],
                         msg='check mode: the iperf3 client test was not run')
    result = runner.run('iperf3', args, timeout=timeout, check=False)
    host = hostname()
    if result.timed_out:
        fail(module, result, 'timeout', 'did not finish within %s s (duration %s s); the server may be unreachable or stuck'
             % (timeout, params['duration']))
    output = result.stdout if (result.stdout or '').strip() else result.stderr
    try:
        parsed = parse_iperf3(output or '')
    except ParseError as exc:
        if result.rc != 0:
            fail(module, result, 'tool_failed', 'exited with rc=%s' % result.rc)
        module.fail_json(msg='%s: `%s` gave output that could not be parsed (%s)' % (host, result.cmd, exc),
                         cause='parse_error', **result.as_dict())
    error = parsed['error']
    if error is None and result.rc != 0:
        # A text run prints its error on stderr while stdout may hold the start of the test.
        stderr_errors = [line for line in (result.stderr or '').splitlines() if line.startswith('iperf3: ')]
        error = stderr_errors[-1] if stderr_errors else None
    if error is not None:
        fail(module, result, classify_iperf3_error(error), error)
    if result.rc != 0:
        fail(module, result, 'tool_failed', 'exited with rc=%s' % result.rc)
    warnings = []
    if parsed['received_bps'] is None:
        warnings.append('iperf3 output has no receiver figure; the result is unknown')
    for warning in warnings:
        module.warn(warning)
    module.exit_json(
        changed=False, cmd=result.cmd, port=params['port'], server=params['server'],
        sent_bps=parsed['sent_bps'], received_bps=parsed['received_bps'], received_gbps=gbps(parsed['received_bps']),
        sent_gbps=gbps(parsed['sent_bps']), retransmits=parsed['retransmits'], lost_percent=parsed['lost_percent'],
        per_stream=parsed['per_stream'], intervals=parsed['intervals'], min_interval_bps=parsed['min_interval_bps'],
        min_interval_gbps=gbps(parsed['min_interval_bps']), cpu=parsed['cpu'], protocol=parsed['protocol'],
        streams=parsed['streams'], duration_s=parsed['duration_s'], reverse=parsed['reverse'], result=parsed,
        stdout=result.stdout,
    )


def fail(module, result, cause, detail):
    module.fail_json(msg='%s: `%s` failed (%s): %s' % (hostname(), result.cmd, cause, detail), cause=cause, **result.as_dict())


def start(module, runner):
    params = module.params
    binary = runner.find('iperf3')
    argv = [binary] + build_iperf3_argv(params)
    cmd = render_cmd(argv)
    log_path = params['log_path'] or '/tmp/netval-iperf3-%s-%d-%d.log' % (params['port'], os.getpid(), int(time.time()))
    if module.check_mode:
        module.exit_json(changed=True, cmd=cmd, port=params['port'], log_path=log_path, pid=None,
                         msg='check mode: the iperf3 server was not started')
    try:
        info = background.start_server(argv, log_path, params['port'])
    except background.ServerError as exc:
        cause = 'port_in_use' if 'already in use' in str(exc) else 'server_failed'
        module.fail_json(msg='%s: `%s` could not be started (%s): %s' % (hostname(), cmd, cause, exc), cause=cause,
                         cmd=cmd, port=params['port'], log_path=log_path)
    module.exit_json(changed=True, cmd=cmd, pid=info['pid'], log_path=info['log_path'], port=params['port'])


def stop(module):
    params = module.params
    pid = params['pid']
    log_path = params['log_path']
    cmd = 'stop iperf3 server pid %d' % pid
    alive = background.pid_alive(pid)
    if alive and not is_iperf3_process(pid):
        module.fail_json(msg='%s: %s: process %d is not iperf3; refusing to signal it' % (hostname(), cmd, pid),
                         cause='not_iperf3', pid=pid)
    if module.check_mode:
        module.exit_json(changed=alive, pid=pid, log_path=log_path, port=params['port'], cmd=cmd, was_running=alive,
                         msg='check mode: the iperf3 server was not stopped')
    try:
        outcome = background.stop_server(pid, log_path, wait_exit=params['wait_exit'] if alive else 0.0)
    except background.ServerError as exc:
        module.fail_json(msg='%s: %s failed: %s' % (hostname(), cmd, exc), cause='stop_failed', pid=pid)
    if not outcome['stopped']:
        module.fail_json(msg='%s: %s: processes of group %d are still running after SIGKILL' % (hostname(), cmd, pid),
                         cause='stop_failed', pid=pid, stopped=False)
    parsed = None
    warnings = []
    if outcome['output'].strip():
        try:
            parsed = parse_iperf3(outcome['output'])
        except ParseError as exc:
            warnings.append('the server log %s could not be parsed: %s' % (log_path, exc))
    elif log_path:
        warnings.append('the server log %s is empty or missing' % log_path)
    for warning in warnings:
        module.warn(warning)
    extra = {}
    if parsed is not None:
        extra = dict(sent_bps=parsed['sent_bps'], received_bps=parsed['received_bps'], received_gbps=gbps(parsed['received_bps']),
                     retransmits=parsed['retransmits'], lost_percent=parsed['lost_percent'], error=parsed['error'])
    module.exit_json(changed=outcome['was_running'], pid=pid, log_path=log_path, port=params['port'], cmd=cmd,
                     stopped=True, was_running=outcome['was_running'], output=outcome['output'],
                     result=parsed, **extra)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type='str', required=True, choices=['server', 'client']),
            state=dict(type='str', default='started', choices=['started', 'stopped']),
            port=dict(type='int', default=5201),
            bind=dict(type='str'),
            pid=dict(type='int'),
            log_path=dict(type='path'),
            wait_exit=dict(type='float', default=2),
            server=dict(type='str'),
            parallel=dict(type='int', default=1),
            duration=dict(type='int', default=10),
            omit=dict(type='int', default=0),
            interval=dict(type='float', default=1),
            reverse=dict(type='bool', default=False),
            udp=dict(type='bool', default=False),
            bandwidth=dict(type='str'),
            json=dict(type='bool', default=True),
            timeout=dict(type='int'),
        ),
        required_if=[('role', 'client', ('server',))],
        supports_check_mode=True,
    )
    validate(module)
    runner = ToolRunner(module)
    if module.params['role'] == 'client':
        run_client(module, runner)
    elif module.params['state'] == 'started':
        start(module, runner)
    else:
        stop(module)


if __name__ == '__main__':
    main()
