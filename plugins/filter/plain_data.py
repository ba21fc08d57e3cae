# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: plain_data
short_description: A value as plain JSON data, without the origin tags of the YAML it came from
version_added: 0.1.0
description:
  - The same keys and values rebuilt from the built-in types (dict, list, text, integer, float, boolean, null).
  - Data read from YAML (a role's vars, the tier profiles) carries Ansible's origin tags, an object beside each value,
    and a fact made from it keeps them in every host's copy in the controller's main process, which every task forks.
    The tier_profile role keeps the resolved profile this way (31 KiB a node instead of 190 KiB), and the node_run filter its run record.
  - Any mapping becomes a dict, a tuple a list and a set a sorted list, as JSON keeps them; any other object is kept as it is.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: Any JSON-like value.
    type: raw
    required: true
'''

EXAMPLES = r'''
- name: Keep the node's profile as plain data
  ansible.builtin.set_fact:
    node_profile: "{{ tier_profile_all[netval_tier] | gpufleet.netval.plain_data }}"
'''

RETURN = r'''
_value:
  description: The value, plain.
  type: raw
'''

from ansible_collections.gpufleet.netval.plugins.plugin_utils.controller_memory import plain_data


class FilterModule(object):
    def filters(self):
        return {'plain_data': plain_data}
