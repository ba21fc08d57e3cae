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
  - With O(role=server) and O(state=started), starts C(iperf3 -s -1) detached and returns its pid, start time, executable and
    log file; the server exits by itself after one test, and a watchdog stops its whole process group at a hard deadline (O(timeout))
    whatever happens to the play.
  - With O(role=server) and O(state=stopped), stops that server (its whole process group) if it is still our process (same pid,
    start time and executable), confirms nothing is left and returns its parsed output. A stop never fails the host; a server
    that already exited, or whose pid now belongs to another process, counts as stopped (RV(server_state) says which).
  - With O(role=client), runs C(iperf3 -c) against a server and returns the measured throughput taken from the receiver's side,
    retransmits, UDP loss, per-stream figures, the slowest interval and CPU load.
  - With O(sessions), one call starts, runs or stops several iperf3 processes at once, each on its own port (and core);
    the servers side by side, the clients all at the same moment, their receiver figures summed in RV(received_bps). Before
    iperf3 3.16 one process runs every stream in one thread, which tops out far below a 100-400 Gb/s link.
  - Rates are in bits per second, decimal (1 Gbit/s = 1e9 bits/s), as iperf3 reports them.
  - A failure names the host, the command line and its class in RV(error_class) (V(connect_refused), V(no_route), V(server_busy),
    V(timeout), V(iperf3_error), V(tool_failed), V(parse_error), V(port_in_use), V(server_failed), V(tool_missing),
    V(invalid_options)), with RV(error_hint) and RV(error_side).
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
  affinity:
    description:
      - The CPU core to pin the iperf3 process to (C(-A)), for example one on the NIC's NUMA node.
      - A core this host does not let the module's processes run on (outside its CPU affinity mask, or past its last CPU,
        where iperf3 would fail with C(unable to set CPU affinity)) is not used; the process runs unpinned, says so in
        RV(affinity_note) and warns.
    type: int
  sessions:
    description:
      - Several iperf3 processes in one call, each a dict with C(id) (a name for it), C(port) and optionally C(bind) and
        C(affinity), in place of O(port), O(bind) and O(affinity); every other option is shared.
      - With O(role=server) and O(state=started), one server per entry, returned in RV(servers); pass those entries as they are
        with O(state=stopped) to stop them all.
      - With O(role=client), one client per entry, all started at the same moment; RV(clients) lists each one's result and
        RV(received_bps) is their sum. A client that fails fails the call, naming it.
    type: list
    elements: dict
  pid:
    description: Process id returned by O(state=started), for O(state=stopped).
    type: int
  start_time:
    description:
      - With O(state=stopped), the RV(start_time) returned by O(state=started) (field 22 of C(/proc/PID/stat)); read from
        O(log_path)'s private directory when omitted. A pid with another start time is never signalled.
    type: int
  exe:
    description: With O(state=stopped), the RV(exe) returned by O(state=started); read from O(log_path)'s private directory when omitted.
    type: str
  log_path:
    description:
      - With O(state=stopped), the RV(log_path) returned by O(state=started). Only a C(server.log) in a private C(netval-*)
        directory this module created (same owner, mode 0700) is read; any other path is refused with a warning. The log and
        its directory are removed once read. Not accepted with O(state=started).
    type: path
  log_dir:
    description: Directory in which the server's private log directory (mode 0700) is created.
    type: path
    default: /tmp
  wait_exit:
    description:
      - With O(state=stopped), seconds (0-600) to let a server that is finishing its one test write its report before it is
        stopped; an invalid value is warned about and 0 is used.
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
    description:
      - Hard limit in seconds (at most two days). For a client, the limit of the command; default O(duration) + O(omit) + 30.
      - For a server, its hard deadline; default 3600.
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
    start_time: "{{ iperf_server.start_time }}"
    exe: "{{ iperf_server.exe }}"
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
  description: Process id (and process group and session) of the started server.
  returned: role=server
  type: int
start_time:
  description: Start time of the started server (field 22 of C(/proc/PID/stat)); pass it to O(state=stopped).
  returned: role=server
  type: int
