# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a validation run as one self-contained page (index.html) and as Markdown (summary.md).

Pure rendering over the node result dicts validation_report receives; no
Ansible import.  Charts are drawn by matplotlib, saved as SVG and embedded
inline: text stays text (``svg.fonttype: none``, the browser's own fonts),
nothing is fetched, no script or style comes from elsewhere, so the page
works from ``file://`` with no network.

What one node's section draws, in order (``charts_for(node)``; one inline
``<svg>`` per entry, inside ``<figure data-chart=KEY>``):

    rdma_bw         per-HCA host-memory RDMA (catalogue family rdma_bw), when one such figure was measured
    gdr_bw          per-HCA GPUDirect RDMA (family gdr_bw), likewise
    node_figures    the node-level throughput figures (families tcp, aggregate_bw, nccl, graded from below), likewise
    sweep:METRIC    one per metric whose tests carry message-size ``sweep`` rows
    drift           when the node has a ``history`` with figures of this run's tests

A chart of several metrics draws one panel per metric (small multiples) so
that every figure stands against its own healthy range and reject line, in
its own unit; a normalized chart would hide the unit and the margin the
contract is written in.  The run itself gets ``run_charts(nodes)``:
``peer_heatmap`` when per-HCA figures came from two peers or more.

Optional inputs the charts read beyond the verdict's fields:

    tests[].sweep   [{bytes, value}], value in the test's unit: one row per message size (perftest -a)
    history         [{timestamp, figures: {test id: value}}], oldest first: the node's baseline figures
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import hashlib
import io
import os
import re
import textwrap
import traceback
from urllib.parse import quote

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report

try:
    import matplotlib
    from matplotlib.figure import Figure
    # Node text (HCA names, peers, units) goes into the charts: drawn as plain text, never parsed as mathtext.
    HAS_MATPLOTLIB = 'text.parse_math' in matplotlib.rcParams
    MATPLOTLIB_IMPORT_ERROR = None if HAS_MATPLOTLIB else (
        'matplotlib %s cannot draw text without parsing it as mathtext (text.parse_math needs matplotlib 3.6 or later)'
        % matplotlib.__version__)
except ImportError:
    HAS_MATPLOTLIB = False
    MATPLOTLIB_IMPORT_ERROR = traceback.format_exc()
# What the page says in place of its charts when matplotlib cannot draw them.
CHARTS_MISSING = ('No charts: matplotlib (3.6 or later) is not installed where this report was written, normally the controller; '
                  'install it there (pip install matplotlib) and re-run to draw them. Every figure is in the tables below and in '
                  'the nodes/*.json files.')

STATUS_COLOURS = {
    'healthy': '#2e7d32',
    'marginal': '#ef8f00',
    'reject': '#c62828',
    'unknown': '#9e9e9e',
    'info': '#607d8b',
}
BAND_COLOUR = '#2e7d32'
REJECT_COLOUR = '#c62828'
BUCKET_ORDER = {'C': 0, 'B': 1, 'A': 2}
PER_HCA_FAMILIES = ('rdma_bw', 'gdr_bw')
FAMILY_TITLES = {
    'rdma_bw': 'Host-memory RDMA per HCA',
    'gdr_bw': 'GPUDirect RDMA per HCA',
}
# Node-level figures: one figure per node, graded from below (throughput, not time or error counts).
NODE_FAMILIES = ('tcp', 'aggregate_bw', 'nccl')
# A figure that moved less than this fraction over the history is drawn as background in the drift chart.
DRIFT_STEADY = 0.01
_SVG_RC = {'svg.fonttype': 'none', 'svg.hashsalt': 'gpufleet.netval', 'font.size': 9, 'text.parse_math': False,
           'axes.spines.top': False, 'axes.spines.right': False}


class ChartError(report.ReportError):
    """A node result cannot be charted; the message names the field and what was expected."""


def _type_name(value):
    return 'null' if value is None else type(value).__name__


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _family(test):
    return catalogue.family(test.get('metric'))


def _charted(test):
    """Whether a test's figure is drawn in a chart (its value must then be a number or null)."""
    family = _family(test)
    return family in PER_HCA_FAMILIES or (family in NODE_FAMILIES and _graded_from_below(test)) or bool(test.get('sweep'))


def _graded_from_below(test):
    threshold = test.get('threshold')
    return isinstance(threshold, dict) and 'reject_below' in threshold


def _test_problems(at, test):
    problems = []
    if not _charted(test):
        return problems
    if test.get('value') is not None and not _is_number(test['value']):
        problems.append('%s.value must be a number or null, got %r' % (at, test['value']))
    threshold = test.get('threshold')
    if threshold is not None:
        errors = verdict.threshold_errors({test.get('metric') or '?': threshold})
        problems.extend('%s.threshold: %s' % (at, error) for error in errors)
    sweep = test.get('sweep')
    if sweep is not None:
        if not isinstance(sweep, list):
            problems.append('%s.sweep must be a list of {bytes, value}, got %s' % (at, _type_name(sweep)))
        else:
            for index, row in enumerate(sweep):
                if not isinstance(row, dict) or not _is_number(row.get('bytes')) or row['bytes'] <= 0 or not _is_number(row.get('value')):
                    problems.append('%s.sweep[%d] must be {bytes: a positive number, value: a number}, got %r' % (at, index, row))
    return problems


