#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: perftest
short_description: Run one perftest RDMA bandwidth or latency test (server or client side)
version_added: 0.1.0
description:
  - Runs one of the perftest tools (C(ib_send_bw), C(ib_write_bw), C(ib_read_bw), C(ib_send_lat), C(ib_write_lat), C(ib_read_lat))
    between a node under test and a known-good peer.
  - With O(role=server) and O(state=started) the tool is started detached in its own session on this host, with its output in a log
    file; the module returns once the server listens on its TCP control O(port). A perftest server exits by itself after one test.
  - With O(role=server) and O(state=stopped) the server's whole process group is stopped (if it is still our process, with the same pid,
    start time and executable), the module confirms nothing is left and returns the server's own output, parsed. A stop never
    fails the host; a server that already exited, or whose pid now belongs to another process, counts as stopped
    (RV(server_state) says which).
  - With O(role=client) the test runs to completion under a hard timeout and the output is parsed; bandwidth rows in the unit perftest
    printed and converted to decimal Gb/s and GB/s (perftest C(MB/sec) and C(MiB/sec) both mean 2^20 bytes per second), or latency rows in
    microseconds.
  - Failures are classified in RV(error_class) (C(no_rdma_device), C(connect_failed), C(qp_modify_failed), C(cuda_unavailable),
    C(completion_error), C(argument_error), C(port_in_use), C(timeout), C(parse_error), C(tool_missing), C(invalid_options),
    C(unknown_error)) with RV(error_side) saying whose fault that class is, and the message names the host, the command line,
    the class and what to check.
  - The server and the client must be given the same test options (size, duration, qps, bidirectional, report_gbits, rdma_cm...);
    perftest exchanges them and refuses a mismatch.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  test:
    description: The perftest tool to run.
    type: str
    required: true
    choices: [ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat, ib_write_lat, ib_read_lat]
  role:
    description: Which end of the test this host is.
    type: str
    required: true
    choices: [server, client]
  state:
    description:
      - For O(role=server) only. C(started) starts the server detached; C(stopped) stops the server started earlier, given O(pid)
        and O(log_path), and returns its output.
    type: str
    choices: [started, stopped]
    default: started
  server:
    description: For O(role=client), the host name or IP address of the host running the server.
    type: str
  device:
    description: RDMA device to use (C(-d)), for example C(mlx5_0). perftest picks the first device when omitted.
    type: str
  ib_port:
    description: Port of the RDMA device (C(-i)).
    type: int
  gid_index:
    description: GID index (C(-x)); required on RoCE, pick the RoCE v2 GID of the interface (see C(show_gids)).
    type: int
  size:
    description: Message size in bytes (C(-s)). Mutually exclusive with O(all_sizes).
    type: int
  all_sizes:
    description: Sweep message sizes from 2 bytes to 8 MiB (C(-a)).
    type: bool
    default: false
  duration:
    description: Run for this many seconds (C(-D)) instead of a number of iterations. Peaks are not measured in this mode.
    type: int
  iterations:
    description: Number of iterations (C(-n)). Mutually exclusive with O(duration).
    type: int
  tx_depth:
    description: Send queue depth (C(-t)); bandwidth tests only.
    type: int
  qps:
    description: Number of queue pairs (C(-q)); bandwidth tests only.
    type: int
  use_cuda:
    description: Use GPU memory of this CUDA device index (C(--use_cuda=N)) for GPUDirect RDMA; needs a perftest built with CUDA.
    type: int
  report_gbits:
    description: Report bandwidth in Gb/s (C(--report_gbits)); bandwidth tests only.
    type: bool
    default: false
  bidirectional:
    description: Measure bidirectional bandwidth (C(-b)); bandwidth tests only.
    type: bool
    default: false
  port:
    description: TCP control port the server listens on and the client connects to (C(-p)).
    type: int
    default: 18515
  rdma_cm:
    description:
      - Connect the queue pairs with RDMA CM (C(-R)).
      - A server in this mode listens in the RDMA CM port space, not on a TCP socket, so O(state=started) waits for its
        C(Waiting for client to connect) banner instead of a listening TCP port.
    type: bool
    default: false
  mtu:
    description: MTU of the queue pairs (C(-m)).
    type: int
    choices: [256, 512, 1024, 2048, 4096]
  connection:
    description: Connection type (C(-c)); C(UD) only for C(ib_send_*), C(UC) not for C(ib_read_*).
    type: str
    choices: [RC, UC, UD]
  cpu_freq_check:
    description: Let perftest fail on CPU frequency scaling warnings. By default C(-F) is passed so that it only warns.
    type: bool
    default: false
  extra_args:
    description: Further perftest arguments, each list item one argument, appended before the server address.
    type: list
    elements: str
    default: []
  timeout:
    description:
      - Hard timeout in seconds (at most two days). For a client the default is O(duration) + 60, or 300 without O(duration).
      - For a server it is the hard deadline after which the server's whole process group is stopped (SIGTERM, then SIGKILL after
        3 s) by a watchdog, whatever happens to the play; 3600 by default (servers of several HCAs wait while the clients
        run one after the other; pass the time the whole sequence needs).
    type: int
  ready_timeout:
    description: Seconds a starting server gets to listen on O(port) (above 0, at most 300).
    type: float
    default: 15
  wait_exit:
    description:
      - With O(state=stopped), seconds to let a server that is finishing its one test write its report before it is
        stopped (0 to 600; an invalid value is warned about and 0 is used).
    type: float
    default: 10
  pid:
    description: With O(state=stopped), the RV(pid) returned when the server was started.
    type: int
  start_time:
    description:
      - With O(state=stopped), the RV(start_time) returned when the server was started (field 22 of C(/proc/PID/stat)).
      - When omitted it is read from the private directory of O(log_path). A pid whose start time differs is someone
        else's process and is never signalled.
    type: int
  exe:
    description:
      - With O(state=stopped), the RV(exe) returned when the server was started; read from O(log_path)'s directory when omitted.
    type: str
  log_path:
    description:
      - With O(state=stopped), the RV(log_path) returned when the server was started. Only a C(server.log) in a private
        C(netval-*) directory this module created (owned by the same user, mode 0700) is read; any other path is refused
        with a warning and nothing is read. The log and its directory are removed once read.
    type: path
  log_dir:
    description: Directory in which the server's private log directory (mode 0700) is created.
    type: path
    default: /tmp
