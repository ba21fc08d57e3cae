#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: perftest
short_description: Run perftest RDMA bandwidth or latency tests (server or client side)
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
  - With O(sessions) one call starts, runs or stops several sessions of the same test (one per HCA, say); servers are started
    side by side and the call returns once every one listens (or failed), clients run one after the other unless O(concurrent).
    Each session's outcome is an entry of RV(servers), RV(clients) or RV(stops).
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
    description:
      - Use GPU memory of this CUDA device index (C(--use_cuda=N)) for GPUDirect RDMA; needs a perftest built with CUDA.
      - A CUDA ordinal follows C(CUDA_DEVICE_ORDER) (FASTEST_FIRST unless set); pass O(cuda_device_order=PCI_BUS_ID) so that it is
        the nvidia-smi index, or name the GPU by O(use_cuda_bus_id) where this perftest supports it.
    type: int
  tclass:
    description:
      - The traffic class of the queue pairs (C(--tclass)), 0-255; on RoCE the DSCP and ECN bits the site's lossless class
        (PFC priority) is mapped from, for example 106. Unset, the port's default class is used (usually a lossy one).
    type: int
  use_cuda_bus_id:
    description:
      - Use GPU memory of the GPU at this PCI address (C(--use_cuda_bus_id=<BDF>), perftest 4.5 and later built with CUDA) for
        GPUDirect RDMA; takes the place of O(use_cuda).
    type: str
  use_cuda_dmabuf:
    description:
      - Register the GPU buffer through dma-buf (C(--use_cuda_dmabuf), placed after the GPU option as perftest requires), the
        GPUDirect path of the open GPU kernel modules without nvidia_peermem. Only sessions with a GPU get it.
    type: bool
    default: false
  cuda_device_order:
    description:
      - C(CUDA_DEVICE_ORDER) in the environment of the perftest processes; C(PCI_BUS_ID) makes a CUDA ordinal (O(use_cuda)) the
        GPU's place in PCI order, as nvidia-smi numbers GPUs.
    type: str
    choices: [PCI_BUS_ID, FASTEST_FIRST]
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
      - With O(sessions), one wait shared by all the servers (they run side by side), not one each.
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
  sessions:
    description:
      - Several sessions of the same test in one call, in place of the single-session options O(server),
        O(device), O(ib_port), O(port), O(gid_index), O(use_cuda), O(use_cuda_bus_id), O(timeout), O(pid), O(start_time), O(exe)
        and O(log_path) (mutually exclusive with them); every other option is shared by all sessions.
      - Each item is a dict. C(id) is an opaque label (a non-empty string, unique in the call) echoed back in its entry of the result;
        the other keys mean what the single-session options of the same names mean, and an optional one may be absent or null
        (O(port) then defaults to 18515).
      - With O(role=server) and O(state=started), the keys are C(id), C(device), C(ib_port), C(port), C(gid_index), C(use_cuda),
        C(use_cuda_bus_id) and C(timeout) (the server's deadline), ports distinct; every server is started, all at once, and RV(servers) lists them.
      - With O(role=server) and O(state=stopped), the keys are C(id), C(pid), C(start_time), C(exe) and C(log_path); other keys are
        ignored, so the RV(servers) entries of the start can be passed back as they are. Every server is stopped and RV(stops)
        lists what each stop found; like a single stop, this never fails the host (a malformed key is warned about and left out).
      - With O(role=client), the keys are C(id), C(server), C(device), C(ib_port), C(port), C(gid_index), C(use_cuda),
        C(use_cuda_bus_id) and C(timeout);
        the clients run one after the other (or all at once with O(concurrent)), each under its own hard timeout, and RV(clients)
        lists them.
      - Every session is checked before anything runs; an invalid one fails the call, the message naming C(sessions[i].key).
        Otherwise a failed session does not fail the call; its entry carries its own msg and failure shape.
      - The tool must be installed on the host (a missing tool fails the call, as in the single form).
    type: list
    elements: dict
  concurrent:
    description:
      - With O(sessions) and O(role=client), start every client at the same moment and wait for all of them (the sustained test with
        every HCA at once); by default the clients run one after the other, so that one HCA's figure is never shared with another's.
      - Each client keeps its own hard timeout; RV(clients) still lists them in the order of O(sessions).
    type: bool
    default: false
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

- name: Every HCA of the node in three calls, servers started together, clients one after the other
  block:
    - name: Start one ib_write_bw server per HCA on the peer
      gpufleet.netval.perftest:
        test: ib_write_bw
        role: server
        size: 65536
        duration: 10
        report_gbits: true
        sessions:
          - {id: mlx5_0, device: mlx5_0, gid_index: 3, port: 18515, timeout: 600}
          - {id: mlx5_1, device: mlx5_1, gid_index: 3, port: 18516, timeout: 600}
      delegate_to: "{{ peer }}"
      register: perftest_servers

    - name: Run every client on the node, one after the other
      gpufleet.netval.perftest:
        test: ib_write_bw
        role: client
        size: 65536
        duration: 10
        report_gbits: true
        sessions:
          - {id: mlx5_0, server: 10.0.0.2, device: mlx5_0, gid_index: 3, port: 18515}
          - {id: mlx5_1, server: 10.0.1.2, device: mlx5_1, gid_index: 3, port: 18516}
      register: perftest_clients

    - name: Require 350 Gb/s on every 400G link
      ansible.builtin.assert:
        that: item.summary is not none and item.summary.bw_avg_gbps >= 350
        fail_msg: "{{ item.id }}: {{ item.msg }}"
      loop: "{{ perftest_clients.clients }}"
  always:
    - name: Stop every server, passing the start entries back
      gpufleet.netval.perftest:
        test: ib_write_bw
        role: server
        state: stopped
        sessions: "{{ perftest_servers.servers | selectattr('pid') | list }}"
      delegate_to: "{{ peer }}"
      when: perftest_servers.servers is defined

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
  returned: when sessions is not given
  type: str
  sample: /usr/bin/ib_write_bw -d mlx5_0 -x 3 -s 65536 -D 10 --report_gbits -p 18515 -F 10.0.0.2
argv:
  description: The perftest command as a list.
  returned: when sessions is not given
  type: list
  elements: str
timeout:
  description: The hard timeout applied, in seconds (for a server, its deadline).
  returned: when role is client or state is started, without sessions
  type: int
rc:
  description: Exit status of the client.
  returned: when role is client and not in check mode, without sessions
  type: int
stdout:
  description: Client standard output.
  returned: when role is client and not in check mode, without sessions
  type: str
stderr:
  description: Client standard error.
  returned: when role is client and not in check mode, without sessions
  type: str
timed_out:
  description: Whether the client was stopped by the hard timeout.
  returned: when role is client and not in check mode, without sessions
  type: bool
perftest:
  description:
    - The parsed output (client output, or the server's log for O(state=stopped)); null when the output could not be parsed.
    - C(results) holds one row per message size; bandwidth rows have C(bytes), C(iterations), C(bw_peak) (null when not measured),
      C(bw_avg), C(bw_avg_as_printed), C(bw_unit), C(bw_avg_gbps), C(bw_avg_gbytes_s) and C(msg_rate_mpps); latency rows have C(t_min_us),
      C(t_max_us), C(t_typical_us), C(t_avg_us), C(t_stdev_us), C(p99_us) and C(p999_us) (null when this perftest does not print them).
  returned: when output was read, without sessions
  type: dict
  sample: {"test": "RDMA_Write BW", "kind": "bw", "device": "mlx5_0", "link_type": "Ethernet", "gid_index": 3, "mtu": 4096,
           "bw_unit": "Gb/sec", "error_class": null, "results": [{"bytes": 65536, "iterations": 403504, "bw_peak": null,
           "bw_avg": 42.31, "bw_avg_as_printed": 42.31, "bw_unit": "Gb/sec", "bw_avg_gbps": 42.31, "bw_avg_gbytes_s": 5.28875,
           "msg_rate_mpps": 0.080701, "complete": true}]}
summary:
  description: Headline numbers of the row with the largest message size (null where unknown).
  returned: when role is client and the test ran, without sessions
  type: dict
  sample: {"bytes": 65536, "bw_avg_gbps": 42.31, "bw_avg_gbytes_s": 5.28875, "t_typical_us": null, "t_avg_us": null, "p99_us": null}
error_class:
  description: Failure class (see the description), null on success and after a stop whose server log shows no error.
  returned: when sessions is not given
  type: str
error_hint:
  description: What an operator should check for RV(error_class), null on success.
  returned: when sessions is not given
  type: str
error_side:
  description:
    - Whose fault RV(error_class) is, null on success. C(ours) is our tooling or run (missing tool, invalid options, our timeout,
      port in use, server unreachable, unreadable output) and must never be blamed on the provider; C(host) is the host the
      module ran on; C(unknown) when the output does not say.
  returned: when sessions is not given
  type: str
pid:
  description: Process id (and process group and session id) of the started server.
  returned: when role is server, without sessions
  type: int
pgid:
  description: Process group of the started server (its pid).
  returned: when role is server and state is started, without sessions
  type: int
start_time:
  description: Start time of the started server, field 22 of C(/proc/PID/stat); pass it to O(state=stopped).
  returned: when role is server and state is started, without sessions
  type: int
exe:
  description: Executable of the started server as C(/proc/PID/exe) showed it once it was ready; pass it to O(state=stopped).
  returned: when role is server and state is started, without sessions
  type: str
deadline_at:
  description: Unix time at which the server is stopped whatever happens.
  returned: when role is server and state is started, without sessions
  type: int
log_path:
  description: The server's log file (C(server.log) in a private directory).
  returned: when role is server, without sessions
  type: str
port:
  description: The TCP control port.
  returned: when sessions is not given
  type: int
stopped:
  description: Whether the server is gone (also true when it had exited by itself or its pid now belongs to another process).
  returned: when state is stopped, without sessions
  type: bool
server_state:
  description:
    - What the stop found, C(exited) (gone by itself), C(stopped) (we stopped it), C(pid_reused) (the pid is another process now;
      not signalled), C(still_running) (alive after SIGKILL) or C(unverified) (alive but nothing identifies it as ours; not signalled).
  returned: when state is stopped, without sessions
  type: str
was_running:
  description: Whether the server was still running when asked to stop (false when it had exited by itself after its test).
  returned: when state is stopped, without sessions
  type: bool
leftover:
  description: Whether any process of the server's group was left running after SIGKILL (reported with a warning, never a failure).
  returned: when state is stopped, without sessions
  type: bool
output:
  description: The server's raw output from its log file (empty when the log was refused or missing).
  returned: when state is stopped, without sessions
  type: str
parse_error:
  description: Why the server log could not be parsed, null when it was.
  returned: when state is stopped, without sessions
  type: str
servers:
  description:
    - With O(sessions), O(role=server) and O(state=started), one entry per session in the order of O(sessions).
    - Each entry has C(id) (the session's), C(port), C(pid), C(pgid), C(start_time), C(exe), C(log_path), C(deadline_at), C(cmd),
      C(argv) and C(timeout) as RV(pid), RV(pgid), RV(start_time), RV(exe), RV(log_path), RV(deadline_at), RV(cmd), RV(argv) and
      RV(timeout) of a single start (C(pid) to C(deadline_at) null when the server did not start or in check mode),
      C(error_class), C(error_hint) and C(error_side) (null on success) and C(msg) (why it did not start, null when it did); a
      server that did not start also has C(failed) (true), C(output) (what it printed) and C(perftest) (that output parsed).
    - A server that failed to start does not fail the call; C(changed) is true when any server started.
    - Pass the entries as they are to O(sessions) with O(state=stopped).
  returned: when sessions is given, role is server and state is started
  type: list
  elements: dict
  sample: [{"id": "mlx5_0", "port": 18515, "pid": 4242, "pgid": 4242, "start_time": 918273, "exe": "/usr/bin/ib_write_bw",
            "log_path": "/tmp/netval-perftest-ib_write_bw-p18515-x1y2z3/server.log", "deadline_at": 1764582300,
            "cmd": "/usr/bin/ib_write_bw -d mlx5_0 -x 3 -p 18515 -F", "argv": ["/usr/bin/ib_write_bw", "-d", "mlx5_0", "-x", "3",
            "-p", "18515", "-F"], "timeout": 600, "error_class": null, "error_hint": null, "error_side": null, "msg": null}]
stops:
  description:
    - With O(sessions), O(role=server) and O(state=stopped), one entry per session in the order of O(sessions).
    - Each entry has C(id) (the session's, null when it had none) and what a single stop returns, C(pid), C(start_time), C(exe),
      C(log_path), C(port), C(stopped), C(was_running), C(leftover), C(server_state), C(output), C(perftest), C(parse_error),
      C(error_class), C(error_hint) and C(error_side) (the server log's failure, null when it shows none); in check mode only
      C(id), C(pid), C(start_time), C(exe), C(log_path), C(port) and the failure shape.
  returned: when sessions is given, role is server and state is stopped
  type: list
  elements: dict
clients:
  description:
    - With O(sessions) and O(role=client), one entry per session in the order of O(sessions), the clients having run in that order.
    - Each entry is what a single client call returns (RV(cmd), RV(argv), RV(rc), RV(stdout), RV(stderr), RV(timed_out),
      RV(timeout), RV(port), RV(perftest), RV(summary), RV(error_class), RV(error_hint), RV(error_side)) with C(id) (the
      session's), C(msg) (null on success) and C(failed) (true when that session failed; C(summary) is then null). Keys a
      session did not get to (C(rc) in check mode, for example) are null.
    - A failed session does not fail the call.
  returned: when sessions is given and role is client
  type: list
  elements: dict
  sample: [{"id": "mlx5_0", "cmd": "/usr/bin/ib_write_bw -d mlx5_0 -x 3 -s 65536 -D 10 --report_gbits -p 18515 -F 10.0.0.2",
            "rc": 0, "timed_out": false, "timeout": 70, "port": 18515, "summary": {"bytes": 65536, "bw_avg_gbps": 362.1},
            "error_class": null, "error_hint": null, "error_side": null, "msg": null, "failed": false}]
'''

import concurrent.futures
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import background
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import perftest
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

BW_ONLY = ('tx_depth', 'qps', 'report_gbits', 'bidirectional')
# A server nobody stops ends this long after it started unless O(timeout) says otherwise: long enough for
# the clients of every HCA to run one after the other against servers started together.
SERVER_DEFAULT_DEADLINE = 3600
DEFAULT_PORT = 18515
# The keys of one entry of O(sessions), per form; each stands for the single-session option of the same name.
SESSION_KEYS = {
    'client': ('id', 'server', 'device', 'ib_port', 'port', 'gid_index', 'use_cuda', 'use_cuda_bus_id', 'timeout'),
    'started': ('id', 'device', 'ib_port', 'port', 'gid_index', 'use_cuda', 'use_cuda_bus_id', 'timeout'),
    'stopped': ('id', 'pid', 'start_time', 'exe', 'log_path'),
}
# The single-session options O(sessions) replaces (mutually exclusive with it).
PER_SESSION_OPTIONS = ('server', 'device', 'ib_port', 'port', 'gid_index', 'use_cuda', 'use_cuda_bus_id', 'timeout', 'pid', 'start_time',
                       'exe', 'log_path')
INT_KEYS = ('ib_port', 'port', 'gid_index', 'use_cuda', 'timeout', 'pid', 'start_time')
INT_RE = re.compile(r'-?[0-9]{1,19}')
# Keys every batch entry carries, null where the session did not get that far.
SERVER_ENTRY_KEYS = ('id', 'port', 'pid', 'pgid', 'start_time', 'exe', 'log_path', 'deadline_at', 'cmd', 'timeout', 'msg')
CLIENT_ENTRY_KEYS = ('id', 'cmd', 'argv', 'rc', 'stdout', 'stderr', 'timed_out', 'timeout', 'port', 'perftest', 'summary', 'msg')


def form_of(params):
    """'client', 'started' or 'stopped': which of the three things this call does."""
    return 'client' if params['role'] == 'client' else params['state']


def session_values(form, index, session):
    """The values of entry ``index`` of O(sessions) for ``form`` (absent keys None) and the problems found."""
    problems = []
    values = dict((key, session.get(key)) for key in SESSION_KEYS[form])
    label = 'sessions[%d]' % index
    if form != 'stopped':
        # A stop ignores extra keys (it is given the started entries back); elsewhere a stray key is a typo.
        for key in sorted(set(session) - set(SESSION_KEYS[form]), key=str):
            problems.append('%s.%s is not a key of a %s session (keys: %s)' % (label, key, form, ', '.join(SESSION_KEYS[form])))
        if not isinstance(values['id'], str) or not values['id']:
            problems.append('%s.id must be a non-empty label, got %r' % (label, values['id']))
    for key in INT_KEYS:
        value = values.get(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            continue
        if isinstance(value, str) and INT_RE.fullmatch(value):
            values[key] = int(value)
        else:
            problems.append('%s.%s must be an integer, got %r' % (label, key, value))
            values[key] = None
    for key in ('server', 'device', 'exe', 'log_path', 'use_cuda_bus_id'):
        if key in values and values[key] is not None and not isinstance(values[key], str):
            problems.append('%s.%s must be text, got %r' % (label, key, values[key]))
            values[key] = None
    return values, problems


def session_params(params, values):
    """The module parameters with one session's values in place of the single-session options."""
    merged = dict(params)
    merged.update(values)
    if merged.get('port') is None:
        merged['port'] = DEFAULT_PORT
    return merged


def session_problems(params, name):
    """Problems of the per-session parameters; ``name(key)`` is how a key is called in messages."""
    problems = []
    if params['device'] is not None:
        problems.append(checks.check_device(name('device'), params['device']))
    if params['role'] == 'client':
        if not params['server']:
            problems.append('%s (the address of the host running the perftest server) is required for role=client' % name('server'))
        else:
            problems.append(checks.check_host(name('server'), params['server']))
    if not 1024 <= params['port'] <= 65535:
        problems.append('%s %d is outside 1024-65535' % (name('port'), params['port']))
    for key, low, high in (('ib_port', 1, 255), ('gid_index', 0, 65535), ('use_cuda', 0, 1023)):
        problems.append(checks.check_number(name(key), params[key], low, high))
    bus_id = params.get('use_cuda_bus_id')
    if bus_id is not None and not checks.fullmatch(checks.PCI_ADDRESS_RE, bus_id):
        problems.append('%s %r is not a PCI address such as 0000:1b:00.0' % (name('use_cuda_bus_id'), bus_id))
    problems.append(checks.check_timeout(name('timeout'), params['timeout'], maximum=background.MAX_DEADLINE))
    return problems


def shared_problems(module):
    """Problems of the options every session of the call shares."""
    params = module.params
    test = params['test']
    problems = checks.control_characters(params)
    if params['role'] == 'client' and params['state'] != 'started':
        problems.append('state applies to role=server only')
    if params['concurrent'] and (params['role'] != 'client' or params['sessions'] is None):
        problems.append('concurrent applies to role=client with sessions only')
    for name, low, high in (('size', 1, 2 ** 31), ('duration', 1, 86400), ('iterations', 5, 2 ** 40), ('tx_depth', 1, 65536),
                            ('qps', 1, 65536), ('tclass', 0, 255)):
        problems.append(checks.check_number(name, params[name], low, high))
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
    if form_of(params) == 'started' and not module.check_mode and not os.path.isdir(params['log_dir']):
        problems.append('log_dir %s is not a directory' % params['log_dir'])
    return problems


def sessions_of(module):
    """The per-session parameters of this call, validated: a list of parameter dicts, one per session.

    Every session is checked before anything runs, and the call fails once with every problem.  A stop
    is never failed (a cleanup step must not lose a node): its problems are warnings, checked where used.
    """
    params = module.params
    form = form_of(params)
    if params['sessions'] is None:
        if form == 'stopped':
            return [params]
        problems = shared_problems(module) + session_problems(params, lambda key: key)
        checks.fail_if_invalid(module, 'perftest', checks.problems_of(problems))
        return [params]
    problems = [] if form == 'stopped' else shared_problems(module)
    batch = []
    seen = {}
    for index, session in enumerate(params['sessions']):
        values, found = session_values(form, index, session)
        merged = session_params(params, values)
        if form == 'stopped':
            for problem in found:
                module.warn('%s: perftest stop: %s' % (hostname(), problem))
        else:
            problems += found
            problems += session_problems(merged, lambda key, index=index: 'sessions[%d].%s' % (index, key))
            if isinstance(values['id'], str) and values['id'] in seen:
                problems.append('sessions[%d].id %r is also the id of sessions[%d]' % (index, values['id'], seen[values['id']]))
            if isinstance(values['id'], str):
                seen.setdefault(values['id'], index)
        batch.append(merged)
    if form == 'started':
        ports = {}
        for index, merged in enumerate(batch):
            if merged['port'] in ports:
                problems.append('sessions[%d].port %d is also the port of sessions[%d]' % (index, merged['port'], ports[merged['port']]))
            ports.setdefault(merged['port'], index)
    checks.fail_if_invalid(module, 'perftest', checks.problems_of(problems))
    return batch


def classified(error_class, command, detail, **extra):
    """A failed session's result: ``extra`` with msg (host, command, class, hint, perftest's words) and the failure shape."""
    fields = failure(error_class, perftest.ERROR_HINTS.get(error_class))
    msg = '%s: `%s` failed: %s: %s' % (hostname(), command, error_class, fields['error_hint'])
    if detail:
        msg += ' (perftest said: %s)' % detail.strip().replace('\n', ' | ')[:400]
    extra['cmd'] = command
    extra.update(fields)
    return dict(extra, msg=msg, failed=True)


def parse_or_none(text):
    try:
        return perftest.parse_perftest(text), None
    except ParseError as exc:
        return None, str(exc)


def client_timeout(params):
    if params['timeout'] is not None:
        return params['timeout']
    return params['duration'] + 60 if params['duration'] else 300


def run_client(module, runner, binary, params):
    """Run one client to completion under its hard timeout; returns its result (with failed and msg when it failed)."""
    args = perftest.build_perftest_argv(params)
    argv = [binary] + args
    cmd = render_cmd(argv)
    timeout = client_timeout(params)
    if module.check_mode:
        return dict(changed=False, cmd=cmd, argv=argv, timeout=timeout, port=params['port'], **SUCCESS)
    result = runner.run(params['test'], args, timeout=timeout, check=False, environ=cuda_environment(params))
    fields = dict(result.as_dict(), timeout=timeout, port=params['port'])
    fields['cmd'] = cmd
    text = (result.stdout or '') + ('\n' if result.stdout and result.stderr else '') + (result.stderr or '')
    parsed, parse_error = parse_or_none(text)
    fields['perftest'] = parsed
    if result.timed_out:
        detail = parsed['error_text'] if parsed and parsed['error_text'] else 'no result within %d s' % timeout
        return classified('timeout', cmd, detail, **fields)
    if parsed is None:
        if result.rc != 0:
            return classified('unknown_error', cmd, 'rc=%s: %s' % (result.rc, (result.stderr or result.stdout or '').strip()[-300:]), **fields)
        return dict(runner.failure(result, reason='gave output that could not be parsed (%s)' % parse_error, error_class='parse_error',
                                   perftest=None, timeout=timeout, port=params['port']), failed=True)
    if parsed['error_class']:
        return classified(parsed['error_class'], cmd, parsed['error_text'], **fields)
    if result.rc != 0 or not parsed['results']:
        detail = 'rc=%s, %d result rows: %s' % (result.rc, len(parsed['results']), (result.stderr or result.stdout or '').strip()[-300:])
        return classified('unknown_error', cmd, detail, **fields)
    return dict(fields, changed=False, summary=perftest.summarize_perftest(parsed), **SUCCESS)


def cuda_environment(params):
    """The environment a session's perftest needs besides the locale: CUDA_DEVICE_ORDER when it runs on a GPU and one is asked."""
    if params.get('cuda_device_order') and (params.get('use_cuda') is not None or params.get('use_cuda_bus_id')):
        return {'CUDA_DEVICE_ORDER': params['cuda_device_order']}
    return {}


def server_deadline(params):
    """Seconds the server may live: O(timeout), else SERVER_DEFAULT_DEADLINE; never unbounded."""
    return params['timeout'] or SERVER_DEFAULT_DEADLINE


def start_servers(module, binary, batch):
    """Start the servers of ``batch`` side by side (background.start_servers); returns their results in order (changed
    when one started, failed and msg when it did not)."""
    commons, specs = [], []
    for params in batch:
        argv = [binary] + perftest.build_perftest_argv(params)
        deadline = server_deadline(params)
        commons.append(dict(cmd=render_cmd(argv), argv=argv, port=params['port'], timeout=int(deadline)))
        # perftest prints this banner once it waits for a client, in every connection mode.
        specs.append(dict(argv=argv, log_dir=params['log_dir'], port=params['port'], deadline=deadline,
                          ready_timeout=params['ready_timeout'], env=cuda_environment(params),
                          ready_text='Waiting for client to connect' if params['rdma_cm'] else None,
                          name='perftest-%s-p%d' % (params['test'], params['port'])))
    if module.check_mode:
        return [dict(common, changed=True, **SUCCESS) for common in commons]
    return [server_result(params, common, outcome)
            for params, common, outcome in zip(batch, commons, background.start_servers(specs))]


def server_result(params, common, outcome):
    """The result of one server start from what background.start_servers gave for it (its dict, or a ServerError)."""
    if isinstance(outcome, background.ServerError):
        parsed, dummy = parse_or_none(outcome.output)
        if outcome.port_in_use:
            error_class = 'port_in_use'
            detail = 'TCP port %d is already in use on %s: %s' % (params['port'], hostname(), outcome)
        else:
            error_class = parsed['error_class'] if parsed and parsed['error_class'] else 'unknown_error'
            detail = str(outcome)
        return classified(error_class, common['cmd'], detail, output=outcome.output, perftest=parsed, argv=common['argv'],
                          port=params['port'], timeout=common['timeout'], changed=False)
    return dict(common, changed=True, pid=outcome['pid'], pgid=outcome['pgid'], start_time=outcome['start_time'],
                exe=outcome['exe'], log_path=outcome['log_path'], deadline_at=outcome['deadline_at'], **SUCCESS)


def stop_server(module, params, label='perftest stop', deadline=None):
    """Stop one server: returns what it found and never fails (a cleanup step must not lose a node).

    Warnings go to module.warn, prefixed with the host and ``label``.  ``deadline`` (a time.time()) ends the wait for a
    finishing server instead of wait_exit from now: the servers of one batch share one wait.
    """
    pid = params['pid']
    common = dict(pid=pid, log_path=params['log_path'], port=params['port'], start_time=params['start_time'], exe=params['exe'])
    problems = [p for p in (checks.check_timeout('wait_exit', params['wait_exit'], maximum=600, allow_zero=True),) if p]
    wait_exit = params['wait_exit'] if not problems else 0.0
    if deadline is not None:
        wait_exit = max(0.0, min(wait_exit, deadline - time.time()))
    if pid is None or pid < 2:
        module.warn('%s: no server pid given (%r); nothing to stop' % (label, pid))
        return dict(common, changed=False, stopped=True, was_running=False, leftover=False, server_state='unverified',
                    output='', perftest=None, parse_error=None, **SUCCESS)
    if module.check_mode:
        return dict(common, changed=background.pid_alive(pid), **SUCCESS)
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
        module.warn('%s: %s: %s' % (hostname(), label, warning))
    parsed, parse_error = parse_or_none(outcome['output']) if outcome['output'].strip() else (None, 'empty or unread server log')
    server_failure = failure(parsed['error_class'], parsed['error_hint']) if parsed and parsed['error_class'] else dict(SUCCESS)
    return dict(common, changed=outcome['signalled'], stopped=outcome['stopped'], was_running=outcome['was_running'],
                leftover=outcome['state'] == 'still_running', server_state=outcome['state'], output=outcome['output'],
                perftest=parsed, parse_error=parse_error, **server_failure)


def run_sessions(module, batch):
    """Run every session of ``batch``: servers start side by side, clients in turn (or at once); returns their results in order."""
    params = module.params
    form = form_of(params)
    if form == 'stopped':
        # The servers ran side by side: one wait for all of them, not one each (a batch whose clients never ran would
        # otherwise wait wait_exit per server).
        wait_exit = params['wait_exit'] if not checks.check_timeout('wait_exit', params['wait_exit'], maximum=600, allow_zero=True) else 0.0
        deadline = time.time() + wait_exit
        return [stop_server(module, merged, label='perftest stop' if params['sessions'] is None else
                            'perftest stop sessions[%d] (id %r)' % (index, merged['id']), deadline=deadline)
                for index, merged in enumerate(batch)]
    runner = ToolRunner(module)
    binary = runner.find(params['test'])
    if form == 'client':
        if params['concurrent'] and len(batch) > 1:
            # Threads only wait on their own child process (run_command copies the environment, never mutates it).
            with concurrent.futures.ThreadPoolExecutor(max_workers=len(batch)) as pool:
                return list(pool.map(lambda merged: run_client(module, runner, binary, merged), batch))
        return [run_client(module, runner, binary, merged) for merged in batch]
    return start_servers(module, binary, batch)


def batch_entry(merged, result, keys):
    """One entry of RV(servers), RV(stops) or RV(clients): the session's result, its id and every key of the form."""
    entry = dict((key, None) for key in keys)
    entry.update(result)
    entry['id'] = merged['id']
    entry.pop('changed', None)
    return entry


def exit_batch(module, batch, results):
    form = form_of(module.params)
    changed = any(result.get('changed') for result in results)
    if form == 'client':
        entries = [batch_entry(merged, dict(result, failed=result.get('failed', False)), CLIENT_ENTRY_KEYS)
                   for merged, result in zip(batch, results)]
        module.exit_json(changed=changed, clients=entries)
    if form == 'started':
        module.exit_json(changed=changed, servers=[batch_entry(merged, result, SERVER_ENTRY_KEYS) for merged, result in zip(batch, results)])
    module.exit_json(changed=changed, stops=[batch_entry(merged, result, ('id',)) for merged, result in zip(batch, results)])


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
            tclass=dict(type='int'),
            use_cuda_bus_id=dict(type='str'),
            use_cuda_dmabuf=dict(type='bool', default=False),
            cuda_device_order=dict(type='str', choices=['PCI_BUS_ID', 'FASTEST_FIRST']),
            report_gbits=dict(type='bool', default=False),
            bidirectional=dict(type='bool', default=False),
            port=dict(type='int', default=DEFAULT_PORT),
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
            sessions=dict(type='list', elements='dict'),
            concurrent=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('size', 'all_sizes'), ('duration', 'iterations')] + [('sessions', name) for name in PER_SESSION_OPTIONS],
        supports_check_mode=True,
    )
    batch = sessions_of(module)
    results = run_sessions(module, batch)
    if module.params['sessions'] is not None:
        exit_batch(module, batch, results)
    # The single form: a batch of one, failing the call when its one session failed.
    result = results[0]
    if result.pop('failed', False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
