# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: from_packed_json
short_description: The document a text of gpufleet.netval.to_packed_json stands for
version_added: 0.1.0
description:
  - Decodes the base64, decompresses and parses the JSON that C(gpufleet.netval.to_packed_json) made.
  - Fails, saying what it expected, for any other text (never a wrong value).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text C(gpufleet.netval.to_packed_json) made.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Bundle the node's whole preflight reads
  ansible.builtin.debug:
    msg: "{{ (node_preflight_packed | gpufleet.netval.from_packed_json).pcie.devices | length }} PCIe devices"
'''

RETURN = r'''
_value:
  description: The document, as plain JSON data.
  type: raw
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.packed_json import PackedJsonError, unpack_json


def _from_packed_json(packed):
    try:
        return unpack_json(packed)
    except PackedJsonError as exc:
        raise AnsibleFilterError('from_packed_json: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'from_packed_json': _from_packed_json}
