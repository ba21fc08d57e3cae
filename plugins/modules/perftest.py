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
  - With O(role=server) and O(state=stopped) the server's whole process group is stopped (if it is still running), the module
    confirms nothing is left and returns the server's own output, parsed.
  - With O(role=client) the test runs to completion under a hard timeout and the output is parsed; bandwidth rows in the unit perftest
    printed and converted to decimal Gb/s and GB/s (perftest C(MB/sec) and C(MiB/sec) both mean 2^20 bytes per second), or latency rows in
    microseconds.
  - Failures are classified (C(no_rdma_device), C(connect_failed), C(qp_modify_failed), C(cuda_unavailable), C(completion_error),
    C(argument_error), C(port_in_use), C(timeout), C(unknown_error)) and the message names the host, the command line, the class and
    what to check.
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
      - Hard timeout in seconds. For a client the default is O(duration) + 60, or 300 without O(duration).
      - For a server, when set, the server is wrapped in coreutils C(timeout) so that a server nobody stops still ends.
    type: int
  ready_timeout:
    description: Seconds a starting server gets to listen on O(port).
    type: float
    default: 15
  wait_exit:
    description: With O(state=stopped), seconds to let a server that is finishing its one test write its report before it is killed.
    type: float
    default: 10
  pid:
    description: With O(state=stopped), the C(pid) returned when the server was started.
    type: int
  log_path:
    description: With O(state=stopped), the C(log_path) returned when the server was started.
    type: path
  log_dir:
    description: Directory for the server's log file.
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
  description: The hard timeout applied, in seconds (null for a server without one).
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
  description: Failure class, null on success.
  returned: always
  type: str
error_hint:
  description: What an operator should check for RV(error_class).
  returned: always
  type: str
pid:
  description: Process id (and process group id) of the started server.
  returned: when role is server and state is started
  type: int
log_path:
  description: The server's log file.
  returned: when role is server
  type: str
port:
  description: The TCP control port.
  returned: always
  type: int
stopped:
  description: Whether the server's process group is confirmed gone.
  returned: when state is stopped
  type: bool
was_running:
  description: Whether the server was still running when asked to stop (false when it had exited by itself after its test).
  returned: when state is stopped
  type: bool
leftover:
  description: Whether any process of the server's group was left running (the module fails when this would be true).
  returned: when state is stopped
  type: bool
output:
  description: The server's raw output from its log file.
  returned: when state is stopped
  type: str
