# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: netval_baseline
short_description: Build a node's versioned baseline of parsed facts and figures from its validation run
version_added: 0.1.0
description:
  - Returns the baseline document (schema C(gpufleet.netval/baseline), C(schema_version) 1) that a drift run compares with
    (P(gpufleet.netval.drift_findings#filter)) and a re-validation measures against (P(gpufleet.netval.figure_deltas#filter)).
  - "Per NIC: presence, ports (state, rate, link layer), PCIe LnkSta/LnkCap of the NIC and of every upstream hop, firmware,
    mlxconfig parameters, mlxlink FEC and cable, rings and channels of its netdevs. Per GPU: presence, bus id, serial, ECC mode
    and counts, remapped rows, retired pages, PCIe. Host: cmdline tokens, modules, hugepages, governor, memlock, driver versions.
    Counters (link down, symbol and receive errors, pause frames, discards, Xids, uncorrectable ECC) with their timestamp.
    Figures: every numeric test figure with the peer that produced it."
  - A device that should exist but does not is kept as an entry with C(present=false) (a GPU on the PCIe bus that nvidia-smi
    does not show, one that fell off the bus, or a placeholder when fewer than the profile's C(gpus.count) / C(nics.count)
    were found), never dropped.
  - The document carries the node, its run timestamp, tier, bucket and peer, and the tier profile it was judged against as
    C(profile.version) (the profile's own C(version), null when it has none) and C(profile.digest) (sha256 of its canonical JSON).
  - Every list is a list of dicts sorted by name, so C(json_query) works on it, for example C(facts.gpus[?present==`false`]).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description:
      - The node result as the report role writes it (C(verdict_node_result); C(reports/<stamp>/nodes/<node>.json) or the
        evidence bundle's C(results.json)). Read are C(node), C(timestamp), C(tier), C(bucket), C(peer), C(retested_against),
        C(evidence) and C(tests) (C(id), C(test), C(metric), C(subject), C(peer), C(peer_device), C(value), C(unit), C(status),
        C(threshold), and C(sweep) and C(samples) where present).
    type: dict
    required: true
  facts:
    description:
      - The preflight facts (C(preflight_facts); the bundle's C(preflight.json)) - C(rdma), C(pcie), C(nic), C(firmware), C(gpu)
        and C(host), each the result of M(gpufleet.netval.rdma_info), M(gpufleet.netval.pcie_info), M(gpufleet.netval.nic_info),
        M(gpufleet.netval.mlx_fw_info), M(gpufleet.netval.gpu_info) and M(gpufleet.netval.host_tuning_info).
      - A failed module's result (no data) is recorded as not captured, not as devices missing.
    type: dict
    required: true
  profile:
    description:
      - The resolved tier profile the node was judged against (C(tier_profile_resolved); the bundle's C(thresholds.json)).
      - C(gpus.count) and C(nics.count) give the devices that should exist; C(tests.<test>.size) or C(at_bytes) a figure's message size.
    type: dict
  ethtool_stats:
    description:
      - Optional C(ethtool -S) counters per netdev, when the facts have none (preflight reads no C(ethtool -S)),
        for example the bundle's C(commands/ethtool.<netdev>.counters.txt).
      - Netdev name to the C(ethtool -S) text, a P(gpufleet.netval.parse_ethtool_stats#filter) result or a dict of counter to integer.
    type: dict
'''

EXAMPLES = r'''
- name: Keep the accepted node's baseline beside its evidence
  ansible.builtin.copy:
    content: "{{ verdict_node_result | gpufleet.netval.netval_baseline(preflight_facts, tier_profile_resolved) | to_nice_json }}"
    dest: "{{ evidence_location }}/baseline.json"
    mode: "0644"
  delegate_to: localhost
  when: verdict_node_result.bucket == 'A'

- name: Baseline an old bundle from its files, with its ethtool -S outputs
  ansible.builtin.set_fact:
    old_baseline: >-
      {{ lookup('file', bundle + '/results.json') | from_json
         | gpufleet.netval.netval_baseline(lookup('file', bundle + '/preflight.json') | from_json,
                                           lookup('file', bundle + '/thresholds.json') | from_json,
                                           {'ens1np0': lookup('file', bundle + '/commands/ethtool.ens1np0.counters.txt')}) }}
'''

RETURN = r'''
_value:
  description:
    - C(schema), C(schema_version), C(kind) (baseline), C(node), C(timestamp), C(timestamp_seconds), C(tier),
      C(profile) (C(tier), C(version), C(digest)), C(bucket), C(peer), C(retested_against), C(evidence),
    - C(facts) with C(captured) (per section, whether its module gave data), C(expected) (C(gpus), C(nics) counts), C(nics),
      C(gpus), C(host) and C(counters) (C(subject), C(device), C(counter), C(class), C(source), C(value), C(timestamp), C(times)),
    - and C(figures) (C(id), C(test), C(metric), C(family), C(subject), C(peer), C(peer_device), C(value), C(unit), C(status),
      C(better), C(bytes), C(size), C(samples)).
  type: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.baseline import BaselineError, build_baseline


def netval_baseline(node_result, facts, profile=None, ethtool_stats=None):
    try:
        return build_baseline(node_result, facts, profile, ethtool_stats)
    except BaselineError as exc:
        raise AnsibleFilterError('netval_baseline: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'netval_baseline': netval_baseline}
