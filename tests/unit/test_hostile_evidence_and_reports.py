"""Hostile input to the evidence bundle and the reports (issue 13 items 5 and 6).

Evidence: names map one-to-one (a collision is an error before anything runs), no entry overwrites another, the
command deadline is ours and recorded truthfully, files are fsynced, no symlink under the destination is followed.
Reports: a malformed node result is that node's run_incomplete, naming the field, never a traceback, and the other
nodes' reports are written; JUnit XML is well-formed for any text; `latest` is replaced only when it is our symlink.
"""
import json
import os
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.netval.plugins.filter import node_reports as node_reports_filter
from ansible_collections.gpufleet.netval.plugins.filter import vendor_letter as vendor_letter_filter
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report
from ansible_collections.gpufleet.netval.plugins.modules import evidence_bundle, validation_report
from tests.unit.plugins.modules.utils import run_module

STAMP = '20261130T014500Z'


def bundle_args(tmp_path, **extra):
    base = {'dest': str(tmp_path / 'ev'), 'node': 'node01', 'timestamp': STAMP, 'commands': [], 'files': {}, 'paths': []}
    base.update(extra)
    return base


@pytest.mark.parametrize('extra,needle', [
    ({'paths': ['/a/b', '/a_b']}, 'files/a_b'),
    ({'commands': [{'name': 'lspci.txt', 'argv': ['lspci']}], 'files': {'commands/lspci.txt': 'forged'}}, 'commands/lspci.txt'),
    ({'commands': [{'name': 'x.txt', 'argv': ['lspci']}, {'name': 'x.txt', 'argv': ['ibstat']}]}, 'commands/x.txt'),
    ({'files': {'commands.json': '[]'}}, 'commands.json'),
    ({'files': {'MANIFEST.sha256': 'forged'}}, 'MANIFEST.sha256'),
    ({'files': {'tests': 'a file', 'tests/iperf3.txt': 'a file inside it'}}, 'as a folder'),
    ({'commands': [{'name': '../escape.txt', 'argv': ['lspci']}]}, 'unsafe evidence file name'),
    ({'commands': [{'name': 'a//b.txt', 'argv': ['lspci']}]}, 'unsafe evidence file name'),
    ({'commands': [{'name': 'ok.txt', 'argv': ['lspci']}, {'name': 'bad.txt', 'argv': ['-rf']}]}, 'argv[0]'),
    ({'paths': ['/etc/with space']}, 'unsafe evidence file name'),
])
def test_collisions_and_bad_names_fail_before_anything_runs(tmp_path, extra, needle):
    result, failed = run_module(evidence_bundle.main, bundle_args(tmp_path, **extra))
    assert failed and needle in result['msg'] and result['_ran'] == []
    assert result['error_class'] == 'invalid_options'
    assert not (tmp_path / 'ev').exists()


def test_a_symlinked_node_folder_is_not_followed(tmp_path):
    outside = tmp_path / 'outside'
    outside.mkdir()
    (tmp_path / 'ev').mkdir()
    os.symlink(str(outside), str(tmp_path / 'ev' / 'node01'))
    result, failed = run_module(evidence_bundle.main, bundle_args(tmp_path, files={'a.txt': 'A'}))
    assert failed and 'symlink' in result['msg']
    assert os.listdir(str(outside)) == []


