"""A node under test is not trusted (issue 28): crafted node data through the controller's real entry points.

Every byte a node returns is its own: module results (through the validation_report action, as the playbook hands
them over) and its evidence bundle (through the evidence_store action).  Each test feeds one class of hostile data and
asserts the outcome: the run goes on, the node's data is bounded and visible, it is a finding on that node (bucket B,
never C) or its run_incomplete, and no other node's report changes.  The bombs run in a child process under a memory
limit, so a regression fails the test instead of the machine.
"""
import base64
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import textwrap
import xml.etree.ElementTree as ET
from unittest import mock

import pytest
from markdown_it import MarkdownIt
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import node_input
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import drift, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import drift_writers, html_report
from tests.unit.plugins.module_utils import report_samples
from tests.unit.plugins.modules import test_evidence_store as stores
from tests.unit.plugins.modules import test_validation_report as reports

STAMP = '20261201T100000Z'
# Markup, table, link, image, HTML, mention, terminal escapes (OSC 8 hyperlink, colour, bell), mathtext, XML breakers.
PAYLOAD = ('x |forged| \r\n# Heading\n[click](http://evil.example) ![img](http://evil.example/p.png) <img src=x onerror=alert(1)> '
           '<script>alert(1)</script> @security-team &#64;ops \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \x1b[31mred\x1b[0m '
           '$\\foo{x}$ ]]><!-- \u202edesrever \x00')
# The Markdown parser a ticket system or a chat runs (CommonMark with tables, raw HTML on).
MARKDOWN = MarkdownIt('commonmark', {'html': True}).enable('table')


def node(name, bucket='A', **extra):
    result = {'node': name, 'bucket': bucket, 'peer': 'peer01', 'tier': '400G', 'tests': [], 'findings': [], 'causes': [],
              'counts': {'healthy': 1, 'marginal': 0, 'reject': 0, 'unknown': 0, 'info': 0}}
    result.update(extra)
    return result


def hca_test(subject, value=47.0):
    return {'id': 'ib_send_bw_gbs:%s' % subject, 'metric': 'ib_send_bw_gbs', 'subject': subject, 'status': 'healthy',
            'value': value, 'unit': 'GB/s', 'peer': 'peer01', 'as_printed': '%s GB/s' % value,
            'threshold': {'healthy': [46, 48], 'reject_below': 42, 'unit': 'GB/s', 'direction': 'one-way'}}


def nested(depth):
    value = []
    for _level in range(depth - 1):
        value = [value]
    return value


def write_reports(tmp_path, nodes):
    """The validation_report action over ``nodes`` (as the playbook hands them over); (result, run folder)."""
    result = reports.run_action({'root': str(tmp_path / 'reports'), 'timestamp': STAMP, 'nodes': nodes})
    assert not result.get('failed'), result
    return result, tmp_path / 'reports' / STAMP


def written(run_dir, name):
    return json.loads((run_dir / 'nodes' / ('%s.json' % name)).read_text(encoding='utf-8'))


def node_data_finding(result):
    found = [f for f in result['findings'] if f['check'] == node_input.NODE_DATA]
    assert len(found) == 1 and found[0]['status'] == 'unknown', result['findings']
    assert node_input.NODE_DATA in [c['cause'] for c in result['causes']]
    return found[0]


def output_files(run_dir):
    return dict((os.path.relpath(os.path.join(base, name), str(run_dir)), os.path.join(base, name))
                for base, _dirs, files in os.walk(str(run_dir)) for name in files)


# ------------------------------------------------------------------------------------------------- reports


