# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: drift_markdown
short_description: One node's drift findings as Markdown
version_added: 0.1.0
description:
  - Returns Markdown text - the node's drift status (red, changed or clean) and counts, its baseline and check times, a table of
    findings per severity (red, expected, info) and, when the entry has C(figure_deltas), the table of figures against the baseline.
  - Table cells escape C(|) and line breaks, so any text keeps the table intact.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The node's entry, C({findings, bucket, timestamp, baseline_timestamp, tier, figure_deltas}), or a list of findings.
    type: raw
    required: true
  node:
    description: The node's name.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Write each node's drift page
  ansible.builtin.copy:
    content: "{{ drift_nodes[item] | gpufleet.netval.drift_markdown(item) }}"
    dest: "{{ playbook_dir }}/../reports/drift/{{ item }}.md"
    mode: "0644"
  loop: "{{ drift_nodes | list }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
_value:
  description: The Markdown text.
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.drift import DriftError
from ansible_collections.gpufleet.netval.plugins.module_utils.drift_report import node_markdown


def drift_markdown(entry, node):
    try:
        return node_markdown(node, entry)
    except DriftError as exc:
        raise AnsibleFilterError('drift_markdown: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'drift_markdown': drift_markdown}