notes:
  - Supports check mode; a client reports the command it would run and runs nothing, a server starts or stops nothing.
  - Run the server on the known-good peer and the client on the node under test, and always stop the server afterwards (see the examples),
    so that no server is left when the client fails or times out.
seealso:
  - name: perftest
    description: The perftest suite.
    link: https://github.com/linux-rdma/perftest
attributes:
  check_mode:
    description: Can run in check mode; the client reports the command line it would run, the server starts or stops nothing.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: RDMA write bandwidth from the node under test to its known-good peer
  block:
    - name: Start the ib_write_bw server on the peer
      gpufleet.netval.perftest:
        test: ib_write_bw
        role: server
        device: mlx5_0
        gid_index: 3
        size: 65536
        duration: 10
        report_gbits: true
        port: 18515
      delegate_to: "{{ peer }}"
      register: perftest_server

    - name: Run the client on the node
      gpufleet.netval.perftest:
        test: ib_write_bw
        role: client
        server: "{{ peer_rdma_ip }}"
        device: mlx5_0
        gid_index: 3
        size: 65536
        duration: 10
        report_gbits: true
        port: 18515
      register: perftest_client

    - name: Require 350 Gb/s on a 400G link
      ansible.builtin.assert:
        that: perftest_client.summary.bw_avg_gbps >= 350
  always:
    - name: Stop the server whatever happened to the client
      gpufleet.netval.perftest:
        test: ib_write_bw
        role: server
        state: stopped
        pid: "{{ perftest_server.pid }}"
        start_time: "{{ perftest_server.start_time }}"
        exe: "{{ perftest_server.exe }}"
        log_path: "{{ perftest_server.log_path }}"
      delegate_to: "{{ peer }}"
      when: perftest_server.pid is defined

