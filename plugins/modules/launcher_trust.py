#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: launcher_trust
short_description: Give a node SSH trust to its peer for one NCCL test, and take it back without a trace
version_added: 0.2.0
description:
  - Open MPI's mpirun on the node starts C(orted) on the peer over SSH, as the test user. A new node has no key the peer trusts
    and no host key of the peer; this module gives it both for one run and one node-peer pair, and removes them again.
  - V(authorized), on the peer - appends the launcher's public key (from P(gpufleet.netval.launcher_key#module)) to the test
    user's C(~/.ssh/authorized_keys), restricted to the node's address and to running a command
    (C(from="<node>",no-port-forwarding,no-X11-forwarding,no-agent-forwarding,no-pty), and C(expiry-time) at its deadline, in the
    peer's local time, so that sshd refuses it afterwards even if its removal never ran). It records what it changed (the file
    or C(~/.ssh) it created, the newline it added before its line), so V(revoked) leaves the file byte-identical.
  - V(present), on the node - writes the private key and a C(known_hosts) naming the peer's address with its host keys into a
    private temporary folder (mode 0700), then checks the session the launcher will open
    (C(ssh -i <key> -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=<folder>/known_hosts <peer> true));
    when it fails the folder is removed and the module fails with RV(error_class) C(launcher_unreachable), side C(ours).
    Without O(private_key) (a site with trust of its own) it only checks the session, with C(BatchMode=yes).
  - V(revoked) (peer) and V(absent) (node) remove what V(authorized) and V(present) made.
  - Each trace has a watchdog (its own session, detached) that removes it at the deadline (O(lifetime)) if nothing else did,
    so a run killed before it could clean up leaves nothing behind once the deadline passes.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  state:
    description: What to do (see the description).
    type: str
    choices: [authorized, revoked, present, absent]
    required: true
  user:
    description: With V(authorized), the test user on the peer (whose C(~/.ssh/authorized_keys) gets the key).
    type: str
  public_key:
    description:
      - With V(authorized), the launcher's public key line (C(ssh-ed25519 <base64> netval-launcher:...)); its comment marks the
        line as the collection's.
    type: str
  from_addresses:
    description: With V(authorized), the node's addresses the key is restricted to (C(from=)); the addresses its SSH session comes from.
    type: list
    elements: str
  trust:
    description: With V(revoked), the RV(trust) an V(authorized) task returned.
    type: dict
  private_key:
    description: With V(present), the launcher's private key (OpenSSH format); omitted, only the session is checked.
    type: str
  peer_address:
    description: With V(present), the peer's address as the launcher reaches it (its MPI address).
    type: str
  peer_host_keys:
    description: With V(present) and O(private_key), the peer's SSH host public keys (C(<type> <base64>)), as read on the peer.
    type: list
    elements: str
  check:
    description: With V(present), check the launcher's session (C(ssh ... <peer> true)) before returning.
    type: bool
    default: true
  dir:
    description: With V(absent), the folder a V(present) task returned (RV(dir)); only a folder of this module is removed.
    type: str
  lifetime:
    description: Seconds after which the watchdog removes the trace if it is still there (at most a day).
    type: int
    default: 3600
  timeout:
    description: Seconds the session check may take.
    type: int
    default: 30
notes:
  - Supports check mode; it then changes nothing and reports what it would do.
attributes:
  check_mode:
    description: In check mode nothing is written, run or removed.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: A key for this run and this pair (on the controller)
  gpufleet.netval.launcher_key:
    run: 20261205T180000Z
    node: gpu-07
    peer: peer-01
  register: key
  no_log: true

- name: Trust it on the peer, from the node's address only
  gpufleet.netval.launcher_trust:
    state: authorized
    user: root
    public_key: "{{ key.public_key }}"
    from_addresses: [10.0.0.17]
  delegate_to: peer-01
  register: trust

- name: Give the node the private half and the peer's host key; check the session
  gpufleet.netval.launcher_trust:
    state: present
    private_key: "{{ key.private_key }}"
    peer_address: 10.0.0.1
    peer_host_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHJ1bm5pbmcgb3V0IG9mIGlkZWFzIGZvciBrZXlz"]
  register: launcher
  no_log: true

- name: Take it all back (in an always section)
  gpufleet.netval.launcher_trust:
    state: revoked
    trust: "{{ trust.trust }}"
  delegate_to: peer-01
