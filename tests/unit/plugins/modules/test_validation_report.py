"""validation_report writes the run's reports atomically and points latest at them."""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from unittest import mock

from ansible_collections.gpufleet.netval.plugins.action import validation_report as validation_report_action
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import html_report
from ansible_collections.gpufleet.netval.plugins.modules import validation_report
from tests.unit.plugins.module_utils import report_samples
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


def incomplete(run_dir, name):
    """The node's result as written, checked to be its run_incomplete verdict (bucket B, only that finding)."""
    node = json.loads((run_dir / 'nodes' / ('%s.json' % name)).read_text())
    assert node['bucket'] == 'B' and node['tests'] == [] and node['causes'][0]['cause'] == 'run_incomplete', node
    assert [f['check'] for f in node['findings']] == ['run_incomplete'] and node['run_incomplete']['where'] == 'report'
    return node


def test_a_bad_bucket_is_that_nodes_run_incomplete_and_the_others_are_written(tmp_path):
    bad = dict(nodes(), node03={'bucket': 'maybe'})
    result, failed = run_module(validation_report.main, {'root': str(tmp_path), 'timestamp': '20261130T010000Z', 'nodes': bad})
    assert not failed, result
    run_dir = tmp_path / '20261130T010000Z'
    assert 'nodes.node03.bucket must be A, B or C' in incomplete(run_dir, 'node03')['run_incomplete']['why']
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert dict((name, entry['bucket']) for name, entry in summary['nodes'].items()) == {'node01': 'A', 'node02': 'C', 'node03': 'B'}


def test_check_mode_writes_nothing(tmp_path):
    args = {'root': str(tmp_path / 'r'), 'timestamp': '20261130T010000Z', 'nodes': nodes()}
    result, failed = run_module(validation_report.main, args, check_mode=True)
    assert not failed and not (tmp_path / 'r').exists()
    assert 'node02' in result['summary_table']


def test_writes_the_page_and_the_markdown_with_the_other_reports(tmp_path):
    root = tmp_path / 'reports'
    run = report_samples.mixed_run()
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': '20261201T100000Z', 'nodes': run})
    assert not failed, result
    run_dir = root / '20261201T100000Z'
    assert result['page'] == str(run_dir / 'index.html') and result['markdown'] == str(run_dir / 'summary.md')
    page = (root / 'latest' / 'index.html').read_text()
    assert page.startswith('<!DOCTYPE html>') and page.count('<section class="node ') == 4
    assert 'href="letters/node02.txt"' in page
    # Evidence links are relative to the run folder, so they work from file:// and from latest/ alike.
    evidence = os.path.relpath(run['node02']['evidence'], str(run_dir))
    assert 'href="%s/"' % evidence in page
    assert (run_dir / 'summary.md').read_text().startswith('# Network validation run 20261201T100000Z')
    manifest = (run_dir / 'MANIFEST.sha256').read_text()
    assert '  index.html\n' in manifest and '  summary.md\n' in manifest


def test_a_malformed_chart_input_is_that_nodes_run_incomplete(tmp_path):
    run = report_samples.mixed_run()
    run['node01']['history'] = [{'timestamp': '20261015T080000Z', 'figures': {'ib_send_bw_gbs:mlx5_0': 'fast'}}]
    result, failed = run_module(validation_report.main, {'root': str(tmp_path / 'r'), 'timestamp': '20261201T100000Z', 'nodes': run})
    assert not failed, result
    run_dir = tmp_path / 'r' / '20261201T100000Z'
    why = incomplete(run_dir, 'node01')['run_incomplete']['why']
    assert "nodes.node01.history[0].figures['ib_send_bw_gbs:mlx5_0'] must be a number or null" in why
    page = (run_dir / 'index.html').read_text()
    assert page.count('<section class="node ') == 4 and 'data-chart="rdma_bw"' in page  # the other nodes keep their charts


