# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_mlxconfig
short_description: Parse C(mlxconfig -d DEV q) or C(mstconfig -d DEV q)
version_added: 0.1.0
description:
  - Reads the device header and every configuration parameter, value as printed (C(True(1)), C(BALANCED(0))).
  - With the C(Default Current Next Boot) layout (C(-e q)) also the default and next-boot values and the parameters that change at the next boot.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(mlxconfig -d DEV q) or C(mstconfig -d DEV q).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Require SR-IOV in the firmware
  ansible.builtin.assert:
    that: (cfg_out.stdout | gpufleet.netval.parse_mlxconfig).parameters.SRIOV_EN == 'True(1)'
'''

RETURN = r'''
_value:
  description: C(device), C(device_type), C(name), C(description), C(parameters) (current or only column), C(parameters_default),
    C(parameters_next_boot), C(pending_changes) (null when the layout cannot tell), C(modified) (rows marked *) and C(truncated).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.mlx import parse_mlxconfig
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_mlxconfig': as_filter('parse_mlxconfig', parse_mlxconfig)}
