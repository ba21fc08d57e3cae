# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_flint
short_description: Parse C(flint -d DEV q) or C(mstflint -d DEV q)
version_added: 0.1.0
description:
  - Reads firmware version, PSID, image type, release date, expansion ROMs, base GUID/MAC with their counts and security attributes.
  - C(FW Version(Running)) (a burnt image not yet running) sets C(reset_pending).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The text printed by C(flint -d DEV q) or C(mstflint -d DEV q).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Require the fleet firmware
  ansible.builtin.assert:
    that: (flint_out.stdout | gpufleet.netval.parse_flint).fw_version == '28.43.1014'
'''

RETURN = r'''
_value:
  description: C(fw_version), C(fw_version_running), C(reset_pending), C(psid), C(image_type), C(fw_release_date), C(product_version),
    C(rom_info) (list), C(base_guid), C(guids), C(base_mac), C(macs), C(security_attributes), C(secure_fw) and C(fields).
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.mlx import parse_flint
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_flint': as_filter('parse_flint', parse_flint)}