# An 800-character tick label leaves matplotlib no room for the axes; it says so and draws the chart anyway.
@pytest.mark.filterwarnings('ignore:constrained_layout not applied')
def test_mathtext_in_an_hca_name_is_drawn_as_text_and_is_a_finding_of_that_node(tmp_path):
    # Before: ValueError (ParseFatalException: Unknown symbol: \foo) out of the page's charts; no report for any node.
    hostile = node('node01', tests=[hca_test('mlx5_0'), hca_test('mlx5_7$\\foo$'), hca_test('$' + '{' * 400 + 'x' + '}' * 400 + '$')])
    _result, run_dir = write_reports(tmp_path, {'node01': hostile, 'node02': node('node02')})
    result = written(run_dir, 'node01')
    assert result['bucket'] == 'B' and 'nodes.node01.tests[1].subject must be an RDMA device name' in node_data_finding(result)['actual']
    assert written(run_dir, 'node02')['bucket'] == 'A'
    page = (run_dir / 'index.html').read_text(encoding='utf-8')
    chart = page[page.index('data-chart="rdma_bw"'):]
    assert '>mlx5_7$\\foo$<' in chart[:chart.index('</figure>')]  # the name as it is, not typeset


@pytest.mark.parametrize('hostile, where', [
    (node('node01', peer='peer\ud800', identity={'rack': 'R\udc80'}), 'not valid Unicode'),
    (node('node01', identity={'rack': nested(970)}), 'nested deeper than 24 levels'),
    (node('node01', causes=[{'cause': 'x', 'detail': 'A' * (16 << 20)}], bucket='B'), 'text of 16777216 characters (limit 65536; cut)'),
    (node('node01', tests=[dict(hca_test('mlx5_0'), value=float('nan'))]), 'not finite'),
    (node('node01', counts={'healthy': 10 ** 30}), 'an integer of 100 bits'),
    (node('node01', nic_pci={'mlx5_0': '../../etc', 'mlx5 1': '0000:1b:00.0'}), 'must be a PCI address'),
], ids=['lone-surrogate', 'nesting-970', 'field-16MiB', 'nan', 'huge-int', 'nic-pci'])
def test_what_a_node_returns_is_bounded_and_visible_and_a_finding_of_that_node(tmp_path, hostile, where):
    # Before: UnicodeEncodeError writing the files; RecursionError (the action's deep copy); 84 MB of reports written and
    # 213 MiB peak for one 16 MiB detail; NaN crashed the chart's axis limits. After: each a node_data finding, bucket B.
    _result, run_dir = write_reports(tmp_path, {'node01': hostile, 'node02': node('node02')})
    result = written(run_dir, 'node01')
    assert result['bucket'] == 'B' and where in node_data_finding(result)['actual']
    assert written(run_dir, 'node02')['bucket'] == 'A'
    sizes = dict((rel, os.path.getsize(path)) for rel, path in output_files(run_dir).items())
    assert sum(sizes.values()) < 2 << 20, sizes  # a 16 MiB field is cut to 64 KiB: the whole run stays under 2 MB
    for rel, path in output_files(run_dir).items():
        with open(path, 'rb') as handle:
            handle.read().decode('utf-8')  # every file is valid UTF-8: no surrogate reached a writer, rel


def test_a_node_whose_data_breaks_a_writer_is_its_run_incomplete_and_the_others_keep_their_reports(tmp_path, monkeypatch):
    # Any failure in one node's section (here its chart) is that node's run_incomplete; the others keep their charts.
    real = html_report._chart_svg  # pylint: disable=protected-access

    def broken_for_node02(one, key, prefix):
        if one.get('node') == 'node02':
            raise ValueError('a chart that cannot be drawn')
        return real(one, key, prefix)
    monkeypatch.setattr(html_report, '_chart_svg', broken_for_node02)
    nodes = {'node01': node('node01', tests=[hca_test('mlx5_0')]), 'node02': node('node02', tests=[hca_test('mlx5_0')])}
    _result, run_dir = write_reports(tmp_path, nodes)
    incomplete = reports.incomplete(run_dir, 'node02')
    assert 'cannot draw the rdma_bw chart: ValueError: a chart that cannot be drawn' in incomplete['run_incomplete']['why']
    page = (run_dir / 'index.html').read_text()
    assert page.count('<figure class="chart"') == 1 and 'data-chart="rdma_bw"' in page[page.index('id="node-node01"'):]


