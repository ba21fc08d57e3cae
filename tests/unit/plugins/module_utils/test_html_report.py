"""html_report: the run's page and Markdown on real lab node results and variants of them (report_samples)."""
import copy
import re
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import html_report, report
from tests.quality.report_browser import outline
from tests.unit.plugins.module_utils import report_samples

RUN_DIR = '/var/lib/netval/reports/20261201T100000Z'
STAMP = '20261201T100000Z'


@pytest.fixture(scope='module')
def mixed():
    return report_samples.mixed_run()


@pytest.fixture(scope='module')
def page(mixed):
    return html_report.render_page(mixed, STAMP, RUN_DIR)


def test_every_node_is_listed_with_its_bucket(mixed, page):
    found = outline(page)
    assert found.rows == {'node01': 'A', 'node02': 'C', 'node03': 'A', 'node04': 'B'}
    assert dict((name, s['bucket']) for name, s in found.sections.items()) == found.rows
    # Bucket C first: the node to act on is at the top of the table and of the page.
    assert list(found.rows)[0] == 'node02' and list(found.sections)[0] == 'node02'


def test_each_section_has_exactly_the_planned_charts(mixed, page):
    found = outline(page)
    for name, section in found.sections.items():
        plan = html_report.charts_for(mixed[name])
        assert section['figures'] == plan, name
        assert section['svgs'] == section['planned'] == len(plan), name


def test_chart_plan_follows_the_data(mixed):
    assert html_report.charts_for(mixed['node01']) == ['rdma_bw', 'gdr_bw', 'node_figures', 'drift']
    assert html_report.charts_for(mixed['node02']) == ['rdma_bw', 'gdr_bw', 'node_figures']
    assert html_report.charts_for(mixed['node03']) == ['rdma_bw', 'gdr_bw', 'node_figures', 'sweep:ib_send_bw_gbs']
    assert html_report.charts_for(mixed['node04']) == []
    assert html_report.charts_for(report_samples.healthy_node()) == ['rdma_bw', 'gdr_bw', 'node_figures']


def test_the_page_fetches_nothing(page):
    found = outline(page)
    assert 'http://' not in page and 'https://' not in page and '//' not in ''.join(found.sources)
    assert found.scripts == [None], 'one inline script, no external one'
    assert '<link' not in page and '@import' not in page and 'url(http' not in page
    for source in found.sources:
        assert source.startswith('#') or not re.match(r'^[a-z][a-z0-9+.-]*:', source), source


def test_chart_ids_are_unique_across_the_page(page):
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    for ref in re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', page):
        assert (ref[0] or ref[1]) in ids, ref


def test_svg_text_stays_text_and_carries_the_figures(page):
    section = page[page.index('id="node-node02"'):page.index('id="node-node04"')]
    svg = section[section.index('<svg'):section.index('</svg>')]
    assert '<text' in svg and '23.4' in svg and 'reject &lt; 42' in svg and 'healthy &gt;= 46' in svg
    # How far under the healthy floor the slow HCA is: 23.4 / 46 - 1.
    assert '>-49%<' in svg and svg.count('%<') == 1
    assert 'ib_send_bw per HCA' in svg


def test_bucket_c_section_says_what_is_below_the_line_and_links_the_letter(page):
    section = page[page.index('id="node-node02"'):page.index('id="node-node04"')]
    assert 'pcie_link' in section and 'LnkSta 16GT/s x16' in section
    assert '<td class="status reject">reject</td>' in section and 'healthy &gt;= 46 GB/s (46-48), reject &lt; 42 GB/s' in section
    links = outline(section + '</section>').links
    assert 'letters/node02.txt' in links
    assert '../../evidence/node02/20261201T092157Z/' in links
    assert 'nodes/node02.json' in links


def test_a_node_that_did_not_run_says_so_in_one_row(page):
    section = page[page.index('id="node-node04"'):]
    section = section[:section.index('</section>')]
    assert '46 figures' in section and 'no known-good peer free within the lease deadline' in section
    assert 'nothing to chart' in section and 'letters/' not in section


def test_peer_heatmap_when_several_peers(mixed, page):
    assert html_report.run_charts(mixed) == ['peer_heatmap']
    assert outline(page).run_figures == ['peer_heatmap']
    fractions = html_report.peer_fractions(mixed)
    assert fractions['node03']['peer01'] == pytest.approx(30.5 / 46 / 2 + 30.5 / 45 / 2)
    assert fractions['node03']['peer02'] > 1.0 and fractions['node04'] == {}
    one_peer = dict((name, mixed[name]) for name in ('node01', 'node02'))
    assert html_report.run_charts(one_peer) == []
    assert 'peer_heatmap' not in html_report.render_page(one_peer, STAMP, RUN_DIR)


def test_retested_node_marks_the_first_peer_figures(page):
    section = page[page.index('id="node-node03"'):]
    section = section[:section.index('</section>')]
    assert 're-tested against peer02 after peer01' in section and 'first peer (peer01)' in section


def test_drift_draws_only_the_figures_that_moved_in_colour(page):
    section = page[page.index('id="node-node01"'):]
    section = section[section.index('data-chart="drift"'):]
    section = section[:section.index('</figure>')]
    assert 'ib_send_bw_gbs:mlx5_3' in section and 'gdr_bw_gbs:mlx5_3' in section
    assert 'ib_send_bw_gbs:mlx5_0' not in section and 'steady figures' in section


