# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool_features
short_description: Parse C(ethtool -k DEV) (offload features)
version_added: 0.1.0
description:
  - Reads every offload feature as enabled/disabled and whether the driver fixes it (C([fixed])).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool -k DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Require GRO
  ansible.builtin.assert:
    that: (feat_out.stdout | gpufleet.netval.parse_ethtool_features).features['generic-receive-offload'].enabled
'''

RETURN = r'''
_value:
  description: C(netdev) and C(features), a dict of feature name to C(enabled) and C(fixed) booleans.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_features
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool_features': as_filter('parse_ethtool_features', parse_ethtool_features)}
