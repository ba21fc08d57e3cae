#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nccl_tests
short_description: Run an nccl-tests benchmark (all_reduce_perf, ...) across nodes with mpirun
version_added: 0.1.0
description:
  - Writes an MPI hostfile (C(<host> slots=<n>) per line) in a private temporary directory, runs
    C(mpirun -np N --hostfile F [--mca ...] -x NAME=VALUE ... <binary> -b .. -e .. -f .. -g ..) under a hard timeout,
    parses the nccl-tests output and removes the hostfile again.
  - NCCL settings are passed to every rank with C(-x NAME=VALUE); C(NCCL_DEBUG=INFO) is set unless O(nccl_env) says otherwise,
    because the transport (C(NET/IB) or C(NET/Socket)) and GPU Direct RDMA can only be read from NCCL's INFO lines.
  - A run that silently fell back to TCP sockets (C(NET/Socket)) is returned with a warning and in RV(advice); it is not a module
    failure, the verdict grades it.
  - A job mpirun could not start on every host (the launcher's SSH session refused, C(orted) or the binary not found, Open MPI's
    out-of-band network unusable) fails with RV(error_class) C(launcher_failed) or C(launcher_missing), side C(ours) - not the
    hosts' fault.
  - Two job headers in one log (every rank started its own job, for example nccl-tests built without C(MPI=1)) fail the module;
    the figures would be intra-node only.
  - nccl-tests prints algbw and busbw in decimal GB/s (1 GB = 1e9 bytes); they are returned as printed.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  binary:
    description:
      - Name or path of the nccl-tests binary (it must end in C(_perf); no path component may start with C(-) or C(.));
        it is resolved by mpirun on every host.
    type: str
    required: true
  hosts:
    description:
      - Hosts of the job, each a name (one slot) or a dict with C(name) and C(slots) (ranks on that host, usually its GPU count).
      - Names are host names or IP addresses as mpirun reaches them.
    type: list
    elements: raw
    required: true
  np:
    description: Number of MPI ranks; the sum of the slots by default.
    type: int
  min_bytes:
    description: Smallest message size (C(-b)), a number with an optional K, M or G suffix.
    type: str
  max_bytes:
    description: Largest message size (C(-e)), a number with an optional K, M or G suffix.
    type: str
  step_factor:
    description: Multiplication factor between sizes (C(-f)).
    type: int
  gpus_per_rank:
    description: GPUs per rank (C(-g)).
    type: int
  iters:
    description: Iterations per size (C(-n)).
    type: int
  warmup_iters:
    description: Warm-up iterations (C(-w)).
    type: int
  check:
    description: Check the results for correctness (C(-c)); nccl-tests prints C(N/A) in C(#wrong) when this is 0.
    type: int
  nccl_env:
    description:
      - Environment passed to every rank with C(-x NAME=VALUE).
      - Names must be C(NCCL_*), C(UCX_*), C(OMPI_MCA_*), C(SHARP_*), C(HCOLL_*), C(CUDA_VISIBLE_DEVICES) or C(LD_LIBRARY_PATH).
      - C(NCCL_DEBUG) defaults to C(INFO).
    type: dict
    default: {}
  ib_hca:
    description:
      - RDMA devices NCCL may use, each C(device) or C(device:port) (both boxes' device names); written in NCCL's exact form,
        C(NCCL_IB_HCA==mlx5_0:1,mlx5_1:1), because NCCL matches a bare name as a prefix (C(mlx5_1) also selects mlx5_10
        and mlx5_11).
      - NCCL's prefix and exclusion forms (C(^mlx5_2)) are not taken here; set them with O(nccl_env) instead.
    type: list
    elements: str
  socket_ifname:
    description:
      - Interfaces for NCCL's bootstrap and socket transport, written in NCCL's exact form (C(NCCL_SOCKET_IFNAME==eno1,mgmt0));
        usually the interface on each box that holds its MPI address.
    type: list
    elements: str
  gid_index:
    description: RoCE GID index (C(NCCL_IB_GID_INDEX)).
    type: int
  ib_tc:
    description: Traffic class of NCCL's RDMA traffic (C(NCCL_IB_TC)).
    type: int
  net_plugin:
    description: Network plugin to load (C(NCCL_NET_PLUGIN)); C(none) disables external plugins.
    type: str
  ib_merge_nics:
    description: Whether NCCL merges the ports of a dual-port NIC into one device (C(NCCL_IB_MERGE_NICS)).
    type: bool
  fabric_subnet:
    description:
      - Subnet (CIDR) Open MPI uses for its own traffic (C(--mca oob_tcp_if_include) and C(--mca btl_tcp_if_include)), or several,
        comma-separated.
      - The tier_tests role derives it from both ends' fabric addresses with the P(gpufleet.netval.fabric_subnet#filter) filter.
    type: str
  mpirun_args:
    description: Extra mpirun arguments, inserted before the C(-x) options.
    type: list
    elements: str
    default: []
  allow_run_as_root:
    description: Add C(--allow-run-as-root) (Open MPI refuses to run as root without it).
    type: bool
    default: false
  timeout:
    description: Hard limit for the whole mpirun, in seconds (above 0, at most 86400).
    type: int
    default: 1800
  mpirun:
    description: Name or path of the MPI launcher.
    type: str
    default: mpirun
  fail_on_wrong:
    description: Fail the module when any row reports C(#wrong) above zero (they are always returned as RV(data_errors)).
    type: bool
    default: false
notes:
  - Supports check mode; it then only returns the command line and the hostfile it would use and runs nothing.
attributes:
  check_mode:
    description: In check mode nothing is written or run; the command and hostfile are returned.
    support: full
  diff_mode:
    description: Reports no diff; the benchmark changes nothing on the hosts.
    support: none
'''

EXAMPLES = r'''
- name: all_reduce_perf between the node and its peer, 8 GPUs each, over both RDMA NICs
  gpufleet.netval.nccl_tests:
    binary: /opt/nccl-tests/build/all_reduce_perf
    hosts:
      - {name: 10.0.0.11, slots: 8}
      - {name: 10.0.0.12, slots: 8}
    min_bytes: 1G
    max_bytes: 8G
    step_factor: 2
    iters: 20
    ib_hca: [mlx5_0:1, mlx5_1:1]
    socket_ifname: [eno1]
    gid_index: 3
    fabric_subnet: 10.0.0.0/24
    allow_run_as_root: true
  register: nccl

- name: Require NET/IB with GPU Direct RDMA
  ansible.builtin.assert:
    that:
      - nccl.transport == 'IB'
      - nccl.gdr
'''

RETURN = r'''
cmd:
  description: The command line that was (or in check mode would be) run.
  returned: always
  type: str
  sample: "/usr/bin/mpirun -np 2 --hostfile /tmp/netval-nccl-x/hostfile -x NCCL_DEBUG=INFO /opt/nccl-tests/build/all_reduce_perf -b 1G"
hostfile:
  description: Contents of the generated hostfile.
  returned: always
  type: str
  sample: "10.0.0.11 slots=8\n10.0.0.12 slots=8\n"
test:
  description: The nccl-tests test that ran, its base name (C(all_reduce_perf) also for a binary built as C(all_reduce_perf_mpi)).
  returned: when the output was read
  type: str
  sample: all_reduce_perf
binary:
  description: The test binary's name as the output printed it (C(all_reduce_perf_mpi)), or null.
  returned: when the output was read
  type: str
rows:
  description:
    - One dict per message size with C(size_bytes), C(count), C(type), C(redop), C(root), C(oop_time_us), C(oop_algbw_gbs),
      C(oop_busbw_gbs), C(oop_wrong), C(ip_time_us), C(ip_algbw_gbs), C(ip_busbw_gbs), C(ip_wrong) and C(wrong) (their sum,
      null when nccl-tests printed N/A or an old C(error) column).
    - Null when the log holds more than one job (RV(multiple_jobs)).
  returned: success
  type: list
  elements: dict
avg_busbw_gbs:
  description: The C(# Avg bus bandwidth) line in GB/s (decimal); null when it is missing.
  returned: success
  type: float
busbw_at_max_size:
  description: busbw (the better of out-of-place and in-place) at the largest message size, GB/s.
  returned: success
  type: float
max_busbw_gbs:
  description: The highest busbw of any row, GB/s.
  returned: success
  type: float
out_of_bounds:
  description: The count from C(# Out of bounds values), null when missing.
  returned: success
  type: int
transport:
  description: C(IB) (NET/IB or an IB plugin such as IBext), C(Socket) (NET/Socket, a TCP fallback) or null when the log does not say.
  returned: success
  type: str
gdr:
  description: Whether GPU Direct RDMA was used (C(GDRDMA) connections); null when the log does not say.
  returned: success
  type: bool
nccl_version:
  description: NCCL version from the log.
  returned: success
  type: str
ranks:
  description: The C(# Rank) lines as C(rank), C(group), C(pid), C(host), C(device), C(bus_id), C(name).
  returned: success
  type: list
  elements: dict
net_devices:
  description: RDMA ports NCCL reported using, as C(device:port/link layer).
  returned: success
  type: list
  elements: str
ib_hcas:
  description: RDMA device names NCCL reported using, on any host of the job.
  returned: success
  type: list
  elements: str
ib_hcas_by_host:
  description: "Per host NCCL logged from (its C(host:pid:tid) prefix), the RDMA devices its C(NET/IB : Using) lines name."
  returned: success
  type: dict
  sample: {"gpu-a": ["mlx5_0", "mlx5_1"], "10-0-0-12": ["mlx5_0", "mlx5_1"]}
local_host:
  description: This host's name as NCCL prints it (the host name up to its first dot).
  returned: always
  type: str
local_ib_hcas:
  description:
    - The RDMA devices NCCL used on this host (the host that ran mpirun, the node under test), from RV(ib_hcas_by_host); when
      no line names this host, those of the host of rank 0 (mpirun's first host). Null when the log names none.
  returned: success
  type: list
  elements: str
socket_ifaces:
  description: Interfaces NCCL's socket transport reported using.
  returned: success
  type: list
  elements: str
channels:
  description: Number of NCCL channels (from C(coll channels) or the distinct channel ids seen).
  returned: success
  type: int
multiple_jobs:
  description: True when the log holds more than one job header or a rank number twice.
  returned: always
  type: bool
jobs:
  description: Each job of the log with its header, ranks, rows and averages.
  returned: success
  type: list
  elements: dict
errors:
  description: NCCL WARN, NCCL error and C(Test NCCL failure) lines.
  returned: always
  type: list
  elements: str
data_errors:
  description: Rows whose C(#wrong) is above zero, as C(size_bytes), C(oop_wrong), C(ip_wrong).
  returned: success
  type: list
  elements: dict
advice:
  description: Findings an operator should act on (socket fallback, no GDR, data errors); each is also shown as a warning.
  returned: always
  type: list
  elements: str
error_class:
  description:
    - Failure class, null on success; one of C(invalid_options), C(tool_missing), C(timeout), C(tool_failed), C(parse_error),
      C(launcher_failed), C(launcher_missing), C(multiple_jobs), C(no_results) or C(wrong_results) (with O(fail_on_wrong)).
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description:
    - Whose fault RV(error_class) is, null on success; C(ours) (tooling, options, our timeout, unreadable output; never the
      provider's), C(host) (the hosts of the job) or C(unknown).
  returned: always
  type: str
rc:
  description: Exit status of mpirun.
  returned: when run
  type: int
stdout:
  description: Output of the run (the evidence).
  returned: when run
  type: str
stderr:
  description: Error output of the run.
  returned: when run
  type: str
'''

import ipaddress
import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import nccl
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

SIZE_RE = re.compile(r'\d+[KMGkmg]?')
ENV_NAME_RE = re.compile(r'(?:(?:NCCL|UCX|OMPI_MCA|SHARP|HCOLL)_[A-Za-z0-9_]+|CUDA_VISIBLE_DEVICES|LD_LIBRARY_PATH)')

# Options that set one NCCL variable each: option -> variable.
OPTION_ENV = {
    'ib_hca': 'NCCL_IB_HCA', 'socket_ifname': 'NCCL_SOCKET_IFNAME', 'gid_index': 'NCCL_IB_GID_INDEX',
    'ib_tc': 'NCCL_IB_TC', 'net_plugin': 'NCCL_NET_PLUGIN', 'ib_merge_nics': 'NCCL_IB_MERGE_NICS',
}
HOSTFILE_PLACEHOLDER = '<tmpdir>/hostfile'


def _fail(module, msg, **extra):
    """Invalid options: the caller's (our) mistake."""
    module.fail_json(msg='%s: %s' % (hostname(), msg), **dict(extra, **failure('invalid_options')))


def exact_list(option, items, check):
    """NCCL's exact form of a device or interface list: '=' and the items joined with commas; (value, problem)."""
    if not items:
        return None, '%s must name at least one item' % option
    forms = [item for item in items if isinstance(item, str) and item[:1] in ('=', '^')]
    if forms:
        return None, ('%s: %r uses NCCL\'s own list syntax; give plain names (they are written in the exact form) or set '
                      'the variable with nccl_env' % (option, forms[0]))
    bad = [item for item in items if check(option, item)]
    if bad:
        return None, check(option, bad[0])
    return '=' + ','.join(items), None


def normalize_hosts(module, hosts):
    """[(name, slots)] from names and {name, slots} dicts; fails the module on bad input."""
    found = []
    if not hosts:
        _fail(module, 'hosts must name at least one host')
    for index, entry in enumerate(hosts):
        if isinstance(entry, dict):
            name = entry.get('name')
            slots = entry.get('slots', 1)
            unknown = sorted(set(entry) - set(['name', 'slots']))
            if unknown:
                _fail(module, 'hosts[%d] has unknown keys %s (expected name and slots)' % (index, ', '.join(unknown)))
        else:
            name, slots = entry, 1
        name = to_text(name) if name is not None else ''
        problem = checks.check_host('hosts[%d]' % index, name)
        if problem:
            _fail(module, problem)
        try:
            slots = int(slots)
        except (TypeError, ValueError):
            _fail(module, 'hosts[%d] (%s): slots must be an integer, got %r' % (index, name, slots))
        if not 1 <= slots <= 1024:
            _fail(module, 'hosts[%d] (%s): slots must be between 1 and 1024, got %d' % (index, name, slots))
        found.append((name, slots))
    return found


HCA_ITEM_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(?::[1-9][0-9]{0,2})?')


def _hca_item(option, value):
    if checks.fullmatch(HCA_ITEM_RE, value):
        return None
    return '%s: %r is not an RDMA device name with an optional port (mlx5_0 or mlx5_0:1)' % (option, value)


def build_env(module):
    """The -x environment as an ordered list of (name, value), NCCL_DEBUG first."""
    params = module.params
    env = {}
    for name, value in (params['nccl_env'] or {}).items():
        name = to_text(name)
        if not checks.fullmatch(ENV_NAME_RE, name):
            _fail(module, 'nccl_env: %r is not an allowed variable name (NCCL_*, UCX_*, OMPI_MCA_*, SHARP_*, HCOLL_*, '
                  'CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH)' % name)
        if isinstance(value, bool):
            value = '1' if value else '0'
        value = to_text(value)
        if checks.CONTROL_RE.search(value):
            _fail(module, 'nccl_env: the value of %s contains a newline or another control character' % name)
        env[name] = value
    env.setdefault('NCCL_DEBUG', 'INFO')
    for option, variable in OPTION_ENV.items():
        value = params[option]
        if value is None:
            continue
        if variable in env:
            _fail(module, 'both option %s and nccl_env.%s are set; use one' % (option, variable))
        if option in ('ib_hca', 'socket_ifname'):
            value, problem = exact_list(option, value, _hca_item if option == 'ib_hca' else checks.check_netdev)
            if problem:
                _fail(module, problem)
        elif option in ('gid_index', 'ib_tc'):
            if not 0 <= value <= 255:
                _fail(module, '%s must be between 0 and 255, got %d' % (option, value))
            value = str(value)
        elif option == 'ib_merge_nics':
            value = '1' if value else '0'
        elif option == 'net_plugin' and checks.check_binary('net_plugin', value):
            _fail(module, checks.check_binary('net_plugin', value))
        env[variable] = value
    ordered = [('NCCL_DEBUG', env.pop('NCCL_DEBUG'))]
    return ordered + sorted(env.items())


def build_args(module, hosts, hostfile_path):
    """mpirun arguments (without the mpirun binary itself)."""
    params = module.params
    problem = checks.check_binary('binary', params['binary'], suffix='_perf')
    if problem:
        _fail(module, '%s (the name or path of an nccl-tests binary)' % problem)
    np = params['np'] if params['np'] is not None else sum(slots for _name, slots in hosts)
    if np < 1:
        _fail(module, 'np must be at least 1, got %d' % np)
    args = ['-np', str(np), '--hostfile', hostfile_path]
    if params['allow_run_as_root']:
        args.append('--allow-run-as-root')
    if params['fabric_subnet'] is not None:
        try:
            # Open MPI takes a comma-separated list of subnets (two ends in unrelated networks need two).
            subnet = ','.join(str(ipaddress.ip_network(part.strip(), strict=False)) for part in to_text(params['fabric_subnet']).split(','))
        except ValueError as exc:
            _fail(module, 'fabric_subnet: %r is not a CIDR subnet or a comma-separated list of them (%s)' % (params['fabric_subnet'], exc))
        args += ['--mca', 'oob_tcp_if_include', subnet, '--mca', 'btl_tcp_if_include', subnet]
    for index, extra in enumerate(params['mpirun_args']):
        problem = checks.check_arg('mpirun_args[%d]' % index, extra)
        if problem:
            _fail(module, problem)
        args.append(extra)
    for name, value in build_env(module):
        args += ['-x', '%s=%s' % (name, value)]
    args.append(params['binary'])
    for option, flag in (('min_bytes', '-b'), ('max_bytes', '-e')):
        value = params[option]
        if value is not None:
            if not checks.fullmatch(SIZE_RE, value):
                _fail(module, '%s: %r is not a size (a number with an optional K, M or G suffix)' % (option, value))
            args += [flag, value]
    for option, flag, low in (('step_factor', '-f', 1), ('gpus_per_rank', '-g', 1), ('iters', '-n', 1),
                              ('warmup_iters', '-w', 0), ('check', '-c', 0)):
        value = params[option]
        if value is not None:
            if value < low:
                _fail(module, '%s must be at least %d, got %d' % (option, low, value))
            args += [flag, str(value)]
    return args


def advice(parsed, params):
    """Sentences an operator can act on (returned as advice, and shown as warnings)."""
    sentences = []
    if parsed.get('transport') == 'Socket':
        sentences.append('NCCL used NET/Socket: silent TCP fallback; check NCCL_IB_HCA (both boxes\' device names), '
                         'NCCL_NET_PLUGIN=none and the GID index (NCCL_IB_GID_INDEX), and that the RDMA ports are Active')
    elif parsed.get('transport') is None and params['nccl_env'].get('NCCL_DEBUG', 'INFO').upper() in ('INFO', 'TRACE'):
        sentences.append('the transport NCCL used is not in the output (no NET/IB or NET/Socket INFO lines)')
    if parsed.get('transport') == 'IB' and parsed.get('gdr') is False:
        sentences.append('NCCL used NET/IB without GPU Direct RDMA: check nvidia_peermem and NCCL_NET_GDR_LEVEL')
    if nccl.data_errors(parsed):
        sentences.append('nccl-tests reported wrong results (#wrong > 0) at %s bytes'
                         % ', '.join(str(row['size_bytes']) for row in nccl.data_errors(parsed)))
    if parsed.get('out_of_bounds'):
        sentences.append('nccl-tests reported %s out-of-bounds values' % parsed['out_of_bounds'])
    return sentences


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary=dict(type='str', required=True),
            hosts=dict(type='list', elements='raw', required=True),
            np=dict(type='int'),
            min_bytes=dict(type='str'),
            max_bytes=dict(type='str'),
            step_factor=dict(type='int'),
            gpus_per_rank=dict(type='int'),
            iters=dict(type='int'),
            warmup_iters=dict(type='int'),
            check=dict(type='int'),
            nccl_env=dict(type='dict', default={}),
            ib_hca=dict(type='list', elements='str'),
            socket_ifname=dict(type='list', elements='str'),
            gid_index=dict(type='int'),
            ib_tc=dict(type='int'),
            net_plugin=dict(type='str'),
            ib_merge_nics=dict(type='bool'),
            fabric_subnet=dict(type='str'),
            mpirun_args=dict(type='list', elements='str', default=[]),
            allow_run_as_root=dict(type='bool', default=False),
            timeout=dict(type='int', default=1800),
            mpirun=dict(type='str', default='mpirun'),
            fail_on_wrong=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = checks.control_characters(params, skip=('nccl_env',))
    problems.append(checks.check_binary('mpirun', params['mpirun']))
    problems.append(checks.check_timeout('timeout', params['timeout']))
    checks.fail_if_invalid(module, 'nccl_tests', checks.problems_of(problems))
    hosts = normalize_hosts(module, params['hosts'])
    hostfile = ''.join('%s slots=%d\n' % (name, slots) for name, slots in hosts)
    runner = ToolRunner(module)

    if module.check_mode:
        args = build_args(module, hosts, HOSTFILE_PLACEHOLDER)
        launcher = runner.find(params['mpirun'], required=False) or params['mpirun']
        module.exit_json(changed=False, cmd=render_cmd([launcher] + args), hostfile=hostfile, local_host=nccl_host_name(),
                         multiple_jobs=False, errors=[], advice=[], **SUCCESS)

    tmpdir = tempfile.mkdtemp(prefix='netval-nccl-')
    try:
        hostfile_path = os.path.join(tmpdir, 'hostfile')
        args = build_args(module, hosts, hostfile_path)
        with open(hostfile_path, 'w') as handle:
            handle.write(hostfile)
        result = runner.run(params['mpirun'], args, timeout=params['timeout'], check=False)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)

    output = (result.stdout or '') + ('\n' + result.stderr if result.stderr else '')
    fields = dict(hostfile=hostfile, multiple_jobs=False, errors=[], advice=[], local_host=nccl_host_name())
    parsed = parse_error = None
    try:
        parsed = nccl.parse_nccl_tests(output)
    except ParseError as exc:
        parse_error = exc
    if parsed is not None:
        fields.update(parsed)
        fields['busbw_at_max_size'] = nccl.busbw_at_max_size(parsed)
        fields['max_busbw_gbs'] = nccl.max_busbw(parsed)
        fields['data_errors'] = nccl.data_errors(parsed)
        fields['advice'] = advice(parsed, params)
        fields['local_ib_hcas'] = nccl.local_hcas(parsed, fields['local_host'])

    launcher = nccl.launcher_problem(output)
    if launcher and (result.rc != 0 or result.timed_out):
        runner.fail(result, reason='could not start the job on every host: %s' % launcher[1], error_class=launcher[0], **fields)
    if result.timed_out:
        runner.fail(result, reason='timed out after %ss%s' % (params['timeout'], _error_tail(fields)), error_class='timeout', **fields)
    if result.rc != 0:
        runner.fail(result, reason='exited with rc=%s%s' % (result.rc, _error_tail(fields)), error_class='tool_failed', **fields)
    if parsed is None:
        runner.fail_parse(result, parse_error)
    if parsed['multiple_jobs']:
        runner.fail(result, reason='ran %d independent jobs instead of one %d-rank job (each rank printed its own header: '
                    'nccl-tests built without MPI=1, or mpirun did not launch one job); the figures are not a fabric '
                    'measurement' % (max(len(parsed['jobs']), 2), int(args[1])), error_class='multiple_jobs', **fields)
    if not parsed['rows']:
        runner.fail(result, reason='printed no result rows%s' % _error_tail(fields), error_class='no_results', **fields)
    if params['fail_on_wrong'] and fields['data_errors']:
        runner.fail(result, reason='reported wrong results (#wrong > 0) at %s bytes' % ', '.join(
            str(row['size_bytes']) for row in fields['data_errors']), error_class='wrong_results', **fields)
    for sentence in fields['advice']:
        module.warn(sentence)
    module.exit_json(changed=False, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr, **dict(fields, **SUCCESS))


def nccl_host_name():
    """This host's name as NCCL prints it in its log lines: gethostname() up to the first dot."""
    return hostname().split('.', 1)[0]


def _error_tail(fields):
    errors = fields.get('errors') or []
    if not errors:
        return ''
    return '; NCCL errors: %s' % ' | '.join(line[:200] for line in errors[-3:])


if __name__ == '__main__':
    main()