def test_every_writer_renders_a_node_built_by_incomplete_verdict(tmp_path):
    # The playbooks hand over nodes whose run broke before they had a verdict: empty tests, one finding.
    nodes = {'node01': node('node01'), 'node03': verdict.incomplete_verdict('node03', 'connect', 'ssh: timed out', tier='400G')}
    _result, run_dir = write_reports(tmp_path, nodes)
    assert written(run_dir, 'node03')['run_incomplete'] == {'where': 'connect', 'why': 'ssh: timed out'}
    assert '| node03 | B | 400G |' in (run_dir / 'summary.md').read_text()
    assert ET.parse(str(run_dir / 'junit.xml')).getroot().find(".//testcase[@name='run_incomplete[connect]']/skipped") is not None
    assert 'id="node-node03"' in (run_dir / 'index.html').read_text()


def markdown_of(text):
    """What a Markdown renderer makes of ``text``: {links, images, html, headings, rows, texts}."""
    found = {'links': [], 'images': 0, 'html': [], 'headings': [], 'rows': [], 'texts': []}
    tokens = MARKDOWN.parse(text)
    for index, token in enumerate(tokens):
        if token.type in ('html_block',):
            found['html'].append(token.content)
        if token.type == 'heading_open':
            found['headings'].append(tokens[index + 1].content)
        if token.type == 'tr_open':
            cells = 0
            for other in tokens[index + 1:]:
                if other.type == 'tr_close':
                    break
                cells += other.type in ('td_open', 'th_open')
            found['rows'].append(cells)
        for child in token.children or []:
            if child.type == 'link_open':
                found['links'].append(child.attrs.get('href'))
            found['images'] += child.type == 'image'
            if child.type == 'html_inline':
                found['html'].append(child.content)
            if child.type == 'text':
                found['texts'].append(child.content)
    return found


def test_markdown_and_the_letter_render_node_text_as_text(tmp_path):
    # Before: \r\n and | forged headings and table rows; links, images, raw HTML and @mentions rendered; ESC, BEL and
    # OSC 8 reached summary.md, nodes/*.md, the letter and summary.txt raw. After: all written out or escaped.
    finding = {'check': 'gpu_count', 'subject': PAYLOAD, 'status': 'reject', 'detail': PAYLOAD, 'expected': 8, 'actual': 7,
               'verbatim': [PAYLOAD, '$ nvidia-smi -L ' + PAYLOAD]}
    test = dict(hca_test('mlx5_0', 30.0), status='reject', as_printed=PAYLOAD, verbatim=[PAYLOAD], cmd='/usr/bin/ib_send_bw ' + PAYLOAD,
                expected=PAYLOAD)
    hostile = node('node01', bucket='C', peer=PAYLOAD, tier=PAYLOAD, contract_text=PAYLOAD, identity={'rack': PAYLOAD},
                   causes=[{'cause': 'gpu_hardware', 'detail': PAYLOAD, 'subjects': ['mlx5_0']}], findings=[finding], tests=[test],
                   ruled_out=[PAYLOAD], nic_pci={'mlx5_0': '0000:1b:00.0'})
    _result, run_dir = write_reports(tmp_path, {'node01': hostile})
    ours = ['letters/node01.txt', 'nodes/node01.json', 'nodes/node01.md']
    for name, headings, rows in (('summary.md', ['Network validation run %s' % STAMP, 'node01: bucket C (return to provider)'], [5] * 6),
                                 ('nodes/node01.md', ['node01: bucket C (return to provider)', 'Likely causes', 'Checks'], [5] * 4),
                                 ('letters/node01.txt', [], [])):
        shown = markdown_of((run_dir / name).read_text(encoding='utf-8'))
        assert shown['headings'] == headings and shown['rows'] == rows, (name, shown)
        assert shown['images'] == 0 and shown['html'] == [] and set(shown['links']) <= set(ours), (name, shown)
        assert not [t for t in shown['texts'] if re.search(r'(?<![\w.+-])@\w', t)], name  # no mention outside a code span
    letter = (run_dir / 'letters' / 'node01.txt').read_text(encoding='utf-8')
    assert '    $ ib_send_bw ' in letter  # tool output pasted as an indented code block: shown as printed, nothing rendered
    for rel, path in output_files(run_dir).items():
        text = open(path, encoding='utf-8').read()
        assert not re.search('[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]', text.replace('\r\n', '\n') if rel == 'MANIFEST.sha256' else text), rel
    assert '\\x1b]8;;http://evil.example\\x07link' in (run_dir / 'summary.txt').read_text()  # the peer, written out


