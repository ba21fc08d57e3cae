# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool_pause
short_description: Parse C(ethtool -a DEV) (802.3x pause settings)
version_added: 0.1.0
description:
  - Reads Autonegotiate, RX and TX pause settings (and the negotiated results when printed) as booleans.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool -a DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Show whether the NIC sends pause frames
  ansible.builtin.debug:
    msg: "{{ (pause_out.stdout | gpufleet.netval.parse_ethtool_pause).tx }}"
'''

RETURN = r'''
_value:
  description: C(netdev), C(autonegotiate), C(rx), C(tx) (booleans, null when unreadable) and C(rx_negotiated)/C(tx_negotiated) when printed.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_pause
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool_pause': as_filter('parse_ethtool_pause', parse_ethtool_pause)}
