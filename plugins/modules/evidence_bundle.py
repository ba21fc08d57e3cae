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
        description: File name for the output inside C(commands/).
        type: str
        required: true
      argv:
        description: Command as an argument list; the first element is looked up on PATH.
        type: list
        elements: str
        required: true
      timeout:
        description: Hard timeout in seconds.
        type: int
        default: 120
  files:
    description: Extra files to store, relative path to text content.
    type: dict
    default: {}
  paths:
    description: Files on the node to copy into C(files/) (missing ones are recorded).
    type: list
    elements: path
    default: []
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
  description: Per evidence command, its argv, rc, whether the tool was missing or timed out.
  returned: always
  type: list
  elements: dict
'''

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import C_LOCALE, hostname, render_cmd

_NODE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
_STAMP = re.compile(r'^\d{8}T\d{6}Z$')


def run_evidence_command(module, spec):
    argv = [str(a) for a in spec['argv']]
    record = {'name': spec['name'], 'argv': argv, 'cmd': render_cmd(argv), 'rc': None, 'missing': False, 'timed_out': False}
    binary = module.get_bin_path(argv[0], required=False)
    if binary is None:
        record['missing'] = True
        record['stderr'] = '%s not found on PATH' % argv[0]
        return record, ''
    timeout_bin = module.get_bin_path('timeout', required=False)
    full = [binary] + argv[1:]
    if timeout_bin:
        full = [timeout_bin, '--kill-after=5', str(spec.get('timeout') or 120)] + full
    rc, out, err = module.run_command(full, check_rc=False, environ_update=dict(C_LOCALE))
    record['rc'] = rc
    record['timed_out'] = bool(timeout_bin) and rc in (124, 137)
    record['stderr'] = err[-2000:] if err else ''
    return record, out


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
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not _NODE.match(params['node']):
        module.fail_json(msg='%s: node name %r must be letters, digits, ".", "_" or "-"' % (hostname(), params['node']))
    if not _STAMP.match(params['timestamp']):
        module.fail_json(msg='%s: timestamp %r must look like 20261130T014500Z (UTC)' % (hostname(), params['timestamp']))
    for spec in params['commands']:
        if not spec['argv']:
            module.fail_json(msg='%s: evidence command %s has an empty argv' % (hostname(), spec['name']))
    node_dir = os.path.join(params['dest'], params['node'])
    bundle_dir = os.path.join(node_dir, params['timestamp'])
    tarball = os.path.join(node_dir, '%s-%s.tar.gz' % (params['node'], params['timestamp']))
    planned = [{'name': s['name'], 'cmd': render_cmd(s['argv'])} for s in params['commands']]
    if module.check_mode:
        module.exit_json(changed=False, commands=planned, bundle_dir=bundle_dir, tarball=tarball)
    if os.path.exists(bundle_dir) or os.path.exists(tarball):
        module.fail_json(msg='%s: evidence bundle %s already exists; evidence is never overwritten' % (hostname(), bundle_dir))

    files = {}
    records = []
    for spec in params['commands']:
        record, out = run_evidence_command(module, spec)
        records.append(record)
        if not record['missing']:
            files['commands/%s' % spec['name']] = out
    for path in params['paths']:
        name = 'files/%s' % path.strip('/').replace('/', '_')
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
        for rel in files:
            evidence.safe_relpath(rel)
        entries = evidence.build_bundle(bundle_dir, files)
        digest = evidence.tar_folder(bundle_dir, tarball)
    except (evidence.EvidenceError, IOError, OSError) as exc:
        module.fail_json(msg='%s: cannot write evidence bundle %s: %s' % (hostname(), bundle_dir, exc), commands=records)
    module.exit_json(changed=True, bundle_dir=bundle_dir, tarball=tarball, tarball_sha256=digest,
                     manifest=[{'sha256': d, 'path': p} for d, p in entries], commands=records)


if __name__ == '__main__':
    main()