- name: Latency sweep, client side only (the server was started as above)
  gpufleet.netval.perftest:
    test: ib_send_lat
    role: client
    server: 10.0.0.2
    device: mlx5_1
    all_sizes: true
  register: lat
'''

RETURN = r'''
cmd:
  description: The perftest command line (without the timeout wrapper).
  returned: always
  type: str
  sample: /usr/bin/ib_write_bw -d mlx5_0 -x 3 -s 65536 -D 10 --report_gbits -p 18515 -F 10.0.0.2
argv:
  description: The perftest command as a list.
  returned: always
  type: list
  elements: str
timeout:
  description: The hard timeout applied, in seconds (for a server, its deadline).
  returned: when role is client or state is started
  type: int
rc:
  description: Exit status of the client.
  returned: when role is client and not in check mode
  type: int
stdout:
  description: Client standard output.
  returned: when role is client and not in check mode
  type: str
stderr:
  description: Client standard error.
  returned: when role is client and not in check mode
  type: str
timed_out:
  description: Whether the client was stopped by the hard timeout.
  returned: when role is client and not in check mode
  type: bool
perftest:
  description:
    - The parsed output (client output, or the server's log for O(state=stopped)); null when the output could not be parsed.
    - C(results) holds one row per message size; bandwidth rows have C(bytes), C(iterations), C(bw_peak) (null when not measured),
      C(bw_avg), C(bw_avg_as_printed), C(bw_unit), C(bw_avg_gbps), C(bw_avg_gbytes_s) and C(msg_rate_mpps); latency rows have C(t_min_us),
      C(t_max_us), C(t_typical_us), C(t_avg_us), C(t_stdev_us), C(p99_us) and C(p999_us) (null when this perftest does not print them).
  returned: when output was read
  type: dict
  sample: {"test": "RDMA_Write BW", "kind": "bw", "device": "mlx5_0", "link_type": "Ethernet", "gid_index": 3, "mtu": 4096,
           "bw_unit": "Gb/sec", "error_class": null, "results": [{"bytes": 65536, "iterations": 403504, "bw_peak": null,
           "bw_avg": 42.31, "bw_avg_as_printed": 42.31, "bw_unit": "Gb/sec", "bw_avg_gbps": 42.31, "bw_avg_gbytes_s": 5.28875,
           "msg_rate_mpps": 0.080701, "complete": true}]}
summary:
  description: Headline numbers of the row with the largest message size (null where unknown).
  returned: when role is client and the test ran
  type: dict
  sample: {"bytes": 65536, "bw_avg_gbps": 42.31, "bw_avg_gbytes_s": 5.28875, "t_typical_us": null, "t_avg_us": null, "p99_us": null}
error_class:
  description: Failure class (see the description), null on success and after a stop whose server log shows no error.
  returned: always
  type: str
error_hint:
  description: What an operator should check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description:
    - Whose fault RV(error_class) is, null on success. C(ours) is our tooling or run (missing tool, invalid options, our timeout,
      port in use, server unreachable, unreadable output) and must never be blamed on the provider; C(host) is the host the
      module ran on; C(unknown) when the output does not say.
  returned: always
  type: str
pid:
  description: Process id (and process group and session id) of the started server.
  returned: when role is server
  type: int
pgid:
  description: Process group of the started server (its pid).
  returned: when role is server and state is started
  type: int
start_time:
  description: Start time of the started server, field 22 of C(/proc/PID/stat); pass it to O(state=stopped).
  returned: when role is server and state is started
  type: int
exe:
  description: Executable of the started server as C(/proc/PID/exe) showed it once it was ready; pass it to O(state=stopped).
  returned: when role is server and state is started
  type: str
deadline_at:
  description: Unix time at which the server is stopped whatever happens.
  returned: when role is server and state is started
  type: int
log_path:
  description: The server's log file (C(server.log) in a private directory).
  returned: when role is server
  type: str
port:
  description: The TCP control port.
  returned: always
  type: int
stopped:
  description: Whether the server is gone (also true when it had exited by itself or its pid now belongs to another process).
  returned: when state is stopped
  type: bool
server_state:
  description:
    - What the stop found, C(exited) (gone by itself), C(stopped) (we stopped it), C(pid_reused) (the pid is another process now;
      not signalled), C(still_running) (alive after SIGKILL) or C(unverified) (alive but nothing identifies it as ours; not signalled).
  returned: when state is stopped
  type: str
was_running:
  description: Whether the server was still running when asked to stop (false when it had exited by itself after its test).
  returned: when state is stopped
  type: bool
leftover:
  description: Whether any process of the server's group was left running after SIGKILL (reported with a warning, never a failure).
  returned: when state is stopped
  type: bool
output:
  description: The server's raw output from its log file (empty when the log was refused or missing).
  returned: when state is stopped
  type: str
parse_error:
  description: Why the server log could not be parsed, null when it was.
  returned: when state is stopped
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.module_utils import perftest
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

BW_ONLY = ('tx_depth', 'qps', 'report_gbits', 'bidirectional')
# A server nobody stops ends this long after it started unless O(timeout) says otherwise: long enough for
# the clients of every HCA to run one after the other against servers started together.
SERVER_DEFAULT_DEADLINE = 3600


def validate(module):
    params = module.params
    test = params['test']
    stopping = params['role'] == 'server' and params['state'] == 'stopped'
    if stopping:
        # A stop must never fail the host: its options are checked where they are used (stop_server).
        return
    problems = checks.control_characters(params)
    if params['device'] is not None:
        problems.append(checks.check_device('device', params['device']))
    if params['role'] == 'client':
        if not params['server']:
            problems.append('server (the address of the host running the perftest server) is required for role=client')
        else:
            problems.append(checks.check_host('server', params['server']))
        if params['state'] != 'started':
            problems.append('state applies to role=server only')
    if not 1024 <= params['port'] <= 65535:
        problems.append('port %d is outside 1024-65535' % params['port'])
    for name, low, high in (('ib_port', 1, 255), ('gid_index', 0, 65535), ('size', 1, 2 ** 31), ('duration', 1, 86400),
                            ('iterations', 5, 2 ** 40), ('tx_depth', 1, 65536), ('qps', 1, 65536), ('use_cuda', 0, 1023)):
        problems.append(checks.check_number(name, params[name], low, high))
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=background.MAX_DEADLINE))
    problems.append(checks.check_timeout('ready_timeout', params['ready_timeout'], maximum=300))
    if test in perftest.LAT_TESTS:
        for name in BW_ONLY:
            if params[name]:
                problems.append('%s is for bandwidth tests only, not %s' % (name, test))
    if params['connection'] == 'UD' and not test.startswith('ib_send'):
        problems.append('connection UD is only supported by ib_send_bw and ib_send_lat')
    if params['connection'] == 'UC' and test.startswith('ib_read'):
        problems.append('connection UC is not supported by %s' % test)
    for index, arg in enumerate(params['extra_args']):
        problems.append(checks.check_arg('extra_args[%d]' % index, arg))
    checks.fail_if_invalid(module, 'perftest', checks.problems_of(problems))


