"""Load a run's index.html in headless chromium and say what the rendered page shows.

``check_report_in_browser(run_dir)`` is for any reports/<run>/ folder (the quality test's mixed run, a lab run's):
chromium renders the page with every host name mapped to nowhere and its network log on; the rendered DOM is read
back (``--dump-dom``) and compared with the run's own node results: every node of summary.json listed with its
bucket, every node section holding the charts html_report.charts_for plans, no src or href outside the page and
its run folder, and no request the page made in the network log.  A screenshot is kept when asked for.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import html_report

CHROMIUM = 'chromium'
_SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')


class PageOutline(HTMLParser):
    """What a page shows: overview rows, node sections with their figures and SVGs, run figures, every link and source."""

    def __init__(self):
        HTMLParser.__init__(self)
        self.rows = {}
        self.sections = {}
        self.run_figures = []
        self.links = []
        self.sources = []
        self.scripts = []
        self._section = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == 'tr' and 'data-node' in attrs:
            self.rows[attrs['data-node']] = attrs.get('data-bucket')
        if tag == 'section' and 'data-node' in attrs:
            self._section = attrs['data-node']
            self.sections[self._section] = {'bucket': attrs.get('data-bucket'), 'planned': int(attrs.get('data-charts') or -1),
                                            'figures': [], 'svgs': 0}
        if tag == 'figure':
            (self.sections[self._section]['figures'] if self._section else self.run_figures).append(attrs.get('data-chart'))
        if tag == 'svg' and self._section:
            self.sections[self._section]['svgs'] += 1
        if tag == 'a':
            self.links.append(attrs.get('href'))
        if tag == 'script':
            self.scripts.append(attrs.get('src'))
        for key in ('src', 'href', 'xlink:href', 'action', 'poster', 'srcset'):
            if attrs.get(key):
                self.sources.append(attrs[key])

    def handle_endtag(self, tag):
        if tag == 'section':
            self._section = None


def outline(html):
    parser = PageOutline()
    parser.feed(html)
    parser.close()
    return parser


def external_sources(html):
    """Every src/href of the page that leaves it: a URL with a scheme, or one starting with // (fragments and relative paths stay)."""
    found = outline(html)
    outside = [s for s in found.sources if _SCHEME.match(s) or s.startswith('//')]
    outside.extend(re.findall(r'(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s"\'<>)]*', html))
    outside.extend(re.findall(r'url\((?!#)[^)]*\)|@import[^;]*', html))
    return sorted(set(outside))


def page_requests(net_log):
    """URLs the page asked the network for, from a chromium --log-net-log file.

    Chromium's own background requests (updates, sync) have no page origin ('not an origin'); the page's carry its
    file:// origin in their network isolation key.
    """
    types = dict((number, name) for name, number in net_log['constants']['logEventTypes'].items())
    urls = []
    for event in net_log.get('events') or []:
        params = event.get('params') or {}
        if types.get(event.get('type')) != 'URL_REQUEST_START_JOB' or not params.get('url'):
            continue
        if params.get('initiator') != 'not an origin' or 'file://' in str(params.get('network_isolation_key')):
            urls.append(params['url'])
    return sorted(set(urls))


def run_chromium(args, timeout):
    """Run headless chromium with no way out (every host name resolves to nothing); returns (stdout, page requests)."""
    binary = shutil.which(CHROMIUM)
    if binary is None:
        raise AssertionError('chromium is missing: the report page cannot be checked in a browser '
                             '(apt-get install chromium; make test installs it)')
    scratch = tempfile.mkdtemp(prefix='netval-chromium-')
    net_log = os.path.join(scratch, 'net-log.json')
    try:
        argv = [binary, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions',
                '--disable-background-networking', '--disable-component-update', '--disable-sync',
                '--host-resolver-rules=MAP * ~NOTFOUND', '--user-data-dir=%s' % os.path.join(scratch, 'profile'),
                '--log-net-log=%s' % net_log] + list(args)
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, check=False)
        if proc.returncode != 0:
            raise AssertionError('chromium %s exited %d: %s' % (' '.join(args), proc.returncode, proc.stderr[-2000:]))
        with open(net_log, encoding='utf-8') as handle:
            requests = page_requests(json.load(handle))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return proc.stdout, requests


def check_report_in_browser(run_dir, screenshot=None, timeout=60):
    """Render ``run_dir``/index.html headless and compare the rendered DOM with the run's node results.

    Returns {nodes: {name: {bucket, listed_bucket, figures, svgs, planned}}, expected_buckets, run_figures,
    planned_run_figures, external, requests, screenshot, problems}: ``problems`` lists every difference in plain sentences
    (empty when the page shows what it should).  ``screenshot``: a PNG path to write (1400x3000).
    """
    run_dir = os.path.abspath(str(run_dir))
    page = os.path.join(run_dir, 'index.html')
    if not os.path.isfile(page):
        raise AssertionError('%s is missing: validation_report did not write the page' % page)
    url = 'file://' + page
    dom, requests = run_chromium(['--dump-dom', url], timeout)
    if screenshot:
        os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
        run_chromium(['--screenshot=%s' % os.path.abspath(screenshot), '--window-size=1400,3000', '--hide-scrollbars', url], timeout)
    with open(os.path.join(run_dir, 'summary.json'), encoding='utf-8') as handle:
        expected = dict((name, entry['bucket']) for name, entry in json.load(handle)['nodes'].items())
    results = {}
    for name in expected:
        with open(os.path.join(run_dir, 'nodes', '%s.json' % name), encoding='utf-8') as handle:
            results[name] = json.load(handle)
    found = outline(dom)
    problems = []
    nodes = {}
    for name in sorted(expected):
        section = found.sections.get(name) or {}
        plan = html_report.charts_for(results[name])
        nodes[name] = {'bucket': section.get('bucket'), 'listed_bucket': found.rows.get(name), 'figures': section.get('figures'),
                       'svgs': section.get('svgs'), 'planned': plan}
        if found.rows.get(name) != expected[name]:
            problems.append('%s: the overview lists bucket %r, summary.json says %s' % (name, found.rows.get(name), expected[name]))
        if not section:
            problems.append('%s: no node section in the rendered page' % name)
            continue
        if section['bucket'] != expected[name]:
            problems.append('%s: its section shows bucket %r, summary.json says %s' % (name, section['bucket'], expected[name]))
        if section['figures'] != plan or section['svgs'] != len(plan):
            problems.append('%s: the section has charts %r (%d <svg>), charts_for plans %r' % (name, section['figures'], section['svgs'], plan))
    for name in sorted(set(found.rows) - set(expected)):
        problems.append('%s is in the page but not in summary.json' % name)
    planned_run = html_report.run_charts(results)
    if found.run_figures != planned_run:
        problems.append('run charts %r, planned %r' % (found.run_figures, planned_run))
    outside = external_sources(dom)
    if outside:
        problems.append('the page refers to resources outside it: %s' % ', '.join(outside[:10]))
    if requests:
        problems.append('the page made network requests: %s' % ', '.join(requests[:10]))
    return {'nodes': nodes, 'expected_buckets': expected, 'run_figures': found.run_figures, 'planned_run_figures': planned_run,
            'external': outside, 'requests': requests, 'screenshot': screenshot, 'problems': problems}
