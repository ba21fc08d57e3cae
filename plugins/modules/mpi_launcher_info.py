#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: mpi_launcher_info
short_description: Check that the NCCL launcher's programs resolve on a box as Open MPI will look for them
version_added: 0.2.0
description:
  - On the node (no O(prefix)) - resolves O(mpirun) as P(gpufleet.netval.nccl_tests#module) will (this task's C(PATH) and the
    sbin folders, or the path given), and from its absolute path the prefix Open MPI starts its daemon under on the other hosts
    (an mpirun run by its absolute path behaves as C(--prefix)); finds that daemon there (C(orted), or C(prted) for Open MPI 5)
    and the nccl-tests O(binary).
  - On the peer (O(prefix) and O(daemon) from the node's result) - checks that C(<prefix>/bin/<daemon>) is an executable here and
    that O(binary) resolves as the daemon will start it (C(<prefix>/bin) first, then this task's C(PATH), which for an SSH
    session of the test user is what C(orted) gets).
  - On both - the interface holding O(address) (the box's MPI address, NCCL's bootstrap interface), the user the task runs as,
    and with O(host_keys) the box's SSH host public keys (what the node's launcher must find in its known_hosts).
  - A program that is not found fails the module with RV(error_class) C(launcher_missing), side C(ours), naming the variable to set
    (C(netval_mpirun), C(netval_nccl_binary)); an address no interface holds fails with C(no_interface).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  mpirun:
    description: Name or path of Open MPI's mpirun (on the node; an absolute path is also the prefix on the peer).
    type: str
    default: mpirun
  binary:
    description: Name or path of the nccl-tests binary (for example C(all_reduce_perf) or C(/opt/nccl-tests/build/all_reduce_perf)).
    type: str
    required: true
  address:
    description: This box's MPI address (an IP address or a name it resolves); its interface is returned in RV(interface).
    type: str
  prefix:
    description: On the peer, the Open MPI prefix the node's mpirun starts the daemon under (the node's RV(prefix)).
    type: path
  daemon:
    description: On the peer, the daemon's name under O(prefix) (the node's RV(daemon)).
    type: str
    choices: [orted, prted]
  host_keys:
    description:
      - SSH host public key files to read (C(.pub)); with O(read_host_keys) and none given, the C(/etc/ssh/ssh_host_*_key.pub)
        that exist.
    type: list
    elements: path
    default: []
  read_host_keys:
    description: Return the box's SSH host public keys in RV(host_keys).
    type: bool
    default: false
notes:
  - Supports check mode; it only reads.
attributes:
  check_mode:
    description: Reads only.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: The launcher on the node
  gpufleet.netval.mpi_launcher_info:
    mpirun: /opt/hpcx/ompi/bin/mpirun
    binary: /opt/nccl-tests/build/all_reduce_perf
    address: 10.0.0.17
  register: node_launcher

- name: The same on the peer, under the node's prefix
  gpufleet.netval.mpi_launcher_info:
    prefix: "{{ node_launcher.prefix }}"
    daemon: "{{ node_launcher.daemon }}"
    binary: /opt/nccl-tests/build/all_reduce_perf
    address: 10.0.0.1
    read_host_keys: true
  delegate_to: peer-01
