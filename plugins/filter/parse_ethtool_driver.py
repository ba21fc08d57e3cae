# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ethtool_driver
short_description: Parse C(ethtool -i DEV) (driver information)
version_added: 0.1.0
description:
  - Reads driver, version, firmware version (and the PSID mlx5 appends to it), bus address and the supports-* flags.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(ethtool -i DEV).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Show the NIC firmware
  ansible.builtin.debug:
    msg: "{{ (drv_out.stdout | gpufleet.netval.parse_ethtool_driver).firmware_version }}"
'''

RETURN = r'''
_value:
  description: C(driver), C(version), C(firmware_version), C(firmware_version_number), C(firmware_psid), C(bus_info) (null when empty) and
    C(supports_*) booleans.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_driver
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ethtool_driver': as_filter('parse_ethtool_driver', parse_ethtool_driver)}