def fail_classified(module, error_class, command, detail, **extra):
    fields = failure(error_class, perftest.ERROR_HINTS.get(error_class))
    msg = '%s: `%s` failed: %s: %s' % (hostname(), command, error_class, fields['error_hint'])
    if detail:
        msg += ' (perftest said: %s)' % detail.strip().replace('\n', ' | ')[:400]
    extra['cmd'] = command
    extra.update(fields)
    module.fail_json(msg=msg, **extra)


def parse_or_none(text):
    try:
        return perftest.parse_perftest(text), None
    except ParseError as exc:
        return None, str(exc)


def run_client(module, runner, binary, args):
    params = module.params
    argv = [binary] + args
    cmd = render_cmd(argv)
    timeout = params['timeout']
    if timeout is None:
        timeout = params['duration'] + 60 if params['duration'] else 300
    if module.check_mode:
        module.exit_json(changed=False, cmd=cmd, argv=argv, timeout=timeout, port=params['port'], **SUCCESS)
    result = runner.run(params['test'], args, timeout=timeout, check=False)
    fields = dict(result.as_dict(), timeout=timeout, port=params['port'])
    fields['cmd'] = cmd
    text = (result.stdout or '') + ('\n' if result.stdout and result.stderr else '') + (result.stderr or '')
    parsed, parse_error = parse_or_none(text)
    fields['perftest'] = parsed
    if result.timed_out:
        detail = parsed['error_text'] if parsed and parsed['error_text'] else 'no result within %d s' % timeout
        fail_classified(module, 'timeout', cmd, detail, **fields)
    if parsed is None:
        if result.rc != 0:
            fail_classified(module, 'unknown_error', cmd, 'rc=%s: %s' % (result.rc, (result.stderr or result.stdout or '').strip()[-300:]),
                            **fields)
        runner.fail(result, reason='gave output that could not be parsed (%s)' % parse_error, error_class='parse_error',
                    perftest=None, timeout=timeout, port=params['port'])
    if parsed['error_class']:
        fail_classified(module, parsed['error_class'], cmd, parsed['error_text'], **fields)
    if result.rc != 0 or not parsed['results']:
        detail = 'rc=%s, %d result rows: %s' % (result.rc, len(parsed['results']), (result.stderr or result.stdout or '').strip()[-300:])
        fail_classified(module, 'unknown_error', cmd, detail, **fields)
    fields.pop('perftest')
    module.exit_json(changed=False, perftest=parsed, summary=perftest.summarize_perftest(parsed), **dict(fields, **SUCCESS))