'''

import ipaddress
import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.module_utils import perftest
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

DEVICE_RE = re.compile(r'^[A-Za-z0-9_.-]+$')
HOSTNAME_RE = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$')
BW_ONLY = ('tx_depth', 'qps', 'report_gbits', 'bidirectional')


def valid_host(value):
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return bool(HOSTNAME_RE.match(value))


def validate(module):
    params = module.params
    test = params['test']
    problems = []
    if params['device'] is not None and not DEVICE_RE.match(params['device']):
        problems.append('device %r is not a device name (letters, digits, _ . -)' % params['device'])
    if params['role'] == 'client':
        if not params['server']:
            problems.append('server (the address of the host running the perftest server) is required for role=client')
        elif not valid_host(params['server']):
            problems.append('server %r is not a host name or an IP address' % params['server'])
        if params['state'] != 'started':
            problems.append('state applies to role=server only')
    elif params['state'] == 'stopped' and (params['pid'] is None or not params['log_path']):
        problems.append('state=stopped needs the pid and log_path returned when the server was started')
    if not 1024 <= params['port'] <= 65535:
        problems.append('port %d is outside 1024-65535' % params['port'])
    for name, low, high in (('ib_port', 1, 255), ('gid_index', 0, 65535), ('size', 1, 2 ** 31), ('duration', 1, 86400),
                            ('iterations', 5, 2 ** 40), ('tx_depth', 1, 65536), ('qps', 1, 65536), ('use_cuda', 0, 1023),
                            ('timeout', 1, 86400 * 2)):
        value = params[name]
        if value is not None and not low <= value <= high:
            problems.append('%s %d is outside %d-%d' % (name, value, low, high))
    if test in perftest.LAT_TESTS:
        for name in BW_ONLY:
            if params[name]:
                problems.append('%s is for bandwidth tests only, not %s' % (name, test))
    if params['connection'] == 'UD' and not test.startswith('ib_send'):
        problems.append('connection UD is only supported by ib_send_bw and ib_send_lat')
    if params['connection'] == 'UC' and test.startswith('ib_read'):
        problems.append('connection UC is not supported by %s' % test)
    for arg in params['extra_args']:
        if '\x00' in arg or '\n' in arg:
            problems.append('extra_args item %r contains a NUL or newline' % arg)
    if problems:
        module.fail_json(msg='%s: invalid perftest parameters: %s' % (hostname(), '; '.join(problems)))


def fail_classified(module, error_class, command, detail, **extra):
    hint = perftest.ERROR_HINTS.get(error_class)
    msg = '%s: `%s` failed: %s: %s' % (hostname(), command, error_class, hint)
    if detail:
        msg += ' (perftest said: %s)' % detail.strip().replace('\n', ' | ')[:400]
    extra['cmd'] = command
    module.fail_json(msg=msg, error_class=error_class, error_hint=hint, **extra)


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
        module.exit_json(changed=False, cmd=cmd, argv=argv, timeout=timeout, port=params['port'], error_class=None, error_hint=None)
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
        runner.fail(result, reason='gave output that could not be parsed (%s)' % parse_error, error_class='unknown_error',
                    error_hint=perftest.ERROR_HINTS['unknown_error'], perftest=None, timeout=timeout, port=params['port'])
    if parsed['error_class']:
        fail_classified(module, parsed['error_class'], cmd, parsed['error_text'], **fields)
    if result.rc != 0 or not parsed['results']:
        detail = 'rc=%s, %d result rows: %s' % (result.rc, len(parsed['results']), (result.stderr or result.stdout or '').strip()[-300:])
        fail_classified(module, 'unknown_error', cmd, detail, **fields)
    fields.pop('perftest')
    module.exit_json(changed=False, perftest=parsed, summary=perftest.summarize_perftest(parsed),
                     error_class=None, error_hint=None, **fields)


def start_server(module, runner, binary, args):
    params = module.params
    argv = [binary] + args
    cmd = render_cmd(argv)
    run_argv = argv
    if params['timeout']:
        run_argv = [runner.find('timeout'), '--kill-after=5', str(params['timeout'])] + argv
    common = dict(cmd=cmd, argv=argv, port=params['port'], timeout=params['timeout'])
    if module.check_mode:
        module.exit_json(changed=True, error_class=None, error_hint=None, **common)
    if not os.path.isdir(params['log_dir']):
        module.fail_json(msg='%s: log_dir %s is not a directory' % (hostname(), params['log_dir']), **common)
    handle, log_path = tempfile.mkstemp(prefix='perftest-%s-p%d-' % (params['test'], params['port']), suffix='.log', dir=params['log_dir'])
    os.close(handle)
    try:
        # perftest prints this banner once it waits for a client, in every connection mode.
        ready_text = 'Waiting for client to connect' if params['rdma_cm'] else None
        info = background.start_server(run_argv, log_path, params['port'], ready_timeout=params['ready_timeout'], ready_text=ready_text)
    except background.ServerError as exc:
        output = background.read_log(log_path)
        parsed, dummy = parse_or_none(output)
        if 'already in use' in str(exc):
            error_class = 'port_in_use'
            detail = 'TCP port %d is already in use on %s: %s' % (params['port'], hostname(), exc)
        else:
            error_class = parsed['error_class'] if parsed and parsed['error_class'] else 'unknown_error'
            detail = str(exc)
        fail_classified(module, error_class, cmd, detail, log_path=log_path, output=output, perftest=parsed,
                        argv=argv, port=params['port'])
    module.exit_json(changed=True, pid=info['pid'], pgid=info['pgid'], log_path=log_path, error_class=None, error_hint=None, **common)


def _is_our_server(pid, test):
    """True when ``pid`` still runs the perftest tool (directly or under coreutils timeout): never kill a recycled pid."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            words = handle.read().decode('utf-8', 'replace').split('\x00')
    except (IOError, OSError):
        return False
    return any(os.path.basename(word) == test for word in words)


def stop_server(module):
    params = module.params
    pid = params['pid']
    common = dict(pid=pid, log_path=params['log_path'], port=params['port'])
    if module.check_mode:
        module.exit_json(changed=background.pid_alive(pid), error_class=None, error_hint=None, **common)
    if background.pid_alive(pid) and not _is_our_server(pid, params['test']):
        module.fail_json(msg='%s: process %d is not a %s server (its pid may have been reused); not stopping it'
                         % (hostname(), pid, params['test']), **common)
    try:
        outcome = background.stop_server(pid, params['log_path'], wait_exit=params['wait_exit'])
    except background.ServerError as exc:
        module.fail_json(msg='%s: cannot stop %s server pid %d: %s' % (hostname(), params['test'], pid, exc), **common)
    leftover = not outcome['stopped']
    parsed, parse_error = parse_or_none(outcome['output']) if outcome['output'].strip() else (None, 'empty server log')
    fields = dict(common, stopped=outcome['stopped'], was_running=outcome['was_running'], leftover=leftover,
                  output=outcome['output'], perftest=parsed, parse_error=parse_error,
                  error_class=parsed['error_class'] if parsed else None,
                  error_hint=parsed['error_hint'] if parsed else None)
    if leftover:
        module.fail_json(msg='%s: %s server pid %d: processes of its group are still running after SIGKILL'
                         % (hostname(), params['test'], pid), **fields)
    module.exit_json(changed=outcome['was_running'], **fields)


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