@pytest.mark.filterwarnings('ignore:constrained_layout not applied')
def test_markup_in_every_field_of_a_real_node_stays_text_everywhere(tmp_path):
    # Held before: the page escapes HTML, JUnit is well-formed. Every text field of a real lab result gets the payload.
    keep = ('bucket', 'status', 'metric', 'id', 'node', 'error_class', 'error_side', 'direction', 'source', 'unit', 'cause')

    def poison(value, key=None):
        if isinstance(value, dict):
            return dict((k, poison(v, k)) for k, v in value.items())
        if isinstance(value, list):
            return [poison(item, key) for item in value]
        return value + PAYLOAD if isinstance(value, str) and key not in keep else value
    hostile = poison(report_samples.slow_hca_node('node02'))
    _result, run_dir = write_reports(tmp_path, {'node02': hostile, 'node01': report_samples.healthy_node('node01')})
    assert written(run_dir, 'node02')['bucket'] == 'C' and written(run_dir, 'node01')['bucket'] == 'A'
    page = (run_dir / 'index.html').read_text(encoding='utf-8')
    assert page.count('<script>') == 1 and '<img' not in page and '&lt;script&gt;alert(1)&lt;/script&gt;' in page
    assert not [href for href in re.findall(r'href="([^"]*)"', page) if re.match(r'[a-z][a-z0-9+.-]*:|//', href)]
    root = ET.parse(str(run_dir / 'junit.xml')).getroot()
    assert ']]&gt;' in ET.tostring(root, encoding='unicode') and root.get('failures') == '4'


def test_the_page_allows_only_its_own_style_sheet_and_script():
    # Before: no Content-Security-Policy. After: default-src 'none', the style sheet and script by their sha256.
    page = html_report.render_page({'node02': report_samples.slow_hca_node('node02')}, STAMP, '/var/lib/netval/reports/x')
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page).group(1).replace('&#39;', "'")
    assert policy.startswith("default-src 'none'; ") and "base-uri 'none'" in policy

    def digest(text):
        return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode('utf-8')).digest()).decode('ascii')
    styles = re.findall(r'<style>(.*?)</style>', page, re.S)
    scripts = re.findall(r'<script>(.*?)</script>', page, re.S)
    assert len(styles) == len(scripts) == 1 and '<style ' not in page and ' style="' not in page
    assert "style-src %s;" % digest(styles[0]) in policy and "script-src %s;" % digest(scripts[0]) in policy


def test_drift_labels_markdown_and_junit_hold_node_text():
    # Held before (label injection, XML breakers); the drift Markdown now goes through the one helper too.
    finding = {'check': 'firmware"} 1\nnetval_fake 1', 'subject': PAYLOAD, 'severity': drift.RED, 'kind': drift.FAULT,
               'baseline': PAYLOAD, 'current': PAYLOAD, 'detail': PAYLOAD}
    nodes = {'node01': {'findings': [finding], 'bucket': 'A', 'timestamp': STAMP}}
    families = list(text_string_to_metric_families(drift_writers.textfile(nodes)))
    assert sorted(family.name for family in families) == ['netval_drift_findings', 'netval_drift_hosts',
                                                          'netval_last_run_timestamp_seconds', 'netval_node_bucket']
    ET.fromstring(drift_writers.junit_xml(nodes).encode('utf-8'))
    text = drift_writers.node_markdown('node01', nodes['node01'])
    shown = markdown_of(text)
    # The header, the finding, and the node's own red node_data finding: its 272-character subject was cut to 256.
    assert shown['images'] == 0 and shown['html'] == [] and shown['links'] == [] and shown['rows'] == [6, 6, 6]
    assert '| node_data | node result | node_data |' in text and 'text of 272 characters (limit 256; cut)' in text
    assert shown['headings'] == ['node01: drift red', 'Red']