def test_deadline_is_ours_and_recorded_truthfully_without_coreutils_timeout(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    slow = bin_dir / 'slow'
    slow.write_text('#!%s\nimport time\nprint("started", flush=True)\ntime.sleep(60)\n' % sys.executable)
    slow.chmod(0o755)
    begin = time.time()
    # No coreutils timeout on this host: the deadline must hold anyway, and be recorded.
    result, failed = run_module(evidence_bundle.main, bundle_args(tmp_path, commands=[
        {'name': 'slow.txt', 'argv': ['slow'], 'timeout': 1}]), bin_dir=str(bin_dir), missing=('timeout',))
    assert not failed, result
    assert time.time() - begin < 15
    assert result['commands'][0]['timed_out'] is True and result['commands'][0]['timeout'] == 1
    assert (tmp_path / 'ev' / 'node01' / STAMP / 'commands' / 'slow.txt').read_text() == 'started\n'


def test_every_file_and_folder_is_fsynced_before_the_rename(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, 'fsync', lambda fd: synced.append(os.readlink('/proc/self/fd/%d' % fd)) or real_fsync(fd))
    target = tmp_path / 'n' / STAMP
    evidence.build_bundle(str(target), {'a.txt': 'A', 'sub/b.txt': 'B'})
    names = [os.path.basename(path) for path in synced]
    assert 'a.txt' in names and 'b.txt' in names and 'MANIFEST.sha256' in names and 'sub' in names
    assert str(tmp_path / 'n') in synced  # the parent, after the rename


def test_bundle_files_are_never_written_through_a_symlink(tmp_path):
    with pytest.raises(evidence.EvidenceError):
        evidence.build_bundle(str(tmp_path / 'b'), {'x/../y.txt': 'escape'})
    link = tmp_path / 'c'
    os.symlink(str(tmp_path / 'elsewhere'), str(link))
    with pytest.raises(evidence.EvidenceError, match='never overwritten'):
        evidence.build_bundle(str(link), {'a.txt': 'A'})
    assert not (tmp_path / 'elsewhere').exists()


# --- reports ---------------------------------------------------------------------------------------------------

def good_node(**extra):
    node = {'node': 'node01', 'bucket': 'C', 'peer': 'peer01', 'tier': '400G', 'tests': [], 'findings': [],
            'causes': [{'cause': 'gpu_hardware', 'detail': 'GPU hardware: 7 of 8 GPUs visible'}]}
    node.update(extra)
    return node


MALFORMED = [
    (good_node(causes=[{'detail': 'no cause'}]), 'nodes.node01.causes[0].cause'),
    (good_node(causes=[{'cause': 'x'}]), 'nodes.node01.causes[0].detail'),
    (good_node(causes={'cause': 'x', 'detail': 'y'}), 'nodes.node01.causes must be a list'),
    (good_node(tests=['ib_write_bw 350']), 'nodes.node01.tests[0] must be a dict'),
    (good_node(findings=None), 'nodes.node01.findings must be a list, got null'),
    (good_node(tests=[{'status': 'reject', 'verbatim': 'one line, not a list'}]), 'nodes.node01.tests[0].verbatim'),
    (good_node(tests=[{'status': 'reject', 'cmd': ['ib_write_bw']}]), 'nodes.node01.tests[0].cmd'),
    (good_node(identity='rack 4'), 'nodes.node01.identity must be a dict'),
    (good_node(ruled_out=[{'x': 1}]), 'nodes.node01.ruled_out[0]'),
    (good_node(bucket='D'), 'nodes.node01.bucket must be A, B or C'),
    ('not a dict', 'nodes.node01 must be a dict'),
]


@pytest.mark.parametrize('node,needle', MALFORMED)
def test_a_malformed_node_result_is_that_nodes_run_incomplete_naming_the_field(tmp_path, node, needle):
    root = tmp_path / 'reports'
    nodes = {'node01': node, 'node02': good_node(node='node02', bucket='A', causes=[])}
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': STAMP, 'nodes': nodes})
    assert not failed, result
    written = json.loads((root / STAMP / 'nodes' / 'node01.json').read_text())
    assert written['bucket'] == 'B' and written['tests'] == [] and written['causes'][0]['cause'] == 'run_incomplete'
    assert needle in written['run_incomplete']['why'] and 'Traceback' not in written['run_incomplete']['why']
    assert json.loads((root / STAMP / 'nodes' / 'node02.json').read_text())['bucket'] == 'A'


@pytest.mark.parametrize('node,needle', [case for case in MALFORMED if isinstance(case[0], dict)])
def test_every_renderer_and_report_filter_names_the_field(node, needle):
    for render in (report.vendor_letter, report.node_markdown):
        with pytest.raises(report.ReportError, match=needle.split(' ')[0].replace('[', r'\[').replace(']', r'\]')):
            render(node)
    for render in (report.summary_table, report.junit_xml):
        with pytest.raises(report.ReportError):
            render({'node01': node})
    with pytest.raises(AnsibleFilterError, match='vendor_letter: '):
        vendor_letter_filter.vendor_letter(node)


def test_node_reports_filter_refuses_what_is_not_a_list_of_verdicts():
    with pytest.raises(AnsibleFilterError, match='expected a list of host variables'):
        node_reports_filter.node_reports('node01', 'verdict_node_result', 'evidence_location')
    with pytest.raises(AnsibleFilterError, match='must be a verdict with its node name'):
        node_reports_filter.node_reports([{'verdict_node_result': ['A']}], 'verdict_node_result', 'evidence_location')


ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=80)