def server_deadline(params):
    """Seconds the server may live: O(timeout), else SERVER_DEFAULT_DEADLINE; never unbounded."""
    return params['timeout'] or SERVER_DEFAULT_DEADLINE


def start_server(module, runner, binary, args):
    params = module.params
    argv = [binary] + args
    cmd = render_cmd(argv)
    deadline = server_deadline(params)
    common = dict(cmd=cmd, argv=argv, port=params['port'], timeout=int(deadline))
    if module.check_mode:
        module.exit_json(changed=True, **dict(common, **SUCCESS))
    if not os.path.isdir(params['log_dir']):
        module.fail_json(msg='%s: log_dir %s is not a directory' % (hostname(), params['log_dir']), **dict(common, **failure('invalid_options')))
    # perftest prints this banner once it waits for a client, in every connection mode.
    ready_text = 'Waiting for client to connect' if params['rdma_cm'] else None
    try:
        info = background.start_server(argv, params['log_dir'], params['port'], deadline, ready_timeout=params['ready_timeout'],
                                       ready_text=ready_text, name='perftest-%s-p%d' % (params['test'], params['port']))
    except background.ServerError as exc:
        parsed, dummy = parse_or_none(exc.output)
        if exc.port_in_use:
            error_class = 'port_in_use'
            detail = 'TCP port %d is already in use on %s: %s' % (params['port'], hostname(), exc)
        else:
            error_class = parsed['error_class'] if parsed and parsed['error_class'] else 'unknown_error'
            detail = str(exc)
        fail_classified(module, error_class, cmd, detail, output=exc.output, perftest=parsed, argv=argv, port=params['port'])
    module.exit_json(changed=True, pid=info['pid'], pgid=info['pgid'], start_time=info['start_time'], exe=info['exe'],
                     log_path=info['log_path'], deadline_at=info['deadline_at'], **dict(common, **SUCCESS))


