"""The run's page in a real browser: validation_report writes a mixed run, headless chromium renders it with no
network, and the rendered DOM shows every node with its bucket and each node section with its planned charts.

Fails (never skips) when chromium is missing: `make test` installs it (Makefile APT_PACKAGES).
The screenshot is kept at tests/output/report.png.
"""
import base64
import hashlib
import os
import re
import shutil

import pytest

from ansible_collections.gpufleet.netval.plugins.modules import validation_report
from tests.quality.report_browser import check_report_in_browser, run_chromium
from tests.unit.plugins.module_utils import report_samples
from tests.unit.plugins.modules.utils import run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCREENSHOT = os.path.join(ROOT, 'tests', 'output', 'report.png')


@pytest.fixture(scope='module')
def reports(tmp_path_factory):
    """The reports folder of a mixed run (A with history, C with a slow HCA, A re-tested with sweep rows, B not run)."""
    root = tmp_path_factory.mktemp('reports')
    result, failed = run_module(validation_report.main, {'root': str(root), 'timestamp': '20261201T100000Z',
                                                         'nodes': report_samples.mixed_run()})
    assert not failed, result
    return root


def test_mixed_run_page_in_headless_chromium(reports):
    run = report_samples.mixed_run()
    if os.path.exists(SCREENSHOT):
        os.unlink(SCREENSHOT)
    found = check_report_in_browser(str(reports / 'latest'), screenshot=SCREENSHOT)
    assert found['problems'] == []
    assert found['expected_buckets'] == {'node01': 'A', 'node02': 'C', 'node03': 'A', 'node04': 'B'}
    for name, node in found['nodes'].items():
        assert node['listed_bucket'] == node['bucket'] == run[name]['bucket'], name
        assert node['svgs'] == len(node['planned']), name
    assert [found['nodes'][name]['svgs'] for name in sorted(run)] == [4, 3, 4, 0]
    assert found['run_figures'] == ['peer_heatmap'] and found['external'] == [] and found['requests'] == []
    assert os.path.getsize(SCREENSHOT) > 10000


def without_policy(html):
    """The page without its Content-Security-Policy (which would stop what the checks below must see)."""
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">', html).group(0)
    return html.replace(policy, '')


def with_script(html, script):
    """The page with ``script`` at its end, allowed by its hash in the page's policy (the test's click, not the node's)."""
    digest = "'sha256-%s'" % base64.b64encode(hashlib.sha256(script.encode('utf-8')).digest()).decode('ascii')
    html = html.replace('script-src ', 'script-src %s ' % digest, 1)
    return html.replace('</body>', '<script>%s</script></body>' % script)


def test_the_check_sees_a_page_that_misses_a_chart(reports, tmp_path):
    shutil.copytree(str(reports / '20261201T100000Z'), str(tmp_path / 'run'))
    page = tmp_path / 'run' / 'index.html'
    html = without_policy(page.read_text())
    start = html.index('<figure class="chart" data-chart="gdr_bw">', html.index('id="node-node02"'))
    html = html[:start] + html[html.index('</figure>', start) + len('</figure>'):]
    page.chmod(0o644)
    page.write_text(html.replace('</main>', '<img src="https://cdn.example.com/x.png"></main>'))
    found = check_report_in_browser(str(tmp_path / 'run'))
    assert any(p.startswith('node02: the section has charts') for p in found['problems']), found['problems']
    assert 'https://cdn.example.com/x.png' in found['external']
    # The network log shows the request the page tried (and the resolver rules refused).
    assert found['requests'] == ['https://cdn.example.com/x.png']
    assert any(p.startswith('the page made network requests') for p in found['problems'])


def test_the_overview_sorts_by_a_clicked_column(reports, tmp_path):
    html = (reports / '20261201T100000Z' / 'index.html').read_text()
    # Click the node header twice; the page title records the row order after each click.
    click = ("var th = document.querySelectorAll('#overview th.sortable')[0];"
             "function order() { return Array.prototype.map.call(document.querySelectorAll('#overview tbody tr'),"
             " function (row) { return row.dataset.node; }).join(','); }"
             "var first = order(); th.click(); var up = order(); th.click(); document.title = [first, up, order()].join('|');")
    page = tmp_path / 'index.html'
    page.write_text(with_script(html, click))
    dom, requests = run_chromium(['--dump-dom', 'file://%s' % page], 60)
    title = re.search(r'<title>([^<]*)</title>', dom).group(1)
    assert title == 'node02,node04,node01,node03|node01,node02,node03,node04|node04,node03,node02,node01'
    assert requests == []


def test_the_pages_policy_runs_no_script_and_loads_nothing_it_did_not_write(reports, tmp_path):
    # What a node's text would be if it ever got past the escaping: a script, an inline handler, an image from elsewhere.
    html = (reports / '20261201T100000Z' / 'index.html').read_text()
    injected = ('<script>document.title = "script ran";</script><img src="https://cdn.example.com/x.png" '
                'onerror="document.title = \'handler ran\'"><div style="display:none" id="styled">x</div>')
    page = tmp_path / 'index.html'
    page.write_text(html.replace('</main>', injected + '</main>'))
    dom, requests = run_chromium(['--dump-dom', 'file://%s' % page], 60)
    assert re.search(r'<title>([^<]*)</title>', dom).group(1) == 'gpufleet.netval run 20261201T100000Z'
    assert requests == [] and dom.count('<section class="node ') == 4
