# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: report_node
short_description: Collect one node's result for the run report from its host variables
version_added: 0.1.0
description:
  - Takes a host's variables (C(hostvars[host])) after the verdict and evidence roles and returns C({node, result}),
    the result being C(verdict_node_result) with the controller path of its evidence bundle added.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The host's variables.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Gather node results
  ansible.builtin.set_fact:
    nodes: "{{ ansible_play_hosts_all | map('extract', hostvars) | map('gpufleet.netval.report_node') | items2dict(key_name='node', value_name='result') }}"
'''

RETURN = r'''
_value:
  description: C(node) (inventory name) and C(result).
  type: dict
'''


from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def report_node(host_vars):
    if not isinstance(host_vars, Mapping):
        raise AnsibleFilterError('report_node: expected a host\'s variables (a dict), got %s' % type(host_vars).__name__)
    verdict = host_vars.get('verdict_node_result')
    if verdict is not None and not isinstance(verdict, Mapping):
        raise AnsibleFilterError('report_node: verdict_node_result of %s must be a dict, got %s'
                                 % (host_vars.get('inventory_hostname'), type(verdict).__name__))
    result = dict(verdict or {})
    if host_vars.get('evidence_location'):
        result['evidence'] = host_vars['evidence_location']
    return {'node': host_vars.get('inventory_hostname'), 'result': result}


class FilterModule(object):
    def filters(self):
        return {'report_node': report_node}