def node_chart_problems(name, node):
    """What keeps one node result from being charted: sentences naming the field (empty when fine).

    Checks only what the charts read beyond report.node_problems: figures, thresholds, sweep rows, history, evidence.
    """
    where = 'nodes.%s' % name
    if not isinstance(node, dict):
        return []
    problems = []
    for field in ('tests', 'first_peer_tests'):
        entries = node.get(field)
        if entries is None:
            continue
        if not isinstance(entries, list):
            problems.append('%s.%s must be a list, got %s' % (where, field, _type_name(entries)))
            continue
        for index, test in enumerate(entries):
            at = '%s.%s[%d]' % (where, field, index)
            if not isinstance(test, dict):
                problems.append('%s must be a dict (a test), got %s' % (at, _type_name(test)))
                continue
            problems.extend(_test_problems(at, test))
    evidence = node.get('evidence')
    if evidence is not None and not isinstance(evidence, str):
        problems.append('%s.evidence must be text (the bundle folder), got %s' % (where, _type_name(evidence)))
    history = node.get('history')
    if history is not None:
        if not isinstance(history, list):
            problems.append('%s.history must be a list of {timestamp, figures}, got %s' % (where, _type_name(history)))
            history = []
        for index, entry in enumerate(history):
            at = '%s.history[%d]' % (where, index)
            if not isinstance(entry, dict) or not isinstance(entry.get('timestamp'), str) or not isinstance(entry.get('figures'), dict):
                problems.append('%s must be {timestamp: text, figures: {test id: number}}, got %r' % (at, entry))
                continue
            for key, value in sorted(entry['figures'].items(), key=lambda kv: str(kv[0])):
                if value is not None and not _is_number(value):
                    problems.append('%s.figures[%r] must be a number or null, got %r' % (at, key, value))
    return problems


def check_nodes(nodes):
    """Raise ReportError naming every field of ``nodes`` that the page or the Markdown cannot render."""
    report.check_nodes(nodes)
    problems = []
    for name in sorted(nodes, key=str):
        problems.extend(node_chart_problems(name, nodes[name]))
    if problems:
        raise ChartError('; '.join(problems))


# ---------------------------------------------------------------- what is drawn

def _tests(node, field='tests'):
    return [t for t in node.get(field) or [] if isinstance(t, dict)]


def _limits(threshold):
    """(healthy low, healthy high, reject line, 'below'|'above'|None) of a threshold, None where it says nothing."""
    if not isinstance(threshold, dict):
        return None, None, None, None
    low, high = (threshold.get('healthy') or [None, None])[:2]
    if 'reject_below' in threshold:
        return low, high, threshold['reject_below'], 'below'
    if 'reject_above' in threshold:
        return low, high, threshold['reject_above'], 'above'
    return low, high, None, None


def _metrics_in_order(tests):
    seen = []
    for test in tests:
        if test.get('metric') not in seen:
            seen.append(test.get('metric'))
    return seen


def _measured(tests):
    return [t for t in tests if _is_number(t.get('value'))]


def family_tests(node, family):
    """The node's tests of one catalogue family (final figures: after a re-test, the second peer's)."""
    return [t for t in _tests(node) if _family(t) == family]


def node_figure_tests(node):
    return [t for t in _tests(node) if _family(t) in NODE_FAMILIES and _graded_from_below(t)]


def sweep_metrics(node):
    return _metrics_in_order([t for t in _tests(node) if t.get('sweep')])


def _history_ids(node):
    current = set(t.get('id') for t in _tests(node) if _floor(t))
    ids = []
    for entry in node.get('history') or []:
        for key in sorted(entry.get('figures') or {}):
            if key in current and key not in ids and _is_number(entry['figures'][key]):
                ids.append(key)
    return ids


def charts_for(node):
    """The charts of one node's section, in page order (keys as in the module docstring); len() is the SVG count."""
    charts = [family for family in PER_HCA_FAMILIES if _measured(family_tests(node, family))]
    if _measured(node_figure_tests(node)):
        charts.append('node_figures')
    charts.extend('sweep:%s' % metric for metric in sweep_metrics(node))
    if _history_ids(node):
        charts.append('drift')
    return charts


def _floor(test):
    """The healthy floor of a per-HCA or node figure graded from below, or None."""
    low, _high, _reject, side = _limits(test.get('threshold'))
    return low if side == 'below' and _is_number(low) and low > 0 else None


def peer_fractions(nodes):
    """{node: {peer: mean of per-HCA figure / healthy floor}} over tests and first_peer_tests."""
    table = {}
    for name in sorted(nodes):
        sums = {}
        for test in _tests(nodes[name]) + _tests(nodes[name], 'first_peer_tests'):
            floor = _floor(test)
            if _family(test) in PER_HCA_FAMILIES and test.get('peer') and floor and _is_number(test.get('value')):
                sums.setdefault(test['peer'], []).append(test['value'] / floor)
        table[name] = dict((peer, sum(values) / len(values)) for peer, values in sums.items())
    return table


def run_charts(nodes):
    """The run-level charts: ['peer_heatmap'] when per-HCA figures came from two peers or more, else []."""
    peers = set(peer for row in peer_fractions(nodes).values() for peer in row)
    return ['peer_heatmap'] if len(peers) > 1 else []


# ---------------------------------------------------------------- matplotlib

_ID = re.compile(r'\bid="([^"]+)"')
_STYLE_ATTRIBUTE = re.compile(r' style="([^"]*)"')
_STYLE_SHEET = re.compile(r'\s*<style type="text/css">\*\{([^}<]*)\}</style>')


_FONT_SHORTHAND = re.compile(r'(?:(?P<style>italic|oblique) )?(?:(?P<weight>bold|light|\d00) )?(?P<size>[\d.]+px) (?P<family>.+)')


