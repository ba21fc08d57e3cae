# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_mlxlink
short_description: Parse C(mlxlink -d DEV) or C(mstlink -d DEV) output
version_added: 0.1.0
description:
  - Reads the Operational, Supported, Troubleshooting and Module sections and, with C(-c), the physical counters and BER (C(15E-255) and
    C(1E-12) become floats); with C(-e) the eye opening.
  - ANSI colour codes are removed.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(mlxlink -d DEV [-m] [-c] [-e]).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Require an error-free link
  ansible.builtin.assert:
    that: (link_out.stdout | gpufleet.netval.parse_mlxlink).counters.effective_physical_errors == 0
'''

RETURN = r'''
_value:
  description: C(sections) (every section as printed), C(operational), C(supported), C(troubleshooting), C(module), C(counters) and C(eye)
    (null when the section is absent), and C(truncated) (the text stopped at a pasted elision mark).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.mlx import parse_mlxlink
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_mlxlink': as_filter('parse_mlxlink', parse_mlxlink)}
