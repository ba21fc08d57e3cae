#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: evidence_bundle
short_description: Capture a node's evidence set into a checksummed, never-overwritten bundle
version_added: 0.1.0
description:
  - Runs each evidence command (argument lists, never a shell), records its output, exit code and stderr,
    adds the given files (raw test outputs, parsed results, the thresholds used) and copies the given paths
    (for example C(/proc/cmdline)).
  - Writes everything into C(<dest>/<node>/<timestamp>/) atomically, with a C(MANIFEST.sha256) in C(sha256sum) format,
    and tars it (flat) into C(<dest>/<node>/<node>-<timestamp>.tar.gz).
  - A missing tool is recorded in C(commands.json), not fatal. An existing bundle is never overwritten.
  - Everything is checked before anything runs; names that would collide (two entries for one file, for example the paths
    C(/a/b) and C(/a_b), or a O(files) entry named like a command's output) are an error.
  - Each command runs in a session of its own that is stopped (SIGTERM, SIGKILL 2 s later) at its O(commands[].timeout);
    no coreutils C(timeout) is needed, and C(timed_out) in RV(commands) says whether it was hit.
  - Up to O(workers) commands run at once. Commands that name the same device (the argument after C(-d), as the MFT tools
    C(flint), C(mlxconfig) and C(mlxlink) take it) run one after another, in their order, since those tools lock the device
    while they read it; the functions of one PCI device (C(0000:1b:00.0) and C(0000:1b:00.1), the two ports of one adapter)
    are one device, as the lock is the adapter's. RV(commands) keeps the order of O(commands) whatever order they ran in.
  - Every file is fsynced before the bundle is renamed into place; C(<dest>/<node>) must be a real directory, never a symlink.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  dest:
    description: Folder that holds every node's bundles on the node.
    type: path
    default: /var/lib/netval/evidence
  node:
    description: Node name used in paths (letters, digits, C(.), C(_), C(-)).
    type: str
    required: true
  timestamp:
    description: UTC timestamp of the run, such as C(20261130T014500Z).
    type: str
    required: true
  commands:
    description: Evidence commands to run.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: File name for the output inside C(commands/) (components of letters, digits, C(.), C(_), C(@), C(+), C(-)).
        type: str
        required: true
      argv:
        description: Command as an argument list; the first element (a program name or path, not starting with C(-)) is looked up on PATH.
        type: list
        elements: str
        required: true
      timeout:
        description: Hard timeout in seconds (above 0, at most 3600).
        type: int
        default: 120
  files:
    description: Extra files to store, relative path to text content.
    type: dict
    default: {}
  paths:
    description: Files on the node to copy into C(files/), as C(files/<path with / replaced by _>) (missing ones are recorded).
    type: list
    elements: path
    default: []
  workers:
    description: How many evidence commands may run at once (1 to 32; 1 runs them one after another).
    type: int
    default: 4
notes:
  - In check mode nothing is run or written; the module returns what it would collect.
attributes:
  check_mode:
    description: Runs and writes nothing in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Capture evidence
  gpufleet.netval.evidence_bundle:
    node: "{{ inventory_hostname }}"
    timestamp: "{{ netval_run_timestamp }}"
    commands:
      - {name: lspci-vvv.txt, argv: [lspci, -vvv]}
      - {name: ibstat.txt, argv: [ibstat]}
    files:
      tests/iperf3.json: "{{ iperf3_result.stdout }}"
    paths: [/proc/cmdline]
'''

RETURN = r'''
bundle_dir:
  description: Folder of the bundle on the node.
  returned: changed
  type: str
tarball:
  description: Path of the tarball on the node.
  returned: changed
  type: str
tarball_sha256:
  description: sha256 of the tarball.
  returned: changed
  type: str
manifest:
  description: Relative paths and sha256 sums of every file in the bundle.
  returned: changed
  type: list
  elements: dict
commands:
  description: Per evidence command, its argv, rc, timeout, whether the tool was missing and whether it ran past its timeout (C(timed_out)).
  returned: always
  type: list
  elements: dict
'''

import concurrent.futures
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname, render_cmd, run_with_deadline

MAX_COMMAND_TIMEOUT = 3600
MAX_WORKERS = 32


def path_entry_name(path):
    """files/<path with / as _>: the name a copied path gets in the bundle."""
    return 'files/%s' % path.strip('/').replace('/', '_')


def check_plan(params):
    """Every problem with the options, found before anything runs: names, argv, timeouts and collisions."""
    problems = checks.control_characters(params, skip=('files',))
    problems.append(checks.check_path_component('node', params['node']))
    if not checks.fullmatch(evidence.STAMP_RE, params['timestamp']):
        problems.append('timestamp %r must look like 20261130T014500Z (UTC)' % (params['timestamp'],))
    entries = [('commands.json', 'the command records'), (evidence.MANIFEST, 'the manifest')]
    for index, spec in enumerate(params['commands']):
        what = 'commands[%d] (%s)' % (index, spec['name'])
        if not spec['argv']:
            problems.append('%s has an empty argv' % what)
        else:
            problems.append(checks.check_binary('%s argv[0]' % what, spec['argv'][0]))
        problems.append(checks.check_timeout('%s timeout' % what, spec['timeout'], maximum=MAX_COMMAND_TIMEOUT))
        entries.append(('commands/%s' % spec['name'], what))
    if not 1 <= params['workers'] <= MAX_WORKERS:
        problems.append('workers must be from 1 to %d, got %r' % (MAX_WORKERS, params['workers']))
    for index, path in enumerate(params['paths']):
        entries.append((path_entry_name(path), 'paths[%d] (%s)' % (index, path)))
    for rel in params['files']:
        entries.append((rel, 'files[%r]' % (rel,)))
    problems.extend(evidence.claim_names(entries))
    return checks.problems_of(problems)


def run_evidence_command(module, spec):
    argv = [str(a) for a in spec['argv']]
    record = {'name': spec['name'], 'argv': argv, 'cmd': render_cmd(argv), 'rc': None, 'missing': False, 'timed_out': False,
              'timeout': spec['timeout']}
    binary = module.get_bin_path(argv[0], required=False)
    if binary is None:
        record['missing'] = True
        record['stderr'] = '%s not found on PATH' % argv[0]
        return record, ''
    try:
        result = run_with_deadline([binary] + argv[1:], spec['timeout'])
    except OSError as exc:
        record['stderr'] = 'cannot run %s: %s' % (binary, exc)
        return record, ''
    record['rc'] = result.rc
    record['timed_out'] = result.timed_out
    record['stderr'] = result.stderr[-2000:] if result.stderr else ''
    return record, result.stdout


def command_lanes(commands):
    """The indexes of ``commands`` in lanes that may run side by side: commands naming the same device (the argument
    after ``-d``; the functions of one PCI device are one adapter) share a lane, in their order; every other command has
    a lane of its own.  Lanes in first-use order."""
    lanes = []
    by_device = {}
    for index, spec in enumerate(commands):
        argv = [str(arg) for arg in spec['argv']]
        device = argv[argv.index('-d') + 1] if '-d' in argv[:-1] else None
        if device is not None and checks.fullmatch(checks.PCI_ADDRESS_RE, device):
            device = device.lower().rsplit('.', 1)[0]   # the adapter: its functions share the lock
        if device is None:
            lanes.append([index])
        elif device in by_device:
            by_device[device].append(index)
        else:
            by_device[device] = [index]
            lanes.append(by_device[device])
    return lanes


def run_evidence_commands(module, commands, workers):
    """[(record, stdout)] of every command, in the order of ``commands``; up to ``workers`` lanes at once."""
    outcomes = [None] * len(commands)

    def run_lane(lane):
        for index in lane:
            outcomes[index] = run_evidence_command(module, commands[index])

    lanes = command_lanes(commands)
    if lanes:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(workers, len(lanes))) as pool:
            list(pool.map(run_lane, lanes))   # list(): a lane's exception is raised here, not lost
    return outcomes


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', default='/var/lib/netval/evidence'),
            node=dict(type='str', required=True),
            timestamp=dict(type='str', required=True),
            commands=dict(type='list', elements='dict', default=[], options=dict(
                name=dict(type='str', required=True),
                argv=dict(type='list', elements='str', required=True),
                timeout=dict(type='int', default=120),
            )),
            files=dict(type='dict', default={}),
            paths=dict(type='list', elements='path', default=[]),
            workers=dict(type='int', default=4),
        ),
        supports_check_mode=True,
    )
    params = module.params
    checks.fail_if_invalid(module, 'evidence_bundle', check_plan(params))
    node_dir = os.path.join(params['dest'], params['node'])
    bundle_dir = os.path.join(node_dir, params['timestamp'])
    tarball = os.path.join(node_dir, '%s-%s.tar.gz' % (params['node'], params['timestamp']))
    planned = [{'name': s['name'], 'cmd': render_cmd(s['argv'])} for s in params['commands']]
    if module.check_mode:
        module.exit_json(changed=False, commands=planned, bundle_dir=bundle_dir, tarball=tarball)
    try:
        os.makedirs(params['dest'], exist_ok=True)
        evidence.real_dir(node_dir, create=True)
    except (evidence.EvidenceError, IOError, OSError) as exc:
        module.fail_json(msg='%s: cannot use evidence folder %s: %s' % (hostname(), node_dir, exc))
    if os.path.lexists(bundle_dir) or os.path.lexists(tarball):
        module.fail_json(msg='%s: evidence bundle %s already exists; evidence is never overwritten' % (hostname(), bundle_dir))

    files = {}
    records = []
    for spec, (record, out) in zip(params['commands'], run_evidence_commands(module, params['commands'], params['workers'])):
        records.append(record)
        if not record['missing']:
            files['commands/%s' % spec['name']] = out
    for path in params['paths']:
        name = path_entry_name(path)
        try:
            with open(path, 'rb') as handle:
                files[name] = handle.read()
        except (IOError, OSError) as exc:
            records.append({'name': name, 'path': path, 'missing': True, 'stderr': str(exc)})
    for rel, content in params['files'].items():
        if not isinstance(content, (str, bytes)):
            content = json.dumps(content, indent=2, sort_keys=True, default=str)
        files[rel] = content
    files['commands.json'] = json.dumps(records, indent=2, sort_keys=True)
    try:
        entries = evidence.build_bundle(bundle_dir, files)
        digest = evidence.tar_folder(bundle_dir, tarball)
    except (evidence.EvidenceError, IOError, OSError) as exc:
        module.fail_json(msg='%s: cannot write evidence bundle %s: %s' % (hostname(), bundle_dir, exc), commands=records)
    module.exit_json(changed=True, bundle_dir=bundle_dir, tarball=tarball, tarball_sha256=digest,
                     manifest=[{'sha256': d, 'path': p} for d, p in entries], commands=records)


if __name__ == '__main__':
    main()
