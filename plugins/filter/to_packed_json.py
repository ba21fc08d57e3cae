# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: to_packed_json
short_description: A document as one short text (compact JSON, zlib, base64) to keep until a later step reads it
version_added: 0.1.0
description:
  - The value as compact JSON with sorted keys, compressed with zlib and written in base64. C(gpufleet.netval.from_packed_json)
    gives it back.
  - For a large document a node keeps in the controller's memory until one later task reads it, one text of about a
    thirtieth of the size of the objects it stands for, in the main process that every task forks. It is the form in
    which preflight_info's C(packed) sends a node's reads (validate.yml keeps them so until the evidence bundle).
  - An object JSON cannot hold is written as its text.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: Any JSON-like value.
    type: raw
    required: true
'''

EXAMPLES = r'''
- name: Keep the node's whole preflight reads packed until its evidence bundle
  ansible.builtin.set_fact:
    node_preflight_packed: "{{ preflight_facts | gpufleet.netval.to_packed_json }}"
'''

RETURN = r'''
_value:
  description: The packed text (base64).
  type: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.packed_json import pack_json


class FilterModule(object):
    def filters(self):
        return {'to_packed_json': pack_json}
