"""drift_report writes a drift run's reports atomically, never over an earlier run, and says which nodes are red."""
import json
import os
import xml.etree.ElementTree as ET

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.netval.plugins.modules import drift_report
from tests.unit.plugins.modules.utils import run_module

# synthetic findings, in the shape drift_findings returns
RED = {'check': 'cmdline', 'subject': 'iommu=pt', 'severity': 'red', 'kind': 'spec_mismatch', 'baseline': 'present',
       'current': 'missing', 'detail': 'cmdline token iommu=pt is gone', 'maintenance': None}
INFO = {'check': 'firmware', 'subject': 'mlx5_0', 'severity': 'info', 'kind': 'spec_mismatch', 'baseline': '28.39.2048',
        'current': '28.40.1000', 'detail': 'mlx5_0 firmware 28.39.2048 -> 28.40.1000', 'maintenance': None}


def nodes():
    return {'node01': {'findings': [INFO], 'timestamp': '20261201T030000Z', 'baseline_timestamp': '20261130T010000Z'},
            'node02': {'findings': [RED], 'timestamp': '20261201T030000Z', 'baseline_timestamp': '20261130T010000Z'}}


def test_writes_drift_json_junit_markdown_and_textfile_and_names_the_red_nodes(tmp_path):
    root, textfiles = tmp_path / 'reports', tmp_path / 'textfile'
    textfiles.mkdir()
    args = {'root': str(root), 'timestamp': '20261201T030000Z', 'nodes': nodes(), 'textfile_dir': str(textfiles)}
    result, failed = run_module(drift_report.main, args)
    assert not failed, result
    assert result['red_nodes'] == ['node02'] and result['summary_lines'] == ['node01: 0 red, 0 expected, 1 info',
                                                                             'node02: 1 red, 0 expected, 0 info']
    report = json.loads((root / 'latest' / 'drift.json').read_text())
    assert report['nodes']['node02']['findings'][0]['check'] == 'cmdline'
    assert ET.parse(str(root / 'latest' / 'junit.xml')).getroot().get('failures') == '1'
    assert 'iommu=pt' in (root / 'latest' / 'nodes' / 'node02.md').read_text()
    families = dict((f.name, f) for f in text_string_to_metric_families((textfiles / 'netval_drift.prom').read_text()))
    red = [s for s in families['netval_drift_findings'].samples if s.labels.get('severity') == 'red' and s.value > 0]
    assert [(s.labels['node'], s.labels['check']) for s in red] == [('node02', 'cmdline')]
    again, failed = run_module(drift_report.main, args)
    assert failed and 'never overwritten' in again['msg']


def test_revalidation_kind_writes_inside_the_runs_folder_and_leaves_latest_alone(tmp_path):
    root = tmp_path / 'reports'
    (root / '20261201T030000Z').mkdir(parents=True)
    os.symlink('20261201T030000Z', str(root / 'latest'))
    result, failed = run_module(drift_report.main, {'root': str(root), 'timestamp': '20261201T030000Z', 'nodes': nodes(),
                                                    'kind': 'revalidation'})
    assert not failed, result
    assert result['run_dir'] == str(root / '20261201T030000Z' / 'revalidation')
    assert (root / 'latest' / 'revalidation' / 'revalidation.json').exists()
    assert os.readlink(str(root / 'latest')) == '20261201T030000Z'


def test_bad_input_is_refused_by_name_before_anything_is_written(tmp_path):
    root = tmp_path / 'reports'
    result, failed = run_module(drift_report.main, {'root': str(root), 'timestamp': 'yesterday', 'nodes': nodes()})
    assert failed and "timestamp 'yesterday' must look like" in result['msg'] and not root.exists()
    broken = {'node01': {'findings': [dict(RED, severity='purple')], 'timestamp': '20261201T030000Z'}}
    result, failed = run_module(drift_report.main, {'root': str(root), 'timestamp': '20261201T030000Z', 'nodes': broken})
    assert failed and 'purple' in result['msg'] and result['error_class'] == 'invalid_options' and not root.exists()