exe:
  description: Executable of the started server as C(/proc/PID/exe) showed it once it listened; pass it to O(state=stopped).
  returned: role=server
  type: str
timeout:
  description: The server's hard deadline in seconds.
  returned: role=server and state=started
  type: int
deadline_at:
  description: Unix time at which the server is stopped whatever happens.
  returned: role=server and state=started, not in check mode
  type: int
log_path:
  description: The server's log file (C(server.log) in a private directory).
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
servers:
  description:
    - With O(sessions) and O(role=server), one entry per session (C(id), C(port), C(cmd), C(pid), C(start_time), C(exe), C(log_path)
      when started; with O(state=stopped) what the stop found and the server's C(output)).
  returned: role=server with sessions
  type: list
  elements: dict
clients:
  description:
    - With O(sessions) and O(role=client), each client's result (C(id), C(port), C(cmd), C(received_bps), C(sent_bps),
      C(retransmits), C(cpu), C(stdout), C(affinity_note)...) in the order of O(sessions).
  returned: role=client with sessions
  type: list
  elements: dict
affinity_note:
  description:
    - Why the process ran unpinned although O(affinity) named a core (the core is not one this host lets it run on);
      absent when it ran as asked. With O(sessions), in each entry of RV(servers) or RV(clients).
  returned: when O(affinity) named a core that could not be used
  type: str
  sample: core 48 is not one this host lets the process run on (allowed 0-1); it ran unpinned
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
error_class:
  description: Failure class (see the description), null on success.
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description:
    - Whose fault RV(error_class) is, null on success. C(ours) is our tooling or run (missing tool, invalid options, our timeout,
      port in use, server not listening or busy, unreadable output) and must never be blamed on the provider; C(host) is the host
      the module ran on; C(unknown) when the output does not say (for example no route to the peer).
  returned: always
  type: str
stopped:
  description: Whether the server is gone after O(state=stopped) (also true when it had exited or its pid was reused).
  returned: role=server and state=stopped
  type: bool
server_state:
  description:
    - What the stop found, C(exited), C(stopped), C(pid_reused) (not signalled), C(still_running) (alive after SIGKILL) or
      C(unverified) (alive but nothing identifies it as ours; not signalled).
  returned: role=server and state=stopped
  type: str
was_running:
  description: Whether the server was still running when it was stopped (false when it had exited after its one test).
  returned: role=server and state=stopped
  type: bool
output:
  description: The server's raw output (its log file).
  returned: role=server and state=stopped
  type: str