def test_without_matplotlib_every_report_is_written_and_the_page_says_why_it_has_no_charts(tmp_path, monkeypatch):
    monkeypatch.setattr(html_report, 'HAS_MATPLOTLIB', False)
    monkeypatch.setattr(html_report, 'MATPLOTLIB_IMPORT_ERROR', "ModuleNotFoundError: No module named 'matplotlib'")
    result, failed = run_module(validation_report.main, {'root': str(tmp_path / 'r'), 'timestamp': '20261201T100000Z',
                                                         'nodes': report_samples.mixed_run()})
    assert not failed and result['changed'], result
    page = (tmp_path / 'r' / 'latest' / 'index.html').read_text()
    assert 'id="charts-missing"' in page and 'pip install matplotlib' in page and "No module named" in page
    assert '<svg' not in page and page.count('<section class="node ') == 4


# validation_report on a controller without matplotlib: the import fails as it does where the library is not installed.
WITHOUT_MATPLOTLIB = """
import json, sys
sys.modules['matplotlib'] = None
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report_task
from tests.unit.plugins.module_utils import report_samples
params = dict(root=sys.argv[1], timestamp='20261201T100000Z', nodes=report_samples.mixed_run(), sender={}, prediction={},
              hosts=[], textfile_dir=None, evidence_dir=None, fleet_rules={}, link_baselines=False)
print(json.dumps(report_task.write(params, False)))
"""


def test_without_matplotlib_every_output_but_the_page_is_the_same_byte_for_byte(tmp_path):
    # Issue 27 item 6: optional libraries never cost results.
    import subprocess
    from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report_task
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.run([sys.executable, '-c', WITHOUT_MATPLOTLIB, str(tmp_path / 'without')], capture_output=True, text=True,
                           env=env, check=False, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    without = json.loads(child.stdout.splitlines()[-1])
    params = dict(root=str(tmp_path / 'with'), timestamp='20261201T100000Z', nodes=report_samples.mixed_run(), sender={}, prediction={},
                  hosts=[], textfile_dir=None, evidence_dir=None, fleet_rules={}, link_baselines=False)
    with_it = report_task.write(params, False)
    assert without['changed'] and with_it['changed'] and without['summary_table'] == with_it['summary_table']
    run = '20261201T100000Z'
    names = sorted(os.path.relpath(os.path.join(base, name), str(tmp_path / 'with' / run))
                   for base, _dirs, files in os.walk(str(tmp_path / 'with' / run)) for name in files)
    assert len(names) == 16 and 'letters/node02.txt' in names and 'netval.prom' in names
    for name in names:
        mine, theirs = (tmp_path / 'with' / run / name).read_bytes(), (tmp_path / 'without' / run / name).read_bytes()
        if name == 'MANIFEST.sha256':
            mine, theirs = (re.sub(rb'[0-9a-f]{64}  index.html\n', b'', text) for text in (mine, theirs))
        if name != 'index.html':
            assert mine == theirs, name
    page = (tmp_path / 'without' / run / 'index.html').read_text()
    assert '<svg' not in page and 'id="charts-missing"' in page and 'pip install matplotlib' in page
    assert "No module named 'matplotlib'" in page or 'import of matplotlib halted' in page
    assert page.count('<section class="node ') == 4 and page.count('Charts not drawn: see the note at the top of the page.') == 3


def run_action(task_args, check_mode=False):
    task = mock.MagicMock(async_val=0, check_mode=check_mode, args=dict(task_args))
    action = validation_report_action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=mock.MagicMock(), templar=None,
                                                   shared_loader_obj=None)
    return action.run(task_vars={})


