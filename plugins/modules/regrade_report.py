#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: regrade_report
short_description: Re-grade past runs from their evidence bundles on the controller, without contacting any node
version_added: 0.1.0
description:
  - Finds the evidence bundles asked for (O(bundles), else every bundle under O(evidence_dir); O(nodes) and O(since) narrow
    them), re-reads each one's raw test outputs with today's parsers and grades them with the profile of its tier from
    O(profiles) (today's tier profiles, or a contract the playbook resolved), then compares the bundles of one run with each
    other and with the accepted fleet's baselines as the run's report did (fleet outliers, common elements).
  - "Nothing of a bundle is read before its checksums verify: its C(MANIFEST.sha256) must parse, every file it lists must be
    there with its sha256, and the fetched C(.tar.gz) beside them must hold the same manifest and files. A bundle that does not
    verify is reported (C(not verified, not graded) with why), never graded; only files the manifest lists are read, each within
    a size limit, and what is read passes the controller's trust boundary for node data."
  - "What is read again: every perftest, iperf3, ping, nccl-tests and dcgmi diag figure whose raw output the bundle holds (an
    output today's parser cannot read becomes unknown, naming the parser's reason). Kept as recorded: the all-NICs aggregate and
    pause rates (computed, not printed), and figures whose test failed when it ran (the module's failure class). The preflight
    findings are taken again from the bundle's preflight facts with the profile's checks; link, AER, peer and run-break findings
    are kept. A metric the profile grades that the bundle has no figure of is unknown (not measurable from that evidence)."
  - "Writes C(<root>/<timestamp>/): C(regrade.txt) (a before/after table: node, run, bucket and causes before, after, whether
    they changed; then the bundles not graded and why, the comparison's notes and common elements), C(regrade.md), C(regrade.json)
    (per bundle the figures whose status or value changed) and C(nodes/<node>/<run>.json) (each re-graded verdict), with a
    checksum manifest, atomically, never over an earlier re-grade; C(<root>/latest) is then pointed at it."
  - "Before is the run's report (C(<reports_dir>/<run>/nodes/<node>.json)) when that report's manifest verifies it, else the
    bundle's C(results.json) (the node's verdict before the run's comparison with siblings)."
  - Contacts no node and writes nothing under O(evidence_dir).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  root:
    description: Folder of the re-grade reports (each in a folder named O(timestamp)).
    type: path
    required: true
  timestamp:
    description: UTC stamp of this re-grade, such as C(20261215T090000Z); its folder's name.
    type: str
    required: true
  profiles:
    description:
      - Tier name to the resolved tier profile to grade with (thresholds, cause_rules, tests, preflight, fleet_rules), as the
        tier_profile role resolves them (its C(every_tier) entry point resolves every tier with the contract given).
    type: dict
    required: true
  evidence_dir:
    description:
      - The controller's evidence folder (C(<evidence_dir>/<node>/<stamp>)); its accepted baselines join the comparison with
        siblings. Without O(bundles) every bundle under it is re-graded (narrowed by O(nodes) and O(since)).
    type: path
  bundles:
    description:
      - Folders to re-grade instead of every bundle of O(evidence_dir), each a bundle (C(<node>/<stamp>), holding
        C(MANIFEST.sha256)), a node's folder (its bundles) or an evidence folder (its nodes' bundles).
    type: list
    elements: path
    default: []
  nodes:
    description: Only these nodes' bundles.
    type: list
    elements: str
    default: []
  since:
    description: Only bundles stamped at or after this UTC date or time (C(2026-11-01), C(20261101T000000Z)).
    type: str
  contract:
    description: What the profiles are, in words, for the report (for example the contract file's path).
    type: str
    default: today's tier profiles
  reports_dir:
    description: The validation runs' reports folder, where the before of each bundle is read when its run's report verifies.
    type: path
  max_bundle_bytes:
    description: The largest fetched C(.tar.gz) a bundle may hold (as evidence_store).
    type: int
    default: 268435456
  max_unpacked_bytes:
    description: The most bytes a bundle's files may hold together (as evidence_store).
    type: int
    default: 1073741824
  max_members:
    description: The most members the fetched C(.tar.gz) may hold (as evidence_store).
    type: int
    default: 4096
attributes:
  check_mode:
    description: Finds the bundles and writes nothing in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Re-grade every bundle since November with the stricter contract
  gpufleet.netval.regrade_report:
    root: "{{ playbook_dir }}/../reports/regrade"
    timestamp: "{{ now(utc=True).strftime('%Y%m%dT%H%M%SZ') }}"
    evidence_dir: "{{ playbook_dir }}/../evidence"
    reports_dir: "{{ playbook_dir }}/../reports"
    since: '2026-11-01'
    profiles: "{{ tier_profile_every }}"
    contract: contracts/2027.yml
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
run_dir:
  description: The re-grade's report folder.
  returned: always
  type: str
summary_table:
  description: The before/after table as text (empty in check mode).
  returned: always
  type: str
bundles:
  description: The bundle folders found.
  returned: always
  type: list
  elements: str
changed_nodes:
  description: Nodes with a bundle whose bucket or causes changed.
  returned: success, not in check mode
  type: list
  elements: str
not_verified:
  description: C(<node>/<stamp>) of every bundle whose checksums did not verify (reported, not graded).
  returned: success, not in check mode
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.netval.plugins.module_utils import validate
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import regrade_task


def main():
    # The action plugin of the same name runs regrade_task.run on the controller; this runs it as a module.
    module = AnsibleModule(argument_spec=regrade_task.ARGUMENT_SPEC, supports_check_mode=True)
    validate.finish(module, regrade_task.run(module.params, module.check_mode))


if __name__ == '__main__':
    main()
