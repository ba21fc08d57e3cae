# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool_ring
short_description: Parse C(ethtool -g DEV) (ring sizes)
version_added: 0.1.0
description:
  - Reads the pre-set maximum and current RX, RX Mini, RX Jumbo and TX ring sizes; C(n/a) becomes null.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool -g DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Require an RX ring of at least 8192
  ansible.builtin.assert:
    that: (ring_out.stdout | gpufleet.netval.parse_ethtool_ring).current.rx >= 8192
'''

RETURN = r'''
_value:
  description: C(maximum) and C(current), each with C(rx), C(rx_mini), C(rx_jumbo), C(tx) (int or null) and any extra rows, plus C(netdev).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_ring
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool_ring': as_filter('parse_ethtool_ring', parse_ethtool_ring)}