def test_markdown_has_the_same_facts(mixed):
    text = html_report.summary_markdown(mixed, STAMP, RUN_DIR)
    assert text.startswith('# Network validation run 20261201T100000Z')
    assert '**2** A (accept), **1** B (investigate), **1** C (return to provider)' in text
    for name, bucket in (('node01', 'A'), ('node02', 'C'), ('node03', 'A'), ('node04', 'B')):
        assert re.search(r'^\| %s \| %s \|' % (name, bucket), text, re.M), name
    assert '## node02: bucket C (return to provider)' in text and '## node01' not in text
    assert '| ib_send_bw per HCA | mlx5_3 | reject | 23.4 GB/s' in text
    assert '[vendor letter](letters/node02.txt)' in text
    assert '- evidence bundle on the controller: `/var/lib/netval/evidence/node02/20261201T092157Z`' in text
    assert 'peer02 (re-tested; first peer01)' in text


def test_all_slow_real_node_charts_every_hca_red():
    node = report_samples.lab_node(report_samples.ALL_SLOW_FIXTURE, 'node01')
    html = html_report.render_page({'node01': node}, STAMP, RUN_DIR)
    found = outline(html)
    assert found.rows == {'node01': 'C'}
    assert found.sections['node01']['figures'] == ['rdma_bw', 'gdr_bw', 'node_figures']
    chart = html[html.index('data-chart="rdma_bw"'):]
    chart = chart[:chart.index('</figure>')]
    # Eight bars, each filled with the reject colour and labelled with its figure; no bar in the healthy colour.
    assert chart.count('fill="%s"/>' % html_report.STATUS_COLOURS['reject']) == 8
    assert 'fill="%s"/>' % html_report.STATUS_COLOURS['healthy'] not in chart
    assert chart.count('>23.5<') == 8


@pytest.mark.parametrize('edit, message', [
    (lambda n: n['tests'][3].update(value='47 GB/s'), "nodes.node01.tests[3].value must be a number or null, got '47 GB/s'"),
    (lambda n: n['tests'][3].update(threshold={'healthy': [46, 48]}), 'nodes.node01.tests[3].threshold: threshold ib_send_bw_gbs needs exactly'),
    (lambda n: n['tests'][3].update(sweep=[{'bytes': 0, 'value': 1}]), 'nodes.node01.tests[3].sweep[0] must be {bytes: a positive number'),
    (lambda n: n.update(history={'figures': {}}), 'nodes.node01.history must be a list of {timestamp, figures}, got dict'),
    (lambda n: n.update(history=[{'timestamp': 'x', 'figures': {'ib_send_bw_gbs:mlx5_0': 'fast'}}]),
     "nodes.node01.history[0].figures['ib_send_bw_gbs:mlx5_0'] must be a number or null"),
    (lambda n: n.update(first_peer_tests='none'), 'nodes.node01.first_peer_tests must be a list, got str'),
    (lambda n: n.update(evidence=['/x']), 'nodes.node01.evidence must be text'),
    (lambda n: n.update(bucket='D'), 'nodes.node01.bucket must be A, B or C'),
])
def test_malformed_input_names_the_field(edit, message):
    node = report_samples.healthy_node('node01')
    edit(node)
    with pytest.raises(report.ReportError) as info:
        html_report.render_page({'node01': node}, STAMP, RUN_DIR)
    assert message in str(info.value)
    with pytest.raises(report.ReportError):
        html_report.summary_markdown({'node01': node}, STAMP, RUN_DIR)


def test_text_is_escaped():
    node = report_samples.slow_hca_node('node02')
    node['causes'][0]['detail'] = '<script>alert(1)</script> & "quotes"'
    html = html_report.render_page({'node02': node}, STAMP, RUN_DIR)
    assert '<script>alert' not in html and '&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;' in html


def test_a_node_without_tests_or_evidence_renders():
    node = {'bucket': 'B', 'causes': ['no results'], 'tests': [], 'findings': []}
    html = html_report.render_page({'node09': copy.deepcopy(node)}, STAMP, RUN_DIR)
    found = outline(html)
    assert found.sections['node09']['planned'] == 0 and found.sections['node09']['svgs'] == 0
    assert not any('evidence' in (link or '') for link in found.links)


def test_charts_are_drawn_in_the_callers_process_never_in_a_fork(mixed, page, monkeypatch):
    # The report runs inside an Ansible worker, itself a fork of a process with threads: a fork of it can hang on a lock.
    def no_fork():
        raise AssertionError('the page forked a process to draw its charts')

    monkeypatch.setattr(html_report.os, 'fork', no_fork)
    assert html_report.render_page(mixed, STAMP, RUN_DIR) == page  # the module fixture's page: the same bytes


def test_a_chart_that_fails_fails_the_page_it_is_drawn_for(monkeypatch):

    def broken(node, key, prefix):
        raise html_report.ChartError('nodes.%s: cannot draw %s' % (node['node'], key))

    monkeypatch.setattr(html_report, '_chart_svg', broken)
    nodes = dict((name, report_samples.healthy_node(name)) for name in ('node01', 'node02', 'node03'))
    with pytest.raises(html_report.ChartError) as info:
        html_report.render_page(nodes, STAMP, RUN_DIR)
    assert 'cannot draw' in str(info.value)