# ------------------------------------------------------------------------------------------------- evidence


def tar_gz(path, members):
    """members: [(name, bytes or None for a folder, type)] written as a .tar.gz at ``path``."""
    with tarfile.open(str(path), 'w:gz') as archive:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.size = len(data or b'')
            archive.addfile(info, io.BytesIO(data) if data else None)


def manifest(*files):
    return ''.join('%s  %s\n' % (hashlib.sha256(data).hexdigest(), name) for name, data in files).encode()


def bundle_dir(tmp_path):
    dest = tmp_path / 'evidence' / 'node01' / STAMP
    dest.mkdir(parents=True)
    return dest


def test_a_baseline_the_manifest_does_not_list_is_never_kept_nor_linked(tmp_path):
    # Before: the node's baseline.json was unpacked, baseline_written false and the link served it (a NIC removed
    # after acceptance then showed 0 red drift findings). After: not written; the controller's baseline is linked.
    dest = bundle_dir(tmp_path)
    results = ('results.json', b'{}')
    tar_gz(dest / 'b.tar.gz', [('MANIFEST.sha256', manifest(results), tarfile.REGTYPE), results + (tarfile.REGTYPE,),
                               ('baseline.json', b'{"planted": true}', tarfile.REGTYPE)])
    link = tmp_path / 'evidence' / 'node01' / 'baseline'
    result = stores.run_action({'tarball': str(dest / 'b.tar.gz'), 'dest': str(dest), 'baseline': {'node': 'node01'}, 'baseline_link': str(link)})
    assert not result.get('failed') and result['baseline_written'] and result['ignored'] == ['baseline.json'], result
    assert json.loads((link / 'baseline.json').read_text()) == {'node': 'node01'}
    assert sorted(os.listdir(str(dest))) == ['MANIFEST.sha256', 'b.tar.gz', 'baseline.json', 'results.json']


def test_files_the_manifest_does_not_list_are_not_written(tmp_path):
    # Before: kept unverified beside the verified ones. After: not written, named in ignored.
    dest = bundle_dir(tmp_path)
    results = ('results.json', b'{}')
    tar_gz(dest / 'b.tar.gz', [('MANIFEST.sha256', manifest(results), tarfile.REGTYPE), results + (tarfile.REGTYPE,),
                               ('tests', None, tarfile.DIRTYPE), ('tests/extra\x1b.txt', b'unverified', tarfile.REGTYPE)])
    result = stores.run_action({'tarball': str(dest / 'b.tar.gz'), 'dest': str(dest)})
    assert not result.get('failed') and result['files'] == ['results.json'] and result['ignored'] == ['tests/extra\\x1b.txt'], result
    assert sorted(os.listdir(str(dest))) == ['MANIFEST.sha256', 'b.tar.gz', 'results.json']


