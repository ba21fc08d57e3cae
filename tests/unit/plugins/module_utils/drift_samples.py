"""Inputs for the baseline and drift tests: one real lab run (synthetic lab outputs, tests/fixtures/drift/README.md) and
the shipped drift_rules defaults.  Every fault a test needs is a synthetic edit of copies of these, made in the test."""
import copy
import json
import os

import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline
from tests.unit import fixtures

RUN = '20261201T100556Z'
DAY_LATER = '20261202T100556Z'
HOUR_LATER = '20261201T110556Z'


def _load(name):
    with open(fixtures.local_path(os.path.join('drift', name)), encoding='utf-8') as handle:
        data = json.load(handle)
    data.pop('_provenance')
    return data


_RESULT = _load('lab_400g_node01_result.json')
_FACTS = _load('lab_400g_node01_preflight.json')
_PROFILE = _load('lab_400g_node01_profile.json')
_STATS = _load('lab_400g_node01_ethtool_stats.json')['stats']

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'defaults', 'main.yml'), encoding='utf-8') as handle:
    _RULES = yaml.safe_load(handle)['tier_profile_drift_rules']


def result():
    return copy.deepcopy(_RESULT)


def facts():
    return copy.deepcopy(_FACTS)


def profile():
    return copy.deepcopy(_PROFILE)


def ethtool_stats():
    return copy.deepcopy(_STATS)


def rules(**limits):
    """The shipped drift_rules, with counter limits per hour overridden by ``limits``."""
    out = copy.deepcopy(_RULES)
    out['counter_limits_per_hour'].update(limits)
    return out


def lab_baseline():
    """The lab node's baseline, with the bundle's ethtool -S counters."""
    return baseline.build_baseline(result(), facts(), profile(), ethtool_stats())


def stats_with(netdev, **counters):
    """The bundle's ethtool -S outputs with ``counters`` of ``netdev`` set to new values (a synthetic edit)."""
    stats = ethtool_stats()
    lines = []
    for line in stats[netdev].splitlines():
        name = line.strip().split(':')[0]
        if name in counters:
            line = '     %s: %d' % (name, counters.pop(name))
        lines.append(line)
    lines.extend('     %s: %d' % item for item in sorted(counters.items()))
    stats[netdev] = '\n'.join(lines) + '\n'
    return stats


def current(edit=None, stamp=DAY_LATER, stats=None):
    """A current state one day after the baseline: the lab facts, ``edit(facts)`` applied first (a synthetic edit)."""
    data = facts()
    if edit is not None:
        edit(data)
    return baseline.current_state(data, 'node01', stamp, profile(), ethtool_stats() if stats is None else stats)