def stop_server(module):
    """Stop the server: reports what it found and never fails the host (a cleanup step must not lose a node)."""
    params = module.params
    pid = params['pid']
    common = dict(pid=pid, log_path=params['log_path'], port=params['port'], start_time=params['start_time'], exe=params['exe'])
    problems = [p for p in (checks.check_timeout('wait_exit', params['wait_exit'], maximum=600, allow_zero=True),) if p]
    wait_exit = params['wait_exit'] if not problems else 0.0
    if pid is None or pid < 2:
        module.warn('perftest stop: no server pid given (%r); nothing to stop' % (pid,))
        module.exit_json(changed=False, stopped=True, was_running=False, leftover=False, server_state='unverified',
                         output='', perftest=None, parse_error=None, **dict(common, **SUCCESS))
    if module.check_mode:
        module.exit_json(changed=background.pid_alive(pid), **dict(common, **SUCCESS))
    outcome = background.stop_server(pid, params['start_time'], params['exe'], params['log_path'], wait_exit=wait_exit)
    warnings = problems + ([outcome['log_problem']] if outcome['log_problem'] else [])
    if outcome['state'] == 'pid_reused':
        warnings.append('pid %d now belongs to another process (the server had exited and its pid was reused); '
                        'not signalled' % pid)
    elif outcome['state'] == 'unverified':
        warnings.append('pid %d is alive but nothing says it is our %s server (pass start_time and exe from the start result, '
                        'or its log_path); not signalled' % (pid, params['test']))
    elif outcome['state'] == 'still_running':
        warnings.append('%s server pid %d: processes of its group are still running after SIGKILL' % (params['test'], pid))
    for warning in warnings:
        module.warn('%s: perftest stop: %s' % (hostname(), warning))
    parsed, parse_error = parse_or_none(outcome['output']) if outcome['output'].strip() else (None, 'empty or unread server log')
    server_failure = failure(parsed['error_class'], parsed['error_hint']) if parsed and parsed['error_class'] else dict(SUCCESS)
    module.exit_json(changed=outcome['signalled'], stopped=outcome['stopped'], was_running=outcome['was_running'],
                     leftover=outcome['state'] == 'still_running', server_state=outcome['state'], output=outcome['output'],
                     perftest=parsed, parse_error=parse_error, **dict(common, **server_failure))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            test=dict(type='str', required=True, choices=list(perftest.TESTS)),
            role=dict(type='str', required=True, choices=['server', 'client']),
            state=dict(type='str', default='started', choices=['started', 'stopped']),
            server=dict(type='str'),
            device=dict(type='str'),
            ib_port=dict(type='int'),
            gid_index=dict(type='int'),
            size=dict(type='int'),
            all_sizes=dict(type='bool', default=False),
            duration=dict(type='int'),
            iterations=dict(type='int'),
            tx_depth=dict(type='int'),
            qps=dict(type='int'),
            use_cuda=dict(type='int'),
            report_gbits=dict(type='bool', default=False),
            bidirectional=dict(type='bool', default=False),
            port=dict(type='int', default=18515),
            rdma_cm=dict(type='bool', default=False),
            mtu=dict(type='int', choices=[256, 512, 1024, 2048, 4096]),
            connection=dict(type='str', choices=['RC', 'UC', 'UD']),
            cpu_freq_check=dict(type='bool', default=False),
            extra_args=dict(type='list', elements='str', default=[]),
            timeout=dict(type='int'),
            ready_timeout=dict(type='float', default=15.0),
            wait_exit=dict(type='float', default=10.0),
            pid=dict(type='int'),
            start_time=dict(type='int'),
            exe=dict(type='str'),
            log_path=dict(type='path'),
            log_dir=dict(type='path', default='/tmp'),
        ),
        mutually_exclusive=[('size', 'all_sizes'), ('duration', 'iterations')],
        supports_check_mode=True,
    )
    validate(module)
    params = module.params
    if params['role'] == 'server' and params['state'] == 'stopped':
        stop_server(module)
    runner = ToolRunner(module)
    binary = runner.find(params['test'])
    args = perftest.build_perftest_argv(params)
    if params['role'] == 'client':
        run_client(module, runner, binary, args)
    start_server(module, runner, binary, args)


if __name__ == '__main__':
    main()