def _presentation_attributes(declarations):
    """CSS declarations ('fill: #fff; stroke-width: 0.8') as SVG presentation attributes (' fill="#fff" stroke-width="0.8"').

    matplotlib before 3.8 writes text's font as the 'font' shorthand, which is no attribute: it becomes its parts."""
    pairs = []
    for name, value in (part.split(':', 1) for part in declarations.split(';') if ':' in part):
        name, value = name.strip(), value.strip()
        font = _FONT_SHORTHAND.fullmatch(value) if name == 'font' else None
        if font:
            pairs.extend(('font-%s' % part, font.group(part)) for part in ('style', 'weight', 'size', 'family') if font.group(part))
        else:
            pairs.append((name, value))
    return ''.join(' %s="%s"' % pair for pair in pairs)


def _svg(figure, prefix):
    """The figure as an inline <svg> element: no XML prolog, no metadata, no namespace URLs, ids unique to ``prefix``.

    No style attribute or style sheet either: matplotlib's become presentation attributes (every property it writes is
    one), so the page's Content-Security-Policy allows no inline style but its own style sheet.
    """
    buffer = io.StringIO()
    figure.savefig(buffer, format='svg', metadata={'Date': None, 'Creator': None, 'Format': None, 'Type': None})
    text = buffer.getvalue()
    text = text[text.index('<svg'):]
    text = re.sub(r'<metadata>.*?</metadata>\s*', '', text, flags=re.S)
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', '', text)
    defaults = ''.join(_presentation_attributes(rule) for rule in _STYLE_SHEET.findall(text))
    text = _STYLE_SHEET.sub('', text)
    text = _STYLE_ATTRIBUTE.sub(lambda match: _presentation_attributes(match.group(1)), text)
    # The style sheet's '*' rule set these for every element; inherited from the root they apply where nothing overrides them.
    text = text.replace('<svg ', '<svg%s ' % defaults, 1)
    ids = _ID.findall(text)
    for ident in ids:
        text = text.replace('id="%s"' % ident, 'id="%s-%s"' % (prefix, ident))
        text = text.replace('#%s)' % ident, '#%s-%s)' % (prefix, ident)).replace('"#%s"' % ident, '"#%s-%s"' % (prefix, ident))
    return text.replace('<svg ', '<svg role="img" ', 1)


def _short_label(metric, width=70):
    """The catalogue's label of a metric, wrapped to ``width`` characters a line."""
    return textwrap.fill(catalogue.label(metric), width)


def _draw_limits(axes, test_threshold, top):
    """Shade the healthy range and draw the reject line of one metric on ``axes``."""
    low, high, reject, side = _limits(test_threshold)
    if low is None and high is None:
        return
    band_low = low if low is not None else 0
    band_high = high if high is not None else top
    axes.axhspan(band_low, band_high, color=BAND_COLOUR, alpha=0.13, lw=0, label='healthy range')
    edge = low if side == 'below' else high
    if _is_number(edge):
        # The healthy edge over the bars: the band alone hides behind bars that reach it.
        axes.axhline(edge, color=BAND_COLOUR, lw=1.0, zorder=3, label='healthy %s %s' % ('>=' if side == 'below' else '<=', _fmt(edge)))
    if reject is not None:
        axes.axhline(reject, color=REJECT_COLOUR, ls='--', lw=1.2, label='reject %s %s' % ('<' if side == 'below' else '>', _fmt(reject)))


def _fmt(value):
    return '%.4g' % value if _is_number(value) else str(value)


def _top(values, threshold):
    low, high, reject, _side = _limits(threshold)
    candidates = [v for v in list(values) + [low, high, reject] if _is_number(v)]
    return (max(candidates) if candidates else 1.0) * 1.15 or 1.0


def _bar_text(test):
    """The label over a bar: the figure, and how far under the healthy floor it is (what a provider's engineer asks first)."""
    if not _is_number(test.get('value')):
        return 'not\nmeasured'
    floor = _floor(test)
    if floor and test['value'] < floor:
        return '%s\n%+.0f%%' % (_fmt(test['value']), (test['value'] / floor - 1.0) * 100)
    return _fmt(test['value'])


def _bar_panel(axes, tests, metric, first_peer, first_peer_name):
    """One metric's figures as bars (one per subject), coloured by status, against its range and reject line."""
    subjects = [t.get('subject') or '?' for t in tests]
    values = [t['value'] if _is_number(t.get('value')) else 0 for t in tests]
    colours = [STATUS_COLOURS.get(t.get('status'), STATUS_COLOURS['unknown']) for t in tests]
    threshold = next((t.get('threshold') for t in tests if t.get('threshold')), None)
    top = _top(values + [first_peer.get(t.get('id')) for t in tests], threshold)
    _draw_limits(axes, threshold, top)
    positions = list(range(len(tests)))
    axes.bar(positions, values, color=colours, width=0.62, zorder=2)
    for position, test, value in zip(positions, tests, values):
        axes.text(position, value + top * 0.01, _bar_text(test), ha='center', va='bottom', fontsize=7.5, zorder=3)
    earlier = [(p, first_peer[t.get('id')]) for p, t in zip(positions, tests) if _is_number(first_peer.get(t.get('id')))]
    if earlier:
        axes.scatter([p for p, _v in earlier], [v for _p, v in earlier], marker='_', s=260, linewidths=2.2, color='#263238', zorder=4,
                     label='first peer (%s)' % (first_peer_name or '?'))
    axes.set_xticks(positions)
    axes.set_xticklabels(subjects, rotation=30 if len(subjects) > 6 else 0, ha='right' if len(subjects) > 6 else 'center')
    axes.set_ylim(0, top)
    axes.set_ylabel(catalogue.unit(metric) if metric in catalogue.METRICS else '')
    axes.set_title(_short_label(metric), fontsize=9, loc='left')
    axes.grid(axis='y', alpha=0.25, zorder=0)
    axes.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)


