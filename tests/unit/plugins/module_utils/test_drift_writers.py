"""The drift writers (report JSON, per-node Markdown, JUnit XML, node_exporter textfile) and the atomic file replace."""
import copy
import json
import os
import xml.etree.ElementTree as ET

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import drift
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import drift_writers
from tests.unit.plugins.module_utils import drift_samples as samples

BASELINE = samples.lab_baseline()


def _faulty(facts):
    """Synthetic edits: rail 2 at 200 Gb/s, iommu=pt gone from the cmdline, mlx5_1 SRIOV_EN on."""
    facts['rdma']['devices']['mlx5_2']['ports']['1']['rate_gbps'] = 200
    facts['host']['cmdline']['tokens'].remove('iommu=pt')
    facts['firmware']['devices']['0000:3b:00.0']['config']['parameters']['SRIOV_EN'] = 'True(1)'
    facts['firmware']['devices']['0000:1a:00.0']['firmware']['fw_version'] = '28.40.1000'


def nodes():
    maintenance = {'reason': 'NIC firmware update', 'changes': [{'check': 'firmware', 'subject': 'mlx5_0', 'to': '28.40.1000'}]}
    faulty = drift.compare(copy.deepcopy(BASELINE), samples.current(_faulty), samples.rules(), maintenance)
    clean = drift.compare(copy.deepcopy(BASELINE), samples.current(), samples.rules())
    return {
        'node01': {'findings': faulty, 'bucket': 'A', 'timestamp': samples.DAY_LATER, 'baseline_timestamp': samples.RUN},
        'node02': {'findings': clean, 'bucket': 'A', 'timestamp': samples.DAY_LATER},
        'node03': {'findings': [drift.baseline_missing('node03')], 'bucket': None, 'timestamp': samples.DAY_LATER},
    }


def test_report_json_has_every_node_with_counts_and_status():
    data = json.loads(drift_writers.report_json(nodes(), samples.DAY_LATER))
    assert (data['schema'], data['schema_version'], data['generated']) == ('gpufleet.netval/drift-report', 1, samples.DAY_LATER)
    assert sorted(data['nodes']) == ['node01', 'node02', 'node03']
    node01 = data['nodes']['node01']
    assert node01['counts'] == {'red': 2, 'expected': 1, 'info': 1} and node01['status'] == 'red'
    assert node01['baseline_timestamp'] == samples.RUN and node01['bucket'] == 'A'
    assert [f['check'] for f in node01['findings']] == ['cmdline', 'port_rate', 'firmware', 'mlxconfig']
    assert data['nodes']['node02'] == {'findings': [], 'counts': {'red': 0, 'expected': 0, 'info': 0}, 'status': 'clean',
                                       'bucket': 'A', 'timestamp': samples.DAY_LATER}
    assert data['summary'] == {'nodes': 3, 'red': 3, 'expected': 1, 'info': 1, 'red_nodes': ['node01', 'node03']}


def test_a_bare_list_of_findings_is_a_node_entry():
    data = json.loads(drift_writers.report_json({'node09': [drift.baseline_missing('node09')]}))
    assert data['nodes']['node09']['status'] == 'red' and data['generated'] is None


@pytest.mark.parametrize('bad, message', [
    (['node01'], 'nodes must be a dict of node name to {findings: [...]}'),
    ({'node01': 'red'}, 'nodes.node01 must be a dict with findings (or a list of findings), got str'),
    ({'node01': {'findings': {}}}, 'nodes.node01.findings must be a list of findings, got dict'),
    ({'node01': [{'check': 'x'}]}, 'nodes.node01.findings[0] lacks subject, severity, kind, baseline, current, detail'),
    ({'node01': [dict(drift.baseline_missing('n'), severity='fatal')]}, "nodes.node01.findings[0].severity must be red, expected or info, got 'fatal'"),
    ({'node01': {'findings': [], 'bucket': 'D'}}, "nodes.node01.bucket must be A, B, C or null, got 'D'"),
    ({'node01': {'findings': [], 'figure_deltas': 'x'}}, 'nodes.node01.figure_deltas must be a list of rows'),
])
def test_malformed_nodes_name_the_field(bad, message):
    for writer in (drift_writers.report_json, drift_writers.junit_xml, lambda n: drift_writers.textfile(n, 'drift', samples.RUN)):
        with pytest.raises(drift.DriftError) as caught:
            writer(bad)
        assert message in str(caught.value)