@settings(max_examples=200, deadline=None)
@given(detail=ANY_TEXT, subject=ANY_TEXT, printed=ANY_TEXT, expected=ANY_TEXT)
def test_junit_xml_is_well_formed_for_any_text(detail, subject, printed, expected):
    node = good_node(tests=[{'metric': 'ib_write_bw_gbps', 'subject': subject, 'status': 'reject', 'detail': detail,
                             'as_printed': printed, 'expected': expected},
                            {'metric': 'iperf3_gbps', 'subject': subject, 'status': 'unknown', 'detail': detail}],
                     findings=[{'check': 'pcie', 'subject': subject, 'status': 'marginal', 'detail': detail}])
    text = report.junit_xml({'node01': node})
    root = ET.fromstring(text.encode('utf-8'))
    assert root.get('failures') == '2' and len(root.findall('.//testcase')) == 3
    for case in root.findall('.//testcase'):
        assert case.get('classname') == 'netval.node01'


def test_control_characters_are_escaped_not_lost():
    text = report.junit_xml({'node01': good_node(tests=[{'metric': 'm', 'subject': 's', 'status': 'reject', 'detail': 'a\x01b\x1bc'}])})
    failure = ET.fromstring(text.encode('utf-8')).find('.//failure')
    assert failure.text == 'a\\x01b\\x1bc'


@pytest.mark.parametrize('make,needle', [
    (lambda latest: latest.write_text('a regular file'), 'not a symlink'),
    (lambda latest: latest.mkdir(), 'not a symlink'),
    (lambda latest: os.symlink('/etc', str(latest)), 'symlink to /etc'),
])
def test_latest_is_replaced_only_when_it_is_our_symlink(tmp_path, make, needle):
    root = tmp_path / 'reports'
    root.mkdir()
    make(root / 'latest')
    nodes = {'node01': good_node(bucket='A', causes=[])}
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': STAMP, 'nodes': nodes})
    assert failed and needle in result['msg'] and 'latest' in result['msg']
    assert not (root / STAMP).exists()


def test_our_latest_symlink_is_replaced(tmp_path):
    root = tmp_path / 'reports'
    nodes = {'node01': good_node(bucket='A', causes=[])}
    for stamp in (STAMP, '20261130T024500Z'):
        result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': stamp, 'nodes': json.loads(json.dumps(nodes))})
        assert not failed, result
        assert os.readlink(str(root / 'latest')) == stamp


def test_the_evidence_plan_never_maps_two_things_to_one_file():
    node = {'tests': [{'id': 'ib_write_bw:mlx5_0', 'raw': 'first peer'}, {'id': 'ib_write_bw_mlx5_0', 'raw': 'other test'},
                      {'id': 'ib_write_bw:mlx5_0', 'raw': 'second peer'}]}
    facts = {'rdma': {'devices': {}, 'live_ports': [{'netdev': 'eth0:1'}, {'netdev': 'eth0_1'}]}}
    plan = evidence.evidence_plan(node, {}, facts)
    raws = sorted(plan['files'][name] for name in plan['files'] if name.startswith('tests/'))
    assert raws == ['first peer', 'other test', 'second peer']
    names = [command['name'] for command in plan['commands']]
    assert len(names) == len(set(names)) == 14
    problems = evidence.claim_names([('commands/%s' % name, name) for name in names] + [(name, name) for name in plan['files']])
    assert problems == []