def _family_chart(node, family, prefix):
    tests = family_tests(node, family)
    first_peer = dict((t.get('id'), t.get('value')) for t in _tests(node, 'first_peer_tests') if _family(t) == family)
    metrics = [m for m in _metrics_in_order(tests) if _measured([t for t in tests if t.get('metric') == m])]
    figure = Figure(figsize=(7.6, 2.5 * len(metrics)), layout='constrained')
    for index, metric in enumerate(metrics):
        _bar_panel(figure.add_subplot(len(metrics), 1, index + 1), [t for t in tests if t.get('metric') == metric], metric, first_peer,
                   node.get('first_peer'))
    figure.suptitle(FAMILY_TITLES[family], fontsize=10, x=0.01, ha='left', fontweight='bold')
    return _svg(figure, prefix)


def _node_figures_chart(node, prefix):
    tests = _measured(node_figure_tests(node))
    figure = Figure(figsize=(7.6, 2.4), layout='constrained')
    for index, test in enumerate(tests):
        axes = figure.add_subplot(1, len(tests), index + 1)
        top = _top([test['value']], test.get('threshold'))
        _draw_limits(axes, test.get('threshold'), top)
        axes.bar([0], [test['value']], color=STATUS_COLOURS.get(test.get('status'), STATUS_COLOURS['unknown']), width=0.5, zorder=2)
        axes.text(0, test['value'] + top * 0.01, _bar_text(test), ha='center', va='bottom', fontsize=8, zorder=3)
        axes.set_xlim(-0.8, 0.8)
        axes.set_ylim(0, top)
        axes.set_xticks([0])
        axes.set_xticklabels([test.get('subject') or ''])
        axes.set_ylabel(test.get('unit') or catalogue.unit(test['metric']))
        axes.set_title(_short_label(test['metric'], 28), fontsize=8.5, loc='left')
        axes.grid(axis='y', alpha=0.25, zorder=0)
    figure.suptitle('Node-level throughput', fontsize=10, x=0.01, ha='left', fontweight='bold')
    return _svg(figure, prefix)


def _sweep_chart(node, metric, prefix):
    tests = [t for t in _tests(node) if t.get('metric') == metric and t.get('sweep')]
    figure = Figure(figsize=(7.6, 2.8), layout='constrained')
    axes = figure.add_subplot(1, 1, 1)
    for test in tests:
        rows = sorted(test['sweep'], key=lambda row: row['bytes'])
        axes.plot([r['bytes'] for r in rows], [r['value'] for r in rows], marker='o', ms=3, lw=1.2, label=test.get('subject') or '?')
    low, _high, reject, side = _limits(tests[0].get('threshold'))
    if _is_number(low):
        axes.axhline(low, color=BAND_COLOUR, ls=':', lw=1.2, label='healthy floor %s' % _fmt(low))
    if _is_number(reject) and side == 'below':
        axes.axhline(reject, color=REJECT_COLOUR, ls='--', lw=1.2, label='reject < %s' % _fmt(reject))
    axes.set_xscale('log', base=2)
    axes.set_xlabel('message size (bytes)')
    axes.set_ylabel(catalogue.unit(metric) if metric in catalogue.METRICS else '')
    axes.set_title('Message-size sweep: %s' % _short_label(metric), fontsize=10, loc='left', fontweight='bold')
    axes.grid(alpha=0.25)
    axes.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(figure, prefix)


def _drift_chart(node, prefix):
    """Each figure over time as a fraction of its healthy floor (figures differ in unit; the floor is what the contract says)."""
    ids = _history_ids(node)
    current = dict((t.get('id'), t) for t in _tests(node))
    history = list(node.get('history') or [])
    stamps = [entry['timestamp'] for entry in history] + [node.get('timestamp') or 'this run']
    figure = Figure(figsize=(7.6, 2.8), layout='constrained')
    axes = figure.add_subplot(1, 1, 1)
    steady_label = 'steady figures (within %d%% of the first)' % int(DRIFT_STEADY * 100)
    for ident in ids:
        floor = _floor(current[ident])
        points = [(i, entry['figures'].get(ident)) for i, entry in enumerate(history)] + [(len(history), current[ident].get('value'))]
        points = [(i, v / floor) for i, v in points if _is_number(v)]
        xs, ys = [p for p, _v in points], [v for _p, v in points]
        if max(ys) - min(ys) <= DRIFT_STEADY * ys[0]:
            # Only figures that moved get a colour and a legend entry: 16 steady lines would hide the one that drifted.
            axes.plot(xs, ys, color='#b0bec5', lw=0.8, label=steady_label)
            steady_label = None
        else:
            axes.plot(xs, ys, marker='o', ms=3.5, lw=1.6, label=ident)
    axes.axhspan(1.0, axes.get_ylim()[1] if axes.get_ylim()[1] > 1.0 else 1.1, color=BAND_COLOUR, alpha=0.1, lw=0)
    axes.axhline(1.0, color=BAND_COLOUR, ls=':', lw=1.2, label='healthy floor')
    axes.set_xticks(list(range(len(stamps))))
    axes.set_xticklabels(stamps, rotation=20, ha='right', fontsize=7)
    axes.set_ylabel('fraction of healthy floor')
    axes.set_title('Figures over time against the baseline history', fontsize=10, loc='left', fontweight='bold')
    axes.grid(alpha=0.25)
    axes.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(figure, prefix)