def test_markdown_per_node_groups_findings_and_escapes_table_cells():
    entry = nodes()['node01']
    entry['findings'][0]['detail'] = 'a | pipe\nand a line break'
    text = drift_writers.node_markdown('node01', entry)
    assert text.startswith('# node01: drift red\n\n- findings: 2 red, 1 expected, 1 info\n- baseline: 20261201T100556Z\n')
    assert '## Red' in text and '## Expected (maintenance)' in text and '## Info' in text
    assert 'a \\| pipe\\\\x0aand a line break' in text  # the line break written out, visible and harmless
    table = [line for line in text.splitlines() if line.startswith('| cmdline')][0]
    assert table.count(' | ') == 5
    assert 'Nothing differs from the baseline.' in drift_writers.node_markdown('node02', nodes()['node02'])


def test_markdown_has_the_figure_delta_table():
    node = samples.result()
    [t for t in node['tests'] if t['id'] == 'gdr_bw_gbs:mlx5_6'][0]['value'] = 45.0
    rows = drift.compare_figures(BASELINE, node, samples.rules()['figure_tolerances'])
    text = drift_writers.node_markdown('node01', {'findings': drift.figure_findings(rows), 'figure_deltas': rows}, 'revalidation')
    assert text.startswith('# node01: revalidation red\n') and '## Figures against the baseline' in text
    assert '| gdr_bw_gbs | mlx5_6 | 65536 | 46.500004 | 45.0 | GB/s | -3.226 | 3.0 |  | regression |' in text


def test_junit_one_testcase_per_node_and_check_red_fails():
    root = ET.fromstring(drift_writers.junit_xml(nodes()))
    suites = dict((s.get('name'), s) for s in root.findall('testsuite'))
    assert sorted(suites) == ['node01', 'node02', 'node03']
    node01 = suites['node01']
    cases = dict((c.get('name'), c) for c in node01.findall('testcase'))
    compared = set(drift.CHECKS) - {'baseline', 'maintenance'}
    assert set(cases) == compared and int(node01.get('tests')) == len(compared)
    failed = sorted(name for name, case in cases.items() if case.find('failure') is not None)
    assert failed == ['cmdline', 'port_rate'] and node01.get('failures') == '2'
    assert cases['cmdline'].find('failure').get('message').startswith('iommu=pt: the kernel cmdline lost iommu=pt')
    assert cases['firmware'].find('failure') is None and 'expected mlx5_0' in cases['firmware'].find('system-out').text
    assert all(c.get('classname') == 'netval.drift.node01' for c in cases.values())
    assert suites['node02'].get('failures') == '0'
    (missing,) = suites['node03'].findall('testcase')
    assert missing.get('name') == 'baseline' and missing.find('failure').get('type') == 'red'
    assert (root.get('tests'), root.get('failures')) == (str(2 * len(compared) + 1), '3')


def test_junit_is_well_formed_for_any_text():
    entry = drift.baseline_missing('node\x01<&>"')
    entry['detail'] = 'bad \x00\x1b chars ]]> <b>'
    root = ET.fromstring(drift_writers.junit_xml({'node\x01<&>"': [entry]}))
    assert root.find('testsuite').get('name') == 'node\\x01<&>"'
    assert 'bad \\x00\\x1b chars ]]> <b>' in root.find('testsuite/testcase/failure').text


def families(text):
    return dict((family.name, family) for family in text_string_to_metric_families(text))


def test_textfile_parses_with_prometheus_client():
    text = drift_writers.textfile(nodes(), 'drift')
    assert text.count('# HELP ') == 4 and text.count('# TYPE ') == 4 and text.endswith('\n')
    parsed = families(text)
    assert sorted(parsed) == ['netval_drift_findings', 'netval_drift_hosts', 'netval_last_run_timestamp_seconds', 'netval_node_bucket']
    assert [(s.labels, s.value) for s in parsed['netval_drift_hosts'].samples] == [({}, 3.0)]
    assert all(family.type == 'gauge' for family in parsed.values())
    findings = dict(((s.labels['node'], s.labels['check'], s.labels['severity']), s.value) for s in parsed['netval_drift_findings'].samples)
    assert findings[('node01', 'port_rate', 'red')] == 1 and findings[('node01', 'port_rate', 'info')] == 0
    assert findings[('node01', 'firmware', 'expected')] == 1 and findings[('node01', 'mlxconfig', 'info')] == 1
    assert findings[('node03', 'baseline', 'red')] == 1
    assert not [key for key in findings if key[0] == 'node02']  # a clean node has no finding series
    assert len(findings) == 3 * 5
    buckets = dict(((s.labels['node'], s.labels['bucket']), s.value) for s in parsed['netval_node_bucket'].samples)
    assert buckets == {('node01', 'A'): 1, ('node01', 'B'): 0, ('node01', 'C'): 0, ('node02', 'A'): 1, ('node02', 'B'): 0, ('node02', 'C'): 0}
    stamps = dict(((s.labels['node'], s.labels['playbook']), s.value) for s in parsed['netval_last_run_timestamp_seconds'].samples)
    assert stamps == dict(((name, 'drift'), 1796205956.0) for name in ('node01', 'node02', 'node03'))


