# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool_channels
short_description: Parse C(ethtool -l DEV) (channel counts)
version_added: 0.1.0
description:
  - Reads the pre-set maximum and current RX, TX, Other and Combined channel counts; C(n/a) becomes null.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool -l DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Show the combined channels
  ansible.builtin.debug:
    msg: "{{ (chan_out.stdout | gpufleet.netval.parse_ethtool_channels).current.combined }}"
'''

RETURN = r'''
_value:
  description: C(maximum) and C(current), each with C(rx), C(tx), C(other), C(combined) (int or null), plus C(netdev).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_channels
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool_channels': as_filter('parse_ethtool_channels', parse_ethtool_channels)}