def _heatmap_chart(nodes, prefix):
    table = peer_fractions(nodes)
    names = [name for name in _ordered(nodes) if table[name]]
    peers = sorted(set(peer for row in table.values() for peer in row))
    figure = Figure(figsize=(max(3.6, 1.1 * len(peers) + 2.2), max(1.6, 0.32 * len(names) + 1.0)), layout='constrained')
    axes = figure.add_subplot(1, 1, 1)
    grid = [[table[name].get(peer, float('nan')) for peer in peers] for name in names]
    # pcolormesh, not imshow: imshow would embed a raster image in the SVG.
    image = axes.pcolormesh([c - 0.5 for c in range(len(peers) + 1)], [r - 0.5 for r in range(len(names) + 1)], grid,
                            cmap='RdYlGn', vmin=0.5, vmax=1.1, edgecolors='white', linewidth=1.5)
    axes.invert_yaxis()
    for row, name in enumerate(names):
        for column, peer in enumerate(peers):
            if peer in table[name]:
                axes.text(column, row, '%.2f' % table[name][peer], ha='center', va='center', fontsize=7.5)
    axes.set_xticks(list(range(len(peers))))
    axes.set_xticklabels(peers)
    axes.set_yticks(list(range(len(names))))
    axes.set_yticklabels(names)
    axes.set_xlabel('peer')
    scale = figure.colorbar(image, ax=axes, label='x healthy floor', shrink=0.9)
    # A colour bar of many steps is rasterized by default: keep it vector, the page holds no images.
    scale.solids.set_rasterized(False)
    return _svg(figure, prefix)


def _chart_svg(node, key, prefix):
    """One chart's SVG; for ``peer_heatmap`` ``node`` is the run's nodes."""
    if key == 'peer_heatmap':
        return _heatmap_chart(node, prefix)
    if key in PER_HCA_FAMILIES:
        return _family_chart(node, key, prefix)
    if key == 'node_figures':
        return _node_figures_chart(node, prefix)
    if key.startswith('sweep:'):
        return _sweep_chart(node, key[len('sweep:'):], prefix)
    return _drift_chart(node, prefix)


class ChartFailure(object):
    """A chart that could not be drawn: why (the exception, as text), in place of its SVG."""

    def __init__(self, why):
        self.why = why


def _draw_one(node, key, prefix):
    """The chart's SVG, or a ChartFailure: one node's chart never stops another node's."""
    try:
        return _chart_svg(node, key, prefix)
    except Exception as exc:  # pylint: disable=broad-except
        return ChartFailure('cannot draw the %s chart: %s: %s' % (key, type(exc).__name__, exc))


def _draw_charts(jobs):
    """The SVG (or ChartFailure) of every (node, key, prefix) in ``jobs``, in order, one after another.

    Not in forked workers: the report runs inside an Ansible worker, a fork of a process with threads, and a fork of it
    can inherit a lock another thread held (Python 3.12 and later warn of it; on 3.13 a chart worker hung on one).
    """
    return [_draw_one(*job) for job in jobs]


def draw_charts(nodes):
    """({name: [(key, svg)]}, {name: why}): every node's charts (charts_for), and the nodes one of whose charts could not
    be drawn, with the reason.  ({}, {}) when matplotlib cannot draw (HAS_MATPLOTLIB): the page says so instead."""
    if not HAS_MATPLOTLIB:
        return {}, {}
    order = _ordered(nodes)
    planned, failed = {}, {}
    for name in order:
        try:
            planned[name] = charts_for(nodes[name])
        except Exception as exc:  # pylint: disable=broad-except
            planned[name], failed[name] = [], 'cannot plan the charts: %s: %s' % (type(exc).__name__, exc)
    jobs = [(nodes[name], key, 'n%dc%d' % (index, number)) for index, name in enumerate(order) for number, key in enumerate(planned[name])]
    with matplotlib.rc_context(_SVG_RC):
        drawings = iter(_draw_charts(jobs))
    drawn = {}
    for name in order:
        drawn[name] = [(key, next(drawings)) for key in planned[name]]
        failures = [svg.why for _key, svg in drawn[name] if isinstance(svg, ChartFailure)]
        if failures:
            failed[name] = '; '.join(failures)
    return drawn, failed


def _heatmap(nodes):
    """The run's peer heatmap figure element, '' when there is none or it cannot be drawn (it is about peers, not one node)."""
    if not HAS_MATPLOTLIB or not run_charts(nodes):
        return ''
    with matplotlib.rc_context(_SVG_RC):
        svg = _draw_one(nodes, 'peer_heatmap', 'run')
    if isinstance(svg, ChartFailure):
        return '<p class="none">The per-HCA bandwidth by peer could not be drawn (%s).</p>' % _e(svg.why)
    return ('<section class="run" id="peers"><h2>Per-HCA bandwidth by peer</h2>'
            '<p class="meta">Mean of each node\'s per-HCA figures from that peer, as a fraction of the healthy floor: '
            'a peer that is low for every node is the suspect, not the nodes.</p>'
            '<figure class="chart" data-chart="peer_heatmap">%s</figure></section>' % svg)


# ---------------------------------------------------------------- page

def _e(value):
    """HTML-escaped text of any value."""
    text = '' if value is None else str(value)
    return text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;').replace('"', '&quot;').replace("'", '&#39;')


def _ordered(nodes):
    """Node names, bucket C first, then B, then A; by name within a bucket."""
    return sorted(nodes, key=lambda name: (BUCKET_ORDER.get(nodes[name].get('bucket'), 3), name))


def _cause_texts(node):
    return [c['detail'] if isinstance(c, dict) else str(c) for c in node.get('causes') or []]


