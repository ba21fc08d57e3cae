# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_cmdline
short_description: Parse the text of /proc/cmdline
version_added: 0.1.0
description:
  - Splits a kernel command line into tokens and C(key=value) parameters.
  - Arguments after a lone C(--) belong to init and are returned as C(init_args).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text of C(/proc/cmdline).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Check a cmdline captured in an evidence bundle
  ansible.builtin.assert:
    that: "'iommu=pt' in (lookup('ansible.builtin.file', 'cmdline.txt') | gpufleet.netval.parse_cmdline).tokens"
'''

RETURN = r'''
_value:
  description: C(tokens) (list), C(params) (key to value, or true for a bare flag), C(params_all) (key to every value) and C(init_args).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.host_tuning import parse_cmdline
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_cmdline': as_filter('parse_cmdline', parse_cmdline)}
