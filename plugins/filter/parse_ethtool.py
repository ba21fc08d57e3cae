# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool
short_description: Parse the link settings printed by C(ethtool DEV)
version_added: 0.1.0
description:
  - Reads speed, duplex, port, auto-negotiation, link detection, supported and advertised link modes and FEC modes.
  - An unknown speed (ethtool prints C(Unknown!)) gives C(speed_mbps=null), never 0.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Require 100G on the RDMA netdev
  ansible.builtin.assert:
    that: (ethtool_out.stdout | gpufleet.netval.parse_ethtool).speed_mbps == 100000
'''

RETURN = r'''
_value:
  description: C(netdev), C(speed_mbps) (int or null), C(speed) (as printed), C(duplex), C(port), C(auto_negotiation), C(link_detected),
    C(supported_link_modes), C(advertised_link_modes), C(supported_fec_modes), C(advertised_fec_modes) (lists or null when not
    reported) and C(fields) (every value as printed).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool': as_filter('parse_ethtool', parse_ethtool)}
