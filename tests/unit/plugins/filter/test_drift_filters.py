"""The drift filters as a playbook calls them: the results json_query can read, hostile input as AnsibleFilterError
(never a traceback), and the tier_profile role's drift_rules defaults merged under the tier."""
import copy
import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.filter import drift_current, drift_findings, figure_deltas, netval_baseline, tier_profile_errors
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import drift
from tests.unit import fixtures
from tests.unit.plugins.module_utils import drift_samples as samples

FILTERS = {}
for _module in (drift_current, drift_findings, figure_deltas, netval_baseline):
    FILTERS.update(_module.FilterModule().filters())

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']


def test_each_filter_file_holds_the_filter_of_its_name():
    for name in ('netval_baseline', 'drift_current', 'drift_findings', 'figure_deltas'):
        assert name in FILTERS


def test_a_drift_run_through_the_filters():
    baseline = FILTERS['netval_baseline'](samples.result(), samples.facts(), samples.profile(), samples.ethtool_stats())
    facts = samples.facts()
    del facts['rdma']['devices']['mlx5_6']
    current = FILTERS['drift_current'](facts, 'node01', samples.DAY_LATER, samples.profile(), samples.ethtool_stats())
    # the baseline as it comes back from a JSON file (lookup('file') | from_json)
    findings = FILTERS['drift_findings'](json.loads(json.dumps(baseline)), current, samples.rules())
    assert [(f['check'], f['subject'], f['severity']) for f in findings] == [('nic_present', 'mlx5_6', 'red')]
    # findings are flat dicts: what json_query and selectattr read
    assert all(not isinstance(value, (dict, list)) for entry in findings for value in entry.values())
    rows = FILTERS['figure_deltas'](baseline['figures'], samples.result(), samples.rules()['figure_tolerances'])
    assert set(r['verdict'] for r in rows) == {'within'} and all(not isinstance(v, (dict, list)) for r in rows for v in r.values())
    assert FILTERS['figure_deltas'](baseline, samples.result(), samples.rules()['figure_tolerances'], as_findings=True) == []


def test_no_baseline_is_a_finding_not_an_error():
    current = FILTERS['drift_current'](samples.facts(), 'node07', samples.DAY_LATER)
    (entry,) = FILTERS['drift_findings'](None, current, samples.rules())
    assert (entry['check'], entry['kind'], entry['severity']) == ('baseline', 'baseline_missing', 'red')


CURRENT = samples.current()
BASELINE = samples.lab_baseline()
HOSTILE = [
    ('netval_baseline', ('node01', samples.facts()), "netval_baseline: node result must be a dict (the report role's nodes/<node>.json), got str"),
    ('netval_baseline', (samples.result(), 'facts'), 'netval_baseline: facts must be the preflight facts'),
    ('netval_baseline', (samples.result(), samples.facts(), 'profile'), 'netval_baseline: profile must be the resolved tier profile'),
    ('netval_baseline', (samples.result(), {'gpu': [1]}), "netval_baseline: facts.gpu must be the gpu module's result (a dict), got list"),
    ('netval_baseline', (dict(samples.result(), tests=[7]), {}), 'netval_baseline: node result tests[0] must be a dict, got int'),
    ('drift_current', (samples.facts(), None, samples.DAY_LATER), 'drift_current: node (the node name) must be non-empty text'),
    ('drift_current', (samples.facts(), 'node01', 'whenever'), 'drift_current: timestamp must be a run stamp'),
    ('drift_current', (samples.facts(), 'node01', samples.RUN, None, 'stats'), 'drift_current: ethtool_stats must be a dict'),
    ('drift_findings', ('baseline', CURRENT, samples.rules()), 'drift_findings: baseline must be a dict (a gpufleet.netval/baseline document'),
    ('drift_findings', ([BASELINE], CURRENT, samples.rules()), 'drift_findings: baseline must be a dict'),
    ('drift_findings', (dict(BASELINE, schema_version='1'), CURRENT, samples.rules()), "drift_findings: baseline.schema_version must be 1"),
    ('drift_findings', (dict(BASELINE, facts={'nics': 3}), CURRENT, samples.rules()), 'drift_findings: baseline.facts.captured must be a dict'),
    ('drift_findings', (BASELINE, None, samples.rules()), 'drift_findings: current must be a dict'),
    ('drift_findings', (BASELINE, CURRENT, None), 'drift_findings: drift_rules must be a mapping'),
    ('drift_findings', (BASELINE, CURRENT, samples.rules(), 'firmware'), 'drift_findings: maintenance must be a dict with reason and changes'),
    ('figure_deltas', ('figures', samples.result(), samples.rules()['figure_tolerances']), 'figure_deltas: baseline figures must be a list'),
    ('figure_deltas', (BASELINE, 42, samples.rules()['figure_tolerances']), 'figure_deltas: new figures must be a list'),
    ('figure_deltas', (BASELINE, samples.result(), [5]), 'figure_deltas: figure_tolerances must be a mapping'),
    ('figure_deltas', (BASELINE, dict(samples.result(), tests='x'), samples.rules()['figure_tolerances']),
     'figure_deltas: new figures: node result tests must be a list'),
]