def _cause_names(node):
    return [c['cause'] if isinstance(c, dict) else str(c) for c in node.get('causes') or []]


def _href(path):
    return _e(quote(path.replace(os.sep, '/'), safe='/._-@+~'))


def evidence_href(node, run_dir):
    """The node's evidence bundle folder relative to the run folder (a link that works from file://), or None."""
    evidence = node.get('evidence')
    if not evidence:
        return None
    path = os.path.relpath(evidence, run_dir) if os.path.isabs(evidence) and os.path.isabs(run_dir) else evidence
    return path.rstrip('/') + '/'


def node_links(node, run_dir):
    """[(label, relative href)] of the node's files: evidence bundle, vendor letter, result JSON and Markdown."""
    name = node['node']
    links = []
    evidence = evidence_href(node, run_dir)
    if evidence:
        links.append(('evidence bundle', evidence))
    if node.get('bucket') == 'C':
        links.append(('vendor letter', 'letters/%s.txt' % name))
    links.append(('result JSON', 'nodes/%s.json' % name))
    links.append(('node summary', 'nodes/%s.md' % name))
    return links


def _bad_entries(node):
    entries = [e for e in list(node.get('findings') or []) + _tests(node) if isinstance(e, dict)]
    return [e for e in entries if e.get('status') in ('reject', 'marginal', 'unknown')]


def _entry_name(entry):
    return entry.get('check') or (catalogue.label(entry['metric']) if entry.get('metric') else entry.get('id'))


def _entry_measured(entry):
    return entry.get('as_printed') or entry.get('error') or entry.get('actual') or entry.get('detail') or ''


def _counts(node):
    counts = node.get('counts') or {}
    if counts:
        return counts
    statuses = [e.get('status') for e in list(node.get('findings') or []) + _tests(node) if isinstance(e, dict)]
    return dict((status, statuses.count(status)) for status in ('healthy', 'marginal', 'reject', 'unknown'))


_STYLE = '''
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1c2329;background:#f4f6f8}
header{background:#1f2a33;color:#fff;padding:18px 28px}
header h1{margin:0;font-size:21px;font-weight:600}
header p{margin:4px 0 0;color:#b8c4cc}
main{padding:18px 28px;max-width:1280px}
.tiles{display:flex;gap:12px;margin:0 0 18px}
.tile{background:#fff;border-radius:8px;padding:10px 18px;border-left:6px solid #999;min-width:150px}
.tile b{font-size:26px;display:block}
.tile.A,.badge.A{border-color:#2e7d32}.tile.B,.badge.B{border-color:#ef8f00}.tile.C,.badge.C{border-color:#c62828}
.badge{display:inline-block;border:2px solid;border-radius:5px;padding:0 7px;font-weight:700;background:#fff}
.badge.A{color:#2e7d32}.badge.B{color:#b26a00}.badge.C{color:#c62828}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{padding:5px 9px;border-bottom:1px solid #e2e6ea;text-align:left;vertical-align:top}
th{background:#e9edf0;font-weight:600;white-space:nowrap}
th.sortable{cursor:pointer}th.sortable:after{content:" \\2195";color:#8a96a0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
section.node{background:#fff;border-radius:8px;margin:18px 0;padding:4px 20px 14px;border-top:6px solid #999}
section.node.A{border-top-color:#2e7d32}section.node.B{border-top-color:#ef8f00}section.node.C{border-top-color:#c62828}
section.node h2{font-size:18px;margin:12px 0 4px}
.meta{color:#56636d;margin:0 0 8px}
.causes li{margin:2px 0}.causes code{background:#f1f3f5;padding:0 4px;border-radius:3px}
.below td{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px}
.status{font-weight:600}.status.reject{color:#c62828}.status.marginal{color:#b26a00}.status.unknown{color:#6b7780}.status.healthy{color:#2e7d32}
figure.chart{margin:12px 0;overflow-x:auto}figure.chart svg{width:100%;max-width:960px;height:auto}
#peers figure.chart svg{width:auto;max-width:100%}
.links a{margin-right:14px}
details{margin-top:8px}summary{cursor:pointer;color:#36505f}
.none{color:#6b7780;font-style:italic}
.warning{background:#fff4e0;border-left:6px solid #ef8f00;padding:8px 14px;margin:0 0 18px}
'''

# Sort the overview by a column: click a header; a second click reverses. Cells sort by data-sort, else their text.
_SCRIPT = '''
document.querySelectorAll('table.sortable th.sortable').forEach(function (th, column) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var up = th.dataset.dir !== 'asc'; th.dataset.dir = up ? 'asc' : 'desc';
    var key = function (row) { var cell = row.cells[th.cellIndex]; return cell.dataset.sort || cell.textContent.trim(); };
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return up ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
'''


def _overview(nodes, run_dir):
    head = ('node', 'bucket', 'tier', 'peer', 'healthy', 'marginal', 'reject', 'unknown', 'likely causes')
    lines = ['<table class="sortable" id="overview"><thead><tr>%s</tr></thead><tbody>'
             % ''.join('<th class="sortable">%s</th>' % h for h in head)]
    for name in _ordered(nodes):
        node = nodes[name]
        counts = _counts(node)
        peer = node.get('peer') or '-'
        if node.get('retested_against'):
            peer = '%s (re-tested; first %s)' % (node['retested_against'], node.get('first_peer') or '?')
        causes = '; '.join(_e(c) for c in _cause_names(node)) or '-'
        cells = ['<td data-sort="%s"><a href="#node-%s">%s</a></td>' % (_e(name), _e(name), _e(name)),
                 '<td class="bucket" data-sort="%d"><span class="badge %s">%s</span></td>' % (
                     BUCKET_ORDER.get(node.get('bucket'), 3), _e(node.get('bucket')), _e(node.get('bucket'))),
                 '<td>%s</td>' % _e(node.get('tier') or '-'), '<td>%s</td>' % _e(peer)]
        cells.extend('<td class="num">%s</td>' % _e(counts.get(s, 0)) for s in ('healthy', 'marginal', 'reject', 'unknown'))
        cells.append('<td>%s</td>' % causes)
        lines.append('<tr data-node="%s" data-bucket="%s">%s</tr>' % (_e(name), _e(node.get('bucket')), ''.join(cells)))
    lines.append('</tbody></table>')
    return '\n'.join(lines)


