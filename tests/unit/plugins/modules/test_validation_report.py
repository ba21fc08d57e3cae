"""validation_report writes the run's reports atomically and points latest at them."""
import json
import os
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.netval.plugins.modules import validation_report
from tests.unit.plugins.modules.utils import run_module


def nodes():
    return {
        'node01': {'bucket': 'A', 'peer': 'peer01', 'tier': '400G', 'tests': [], 'findings': [], 'causes': []},
        'node02': {'bucket': 'C', 'peer': 'peer01', 'tier': '400G', 'tests': [], 'findings': [
            {'check': 'gpu_count', 'subject': 'gpus', 'status': 'reject', 'detail': '7 of 8 GPUs visible to nvidia-smi'}],
            'causes': [{'cause': 'gpu_hardware', 'detail': 'GPU hardware: 7 of 8 GPUs visible', 'subjects': ['gpus']}]},
    }


def test_writes_summary_letters_junit_and_latest(tmp_path):
    root = tmp_path / 'reports'
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': '20261130T010000Z', 'nodes': nodes()})
    assert not failed, result
    run_dir = root / '20261130T010000Z'
    summary = json.loads((root / 'latest' / 'summary.json').read_text())
    assert summary['nodes']['node01'] == {'bucket': 'A', 'causes': [], 'peer': 'peer01', 'tier': '400G', 'evidence': None}
    assert summary['nodes']['node02']['causes'] == ['GPU hardware: 7 of 8 GPUs visible']
    assert os.readlink(str(root / 'latest')) == '20261130T010000Z'
    assert (run_dir / 'letters' / 'node02.txt').read_text().startswith('Hi,')
    assert not (run_dir / 'letters' / 'node01.txt').exists()
    assert ET.parse(str(run_dir / 'junit.xml')).getroot().get('failures') == '1'
    assert result['letters'] == [str(run_dir / 'letters' / 'node02.txt')]
    again, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': '20261130T010000Z', 'nodes': nodes()})
    assert failed and 'never overwritten' in again['msg']
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': '20261130T020000Z', 'nodes': nodes()})
    assert not failed and os.readlink(str(root / 'latest')) == '20261130T020000Z'
    assert (run_dir / 'summary.json').exists()


def test_bad_bucket_is_refused(tmp_path):
    bad = {'node01': {'bucket': 'maybe'}}
    result, failed = run_module(validation_report.main, {'root': str(tmp_path), 'timestamp': '20261130T010000Z', 'nodes': bad})
    assert failed and 'bucket must be A, B or C' in result['msg']


def test_check_mode_writes_nothing(tmp_path):
    args = {'root': str(tmp_path / 'r'), 'timestamp': '20261130T010000Z', 'nodes': nodes()}
    result, failed = run_module(validation_report.main, args, check_mode=True)
    assert not failed and not (tmp_path / 'r').exists()
    assert 'node02' in result['summary_table']
