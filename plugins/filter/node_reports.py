# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: node_reports
short_description: The run report's per-node results, each with the controller path of its evidence bundle
version_added: 0.1.0
description:
  - Takes the play's host variables (C(ansible_play_hosts_all | map('extract', hostvars) | list)) and returns node name to
    result for every host, the result being the verdict plus C(evidence), the controller folder of the node's evidence
    bundle when one was fetched. A node whose evidence is missing keeps its verdict; no node is dropped.
  - A host without a verdict (its run ended before it had one and no rescue recorded why) gets bucket B with the cause
    C(run_incomplete), as P(gpufleet.netval.run_break#filter) gives it, so every host of the limit is in every report.
  - The names of the two variables are arguments, so the filter reads nothing it is not told to.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The hosts' variables, one mapping per host.
    type: list
    elements: dict
    required: true
  result_var:
    description: The variable holding a host's verdict.
    type: str
    required: true
  evidence_var:
    description: The variable holding the controller folder of a host's evidence bundle.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Gather node results
  ansible.builtin.set_fact:
    nodes: "{{ ansible_play_hosts_all | map('extract', hostvars) | list | gpufleet.netval.node_reports('verdict_node_result', 'evidence_location') }}"
'''

RETURN = r'''
_value:
  description: Node name to its result (the verdict plus C(evidence) where a bundle exists), for every host.
  type: dict
'''

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import verdict

# Why a host has no verdict when no rescue said more: the play lost it (a task failed outside every rescue, or it stopped
# answering where nothing catches that).
NO_VERDICT = 'the run ended before this node had a verdict: a task failed outside the run\'s rescue or the node stopped answering'


def node_reports(hosts, result_var, evidence_var):
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError('node_reports: expected a list of host variables, got %s' % type(hosts).__name__)
    nodes = {}
    for host in hosts:
        if not isinstance(host, Mapping):
            raise AnsibleFilterError('node_reports: expected host variables (a mapping), got %r' % (host,))
        if result_var not in host:
            name = str(host.get('inventory_hostname') or '?')
            nodes[name] = verdict.incomplete_verdict(name, 'the run', NO_VERDICT, tier=host.get('netval_tier'))
            continue
        result = host[result_var]
        if not isinstance(result, Mapping) or not result.get('node'):
            raise AnsibleFilterError('node_reports: %s of %s must be a verdict with its node name, got %r'
                                     % (result_var, host.get('inventory_hostname', '?'), result))
        location = host[evidence_var] if evidence_var in host else None
        nodes[result['node']] = dict(result, evidence=location) if location else dict(result)
    return nodes


class FilterModule(object):
    def filters(self):
        return {'node_reports': node_reports}