def below_rows(node):
    """[(check, subject, status, measured, expected)] of what is not healthy: rejects, then marginals, then unknowns.

    Unknown figures that failed the same way become one row (a node whose tests did not run would otherwise list 46).
    """
    rows = []
    unknown = {}
    for entry in _bad_entries(node):
        if entry.get('status') == 'unknown':
            unknown.setdefault(_entry_measured(entry), []).append(entry)
            continue
        rows.append((_entry_name(entry), entry.get('subject') or '', entry['status'], _entry_measured(entry), entry.get('expected') or ''))
    rows.sort(key=lambda row: row[2] != 'reject')
    for measured, entries in unknown.items():
        if len(entries) == 1:
            rows.append((_entry_name(entries[0]), entries[0].get('subject') or '', 'unknown', measured, entries[0].get('expected') or ''))
            continue
        names = []
        for entry in entries:
            if _entry_name(entry) not in names:
                names.append(_entry_name(entry))
        rows.append((', '.join(names), '%d figures' % len(entries), 'unknown', measured, ''))
    return rows


def _below_table(node):
    rows = below_rows(node)
    if not rows:
        return '<p class="none">Every check and test is healthy.</p>'
    out = ['<table class="below"><thead><tr><th>check</th><th>subject</th><th>status</th><th>measured</th><th>expected</th></tr></thead><tbody>']
    for check, subject, status, measured, expected in rows:
        out.append('<tr><td>%s</td><td>%s</td><td class="status %s">%s</td><td>%s</td><td>%s</td></tr>' % (
            _e(check), _e(subject), _e(status), _e(status), _e(measured), _e(expected)))
    out.append('</tbody></table>')
    return '\n'.join(out)


def node_section(node, run_dir, drawn):
    """One node's section of the page; ``drawn``: its charts as [(key, svg)] (draw_charts), None when matplotlib cannot
    draw them.  A ChartFailure among them raises ChartError: that node's report is not complete."""
    failures = [svg.why for _key, svg in drawn or [] if isinstance(svg, ChartFailure)]
    if failures:
        raise ChartError('nodes.%s: %s' % (node['node'], '; '.join(failures)))
    name = node['node']
    out = ['<section class="node %s" id="node-%s" data-node="%s" data-bucket="%s" data-charts="%d">' % (
        _e(node.get('bucket')), _e(name), _e(name), _e(node.get('bucket')), len(drawn or []))]
    out.append('<h2>%s <span class="badge %s">%s</span></h2>' % (_e(name), _e(node.get('bucket')),
                                                                 _e(report.BUCKET_WORDS.get(node.get('bucket')))))
    meta = ['tier %s' % (node.get('tier_description') or node.get('tier') or '-'), 'peer %s' % (node.get('peer') or '-')]
    if node.get('retested_against'):
        meta.append('re-tested against %s after %s' % (node['retested_against'], node.get('first_peer') or 'a first peer'))
    if node.get('timestamp'):
        meta.append('validated %s' % node['timestamp'])
    out.append('<p class="meta">%s</p>' % ' &middot; '.join(_e(m) for m in meta))
    causes = node.get('causes') or []
    if causes:
        out.append('<ul class="causes">%s</ul>' % ''.join(
            '<li><code>%s</code> %s</li>' % (_e(c['cause']), _e(c['detail'])) if isinstance(c, dict) else '<li>%s</li>' % _e(c)
            for c in causes))
    out.append(_below_table(node))
    for key, svg in drawn or []:
        out.append('<figure class="chart" data-chart="%s">%s</figure>' % (_e(key), svg))
    if drawn is None and charts_for(node):
        out.append('<p class="none">Charts not drawn: see the note at the top of the page.</p>')
    elif not charts_for(node):
        out.append('<p class="none">No figure was measured, so there is nothing to chart.</p>')
    out.append('<p class="links">%s</p>' % ''.join('<a href="%s">%s</a>' % (_href(href), _e(label)) for label, href in node_links(node, run_dir)))
    out.append('</section>')
    return '\n'.join(out)


def _hash_source(text):
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode('utf-8')).digest()).decode('ascii')


# Only the page's own style sheet and script (by their hashes); nothing loaded, no form, no base, no plugin.
CONTENT_SECURITY_POLICY = ("default-src 'none'; style-src %s; script-src %s; base-uri 'none'; form-action 'none'"
                           % (_hash_source(_STYLE), _hash_source(_SCRIPT)))