def test_a_run_that_watched_nothing_says_so():
    text = drift_writers.textfile({}, 'drift', 1796205956)
    assert 'netval_drift_hosts 0\n' in text
    assert [(s.labels, s.value) for s in families(text)['netval_drift_hosts'].samples] == [({}, 0.0)]


def test_textfile_label_values_are_escaped():
    name = 'rack "7"\\node\n01'
    entry = dict(drift.baseline_missing(name), check='odd "check"\\')
    text = drift_writers.textfile({name: {'findings': [entry], 'bucket': 'C'}}, 'revalidate "x"', 1796205956)
    assert '{node="rack \\"7\\"\\\\node\\n01",check="odd \\"check\\"\\\\",severity="red"} 1' in text
    parsed = families(text)
    (red,) = [s for s in parsed['netval_drift_findings'].samples if s.labels['severity'] == 'red']
    assert red.labels == {'node': name, 'check': 'odd "check"\\', 'severity': 'red'} and red.value == 1
    (stamp,) = parsed['netval_last_run_timestamp_seconds'].samples
    assert stamp.labels == {'node': name, 'playbook': 'revalidate "x"'} and stamp.value == 1796205956


def test_textfile_needs_a_run_time():
    with pytest.raises(drift.DriftError, match='nodes.node01: no run time'):
        drift_writers.textfile({'node01': []})
    assert 'node01' in drift_writers.textfile({'node01': []}, 'drift', samples.RUN)
    with pytest.raises(drift.DriftError, match='playbook must be non-empty text'):
        drift_writers.textfile({'node01': []}, '', samples.RUN)


def test_replace_file_is_atomic_and_refuses_what_is_not_a_regular_file(tmp_path):
    target = str(tmp_path / 'netval.prom')
    evidence.replace_file(target, 'one\n')
    evidence.replace_file(target, b'two\n', mode=0o640)
    with open(target) as handle:
        assert handle.read() == 'two\n'
    assert oct(os.stat(target).st_mode & 0o777) == '0o640'
    assert os.listdir(str(tmp_path)) == ['netval.prom']  # no temporary file left behind
    os.symlink(target, str(tmp_path / 'link.prom'))
    with pytest.raises(evidence.EvidenceError, match='is not a regular file \\(a symlink\\)'):
        evidence.replace_file(str(tmp_path / 'link.prom'), 'x')
    os.mkdir(str(tmp_path / 'dir.prom'))
    with pytest.raises(evidence.EvidenceError, match='is not a regular file \\(a directory\\)'):
        evidence.replace_file(str(tmp_path / 'dir.prom'), 'x')
    with pytest.raises(evidence.EvidenceError, match='is not a directory'):
        evidence.replace_file(str(tmp_path / 'missing' / 'netval.prom'), 'x')
    with open(target) as handle:
        assert handle.read() == 'two\n'


def test_a_node_whose_drift_run_broke_or_never_arrived_is_red_in_every_report():
    nodes = drift_writers.check_nodes({
        'node01': None,
        'node02': {'run_incomplete': {'where': 'Read the current state', 'why': {'msg': 'node02 cannot be reached: timed out'}},
                   'timestamp': '20261205T100000Z'},
    })
    assert [f['check'] for f in nodes['node01']['findings']] == ['run_incomplete']
    assert nodes['node02']['findings'][0]['severity'] == 'red'
    assert 'Read the current state (node02 cannot be reached: timed out)' in nodes['node02']['findings'][0]['detail']
    report = json.loads(drift_writers.report_json(nodes, '20261205T100000Z'))
    assert report['summary']['red_nodes'] == ['node01', 'node02']
    junit = drift_writers.junit_xml(nodes)
    assert junit.count('<testcase') == 2 and junit.count('<failure') == 2
    text = drift_writers.textfile(nodes, 'drift', '20261205T100000Z')
    assert 'netval_drift_findings{node="node01",check="run_incomplete",severity="red"} 1' in text
    assert 'node02' in drift_writers.node_markdown('node02', nodes['node02'])