@pytest.mark.parametrize('listed, needle', [
    ('/etc/hostname', "unsafe evidence file name '/etc/hostname'"),
    ('/proc/kmsg', "unsafe evidence file name '/proc/kmsg'"),
    ('../results.json', "unsafe evidence file name '../results.json'"),
    ('tests/../../x', 'unsafe evidence file name'),
    ('results.json', 'lists results.json again'),
    ('MANIFEST.sha256', 'the manifest itself'),
])
def test_manifest_names_are_confined_to_the_folder_and_listed_once(tmp_path, listed, needle):
    # Before: '<sha>  /etc/hostname' was accepted and hashed (a one-bit oracle on a controller file; /proc/kmsg would
    # block), and 32 lines naming one 64 MiB member cost 2.1 s. After: refused before any file is opened or hashed.
    dest = bundle_dir(tmp_path)
    results = ('results.json', b'{}')
    text = manifest(results) + ('%s  %s\n' % ('0' * 64, listed)).encode()
    tar_gz(dest / 'b.tar.gz', [('MANIFEST.sha256', text, tarfile.REGTYPE), results + (tarfile.REGTYPE,)])
    with mock.patch.object(evidence, 'sha256_file', side_effect=AssertionError('a file on the controller was hashed')):
        result = stores.run_action({'tarball': str(dest / 'b.tar.gz'), 'dest': str(dest)})
    assert result['failed'] and result['error_class'] == 'evidence_error' and needle in result['msg'], result
    assert os.listdir(str(dest)) == ['b.tar.gz']


def test_each_file_is_hashed_once(tmp_path):
    dest = bundle_dir(tmp_path)
    files = [('results.json', b'{}'), ('tests/a.txt', b'a' * 5000), ('tests/b.txt', b'b')]
    tar_gz(dest / 'b.tar.gz', [('MANIFEST.sha256', manifest(*files), tarfile.REGTYPE)] + [f + (tarfile.REGTYPE,) for f in files])
    hashed = []
    real = hashlib.sha256

    def counting(*args):
        hashed.append(args)
        return real(*args)
    with mock.patch.object(evidence.hashlib, 'sha256', counting):
        result = stores.run_action({'tarball': str(dest / 'b.tar.gz'), 'dest': str(dest)})
    assert not result.get('failed') and sorted(result['files']) == ['results.json', 'tests/a.txt', 'tests/b.txt'], result
    assert len(hashed) == 3


# A child process under a 768 MiB address-space limit: a bomb that is read into memory raises MemoryError there.
BOMB_CHILD = textwrap.dedent('''
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))
    from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
    limits = dict(evidence.BUNDLE_LIMITS, max_unpacked_bytes=int(sys.argv[3]))
    try:
        evidence.unpack_bundle(sys.argv[1], sys.argv[2], limits)
    except evidence.EvidenceError as exc:
        print('EvidenceError: %s' % exc)
''')


def sparse_bomb(path):
    """182 bytes of GNU sparse tar that declares a 2 GiB file."""
    info = tarfile.TarInfo('GNUSparseFile.0/big')
    info.type = tarfile.GNUTYPE_SPARSE
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    header[483:495] = b'%011o\0' % (2 << 30)  # the old GNU header's real size
    header[148:156] = b' ' * 8
    header[148:156] = b'%06o\0 ' % sum(header[:512])
    with gzip.open(str(path), 'wb') as handle:
        handle.write(bytes(header) + b'\0' * 1024)


