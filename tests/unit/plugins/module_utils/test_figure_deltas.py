"""Re-validation: the lab node's baseline figures (synthetic lab outputs) against new node results with synthetic edits."""
import copy

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import drift
from tests.unit.plugins.module_utils import drift_samples as samples

BASELINE = samples.lab_baseline()
TOLERANCES = samples.rules()['figure_tolerances']


def revalidated(**values):
    """The lab node result with test ``id`` -> value (or -> [samples]) edited (synthetic), ids with ':' given as '__'."""
    node = samples.result()
    for ident, value in values.items():
        test = [t for t in node['tests'] if t['id'] == ident.replace('__', ':')][0]
        if isinstance(value, list):
            test['samples'] = value
            test['value'] = sum(value) / len(value)
        else:
            test['value'] = value
    return node


def row(rows, metric, subject, size=None):
    found = [r for r in rows if r['metric'] == metric and r['subject'] == subject and r['bytes'] == size]
    assert len(found) == 1
    return found[0]


def test_the_same_figures_are_all_within():
    rows = drift.compare_figures(BASELINE, samples.result(), TOLERANCES)
    assert len(rows) == 31 and set(r['verdict'] for r in rows) == {'within'}
    assert all(r['delta'] == 0 and r['delta_pct'] == 0 for r in rows if r['baseline'])


def test_a_regression_beyond_the_tolerance_even_though_the_new_figure_passes():
    # GPUDirect on mlx5_6: 46.5 -> 45.0 GB/s (-3.2%, tolerance 3%); 45 is still healthy (>= 45) for the tier
    new = revalidated(gdr_bw_gbs__mlx5_6=45.0)
    entry = row(drift.compare_figures(BASELINE['figures'], new, TOLERANCES), 'gdr_bw_gbs', 'mlx5_6')
    assert entry['verdict'] == 'regression' and entry['status_new'] == 'healthy'
    assert (entry['delta_pct'], entry['tolerance_pct'], entry['peer_baseline'], entry['peer_new']) == (-3.226, 3.0, 'peer01', 'peer01')
    assert 'a regression although the new figure still passes the tier' in entry['detail']


def test_within_tolerance_and_improved():
    rows = drift.compare_figures(BASELINE, revalidated(ib_send_bw_gbs__mlx5_1=46.0, ib_send_bw_gbs__mlx5_2=49.0), TOLERANCES)
    assert row(rows, 'ib_send_bw_gbs', 'mlx5_1')['verdict'] == 'within'  # -2.1%
    assert row(rows, 'ib_send_bw_gbs', 'mlx5_2')['verdict'] == 'improved'  # +4.3%


def test_lower_is_better_follows_the_threshold_direction():
    node = samples.result()
    rtt = [t for t in node['tests'] if t['metric'] == 'jumbo_ping_rtt_ms'][0]
    rtt['value'] = 0.3  # 0.052 -> 0.3 ms: +477%, beyond 100% and 0.2 ms
    rows = drift.compare_figures(BASELINE, node, TOLERANCES)
    entry = row(rows, 'jumbo_ping_rtt_ms', rtt['subject'])
    assert (entry['better'], entry['verdict']) == ('lower', 'regression')
    rtt['value'] = 0.2  # +285% but only 0.148 ms: within the absolute tolerance
    assert row(drift.compare_figures(BASELINE, node, TOLERANCES), 'jumbo_ping_rtt_ms', rtt['subject'])['verdict'] == 'within'


def test_a_baseline_of_zero_is_judged_by_the_absolute_tolerance():
    node = samples.result()
    loss = [t for t in node['tests'] if t['metric'] == 'jumbo_ping_loss_pct'][0]
    loss['value'] = 20.0
    entry = row(drift.compare_figures(BASELINE, node, TOLERANCES), 'jumbo_ping_loss_pct', loss['subject'])
    assert (entry['verdict'], entry['delta_pct'], entry['delta']) == ('regression', None, 20.0)


def test_samples_spread_wider_than_the_tolerance_are_inconclusive():
    rows = drift.compare_figures(BASELINE, revalidated(ib_send_bw_gbs__mlx5_3=[47.0, 44.0, 46.9]), TOLERANCES)
    entry = row(rows, 'ib_send_bw_gbs', 'mlx5_3')
    assert (entry['verdict'], entry['samples_new'], entry['spread_pct']) == ('inconclusive', 3, 6.526)
    assert 're-measure' in entry['detail']
    steady = row(drift.compare_figures(BASELINE, revalidated(ib_send_bw_gbs__mlx5_3=[47.0, 46.5, 46.9]), TOLERANCES),
                 'ib_send_bw_gbs', 'mlx5_3')
    assert steady['verdict'] == 'within'


def test_repeated_figures_of_one_key_are_samples():
    figures = [dict(f) for f in BASELINE['figures'] if f['metric'] == 'ib_send_bw_gbs' and f['subject'] == 'mlx5_0']
    new = [dict(figures[0], value=value, samples=[value]) for value in (40.0, 47.0, 47.0)]
    (entry,) = drift.compare_figures(figures, new, TOLERANCES)
    assert entry['samples_new'] == 3 and entry['verdict'] == 'inconclusive'


