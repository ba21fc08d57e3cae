# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: tier_profile_errors
short_description: What makes a resolved tier profile unusable with the test catalogue
version_added: 0.1.0
description:
  - Returns plain sentences, empty when the profile is fine, for every test it names that the catalogue does not know,
    every metric of an enabled test without a threshold (unless the tool grades itself or the test lists it under
    C(ungraded)), every threshold of an unknown metric or in another unit than the catalogue's, every malformed threshold
    (exactly one of C(reject_below) / C(reject_above), numeric C(healthy) bounds), every missing or out-of-range
    C(cause_rules) setting, every malformed C(preflight) check setting (a known check, a severity, its expectation) and, when
    the profile has them, every malformed C(drift_rules) setting (counter limits, window, escalated checks, figure tolerances)
    and C(fleet_rules) setting (robust spreads, shortfall, batch size, outlier share, common-element share, excluded metrics).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The resolved tier profile.
    type: dict
    required: true
  tier:
    description: The tier's name, for the messages (default the profile's own C(tier)).
    type: str
'''

EXAMPLES = r'''
- name: Check the profile
  ansible.builtin.assert:
    that: (tier_profile_resolved | gpufleet.netval.tier_profile_errors(netval_tier)) == []
'''

RETURN = r'''
_value:
  description: The problems, one sentence each.
  type: list
  elements: str
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, drift, fleet, preflight, verdict


def tier_profile_errors(profile, tier=None):
    # A resolved profile names its own tier: the sentences name it when the caller does not.
    tier = tier or (profile.get('tier') if isinstance(profile, dict) and isinstance(profile.get('tier'), str) else None)
    errors = catalogue.profile_errors(profile, tier)
    if isinstance(profile, dict):
        where = 'tier %s' % tier if tier else 'the tier profile'
        errors += ['%s: %s' % (where, problem) for problem in verdict.profile_errors(profile) + preflight.preflight_errors(profile)]
        if 'drift_rules' in profile:
            errors += ['%s: %s' % (where, problem) for problem in drift.rules_errors(profile['drift_rules'])]
        if 'fleet_rules' in profile:
            errors += ['%s: %s' % (where, problem) for problem in fleet.rules_errors(profile['fleet_rules'])]
    return errors


class FilterModule(object):
    def filters(self):
        return {'tier_profile_errors': tier_profile_errors}
