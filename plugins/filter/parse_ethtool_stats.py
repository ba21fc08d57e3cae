# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool_stats
short_description: Parse C(ethtool -S DEV) (NIC counters)
version_added: 0.1.0
description:
  - Reads every counter line (name, colon, integer) and picks out the pause, per-priority PFC, discard, error and link-down counters (mlx5
    names such as C(rx_discards_phy), C(rx_prio3_pause), C(rx_crc_errors_phy)).
  - Also reads the output of C(ethtool -S DEV | grep ...) without its header.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool -S DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Fail on physical discards
  ansible.builtin.assert:
    that: (stats_out.stdout | gpufleet.netval.parse_ethtool_stats).counters.rx_discards_phy | default(0) == 0
'''

RETURN = r'''
_value:
  description: C(counters) (name to int), C(pause), C(discards), C(errors), C(link) (subsets of counters), C(pfc) (priority to its pause
    counters) and C(unparsed) (lines that were not counters).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_stats
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool_stats': as_filter('parse_ethtool_stats', parse_ethtool_stats)}
