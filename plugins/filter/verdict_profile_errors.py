# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: verdict_profile_errors
short_description: What makes a tier profile's thresholds, cause rules or preflight checks unusable
version_added: 0.1.0
description:
  - Checks every threshold (exactly one of C(reject_below) / C(reject_above), numeric C(healthy) bounds), every
    C(cause_rules) setting (each known key present, a fraction between 0 and 1) and every C(preflight) check setting
    (a known check, a severity of marginal or reject, its expectation) of a resolved tier profile.
  - Returns plain sentences, one per problem; an empty list means node_verdict can use the profile.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The resolved tier profile (C(tier_profile_resolved)).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Check the profile before any test runs
  ansible.builtin.assert:
    that: (tier_profile_resolved | gpufleet.netval.verdict_profile_errors) | length == 0
'''

RETURN = r'''
_value:
  description: One sentence per problem, naming the metric or setting; empty when the profile is usable.
  type: list
  elements: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.preflight import preflight_errors
from ansible_collections.gpufleet.netval.plugins.module_utils.verdict import profile_errors


def verdict_profile_errors(profile):
    return profile_errors(profile) + preflight_errors(profile)


class FilterModule(object):
    def filters(self):
        return {'verdict_profile_errors': verdict_profile_errors}