def test_per_message_size_tolerances_for_sweep_rows():
    node = samples.result()
    test = [t for t in node['tests'] if t['metric'] == 'nccl_busbw_gbs'][0]
    test['sweep'] = [{'bytes': 1073741824, 'value': 40.0}, {'bytes': 17179869184, 'value': 46.0}]
    old = drift.compare_figures(node, node, TOLERANCES)  # a node result is accepted on both sides
    assert set(r['verdict'] for r in old) == {'within'}
    new = copy.deepcopy(node)
    new_test = [t for t in new['tests'] if t['metric'] == 'nccl_busbw_gbs'][0]
    new_test['sweep'] = [{'bytes': 1073741824, 'value': 37.0}, {'bytes': 17179869184, 'value': 42.5}]  # -7.5% and -7.6%
    tolerances = copy.deepcopy(TOLERANCES)
    tolerances['metrics']['nccl_busbw_gbs'] = {'pct': 5, 'by_bytes': {1073741824: 10}}
    rows = drift.compare_figures(node, new, tolerances)
    small = row(rows, 'nccl_busbw_gbs', test['subject'], 1073741824)
    large = row(rows, 'nccl_busbw_gbs', test['subject'], 17179869184)
    assert (small['verdict'], small['tolerance_pct']) == ('within', 10.0)
    assert (large['verdict'], large['tolerance_pct']) == ('regression', 5.0)


def test_a_figure_missing_from_the_revalidation_and_a_new_one():
    node = samples.result()
    node['tests'] = [t for t in node['tests'] if t['id'] != 'ib_send_bw_gbs:mlx5_7']
    node['tests'].append(dict([t for t in node['tests'] if t['id'] == 'ib_send_bw_gbs:mlx5_6'][0], id='ib_send_bw_gbs:mlx5_8', subject='mlx5_8'))
    rows = drift.compare_figures(BASELINE, node, TOLERANCES)
    assert row(rows, 'ib_send_bw_gbs', 'mlx5_7')['verdict'] == 'missing'
    assert row(rows, 'ib_send_bw_gbs', 'mlx5_8')['verdict'] == 'new'


def test_another_peer_is_said():
    node = revalidated(ib_send_bw_gbs__mlx5_0=40.0)
    [t for t in node['tests'] if t['id'] == 'ib_send_bw_gbs:mlx5_0'][0]['peer'] = 'peer02'
    entry = row(drift.compare_figures(BASELINE, node, TOLERANCES), 'ib_send_bw_gbs', 'mlx5_0')
    assert entry['verdict'] == 'regression' and 'measured against peer02, the baseline against peer01' in entry['detail']


def test_rows_as_findings_a_regression_is_red():
    rows = drift.compare_figures(BASELINE, revalidated(gdr_bw_gbs__mlx5_6=45.0, ib_send_bw_gbs__mlx5_2=49.0), TOLERANCES)
    findings = drift.figure_findings(rows)
    assert [(f['check'], f['subject'], f['severity'], f['verdict']) for f in findings] == [
        ('gdr_bw_gbs', 'mlx5_6', 'red', 'regression'), ('ib_send_bw_gbs', 'mlx5_2', 'info', 'improved')]


@pytest.mark.parametrize('tolerances, message', [
    (None, 'figure_tolerances must be a mapping with default_pct and metrics, got null'),
    ({'metrics': {}}, 'figure_tolerances.default_pct must be a percentage >= 0, got None'),
    ({'default_pct': 5, 'metrics': {'ib_send_bw_gbs': -1}}, 'figure_tolerances.metrics.ib_send_bw_gbs must be a percentage >= 0'),
    ({'default_pct': 5, 'metrics': {'x': {'pct': 5, 'by_bytes': {'64k': 2}}}}, "by_bytes key '64k' must be a message size in bytes"),
    ({'default_pct': 5, 'metrics': {'x': {'pcent': 5}}}, 'figure_tolerances.metrics.x.pcent is not a tolerance setting'),
    ({'default_pct': 5, 'metrics': {'x': 'tight'}}, 'figure_tolerances.metrics.x must be a percentage or a mapping'),
])
def test_malformed_tolerances_name_the_key(tolerances, message):
    with pytest.raises(drift.DriftError) as caught:
        drift.compare_figures(BASELINE, samples.result(), tolerances)
    assert message in str(caught.value)


@pytest.mark.parametrize('figures, message', [
    ('figures', 'baseline figures must be a list of figures, a baseline document or a node result'),
    ([3], 'baseline figures[0] must be a dict (a figure with metric, subject and value), got int'),
    ([{'value': 3}], 'baseline figures[0].metric must be text, got None'),
    (dict(BASELINE, schema_version=7), 'baseline figures.schema_version must be 1'),
])
def test_malformed_figures_are_a_clear_error(figures, message):
    with pytest.raises(drift.DriftError) as caught:
        drift.compare_figures(figures, samples.result(), TOLERANCES)
    assert message in str(caught.value)
