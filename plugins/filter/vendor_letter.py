# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: vendor_letter
short_description: Draft the plain-prose letter to the provider for a rejected node
version_added: 0.1.0
description:
  - Renders the letter the runbook describes for a bucket C node, from the node result that the verdict role builds
    (the JSON under C(reports/<timestamp>/nodes/)).
  - The shape is identity and tier, what the contract specifies, measured results pasted verbatim, what differs,
    what was already ruled out, a specific ask, and what happens meanwhile. It never invents a measurement.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: One node result.
    type: dict
    required: true
  sender:
    description: C(signature) to sign the letter with.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Re-render a letter from a stored node result
  ansible.builtin.debug:
    msg: "{{ lookup('ansible.builtin.file', 'reports/latest/nodes/gpu-01.json') | from_json | gpufleet.netval.vendor_letter }}"
'''

RETURN = r'''
_value:
  description: The letter text.
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report


def vendor_letter(node, sender=None):
    try:
        return report.vendor_letter(node, sender)
    except report.ReportError as exc:
        raise AnsibleFilterError('vendor_letter: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'vendor_letter': vendor_letter}