def test_the_action_writes_in_the_worker_what_the_module_writes(tmp_path):
    by_action = run_action({'root': str(tmp_path / 'a'), 'timestamp': '20261130T010000Z', 'nodes': nodes()})
    by_module, failed = run_module(validation_report.main, {'root': str(tmp_path / 'm'), 'timestamp': '20261130T010000Z', 'nodes': nodes()})
    assert not failed and by_action['changed'] and not by_action.get('failed'), by_action
    assert by_action['summary_table'] == by_module['summary_table']
    assert by_action['letters'] == [str(tmp_path / 'a' / '20261130T010000Z' / 'letters' / 'node02.txt')]
    for name in ('summary.json', 'summary.txt', 'junit.xml', 'nodes/node02.json', 'letters/node02.txt', 'MANIFEST.sha256'):
        assert (tmp_path / 'a' / 'latest' / name).read_text() == (tmp_path / 'm' / 'latest' / name).read_text(), name


def test_the_action_refuses_bad_options_and_bad_nodes_in_the_one_shape_and_writes_nothing(tmp_path):
    result = run_action({'root': str(tmp_path / 'r'), 'timestamp': '20261130T010000Z', 'nodes': nodes(), 'colour': 'blue'})
    assert result['failed'] and result['error_class'] == 'invalid_options' and 'colour' in result['msg']
    result = run_action({'root': str(tmp_path / 'r'), 'timestamp': 'yesterday', 'nodes': {'../node01': {'bucket': 'A'}}})
    assert result['failed'] and result['error_class'] == 'invalid_options'
    assert 'timestamp' in result['msg'] and "nodes key '../node01'" in result['msg']
    result = run_action({'root': str(tmp_path / 'r'), 'timestamp': '20261130T010000Z', 'nodes': nodes()}, check_mode=True)
    assert not result.get('failed') and not result['changed'] and result['run_dir'] == str(tmp_path / 'r' / '20261130T010000Z')
    assert not (tmp_path / 'r').exists()


def test_loading_the_action_does_not_load_matplotlib():
    # The strategy loads an action plugin's class in the controller's main process: matplotlib there would be copied into
    # every forked worker. The report imports it when it draws.
    import subprocess
    code = ('import sys; from ansible_collections.gpufleet.netval.plugins.action import validation_report; '
            'print("matplotlib" in sys.modules)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    assert out.stdout.strip() == 'False'


def test_every_host_of_the_run_is_in_every_report_even_one_whose_result_never_arrived(tmp_path):
    root, textfiles = tmp_path / 'reports', tmp_path / 'textfiles'
    textfiles.mkdir()
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': '20261130T010000Z', 'nodes': nodes(),
                                                         'hosts': ['node01', 'node02', 'node03'], 'textfile_dir': str(textfiles)})
    assert not failed, result
    run_dir = root / '20261130T010000Z'
    assert (run_dir / 'summary.txt').read_text().splitlines()[0] == \
        '3 of 3 nodes reported: 1 A (accept), 1 B (investigate), 1 C (return to provider)'
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert summary['nodes']['node03']['bucket'] == 'B' and 'never reached the report' in summary['nodes']['node03']['causes'][0]
    suites = [s.get('name') for s in ET.parse(str(run_dir / 'junit.xml')).getroot().iter('testsuite')]
    cases = [c.get('classname') for c in ET.parse(str(run_dir / 'junit.xml')).getroot().iter('testcase')]
    assert 'node03' in ' '.join(suites + cases)
    assert 'node03' in (run_dir / 'index.html').read_text() and 'node03' in (run_dir / 'summary.md').read_text()
    assert json.loads((run_dir / 'nodes' / 'node03.json').read_text())['causes'][0]['cause'] == 'run_incomplete'
    prom = (textfiles / 'netval_validate.prom').read_text()
    assert prom == (run_dir / 'netval.prom').read_text() and 'netval_validation_run_incomplete{node="node03"} 1' in prom
    assert result['textfile'] == str(textfiles / 'netval_validate.prom')