'''

RETURN = r'''
trust:
  description: With V(authorized), what was changed (C(path), C(line), C(added_newline), C(created_file), C(created_dir)); pass it to V(revoked).
  returned: when state is authorized
  type: dict
dir:
  description: With V(present) and O(private_key), the private folder holding the key and known_hosts.
  returned: when state is present
  type: str
ssh_options:
  description: With V(present), the ssh options of the launcher's session (also those of the check).
  returned: when state is present
  type: list
  elements: str
mpirun_args:
  description:
    - With V(present) and O(private_key), the mpirun arguments that hand RV(ssh_options) to Open MPI (C(--mca plm_rsh_args "..."));
      empty without it (a site's own trust keeps its own settings).
  returned: when state is present
  type: list
  elements: str
check_cmd:
  description: With V(present), the session check that was (or would be) run.
  returned: when state is present
  type: str
deadline:
  description: Epoch seconds at which the watchdog removes the trace if it is still there.
  returned: when state is authorized or present
  type: float
removed:
  description: With V(revoked) or V(absent), whether a trace was found and removed.
  returned: when state is revoked or absent
  type: bool
error_class:
  description: Null on success; C(launcher_unreachable) (the session check failed), C(invalid_options) or C(trust_failed).
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description: Whose fault RV(error_class) is, null on success; always C(ours) here (the launcher is ours to set up).
  returned: always
  type: str
'''

import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import launcher
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

USER_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_.-]{0,31}')
TRUST_KEYS = ('path', 'line', 'added_newline', 'created_file', 'created_dir')
ARGUMENT_SPEC = dict(
    state=dict(type='str', required=True, choices=['authorized', 'revoked', 'present', 'absent']),
    user=dict(type='str'),
    public_key=dict(type='str'),
    from_addresses=dict(type='list', elements='str'),
    trust=dict(type='dict'),
    private_key=dict(type='str', no_log=True),
    peer_address=dict(type='str'),
    peer_host_keys=dict(type='list', elements='str', no_log=False),
    check=dict(type='bool', default=True),
    dir=dict(type='str'),
    lifetime=dict(type='int', default=3600),
    timeout=dict(type='int', default=30),
)
REQUIRED = {'authorized': ('user', 'public_key', 'from_addresses'), 'revoked': ('trust',), 'present': ('peer_address',),
            'absent': ('dir',)}


def _fail(module, msg, error_class='invalid_options', **extra):
    module.fail_json(msg='%s: launcher_trust: %s' % (hostname(), msg), **dict(extra, **failure(error_class)))


def _trust_record(module, trust):
    """The record an authorized task returned, checked: the authorized_keys of a ~/.ssh, a line of the collection's key."""
    record = dict((key, trust.get(key)) for key in TRUST_KEYS)
    path = record['path']
    if (not isinstance(path, str) or not os.path.isabs(path) or os.path.basename(path) != 'authorized_keys'
            or os.path.basename(os.path.dirname(path)) != '.ssh'):
        _fail(module, 'trust.path must be the authorized_keys file of a ~/.ssh folder, got %r' % (path,))
    line = record['line']
    key = line.split(' ', 1)[1] if isinstance(line, str) and ' ' in line else ''
    if not isinstance(line, str) or not line.startswith('from="') or not launcher.PUBLIC_KEY_RE.fullmatch(key) \
            or not launcher.KEY_COMMENT_RE.fullmatch(key.rsplit(' ', 1)[-1]):
        _fail(module, 'trust.line is not a line of the launcher\'s key (from="...",... ssh-... netval-launcher:...)')
    for flag in ('added_newline', 'created_file', 'created_dir'):
        record[flag] = bool(record[flag])
    return record


def authorize(module, params):
    deadline = time.time() + params['lifetime']
    line = launcher.authorized_line(params['public_key'], params['from_addresses'], deadline)
    if module.check_mode:
        return dict(changed=True, trust=None, deadline=deadline)
    record = launcher.add_authorized(params['user'], line)
    launcher.start_watchdog(launcher.key_watchdog_args(record, deadline))
    return dict(changed=True, trust=record, deadline=deadline)


def _line_present(record):
    try:
        with open(record['path'], 'rb') as handle:
            return (record['line'].encode('utf-8') + b'\n') in handle.read()
    except (IOError, OSError):
        return False


def revoke(module, params):
    record = _trust_record(module, params['trust'])
    present = _line_present(record)
    if module.check_mode or not present and not record['created_dir']:
        return dict(changed=present, removed=present)
    rc, err = launcher.remove_now(launcher.key_watchdog_args(record, 0))
    if rc != 0:
        _fail(module, 'could not remove the launcher\'s key from %s: %s' % (record['path'], err or 'rc=%d' % rc), 'trust_failed')
    return dict(changed=present, removed=present)


def present(module, params):
    runner = ToolRunner(module)
    folder = None
    if params['private_key']:
        if module.check_mode:
            options = launcher.ssh_options('<tmpdir>')
        else:
            folder = launcher.write_credentials(params['private_key'], params['peer_address'], params['peer_host_keys'])
            options = launcher.ssh_options(folder)
    else:
        options = launcher.ssh_options()
    deadline = time.time() + params['lifetime']
    argv = options + [params['peer_address'], 'true']
    # A site's own trust keeps its own ssh settings for Open MPI (netval_mpirun_args): only the check uses BatchMode here.
    handed = launcher.mpirun_args(options) if params['private_key'] else []
    result = dict(changed=folder is not None, dir=folder, ssh_options=options, mpirun_args=handed,
                  check_cmd=render_cmd([runner.find('ssh', required=False) or 'ssh'] + argv), deadline=deadline)
    if module.check_mode or not params['check']:
        if folder:
            launcher.start_watchdog(launcher.dir_watchdog_args(folder, deadline))
        return result
    checked = runner.run('ssh', argv, timeout=params['timeout'], check=False)
    if checked.rc != 0 or checked.timed_out:
        if folder:
            launcher.remove_now(launcher.dir_watchdog_args(folder, 0))
        detail = (checked.stderr or checked.stdout or '').strip().splitlines()
        why = 'timed out after %ss' % params['timeout'] if checked.timed_out else 'rc=%s: %s' % (
            checked.rc, detail[-1][:300] if detail else 'no message')
        _fail(module, 'the launcher cannot open its SSH session to the peer %s as the test user (`%s` %s); mpirun would fail '
              'the same way' % (params['peer_address'], checked.cmd, why), 'launcher_unreachable',
              dir=None, ssh_options=options, check_cmd=checked.cmd, rc=checked.rc, stderr=checked.stderr)
    if folder:
        launcher.start_watchdog(launcher.dir_watchdog_args(folder, deadline))
    return result


def absent(module, params):
    folder = params['dir']
    if not os.path.lexists(folder):
        return dict(changed=False, removed=False)
    if not launcher.is_credentials_dir(folder):
        _fail(module, 'dir %r is not a folder launcher_trust made (%s*, owned by this user)' % (folder, launcher.DIR_PREFIX))
    if module.check_mode:
        return dict(changed=True, removed=True)
    launcher.remove_now(launcher.dir_watchdog_args(folder, 0))
    if os.path.exists(folder):
        _fail(module, 'could not remove %s' % folder, 'trust_failed')
    return dict(changed=True, removed=True)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    state = params['state']
    problems = checks.control_characters(params, skip=('private_key', 'trust'))
    problems += ['%s is required with state=%s' % (name, state) for name in REQUIRED[state] if not params[name]]
    problems.append(checks.check_number('lifetime', params['lifetime'], 1, launcher.MAX_LIFETIME))
    problems.append(checks.check_timeout('timeout', params['timeout']))
    if params['user'] is not None and not checks.fullmatch(USER_RE, params['user']):
        problems.append('user must be a user name, got %r' % params['user'])
    if params['peer_address'] is not None:
        problems.append(checks.check_host('peer_address', params['peer_address']))
    if state == 'present' and params['private_key'] and not params['peer_host_keys']:
        problems.append('peer_host_keys is required with a private_key: ssh checks the peer\'s host key (StrictHostKeyChecking=yes)')
    checks.fail_if_invalid(module, 'launcher_trust', checks.problems_of(problems))
    try:
        result = {'authorized': authorize, 'revoked': revoke, 'present': present, 'absent': absent}[state](module, params)
    except launcher.LauncherError as exc:
        _fail(module, str(exc))
    except (IOError, OSError) as exc:
        _fail(module, '%s: %s' % (state, exc), 'trust_failed')
    module.exit_json(**dict(result, **SUCCESS))


if __name__ == '__main__':
    main()