'''

import concurrent.futures
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.iperf3 import build_iperf3_argv, classify_iperf3_error, parse_iperf3
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

_BANDWIDTH_RE = re.compile(r'\d+(?:\.\d+)?[KMGTkmgt]?(?:/\d+)?')
# A server nobody stops ends this long after it started unless O(timeout) says otherwise.
SERVER_DEFAULT_DEADLINE = 3600


SESSION_KEYS = ('id', 'port', 'bind', 'affinity', 'pid', 'start_time', 'exe', 'log_path')


def _checked_session_params(module):
    """Each session's params (the shared options with its own port, bind, affinity and server identity), and the problems."""
    params = module.params
    problems = []
    merged = []
    for index, session in enumerate(params['sessions'] or []):
        if not isinstance(session, dict):
            problems.append('sessions[%d] must be a dict with id and port, got %r' % (index, session))
            continue
        unknown = sorted(set(session) - set(SESSION_KEYS))
        if unknown and not (params['role'] == 'server' and params['state'] == 'stopped'):
            problems.append('sessions[%d] has unknown key(s) %s (known: %s)' % (index, ', '.join(unknown), ', '.join(SESSION_KEYS)))
        entry = dict(params, sessions=None)
        for key in ('port', 'pid', 'affinity', 'start_time'):
            if session.get(key) is not None:
                try:
                    entry[key] = int(session[key])
                except (TypeError, ValueError):
                    problems.append('sessions[%d].%s must be a whole number, got %r' % (index, key, session[key]))
        for key in ('bind', 'exe', 'log_path'):
            if session.get(key) is not None:
                entry[key] = str(session[key])
        entry['id'] = str(session.get('id') if session.get('id') is not None else index)
        merged.append(entry)
    ports = [entry['port'] for entry in merged]
    if len(set(ports)) != len(ports) and not (params['role'] == 'server' and params['state'] == 'stopped'):
        problems.append('sessions use a port twice: %s' % ', '.join(str(port) for port in ports))
    return merged, problems


def _problems(params):
    problems = checks.control_characters(params)
    if not 1 <= params['port'] <= 65535:
        problems.append('port must be 1-65535, got %s' % params['port'])
    if params['bind'] is not None:
        problems.append(checks.check_ip('bind', params['bind']))
    if params.get('affinity') is not None and not 0 <= params['affinity'] <= 65535:
        problems.append('affinity must be a CPU number 0-65535, got %s' % params['affinity'])
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=background.MAX_DEADLINE))
    if params['role'] == 'client':
        if not params['server']:
            problems.append('server is required with role=client')
        else:
            problems.append(checks.check_host('server', params['server']))
        if not 1 <= params['parallel'] <= 128:
            problems.append('parallel must be 1-128, got %s' % params['parallel'])
        if not 1 <= params['duration'] <= 86400:
            problems.append('duration must be 1-86400 seconds, got %s' % params['duration'])
        if params['omit'] < 0 or params['omit'] > params['duration']:
            problems.append('omit must be 0-%s seconds (at most duration), got %s' % (params['duration'], params['omit']))
        interval = params['interval']
        if interval is not None and interval != 0 and checks.check_number('interval', interval, 0.1, 60):
            problems.append('interval must be 0 (no interval reports) or 0.1-60 seconds, got %r' % interval)
        if params['bandwidth'] is not None and not checks.fullmatch(_BANDWIDTH_RE, params['bandwidth']):
            problems.append('bandwidth must look like 10G, 500M or 1000000, got %r' % params['bandwidth'])
    elif params['log_path'] is not None:
        problems.append('log_path is chosen by the module with state=started (a private directory under log_dir); '
                        'pass it only with state=stopped')
    return problems


def validate(module):
    """The options, and each session's; returns the sessions' params (None without O(sessions))."""
    params = module.params
    sessions = None
    problems = []
    if params['sessions'] is not None:
        sessions, problems = _checked_session_params(module)
        if not sessions and not problems:
            problems.append('sessions is empty: give one entry per iperf3 process')
    if params['role'] == 'server' and params['state'] == 'stopped':
        # A stop must never fail the host: its options are checked where they are used (stop).
        return sessions
    for index, entry in enumerate(sessions or []):
        problems += ['sessions[%d] (%s): %s' % (index, entry['id'], problem) for problem in _problems(entry) if problem]
    if sessions is None:
        problems += _problems(params)
    checks.fail_if_invalid(module, 'iperf3', checks.problems_of(problems))
    return sessions


def allowed_cpus():
    """The CPUs this process may run on (its affinity mask: cgroups, isolcpus, taskset), or None when unknown."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _cpu_ranges(cpus):
    cpus = sorted(cpus)
    ranges = []
    for cpu in cpus:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b) for a, b in ranges)


def usable_affinity(params):
    """(params, note): the params without O(affinity) when the core is not one this host lets the process run on (iperf3
    would fail: "unable to set CPU affinity"), with the sentence that says so; else as they are and None."""
    core = params.get('affinity')
    allowed = allowed_cpus() if core is not None else None
    if core is None or allowed is None or core in allowed:
        return params, None
    return (dict(params, affinity=None),
            'core %d is not one this host lets the process run on (allowed %s); it ran unpinned' % (core, _cpu_ranges(allowed)))


def gbps(bps):
    return round(bps / 1e9, 3) if bps is not None else None


def client_fields(runner, params, check_mode=False):
    """(fields, failure) of one client run: ``failure`` is (error_class, detail) or None; ``fields`` the module's result."""
    params, note = usable_affinity(params)
    fields, failed = _client_fields(runner, params, check_mode)
    if note:
        fields['affinity_note'] = note
    return fields, failed


def _client_fields(runner, params, check_mode):
    args = build_iperf3_argv(params)
    timeout = params['timeout'] or params['duration'] + params['omit'] + 30
    binary = runner.find('iperf3')
    cmd = render_cmd([binary] + args)
    if check_mode:
        return dict(changed=False, cmd=cmd, port=params['port'], msg='check mode: the iperf3 client test was not run'), None
    result = runner.run('iperf3', args, timeout=timeout, check=False)
    base = dict(result.as_dict(), port=params['port'], server=params['server'])
    if result.timed_out:
        return base, ('timeout', 'did not finish within %s s (duration %s s); the server may be unreachable or stuck'
                      % (timeout, params['duration']))
    output = result.stdout if (result.stdout or '').strip() else result.stderr
    try:
        parsed = parse_iperf3(output or '')
    except ParseError as exc:
        if result.rc != 0:
            return base, ('tool_failed', 'exited with rc=%s' % result.rc)
        return base, ('parse_error', 'gave output that could not be parsed (%s)' % exc)
    error = parsed['error']
    if error is None and result.rc != 0:
        # A text run prints its error on stderr while stdout may hold the start of the test.
        stderr_errors = [line for line in (result.stderr or '').splitlines() if line.startswith('iperf3: ')]
        error = stderr_errors[-1] if stderr_errors else None
    if error is not None:
        return base, (classify_iperf3_error(error), error)
    if result.rc != 0:
        return base, ('tool_failed', 'exited with rc=%s' % result.rc)
    return dict(
        changed=False, cmd=result.cmd, port=params['port'], server=params['server'],
        sent_bps=parsed['sent_bps'], received_bps=parsed['received_bps'], received_gbps=gbps(parsed['received_bps']),
        sent_gbps=gbps(parsed['sent_bps']), retransmits=parsed['retransmits'], lost_percent=parsed['lost_percent'],
        per_stream=parsed['per_stream'], intervals=parsed['intervals'], min_interval_bps=parsed['min_interval_bps'],
        min_interval_gbps=gbps(parsed['min_interval_bps']), cpu=parsed['cpu'], protocol=parsed['protocol'],
        streams=parsed['streams'], duration_s=parsed['duration_s'], reverse=parsed['reverse'], result=parsed,
        stdout=result.stdout), None


def fail_fields(module, fields, error_class, detail):
    fields = dict(fields)
    fields.pop('changed', None)
    fields.update(failure(error_class))
    module.fail_json(msg='%s: `%s` failed (%s): %s; %s' % (hostname(), fields.get('cmd'), error_class, detail, fields['error_hint']),
                     **fields)


def run_client(module, runner):
    fields, failed = client_fields(runner, module.params, module.check_mode)
    if fields.get('affinity_note'):
        module.warn('%s: %s' % (hostname(), fields['affinity_note']))
    if failed:
        fail_fields(module, fields, failed[0], failed[1])
    if not module.check_mode and fields['received_bps'] is None:
        module.warn('iperf3 output has no receiver figure; the result is unknown')
    module.exit_json(**dict(fields, **SUCCESS))


def _sum(values):
    """The sum of figures that are all known, else None (one process without a figure leaves the total unknown)."""
    known = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(known) if known and len(known) == len(values) else None


def run_clients(module, runner, sessions):
    """Every session's client at the same moment; their receiver figures summed, each client's result in ``clients``."""
    runner.find('iperf3')
    runner.find('timeout')
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        done = list(pool.map(lambda params: client_fields(runner, params, module.check_mode), sessions))
    clients = []
    failures = []
    for params, (fields, failed) in zip(sessions, done):
        entry = dict(fields, id=params['id'])
        if fields.get('affinity_note'):
            module.warn('%s: iperf3 client %s: %s' % (hostname(), params['id'], fields['affinity_note']))
        entry.pop('changed', None)
        if failed:
            entry.update(failure(failed[0]), msg='`%s` failed (%s): %s' % (fields.get('cmd'), failed[0], failed[1]))
            failures.append((params['id'], failed))
        clients.append(entry)
    if module.check_mode:
        module.exit_json(changed=False, clients=clients, cmd='; '.join(c.get('cmd') or '' for c in clients),
                         msg='check mode: the iperf3 clients were not run', **SUCCESS)
    if failures:
        name, (error_class, detail) = failures[0]
        fields = failure(error_class)
        module.fail_json(msg='%s: %d of %d iperf3 clients failed; the first, %s (%s): %s; %s'
                         % (hostname(), len(failures), len(clients), name, error_class, detail, fields['error_hint']),
                         clients=clients, **fields)
    received = _sum([c.get('received_bps') for c in clients])
    module.exit_json(changed=False, clients=clients, cmd='; '.join(c['cmd'] for c in clients), server=module.params['server'],
                     received_bps=received, received_gbps=gbps(received), sent_bps=_sum([c.get('sent_bps') for c in clients]),
                     retransmits=_sum([c.get('retransmits') for c in clients]), **SUCCESS)


def start_one(runner, params, check_mode):
    """(fields, failure) of one server start: ``failure`` is (error_class, message) or None."""
    params, note = usable_affinity(params)
    fields, failed = _start_one(runner, params, check_mode)
    if note:
        fields['affinity_note'] = note
    return fields, failed


def _start_one(runner, params, check_mode):
    binary = runner.find('iperf3')
    argv = [binary] + build_iperf3_argv(params)
    cmd = render_cmd(argv)
    deadline = params['timeout'] or SERVER_DEFAULT_DEADLINE
    if check_mode:
        return dict(changed=True, cmd=cmd, port=params['port'], pid=None, timeout=deadline,
                    msg='check mode: the iperf3 server was not started'), None
    if not os.path.isdir(params['log_dir']):
        return dict(cmd=cmd, port=params['port']), ('invalid_options', 'log_dir %s is not a directory' % params['log_dir'])
    try:
        info = background.start_server(argv, params['log_dir'], params['port'], deadline, name='iperf3-p%d' % params['port'])
    except background.ServerError as exc:
        error_class = 'port_in_use' if exc.port_in_use else 'server_failed'
        return (dict(cmd=cmd, port=params['port'], output=exc.output),
                (error_class, '`%s` could not be started (%s): %s' % (cmd, error_class, exc)))
    return dict(changed=True, cmd=cmd, pid=info['pid'], start_time=info['start_time'], exe=info['exe'], log_path=info['log_path'],
                port=params['port'], timeout=info['deadline_s'], deadline_at=info['deadline_at']), None


def start(module, runner):
    fields, failed = start_one(runner, module.params, module.check_mode)
    if fields.get('affinity_note'):
        module.warn('%s: %s' % (hostname(), fields['affinity_note']))
    if failed:
        extra = failure(failed[0])
        fields.pop('changed', None)
        module.fail_json(msg='%s: %s; %s' % (hostname(), failed[1], extra['error_hint']), **dict(fields, **extra))
    module.exit_json(**dict(fields, **SUCCESS))


def start_sessions(module, runner, sessions):
    """One server per session; a server that did not start fails the call, the others are returned so they can be stopped."""
    servers = []
    failures = []
    for params in sessions:
        fields, failed = start_one(runner, params, module.check_mode)
        entry = dict(fields, id=params['id'], bind=params['bind'], affinity=params['affinity'])
        entry.pop('changed', None)
        if fields.get('affinity_note'):
            entry['affinity'] = None
            module.warn('%s: iperf3 server %s: %s' % (hostname(), params['id'], fields['affinity_note']))
        if failed:
            entry.update(failure(failed[0]), pid=None, msg=failed[1])
            failures.append((params['id'], failed))
        servers.append(entry)
    if failures:
        name, (error_class, detail) = failures[0]
        fields = failure(error_class)
        module.fail_json(msg='%s: %d of %d iperf3 servers did not start; the first, %s: %s; %s'
                         % (hostname(), len(failures), len(servers), name, detail, fields['error_hint']), servers=servers, **fields)
    module.exit_json(changed=not module.check_mode, servers=servers, cmd='; '.join(s['cmd'] for s in servers), **SUCCESS)


def stop_one(module, params):
    """(fields, warnings) of stopping one server: what the stop found, never a failure."""
    pid = params['pid']
    log_path = params['log_path']
    cmd = 'stop iperf3 server pid %s' % pid
    common = dict(pid=pid, log_path=log_path, port=params['port'], cmd=cmd, start_time=params['start_time'], exe=params['exe'])
    warnings = [p for p in (checks.check_timeout('wait_exit', params['wait_exit'], maximum=600, allow_zero=True),) if p]
    wait_exit = params['wait_exit'] if not warnings else 0.0
    if pid is None or pid < 2:
        return (dict(changed=False, stopped=True, was_running=False, server_state='unverified', output='', result=None, **common),
                warnings + ['no server pid given; nothing to stop'])
    if module.check_mode:
        alive = background.pid_alive(pid)
        return dict(changed=alive, was_running=alive, msg='check mode: the iperf3 server was not stopped', **common), warnings
    outcome = background.stop_server(pid, params['start_time'], params['exe'], log_path, wait_exit=wait_exit)
    if outcome['log_problem']:
        warnings.append(outcome['log_problem'])
    if outcome['state'] == 'pid_reused':
        warnings.append('pid %d now belongs to another process (the server had exited and its pid was reused); not signalled' % pid)
    elif outcome['state'] == 'unverified':
        warnings.append('pid %d is alive but nothing says it is our iperf3 server (pass start_time and exe from the start result, '
                        'or its log_path); not signalled' % pid)
    elif outcome['state'] == 'still_running':
        warnings.append('processes of group %d are still running after SIGKILL' % pid)
    parsed = None
    if outcome['output'].strip():
        try:
            parsed = parse_iperf3(outcome['output'])
        except ParseError as exc:
            warnings.append('the server log %s could not be parsed: %s' % (log_path, exc))
    elif outcome['log_read']:
        warnings.append('the server log %s is empty' % log_path)
    extra = {}
    if parsed is not None:
        extra = dict(sent_bps=parsed['sent_bps'], received_bps=parsed['received_bps'], received_gbps=gbps(parsed['received_bps']),
                     retransmits=parsed['retransmits'], lost_percent=parsed['lost_percent'], error=parsed['error'])
    return dict(changed=outcome['signalled'], stopped=outcome['stopped'], was_running=outcome['was_running'],
                server_state=outcome['state'], output=outcome['output'], result=parsed, **dict(common, **extra)), warnings


def stop(module, sessions=None):
    """Stop the server, or every server of O(sessions): reports what it found and never fails the host (a cleanup step must
    not lose a node)."""
    if sessions is None:
        fields, warnings = stop_one(module, module.params)
        for warning in warnings:
            module.warn('%s: %s: %s' % (hostname(), fields['cmd'], warning))
        module.exit_json(**dict(fields, **SUCCESS))
    servers = []
    for params in sessions:
        fields, warnings = stop_one(module, params)
        for warning in warnings:
            module.warn('%s: %s (%s): %s' % (hostname(), fields['cmd'], params['id'], warning))
        signalled = fields.pop('changed', False)
        servers.append(dict(fields, id=params['id'], signalled=signalled))
    module.exit_json(changed=any(s['signalled'] for s in servers), servers=servers, cmd='stop %d iperf3 servers' % len(servers),
                     **SUCCESS)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type='str', required=True, choices=['server', 'client']),
            state=dict(type='str', default='started', choices=['started', 'stopped']),
            port=dict(type='int', default=5201),
            bind=dict(type='str'),
            affinity=dict(type='int'),
            sessions=dict(type='list', elements='dict'),
            pid=dict(type='int'),
            start_time=dict(type='int'),
            exe=dict(type='str'),
            log_path=dict(type='path'),
            log_dir=dict(type='path', default='/tmp'),
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
    sessions = validate(module)
    runner = ToolRunner(module)
    if module.params['role'] == 'client':
        if sessions is not None:
            run_clients(module, runner, sessions)
        run_client(module, runner)
    elif module.params['state'] == 'started':
        if sessions is not None:
            start_sessions(module, runner, sessions)
        start(module, runner)
    else:
        stop(module, sessions)


if __name__ == '__main__':
    main()