def _qualification(qualification):
    """The known-good peers' qualification at the start of the run (peer_policy.qualify_peers, merged): a table, '' without peers."""
    if not qualification:
        return ''
    rows = []
    for peer, entry in sorted(qualification.items()):
        entry = entry if isinstance(entry, dict) else {}
        why = entry.get('reasons') or entry.get('notes') or []
        rows.append('<tr class="%s"><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            'A' if entry.get('qualified') else 'B', _e(peer), 'qualified' if entry.get('qualified') else 'left the pool',
            '<br>'.join(_e(text) for text in why) or '&ndash;'))
    return ('<section class="run" id="peer-qualification"><h2>Known-good peers</h2>'
            '<p class="meta">Each peer was read and graded for the nodes\' tier before it measured anyone (ports at the tier\'s rate, '
            'PCIe links, firmware, GPUs where NCCL runs); a peer that fails leaves the pool for this run.</p>'
            '<table><thead><tr><th>peer</th><th>qualification</th><th>why</th></tr></thead><tbody>%s</tbody></table></section>'
            % ''.join(rows))


def render_page(nodes, timestamp, run_dir, sections=None, qualification=None):
    """index.html of one run: the overview table, the known-good peers' qualification, the peer heatmap when several peers
    were used, one section per node.

    ``run_dir`` is where the page will be written; links to evidence are made relative to it.  ``sections``: each
    node's section (node_section), when the caller built them (validation_report builds each node's in isolation);
    else they are drawn here.  Without matplotlib (HAS_MATPLOTLIB) the page says so where the charts would be.
    Raises ReportError naming the field when ``nodes`` is malformed, ChartError when a node's chart cannot be drawn.
    """
    check_nodes(nodes)
    nodes = dict((name, dict(node, node=node.get('node') or name)) for name, node in nodes.items())
    if sections is None:
        drawn, _failed = draw_charts(nodes)
        sections = dict((name, node_section(nodes[name], run_dir, drawn.get(name) if HAS_MATPLOTLIB else None)) for name in nodes)
    buckets = [nodes[name].get('bucket') for name in nodes]
    tiles = ''.join('<div class="tile %s"><b>%d</b>%s</div>' % (b, buckets.count(b), _e(report.BUCKET_WORDS[b])) for b in ('A', 'B', 'C'))
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<meta http-equiv="Content-Security-Policy" content="%s">' % _e(CONTENT_SECURITY_POLICY),
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             '<title>gpufleet.netval run %s</title>' % _e(timestamp), '<style>%s</style></head><body>' % _STYLE,
             '<header><h1>Network validation run %s</h1><p>%d node%s &middot; buckets: A accept, B investigate, '
             'C return to provider</p></header><main>' % (_e(timestamp), len(nodes), '' if len(nodes) == 1 else 's')]
    if not HAS_MATPLOTLIB:
        parts.append('<p class="warning" id="charts-missing">%s</p>' % _e('%s (%s)' % (
            CHARTS_MISSING, (MATPLOTLIB_IMPORT_ERROR or '').strip().splitlines()[-1] if MATPLOTLIB_IMPORT_ERROR else '')))
    parts.extend(['<div class="tiles">%s</div>' % tiles, _overview(nodes, run_dir)])
    peers = _qualification(qualification)
    if peers:
        parts.append(peers)
    heatmap = _heatmap(nodes)
    if heatmap:
        parts.append(heatmap)
    parts.extend(sections[name] for name in _ordered(nodes))
    parts.append('</main><script>%s</script></body></html>' % _SCRIPT)
    return '\n'.join(parts) + '\n'


# ---------------------------------------------------------------- Markdown

_md = report.markdown_text


def summary_markdown(nodes, timestamp, run_dir, qualification=None):
    """summary.md of one run: bucket counts, a table of the nodes, the peers that failed qualification, then what is wrong
    with each node not in bucket A."""
    check_nodes(nodes)
    nodes = dict((name, dict(node, node=node.get('node') or name)) for name, node in nodes.items())
    buckets = [nodes[name].get('bucket') for name in nodes]
    lines = ['# Network validation run %s' % timestamp, '',
             ', '.join('**%d** %s' % (buckets.count(b), report.BUCKET_WORDS[b]) for b in ('A', 'B', 'C')), '',
             '| node | bucket | tier | peer | likely causes |', '| --- | --- | --- | --- | --- |']
    for name in _ordered(nodes):
        node = nodes[name]
        peer = node.get('retested_against') and '%s (re-tested; first %s)' % (node['retested_against'], node.get('first_peer')) or node.get('peer')
        lines.append('| %s |' % ' | '.join(_md(cell) for cell in (name, node.get('bucket'), node.get('tier') or '-', peer or '-',
                                                                  '; '.join(_cause_names(node)) or '-')))
    for peer, entry in sorted((qualification or {}).items()):
        if isinstance(entry, dict) and not entry.get('qualified'):
            lines.extend(['', '- known-good peer %s left the pool: %s' % (_md(peer), _md('; '.join(entry.get('reasons') or [])))])
    for name in _ordered(nodes):
        node = nodes[name]
        if node.get('bucket') == 'A':
            continue
        lines.extend(['', '## %s: bucket %s' % (_md(name), report.BUCKET_WORDS.get(node.get('bucket'))), ''])
        lines.extend('- %s' % _md(text) for text in _cause_texts(node))
        if node.get('evidence'):
            # The controller path as text too: a ticket or a chat message cannot follow a relative link.
            lines.append('- evidence bundle on the controller: %s' % _md(node['evidence'], 'code'))
        rows = below_rows(node)
        if rows:
            lines.extend(['', '| check | subject | status | measured | expected |', '| --- | --- | --- | --- | --- |'])
            lines.extend('| %s |' % ' | '.join(_md(cell) for cell in row) for row in rows)
        lines.append('')
        lines.append(', '.join('[%s](%s)' % (label, quote(href.replace(os.sep, '/'), safe='/._-@+~')) for label, href in node_links(node, run_dir)))
    return '\n'.join(lines) + '\n'