@pytest.mark.parametrize('name, args, message', HOSTILE, ids=['%s-%d' % (entry[0], index) for index, entry in enumerate(HOSTILE)])
def test_hostile_input_is_an_ansible_filter_error_with_a_clear_message(name, args, message):
    with pytest.raises(AnsibleFilterError) as caught:
        FILTERS[name](*copy.deepcopy(args))
    assert message in str(caught.value)


@pytest.mark.parametrize('junk', [None, 0, 'x', [], [None], {'a': object()}, {'schema': 'gpufleet.netval/baseline'}, b'\xff'])
def test_no_junk_raises_anything_but_an_ansible_filter_error(junk):
    calls = [
        lambda: FILTERS['netval_baseline'](junk, junk, junk, junk),
        lambda: FILTERS['drift_current'](junk, 'node01', samples.RUN, junk, junk),
        lambda: FILTERS['drift_findings'](junk, CURRENT, samples.rules(), junk),
        lambda: FILTERS['drift_findings'](BASELINE, junk, samples.rules()),
        lambda: FILTERS['drift_findings'](BASELINE, CURRENT, junk),
        lambda: FILTERS['figure_deltas'](junk, samples.result(), samples.rules()['figure_tolerances']),
        lambda: FILTERS['figure_deltas'](BASELINE, junk, samples.rules()['figure_tolerances']),
        lambda: FILTERS['figure_deltas'](BASELINE, samples.result(), junk),
    ]
    for call in calls:
        try:
            call()
        except AnsibleFilterError:
            pass


# ----------------------------------------------------------------------------------------------- drift_rules as tier data

def test_the_shipped_drift_rules_are_valid_and_cover_every_counter_class():
    rules = samples.rules()
    assert drift.rules_errors(rules) == []
    assert set(rules['counter_limits_per_hour']) == set(drift.base.COUNTER_CLASSES)
    assert drift.tolerance_errors(rules['figure_tolerances']) == []


def test_tier_profile_errors_checks_drift_rules_when_the_profile_has_them():
    errors = tier_profile_errors.FilterModule().filters()['tier_profile_errors']
    profile = dict(copy.deepcopy(TIERS['400G']), drift_rules=samples.rules())
    assert errors(profile, '400G') == []
    profile['drift_rules']['counter_limits_per_hour']['symbol_error'] = 'ten'
    assert errors(profile, '400G') == ["tier 400G: drift_rules.counter_limits_per_hour.symbol_error must be a number >= 0 (counts per hour), got 'ten'"]


PLAYBOOK = '''
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: gpufleet.netval.tier_profile
    - ansible.builtin.copy:
        content: "{{ tier_profile_resolved | to_json }}"
        dest: "{{ out }}"
        mode: "0644"
'''


def test_the_tier_profile_role_merges_the_drift_rules_under_the_tier_and_a_contract_overrides_them(tmp_path):
    playbook = tmp_path / 'resolve.yml'
    playbook.write_text(PLAYBOOK)
    out = tmp_path / 'resolved.json'
    extra = {'netval_tier': '400G', 'out': str(out), 'ansible_python_interpreter': sys.executable,
             'netval_contract': {'drift_rules': {'counter_limits_per_hour': {'symbol_error': 50}}}}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(fixtures.ROOT, '.cache', 'collections'),
               ANSIBLE_CONFIG=os.path.join(fixtures.ROOT, 'ansible.cfg'), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                           str(playbook), '-e', json.dumps(extra)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout
    resolved = json.loads(out.read_text())
    assert resolved['tier'] == '400G' and resolved['thresholds'] == TIERS['400G']['thresholds']
    limits = resolved['drift_rules']['counter_limits_per_hour']
    assert limits['symbol_error'] == 50 and limits['link_downed'] == 0 and limits == dict(samples.rules()['counter_limits_per_hour'], symbol_error=50)
    assert resolved['drift_rules']['figure_tolerances'] == samples.rules()['figure_tolerances']