'''

RETURN = r'''
user:
  description: The user this task runs as (the launcher's test user on the node, its login on the peer).
  returned: always
  type: str
mpirun:
  description: On the node, mpirun's absolute path.
  returned: on the node
  type: str
prefix:
  description: The Open MPI prefix (on the node, from mpirun's path; on the peer, as given).
  returned: always
  type: str
daemon:
  description: The daemon Open MPI starts on the other hosts, C(orted) or C(prted).
  returned: always
  type: str
daemon_path:
  description: Its path under the prefix.
  returned: always
  type: str
binary_path:
  description: The nccl-tests binary as it resolves here.
  returned: always
  type: str
interface:
  description: The interface holding O(address), null without it.
  returned: always
  type: str
interface_address:
  description: The address of RV(interface) that O(address) names (O(address) itself, or what a name resolves to here).
  returned: always
  type: str
host_keys:
  description: The SSH host public keys read (C(<type> <base64>)).
  returned: always
  type: list
  elements: str
problems:
  description: What could not be found, each naming the variable to set.
  returned: always
  type: list
  elements: str
error_class:
  description: Null on success; C(launcher_missing), C(no_interface) or C(invalid_options).
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description: Whose fault RV(error_class) is, null on success (C(ours)).
  returned: always
  type: str
'''

import glob
import os
import pwd
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import rdma
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname

DAEMONS = ('orted', 'prted')
DEFAULT_HOST_KEYS = '/etc/ssh/ssh_host_*_key.pub'


def _executable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def resolve_binary(binary, prefix):
    """The binary as the daemon (or mpirun) starts it: a path as it is; a name in <prefix>/bin, then on PATH."""
    if '/' in binary:
        return binary if _executable(binary) else None
    folders = ([os.path.join(prefix, 'bin')] if prefix else []) + os.environ.get('PATH', '').split(os.pathsep)
    for folder in folders:
        candidate = os.path.join(folder, binary)
        if folder and _executable(candidate):
            return candidate
    return None


def interface_of(runner, address):
    """(interface, its address, problem): the interface holding ``address`` (or an address a name resolves to here)."""
    wanted = set([address])
    if not checks.is_ip(address):
        try:
            wanted = set(info[4][0] for info in socket.getaddrinfo(address, None))
        except socket.gaierror as exc:
            return None, None, 'the MPI address %s does not resolve on %s (%s): set netval_mpi_address' % (address, hostname(), exc)
    result = runner.run('ip', ['-o', 'addr', 'show'], timeout=30, check=False)
    try:
        found = rdma.parse_ip_addr(result.stdout or '')['addresses']
    except ParseError as exc:
        return None, None, 'ip -o addr show on %s: %s' % (hostname(), exc)
    for entry in found:
        if entry['address'] in wanted:
            return entry['ifname'], entry['address'], None
    return None, None, ('no interface of %s holds the MPI address %s (%s): set netval_mpi_address to an address of this box that '
                        'the other box reaches' % (hostname(), address, ', '.join(sorted(wanted))))


def read_host_keys(paths):
    keys, problems = [], []
    for path in paths or sorted(glob.glob(DEFAULT_HOST_KEYS)):
        try:
            with open(path) as handle:
                fields = handle.read().split()
        except (IOError, OSError) as exc:
            problems.append('cannot read the SSH host key %s on %s (%s): set netval_ssh_host_keys' % (path, hostname(), exc))
            continue
        if len(fields) < 2:
            problems.append('%s on %s is not an SSH public key: set netval_ssh_host_keys' % (path, hostname()))
            continue
        keys.append('%s %s' % (fields[0], fields[1]))
    if not keys and not problems:
        problems.append('no SSH host key found on %s (%s): set netval_ssh_host_keys' % (hostname(), paths or DEFAULT_HOST_KEYS))
    return keys, problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mpirun=dict(type='str', default='mpirun'),
            binary=dict(type='str', required=True),
            address=dict(type='str'),
            prefix=dict(type='path'),
            daemon=dict(type='str', choices=list(DAEMONS)),
            host_keys=dict(type='list', elements='path', default=[], no_log=False),
            read_host_keys=dict(type='bool', default=False),
        ),
        required_together=[('prefix', 'daemon')],
        supports_check_mode=True,
    )
    params = module.params
    problems = checks.control_characters(params)
    problems.append(checks.check_binary('mpirun', params['mpirun']))
    problems.append(checks.check_binary('binary', params['binary'], suffix='_perf'))
    if params['address'] is not None:
        problems.append(checks.check_host('address', params['address']))
    checks.fail_if_invalid(module, 'mpi_launcher_info', checks.problems_of(problems))
    runner = ToolRunner(module)
    result = dict(changed=False, user=pwd.getpwuid(os.geteuid()).pw_name, mpirun=None, prefix=params['prefix'],
                  daemon=params['daemon'], daemon_path=None, binary_path=None, interface=None, interface_address=None, host_keys=[],
                  problems=[])
    missing = []
    if params['prefix'] is None:
        mpirun = runner.find(params['mpirun'], required=False)
        if mpirun is None:
            missing.append('mpirun %s is not found on %s as the nccl_tests task looks for it (PATH %s): install Open MPI or set '
                           'netval_mpirun to its absolute path' % (params['mpirun'], hostname(), os.environ.get('PATH', '')))
        else:
            mpirun = os.path.abspath(mpirun)
            result.update(mpirun=mpirun, prefix=os.path.dirname(os.path.dirname(mpirun)))
            daemons = [name for name in DAEMONS if _executable(os.path.join(result['prefix'], 'bin', name))]
            if daemons:
                result.update(daemon=daemons[0], daemon_path=os.path.join(result['prefix'], 'bin', daemons[0]))
            else:
                missing.append('neither orted nor prted is under %s/bin on %s: %s is not a full Open MPI install; set netval_mpirun '
                               'to the mpirun of one' % (result['prefix'], hostname(), mpirun))
    else:
        path = os.path.join(params['prefix'], 'bin', params['daemon'])
        if _executable(path):
            result['daemon_path'] = path
        else:
            missing.append('%s is not on %s: the node\'s mpirun starts Open MPI\'s daemon under the prefix %s here; install the same '
                           'Open MPI on both boxes, or set netval_mpirun to an mpirun whose prefix both have'
                           % (path, hostname(), params['prefix']))
    result['binary_path'] = resolve_binary(params['binary'], result['prefix'])
    if result['binary_path'] is None:
        missing.append('the nccl-tests binary %s is not found on %s as the launcher starts it (%sthe PATH %s): build nccl-tests '
                       'with MPI=1 there, or set netval_nccl_binary to its absolute path on both boxes'
                       % (params['binary'], hostname(), '%s/bin, then ' % result['prefix'] if result['prefix'] else '',
                          os.environ.get('PATH', '')))
    if params['read_host_keys'] or params['host_keys']:
        result['host_keys'], unread = read_host_keys(params['host_keys'])
        missing += unread
    interface_problem = None
    if params['address'] is not None:
        result['interface'], result['interface_address'], interface_problem = interface_of(runner, params['address'])
    result['problems'] = missing + ([interface_problem] if interface_problem else [])
    if missing:
        module.fail_json(msg='%s: the NCCL launcher cannot run: %s' % (hostname(), '; '.join(missing)),
                         **dict(result, **failure('launcher_missing')))
    if interface_problem:
        module.fail_json(msg='%s: %s' % (hostname(), interface_problem), **dict(result, **failure('no_interface')))
    module.exit_json(**dict(result, **SUCCESS))


if __name__ == '__main__':
    main()
