"""The test catalogue against the shipped tier profiles and the readers and labels that use it."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, measurements
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report
from tests.unit import fixtures

with open(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'), encoding='utf-8') as handle:
    TIERS = yaml.safe_load(handle)['tier_profile_tiers']


@pytest.mark.parametrize('tier', sorted(TIERS))
def test_every_shipped_tier_fits_the_catalogue(tier):
    assert catalogue.profile_errors(TIERS[tier], tier) == []


@pytest.mark.parametrize('tier', sorted(TIERS))
def test_every_metric_of_every_enabled_test_has_a_threshold_and_a_label(tier):
    profile = TIERS[tier]
    for entry in catalogue.enabled_tests(profile):
        for name in entry['metrics']:
            spec = catalogue.metric(name)
            assert spec['label'] and spec['label'] != name, name
            if spec['graded_by'] == 'threshold' and name not in catalogue.ungraded_metrics(profile, entry['name']):
                assert name in profile['thresholds'], '%s enables %s without a threshold for %s' % (tier, entry['name'], name)


def test_a_missing_threshold_an_unknown_test_and_a_wrong_unit_are_each_named():
    profile = dict(TIERS['400G'])
    profile['thresholds'] = dict(profile['thresholds'])
    del profile['thresholds']['gdr_bw_gbs']
    profile['thresholds']['ib_send_bw_gbs'] = dict(profile['thresholds']['ib_send_bw_gbs'], unit='Gb/s')
    profile['tests'] = dict(profile['tests'], ib_sned_bw={'enabled': True})
    errors = catalogue.profile_errors(profile, '400G')
    assert any('gdr_bw_gbs' in e and 'no threshold' in e for e in errors)
    assert any('ib_sned_bw' in e and 'not a known tier test' in e for e in errors)
    assert any('ib_send_bw_gbs is in Gb/s' in e for e in errors)
    assert len(errors) == 3


def test_ungraded_must_name_a_metric_of_its_test():
    profile = dict(TIERS['400G'], tests=dict(TIERS['400G']['tests'], nccl=dict(TIERS['400G']['tests']['nccl'], ungraded=['gdr_bw_gbs'])))
    assert any('ungraded names gdr_bw_gbs' in e for e in catalogue.profile_errors(profile, '400G'))


def test_every_metric_has_a_reader_that_exists_and_belongs_to_exactly_one_test():
    readers = {'perftest_bw', 'perftest_lat', 'iperf3', 'ping_loss', 'ping_rtt', 'aggregate_bw', 'pause_rate', 'ib_counters', 'nccl', 'dcgmi'}
    owners = [m for t in catalogue.TESTS for m in t['metrics']]
    assert sorted(owners) == sorted(catalogue.METRICS)
    for name, spec in catalogue.METRICS.items():
        assert spec['reads'] in readers, name
        assert callable(getattr(measurements, spec['reads'].replace('ping_loss', 'ping').replace('ping_rtt', 'ping').replace(
            'pause_rate', 'pause_rates').replace('ib_counters', 'ib_counter_figures'))), name
        if spec['reads'] == 'perftest_bw':
            assert spec['field'] in ('bw_avg_gbytes_s', 'bw_avg_gbps'), name


def test_report_labels_come_from_the_catalogue():
    assert report._label({'metric': 'gdr_bw_gbs'}) == catalogue.label('gdr_bw_gbs')
    assert report._label({'metric': 'something_new'}) == 'something_new'


def test_unknown_names_are_refused_with_the_known_ones_listed():
    with pytest.raises(catalogue.CatalogueError, match='ib_send_bw'):
        catalogue.test('ib_snd_bw')
    with pytest.raises(catalogue.CatalogueError, match='unknown metric'):
        catalogue.metric('bogus')


@pytest.mark.parametrize('tier', sorted(TIERS))
def test_every_shipped_threshold_says_where_its_lines_come_from(tier):
    for name, threshold in TIERS[tier]['thresholds'].items():
        source = threshold.get('source') or ''
        assert source.startswith(('runbook', 'two-box RoCE pair check', 'project: ')), (tier, name, source)
        if source.startswith('project: '):
            assert len(source) > len('project: ') + 20, (tier, name, 'a project choice needs its reason')


def test_the_100g_gdr_reject_line_is_the_runbooks_per_hca_line():
    assert TIERS['100G']['thresholds']['gdr_bw_gbs']['reject_below'] == TIERS['100G']['thresholds']['ib_send_bw_gbs']['reject_below'] == 11


def test_a_figure_is_written_without_noise():
    assert [catalogue.figure_text(v) for v in (None, 46, 46.0, 45.5, 0.1234, 2.0004)] == ['-', '46', '46', '45.5', '0.123', '2']


def test_a_figures_better_direction_is_read_from_its_threshold_or_left_to_the_caller():
    assert catalogue.threshold_direction({'reject_below': 40, 'healthy_min': 45}) == 'higher'
    assert catalogue.threshold_direction({'reject_above': 5.0}) == 'lower'
    # A threshold without a reject side (or none at all) says nothing: baseline and fleet apply their own rule.
    assert [catalogue.threshold_direction(t) for t in ({'healthy_min': 45}, None, 'reject_below')] == [None, None, None]