def test_the_run_compares_every_node_with_its_siblings_and_links_only_the_accepted_nodes_baselines(tmp_path):
    import yaml
    with open(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'tier_profile', 'defaults', 'main.yml'),
              encoding='utf-8') as handle:
        rules = yaml.safe_load(handle)['tier_profile_fleet_rules']
    stamp = '20261201T100000Z'
    run = dict(('node%02d' % i, dict(report_samples.healthy_node('node%02d' % i), sku='H100 / MT4129')) for i in range(1, 8))
    # Synthetic edit: node07's per-HCA figures 6.4 % below its six siblings' 47 GB/s, above a contract line at 40.
    for test in run['node07']['tests']:
        if test['metric'] == 'ib_send_bw_gbs':
            test['value'] = 44.0
    evidence = tmp_path / 'evidence'
    for name in run:
        folder = evidence / name / stamp
        folder.mkdir(parents=True)
        (folder / 'baseline.json').write_text('{}')
    root = tmp_path / 'reports'
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': stamp, 'nodes': run, 'hosts': sorted(run),
                                                         'evidence_dir': str(evidence), 'fleet_rules': {'400G': rules},
                                                         'link_baselines': True})
    assert not failed, result
    assert result['verdicts']['node07']['bucket'] == 'B' and result['verdicts']['node07']['causes'][0]['cause'] == 'fleet_outlier'
    assert all(result['verdicts'][name]['bucket'] == 'A' for name in run if name != 'node07')
    summary = json.loads((root / 'latest' / 'summary.json').read_text())
    assert summary['nodes']['node07']['bucket'] == 'B' and summary['nodes']['node07']['causes'][0].startswith('Far below its siblings')
    batch = [b for b in summary['fleet']['batches'] if b['metric'] == 'ib_send_bw_gbs'][0]
    assert batch['judged'] and batch['nodes'] == 7 and [o['node'] for o in batch['outliers']] == ['node07'] * 8
    text = (root / 'latest' / 'summary.txt').read_text()
    assert re.search(r'node07 +peer01 +400G +B .* fleet_outlier', text), text
    node07 = json.loads((root / 'latest' / 'nodes' / 'node07.json').read_text())
    assert [t['status'] for t in node07['tests'] if t['metric'] == 'ib_send_bw_gbs'] == ['marginal'] * 8
    assert not (root / stamp / 'letters' / 'node07.txt').exists()
    # Only the accepted nodes' baselines are linked: an outlier's bundle never becomes its baseline.
    assert sorted(result['baselines']) == ['node%02d' % i for i in range(1, 7)] and result['baseline_problems'] == []
    assert os.readlink(str(evidence / 'node01' / 'baseline')) == stamp
    assert not os.path.lexists(str(evidence / 'node07' / 'baseline'))


def test_a_comparison_that_cannot_be_made_is_a_note_never_a_failure(tmp_path):
    run = dict(('node%02d' % i, dict(report_samples.healthy_node('node%02d' % i), sku='H100 / MT4129')) for i in range(1, 3))
    result, failed = run_module(validation_report.main, {'root': str(tmp_path / 'r'), 'timestamp': '20261201T100000Z', 'nodes': run,
                                                         'fleet_rules': {'400G': {'max_mads': 0}}})
    assert failed and 'fleet_rules.400G: fleet_rules.max_mads must be' in result['msg']
    result, failed = run_module(validation_report.main, {'root': str(tmp_path / 'r'), 'timestamp': '20261201T100000Z', 'nodes': run,
                                                         'link_baselines': True})
    assert failed and 'link_baselines needs evidence_dir' in result['msg']
    with mock.patch('ansible_collections.gpufleet.netval.plugins.module_utils.policy.fleet.analyse', side_effect=KeyError('boom')):
        result, failed = run_module(validation_report.main, {'root': str(tmp_path / 'r'), 'timestamp': '20261201T100000Z', 'nodes': run})
    assert not failed and 'fleet: the nodes were not compared with each other: KeyError' in result['summary_table']
    assert all(v['bucket'] == 'A' for v in result['verdicts'].values())