def zeros_bomb(path, size, header_type=tarfile.REGTYPE):
    """A member of ``size`` zero bytes in about size/1000 bytes of gzip: one compressed MiB of zeros, repeated (gzip
    members concatenate)."""
    info = tarfile.TarInfo('zeros.bin' if header_type == tarfile.REGTYPE else 'pax')
    info.type = header_type
    info.size = size
    block = gzip.compress(b'\0' * (1 << 20))
    with open(str(path), 'wb') as handle:
        handle.write(gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT)))
        for _megabyte in range(-(-size // (1 << 20)) + 1):
            handle.write(block)


def many_members(path, count):
    with tarfile.open(str(path), 'w:gz') as archive:
        for number in range(count):
            archive.addfile(tarfile.TarInfo('f%05d' % number), None)


@pytest.mark.parametrize('make, unpacked, needle', [
    (sparse_bomb, 1 << 30, "holds 'GNUSparseFile.0/big', a sparse file"),
    (lambda path: zeros_bomb(path, 1536 << 20), 1 << 30, 'declares more than 1073741824 bytes of files (max_unpacked_bytes)'),
    (lambda path: zeros_bomb(path, 600 << 20, tarfile.XHDTYPE), 1 << 30, 'a tar header of 629145600 bytes (limit 65536)'),
    (lambda path: many_members(path, 3000), 1 << 20, 'unpacks to more than 1048576 bytes (max_unpacked_bytes)'),
], ids=['sparse-2GiB', 'gzip-zeros-1.5GiB', 'pax-header-600MiB', 'headers-past-the-stream-limit'])
def test_bombs_are_refused_before_they_cost_memory(tmp_path, make, unpacked, needle):
    # Before: MemoryError (uncaught) under a 1 GiB limit for the 2 GiB sparse tar and the 1.5 GiB of gzip'd zeros.
    dest = bundle_dir(tmp_path)
    make(dest / 'bomb.tar.gz')
    assert os.path.getsize(str(dest / 'bomb.tar.gz')) < 2 << 20
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.run([sys.executable, '-c', BOMB_CHILD, str(dest / 'bomb.tar.gz'), str(dest), str(unpacked)],
                           capture_output=True, text=True, env=env, timeout=120, check=False)
    assert child.returncode == 0 and needle in child.stdout, (child.stdout, child.stderr[-2000:])
    assert os.listdir(str(dest)) == ['bomb.tar.gz']


def test_too_many_members_are_refused(tmp_path):
    dest = bundle_dir(tmp_path)
    many_members(dest / 'b.tar.gz', 20)
    result = stores.run_action({'tarball': str(dest / 'b.tar.gz'), 'dest': str(dest), 'max_members': 10})
    assert result['failed'] and 'holds more than 10 members (max_members)' in result['msg']


def test_a_fetched_copy_over_the_limit_is_refused_before_it_is_hashed(tmp_path):
    # Before: no bound; a copy of any size was hashed and kept. After: measured first (slurp: before decoding).
    src, digest = stores.node_bundle(tmp_path)
    limit = os.path.getsize(src) // 2
    with mock.patch.object(evidence, 'sha256_file', side_effect=AssertionError('hashed')):
        result = stores.run_action({'src': src, 'src_sha256': digest, 'dest': str(tmp_path / 'c' / STAMP), 'max_bundle_bytes': limit},
                                   connection=stores.node_connection())
    assert result['failed'] and 'bytes (limit %d, max_bundle_bytes)' % limit in result['msg'], result
    assert os.listdir(str(tmp_path / 'c' / STAMP)) == []
    with open(src, 'rb') as handle:
        slurped = {'content': base64.b64encode(handle.read()).decode('ascii'), 'encoding': 'base64'}
    result = stores.run_action({'src': src, 'src_sha256': digest, 'dest': str(tmp_path / 's' / STAMP), 'max_bundle_bytes': limit},
                               connection=stores.node_connection(become=True), slurp=slurped)
    assert result['failed'] and 'more than a bundle of %d bytes' % limit in result['msg'], result


@pytest.mark.parametrize('name, kind', [('../escape.txt', tarfile.REGTYPE), ('/etc/evil', tarfile.REGTYPE),
                                        ('link', tarfile.SYMTYPE), ('hard', tarfile.LNKTYPE), ('fifo', tarfile.FIFOTYPE)])
def test_tar_traversal_and_links_are_refused_before_anything_is_written(tmp_path, name, kind):
    # Held before; still refused, now in the pass that writes nothing.
    dest = bundle_dir(tmp_path)
    results = ('results.json', b'{}')
    tar_gz(dest / 'b.tar.gz', [('MANIFEST.sha256', manifest(results), tarfile.REGTYPE), results + (tarfile.REGTYPE,), (name, b'', kind)])
    result = stores.run_action({'tarball': str(dest / 'b.tar.gz'), 'dest': str(dest)})
    assert result['failed'] and repr(name) in result['msg'] and os.listdir(str(dest)) == ['b.tar.gz'], result
