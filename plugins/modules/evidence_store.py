#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: evidence_store
short_description: Fetch a node's evidence bundle to the controller, unpack it, verify its manifest, keep the baseline
version_added: 0.1.0
description:
  - The controller's half of the evidence chain in one task (an action plugin, no module process on the controller). With
    O(src) it first fetches the node's bundle (M(gpufleet.netval.evidence_bundle)) over the task's connection into O(dest)
    and checks it against O(src_sha256), the sha256 the capture returned; with O(tarball) the bundle is already there (for
    example brought by C(ansible.builtin.fetch)).
  - The fetched copy takes its name in O(dest) only once its sha256 matches, and never over a file of that name, so a
    half-fetched or altered bundle never looks like evidence.
  - The node is not trusted with the controller. The bundle is read once before anything is written, within O(max_bundle_bytes),
    O(max_unpacked_bytes) and O(max_members) (checked as it is read, so a sparse file, a gzip bomb or a huge tar header fails the
    task without costing memory or disk); every member must be a folder or a regular file at a path inside O(dest), named once
    (a link, a device or a path that leaves the folder fails the task).
  - Verifies every file against the bundle's C(MANIFEST.sha256) (C(sha256sum) format; each file hashed once) and fails naming each
    file that does not match; the manifest's names must be paths inside the folder (no absolute path, no C(..), none twice).
  - Then unpacks in O(dest), next to the tarball, only the files the manifest lists (and the manifest), never over a file that is
    already there; members it does not list are not written (RV(ignored)).
  - With O(baseline), the controller writes it as C(baseline.json) beside the raw outputs (it is never a file of the bundle's; a
    bundle whose manifest lists a C(baseline.json) fails the task), and with O(baseline_link) points that symlink
    (C(evidence/<node>/baseline)) at the bundle's folder, atomically; a link that is not ours (a file, a folder, a symlink
    elsewhere) is refused.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  src:
    description:
      - The bundle's path on the node (RV(gpufleet.netval.evidence_bundle#module:tarball)), fetched into O(dest) under its own
        name, which must be a plain C(.tar.gz) name (letters, digits and C(. _ @ + -), not starting with a dot). Give either
        O(src) or O(tarball).
      - Under become it is read with C(ansible.legacy.slurp), as C(ansible.builtin.fetch) does.
    type: str
  src_sha256:
    description: With O(src), the bundle's sha256 (RV(gpufleet.netval.evidence_bundle#module:tarball_sha256)); a copy that differs fails the task.
    type: str
  tarball:
    description: A bundle already on the controller, a C(.tar.gz) inside O(dest). Give either O(src) or O(tarball).
    type: path
  dest:
    description:
      - The controller folder of this bundle (C(evidence/<node>/<UTC timestamp>)); it must not be a symlink.
      - With O(tarball) it must exist; with O(src) it is made, with its parents.
    type: path
    required: true
  baseline:
    description: The node's baseline (filter C(gpufleet.netval.netval_baseline)) to keep as C(baseline.json); omit it for none.
    type: dict
  baseline_link:
    description: With O(baseline), the symlink to point at O(dest) (by its folder name), so C(evidence/<node>/baseline) is the newest accepted bundle.
    type: path
  max_bundle_bytes:
    description:
      - The most bytes the bundle's C(.tar.gz) may have. A fetched copy that is larger is refused before it is hashed (under
        become, slurp's answer before it is decoded); the connection's own transfer is measured once it has landed.
      - The evidence role passes its C(evidence_max_bundle_bytes).
    type: int
    default: 268435456
  max_unpacked_bytes:
    description:
      - The most bytes the bundle may unpack to (its tar stream, files and headers), and the most its files may declare.
      - The evidence role passes its C(evidence_max_unpacked_bytes).
    type: int
    default: 1073741824
  max_members:
    description:
      - The most members (files and folders) the bundle may hold.
      - The evidence role passes its C(evidence_max_members).
    type: int
    default: 4096
attributes:
  check_mode:
    description: In check mode nothing is unpacked or written.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
notes:
  - Its action plugin runs it on the controller whatever the task's host, and relative paths are the playbook folder's, as
    for C(ansible.builtin.fetch). On the controller it writes only O(dest) (and its parents, with O(src)) and
    O(baseline_link); on the node it only reads O(src), with the connection's own file transfer, or under become with
    C(ansible.legacy.slurp) (a module run on the node), as C(ansible.builtin.fetch) does.
  - A bundle whose manifest lists a C(baseline.json) fails the task; a C(baseline.json) it holds unlisted is not written. Nothing
    of the bundle's is ever taken as the baseline.
  - Real bundles of an 8-GPU node are tens of MB with a few hundred members; the default limits leave room for ten times that.
  - A node that stops answering during the transfer makes the task unreachable, as a fetch would (no RV(error_class) then).
  - Run as a module (not through its action plugin) it cannot fetch, and O(src) fails the task.
'''

EXAMPLES = r'''
- name: Fetch, unpack, verify and keep the baseline of an accepted node
  gpufleet.netval.evidence_store:
    src: "{{ bundle.tarball }}"
    src_sha256: "{{ bundle.tarball_sha256 }}"
    dest: "evidence/{{ inventory_hostname }}/{{ netval_run_timestamp }}"
    baseline: "{{ verdict_node_result | gpufleet.netval.netval_baseline(preflight_facts, tier_profile_resolved) }}"
    baseline_link: "evidence/{{ inventory_hostname }}/baseline"

- name: Unpack and verify a bundle already on the controller
  gpufleet.netval.evidence_store:
    tarball: "evidence/node01/20261203T120000Z/node01-20261203T120000Z.tar.gz"
    dest: "evidence/node01/20261203T120000Z"
'''

RETURN = r'''
location:
  description: The bundle's folder on the controller.
  returned: success
  type: str
tarball:
  description: The bundle's path on the controller (O(tarball), or where O(src) was fetched to).
  returned: success
  type: str
files:
  description: The files the manifest lists, every one verified.
  returned: success
  type: list
  elements: str
ignored:
  description: The files the bundle holds that its manifest does not list; they were not written (names with control characters written out).
  returned: success
  type: list
  elements: str
baseline:
  description: The path of C(baseline.json) when O(baseline) was given (written by this task), else null.
  returned: success
  type: str
baseline_written:
  description: Whether this task wrote C(baseline.json) (true whenever O(baseline) was given and the task succeeded; false in check mode).
  returned: success
  type: bool
error_class:
  description: C(evidence_error) when the bundle cannot be fetched, unpacked, verified or kept; C(invalid_options) for bad options; null on success.
  returned: always (but an unreachable node)
  type: str
error_hint:
  description: What to check for RV(error_class).
  returned: always
  type: str
error_side:
  description: C(ours) for bad options, C(unknown) for a bundle that cannot be kept (the controller's folder or the bundle itself); null on success.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence_store, validate


def main():
    # The action plugin of the same name runs evidence_store.store on the controller; this runs it as a module, on the
    # host the task runs on.
    module = AnsibleModule(argument_spec=evidence_store.ARGUMENT_SPEC, supports_check_mode=True)
    validate.finish(module, evidence_store.store(module.params, module.check_mode))


if __name__ == '__main__':
    main()
