# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts that learn from the fleet: each node's figures against its siblings', and what failing pairs share.

Two analyses of a whole run, once every node's verdict is known (validation_report, regrade_report); pure functions,
no Ansible import, no I/O.

* ``analyse(nodes, rules_by_tier, baselines)``: batch-relative grading.  A batch is one figure (metric and direction)
  on one tier and one SKU (the GPU and NIC models, ``sku_from_facts``): every graded figure of the run's nodes, per HCA
  pooled over the HCAs (a rail is a rail), and those of the accepted fleet's baselines (nodes not in the run).  Its
  centre is the median, its spread the median absolute deviation (MAD) scaled by 1.4826 to a normal distribution's
  standard deviation (Iglewicz and Hoaglin's modified z-score).  A figure is an outlier when it is worse than the
  median by more than ``max_mads`` spreads *and* by at least ``min_shortfall_pct`` percent of the median (a batch of
  identical figures has no spread; the percentage keeps a 1 % difference from counting as infinitely many spreads).
  An outlier whose figure meets the contract (healthy) is marked: ``verdict.with_fleet_outliers`` makes it marginal
  with the cause ``fleet_outlier`` (bucket B at worst, never C: a sibling comparison is no contract line).
  A batch of fewer than ``min_batch`` nodes is not judged, and says so; a batch in which more than
  ``max_outlier_share`` of the nodes would be outliers is two populations, not outliers (split), and says so too.
* ``common_elements(nodes, rules_by_tier, low)``: when several node-peer pairs fail in one run, the node, peer, peer
  HCA or rail they share, with the pairs that support it (the suspect-peer logic generalised to every element a
  pair has).  A pair is a node HCA measured against a peer HCA (``tests`` and, after a re-test, ``first_peer_tests``);
  it fails when one of its figures is marginal or reject, or is in a split batch's low group.

The rules are data (``fleet_rules`` of the tier profile, defaults in roles/tier_profile/defaults/main.yml):

    max_mads: 3.5              # an outlier is more than this many robust spreads worse than the median ...
    min_shortfall_pct: 5       # ... and at least this many percent of the median worse
    min_batch: 5               # nodes (run and accepted baselines) a batch needs before anyone is compared with it
    max_outlier_share: 0.25    # more outliers than this share of the batch's nodes: the batch is split, not judged
    common_min_share: 0.5      # an element is common when at least this share of the pairs it carried failed
    exclude_metrics: []        # metrics never compared with siblings (the lab's veth TCP, for example)
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
from collections.abc import Mapping

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.catalogue import figure_text

# The MAD of a normal distribution times this is its standard deviation (1 / the 0.75 quantile of N(0, 1)).
MAD_SCALE = 1.4826
# Figures with a spread between siblings: bandwidth and latency.  Not ping (loss is 0 or not), pause rates (0 on a
# healthy fabric, any growth is its own rule), #wrong (a count of errors) or dcgmi (pass/warn/fail).
COMPARED_FAMILIES = ('rdma_bw', 'gdr_bw', 'rdma_lat', 'tcp', 'aggregate_bw', 'nccl')
NOT_COMPARED_METRICS = ('nccl_wrong',)
# Families measured between one node HCA and one peer HCA: the pairs of the common-element analysis.
PAIR_FAMILIES = ('rdma_bw', 'gdr_bw', 'rdma_lat')
GRADED = ('healthy', 'marginal', 'reject')
FAILING = ('marginal', 'reject')

RULE_KEYS = {
    'max_mads': 'a number above 0 (robust spreads)',
    'min_shortfall_pct': 'a percentage above 0 and below 100',
    'min_batch': 'a whole number of nodes, at least 3',
    'max_outlier_share': 'a fraction above 0 and below 0.5',
    'common_min_share': 'a fraction above 0 and at most 1',
    'exclude_metrics': 'a list of metric names (or [])',
}

# Element kinds of a pair, the most specific first (a tie between two kinds names the narrower one).
KINDS = ('peer_hca', 'rail', 'peer', 'node')
KIND_WORDS = {'peer_hca': 'peer HCA', 'rail': 'rail', 'peer': 'known-good peer', 'node': 'node'}
# Pairs a common element's sentence names (its entry keeps them all).
SHOWN_PAIRS = 4


class FleetError(ValueError):
    """The fleet rules are unusable; the message names the key."""


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value):
    return value if isinstance(value, str) and value else None


def rules_errors(rules):
    """What makes a ``fleet_rules`` mapping unusable: plain sentences, empty when fine."""
    if not isinstance(rules, Mapping):
        return ['fleet_rules must be a mapping of %s, got %r' % (', '.join(sorted(RULE_KEYS)), rules)]
    errors = []
    for key in sorted(set(rules) - set(RULE_KEYS), key=str):
        errors.append('fleet_rules.%s is not a fleet rule (known: %s)' % (key, ', '.join(sorted(RULE_KEYS))))
    checks = {
        'max_mads': lambda v: _finite(v) and v > 0,
        'min_shortfall_pct': lambda v: _finite(v) and 0 < v < 100,
        'min_batch': lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 3,
        'max_outlier_share': lambda v: _finite(v) and 0 < v < 0.5,
        'common_min_share': lambda v: _finite(v) and 0 < v <= 1,
        'exclude_metrics': lambda v: isinstance(v, list) and all(isinstance(m, str) and m in catalogue.METRICS for m in v),
    }
    for key in sorted(RULE_KEYS):
        if key not in rules:
            errors.append('fleet_rules.%s is missing; it must be %s' % (key, RULE_KEYS[key]))
        elif not checks[key](rules[key]):
            errors.append('fleet_rules.%s must be %s, got %r' % (key, RULE_KEYS[key], rules[key]))
    return errors


# ---------------------------------------------------------------------------------------------------------------
# Robust statistics


def median(values):
    """The median of a non-empty list of numbers (the mean of the middle two of an even count)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('the median of no values')
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def robust_centre(values):
    """(median, MAD, spread) of a non-empty list of numbers: spread = MAD_SCALE x MAD, a normal distribution's
    standard deviation, which one slow member cannot move as it moves a mean and a standard deviation."""
    centre = median(values)
    mad = median([abs(value - centre) for value in values])
    return centre, mad, MAD_SCALE * mad


def shortfall(value, centre, better):
    """How much worse ``value`` is than ``centre``: (difference, percent of the centre); negative when it is better.
    ``better``: 'higher' (bandwidth) or 'lower' (latency)."""
    difference = centre - value if better == 'higher' else value - centre
    return difference, (100.0 * difference / centre) if centre else None


# ---------------------------------------------------------------------------------------------------------------
# SKU: what makes two nodes siblings


def sku(gpu_names, nic_models):
    """One text for a set of GPU models and RDMA NIC models ('NVIDIA H100 80GB HBM3 / MT4129 MT_0000000838'), None
    when neither is known."""
    gpus = sorted(set(name.strip() for name in gpu_names if _text(name) and name.strip()))
    nics = sorted(set(model.strip() for model in nic_models if _text(model) and model.strip()))
    if not gpus and not nics:
        return None
    return '%s / %s' % (', '.join(gpus) or 'no GPU', ', '.join(nics) or 'no RDMA NIC')


def _nic_model(hca_type, board_id):
    return ' '.join(part for part in (_text(hca_type), _text(board_id)) if part) or None


def _dict(value):
    return value if isinstance(value, Mapping) else {}


def _list(value):
    return value if isinstance(value, list) else []


def sku_from_facts(facts):
    """The SKU of a node from its preflight facts (gpu_info's GPU names, rdma_info's HCA types and board ids)."""
    facts = _dict(facts)
    gpus = [_dict(gpu).get('name') for gpu in _list(_dict(facts.get('gpu')).get('gpus'))]
    nics = [_nic_model(_dict(dev).get('hca_type'), _dict(dev).get('board_id')) for dev in _dict(_dict(facts.get('rdma')).get('devices')).values()]
    return sku(gpus, nics)


def sku_from_baseline(doc):
    """The SKU of a node from its baseline document (the same models as sku_from_facts reads, as the baseline keeps them)."""
    facts = _dict(_dict(doc).get('facts'))
    gpus = [_dict(gpu).get('name') for gpu in _list(facts.get('gpus')) if _dict(gpu).get('present') is not False]
    nics = [_nic_model(_dict(nic).get('hca_type'), _dict(nic).get('board_id'))
            for nic in _list(facts.get('nics')) if _dict(nic).get('present') is not False]
    return sku(gpus, nics)


# ---------------------------------------------------------------------------------------------------------------
# Batch-relative grading


def _direction(entry):
    """The run's direction of a figure: its own, else read from its id (plan ids end in ':send' for the reverse)."""
    if _text(entry.get('direction')):
        return entry['direction']
    return 'send' if str(entry.get('id') or '').endswith(':send') else 'receive'


def _better(entry):
    direction = catalogue.threshold_direction(entry.get('threshold'))
    if direction is None and entry.get('better') in ('higher', 'lower'):
        direction = entry['better']
    return direction


def _compared(metric, rules):
    return (isinstance(metric, str) and catalogue.family(metric) in COMPARED_FAMILIES and metric not in NOT_COMPARED_METRICS
            and metric not in (rules.get('exclude_metrics') or []))


def run_figures(name, node, rules):
    """The node's figures a batch takes: graded (healthy, marginal, reject), a finite value, a direction."""
    found = []
    for test in _list(_dict(node).get('tests')):
        if not isinstance(test, Mapping) or test.get('status') not in GRADED or not _finite(test.get('value')):
            continue
        better = _better(test)
        if better is None or not _compared(test.get('metric'), rules):
            continue
        found.append({'node': name, 'id': test.get('id'), 'metric': test['metric'], 'direction': _direction(test),
                      'subject': test.get('subject'), 'value': float(test['value']), 'unit': test.get('unit'),
                      'status': test['status'], 'better': better, 'source': 'run'})
    return found


def baseline_figures(name, doc, rules):
    """An accepted node's figures from its baseline: the main figure of each test (no sweep rows), healthy."""
    found = []
    for figure in _list(_dict(doc).get('figures')):
        if not isinstance(figure, Mapping) or figure.get('bytes') is not None or figure.get('status') != 'healthy':
            continue
        if not _finite(figure.get('value')) or figure.get('better') not in ('higher', 'lower') or not _compared(figure.get('metric'), rules):
            continue
        found.append({'node': name, 'id': figure.get('id'), 'metric': figure['metric'], 'direction': _direction(figure),
                      'subject': figure.get('subject'), 'value': float(figure['value']), 'unit': figure.get('unit'),
                      'status': 'healthy', 'better': figure['better'], 'source': 'baseline'})
    return found


def _pct(value):
    return '%.1f' % value


def _judge(key, figures, rules):
    """One batch: its statistics, its outliers (run figures only) and whether it could be judged."""
    tier, group, metric, direction = key
    run = [f for f in figures if f['source'] == 'run']
    nodes = sorted(set(f['node'] for f in figures))
    base_nodes = sorted(set(f['node'] for f in figures if f['source'] == 'baseline'))
    batch = {'tier': tier, 'sku': group, 'metric': metric, 'direction': direction, 'unit': figures[0].get('unit'),
             'better': figures[0]['better'], 'nodes': len(nodes), 'run_nodes': sorted(set(f['node'] for f in run)),
             'baseline_nodes': base_nodes, 'figures': len(figures), 'median': None, 'mad': None, 'spread': None,
             'judged': False, 'reason': None, 'outliers': [], 'low': []}
    if len(nodes) < rules['min_batch']:
        batch['reason'] = 'too_small'
        return batch
    centre, mad, spread = robust_centre([f['value'] for f in figures])
    batch.update(median=centre, mad=mad, spread=spread)
    if centre <= 0:
        batch['reason'] = 'no_centre'
        return batch
    low = []
    for figure in run:
        difference, pct = shortfall(figure['value'], centre, figure['better'])
        if pct is not None and pct >= rules['min_shortfall_pct'] and difference > rules['max_mads'] * spread:
            low.append(dict(figure, shortfall_pct=pct, mads=(difference / spread) if spread else None))
    low_nodes = set(f['node'] for f in low)
    batch['low'] = low
    if len(low_nodes) > rules['max_outlier_share'] * len(nodes):
        batch['reason'] = 'split'
        return batch
    batch['judged'] = True
    batch['outliers'] = low
    return batch


def _mark(batch, figure, rules):
    return {'tier': batch['tier'], 'sku': batch['sku'], 'metric': batch['metric'], 'direction': batch['direction'],
            'unit': batch['unit'], 'median': batch['median'], 'mad': batch['mad'], 'spread': batch['spread'],
            'shortfall_pct': figure['shortfall_pct'], 'mads': figure['mads'], 'batch_nodes': batch['nodes'],
            'batch_figures': batch['figures'], 'baseline_nodes': len(batch['baseline_nodes']),
            'max_mads': rules['max_mads'], 'min_shortfall_pct': rules['min_shortfall_pct']}


def analyse(nodes, rules_by_tier, baselines=None):
    """Batch-relative grading of one run.

    ``nodes``: {name: verdict} (with ``tier``, ``sku`` and ``tests``); ``rules_by_tier``: {tier: fleet_rules};
    ``baselines``: {name: baseline document} of accepted nodes (those of the run are left out: their figures are the
    run's).  Returns {marks: {node: {test id: mark}}, batches: [...], notes: [sentences], low: {(node, id)}}: a mark
    is what ``verdict.with_fleet_outliers`` needs (median, MAD, spread, shortfall, batch size); ``low`` holds every
    figure of a split batch's low group (for the common-element analysis).  Raises FleetError for unusable rules.
    """
    for tier, rules in sorted((rules_by_tier or {}).items(), key=lambda kv: str(kv[0])):
        errors = rules_errors(rules)
        if errors:
            raise FleetError('tier %s: %s' % (tier, '; '.join(errors)))
    groups, notes, skipped = {}, [], {}
    members = [(name, node, 'run') for name, node in sorted((nodes or {}).items())]
    members += [(name, doc, 'baseline') for name, doc in sorted((baselines or {}).items()) if name not in (nodes or {})]
    for name, item, source in members:
        item = _dict(item)
        tier = item.get('tier')
        if not _text(tier):
            continue
        rules = (rules_by_tier or {}).get(tier)
        if rules is None:
            if source == 'run' and item.get('tests'):
                skipped.setdefault(tier, []).append(name)
            continue
        group = _text(item.get('sku')) if source == 'run' else sku_from_baseline(item)
        figures = run_figures(name, item, rules) if source == 'run' else baseline_figures(name, item, rules)
        if not figures:
            continue
        if group is None:
            if source == 'run':
                notes.append('fleet: %s has no SKU (its preflight read neither its GPUs nor its RDMA NICs): its figures are graded '
                             'against the contract only, not against siblings' % name)
            continue
        for figure in figures:
            groups.setdefault((tier, group, figure['metric'], figure['direction']), []).append(figure)
    for tier, names in sorted(skipped.items()):
        notes.append('fleet: tier %s has no fleet_rules: %s graded against the contract only' % (tier, ', '.join(names)))
    marks, batches, low = {}, [], set()
    small = {}
    for key in sorted(groups, key=lambda k: tuple(str(part) for part in k)):
        rules = rules_by_tier[key[0]]
        batch = _judge(key, groups[key], rules)
        batches.append(batch)
        if batch['reason'] == 'too_small':
            small.setdefault((key[0], key[1]), (batch['nodes'], len(batch['baseline_nodes']), rules['min_batch']))
        if batch['reason'] == 'split':
            notes.append(describe_split(batch, rules))
            low.update((f['node'], f['id']) for f in batch['low'])
        for figure in batch['outliers']:
            if figure['status'] == 'healthy':
                marks.setdefault(figure['node'], {})[figure['id']] = _mark(batch, figure, rules)
    for (tier, group), (count, base, needed) in sorted(small.items()):
        notes.append('fleet: tier %s, SKU %s: %d node(s) (%d of them accepted baselines), fewer than the %d a comparison with '
                     'siblings needs: graded against the contract only' % (tier, group, count, base, needed))
    return {'marks': marks, 'batches': batches, 'notes': notes, 'low': low}


def batch_summary(batch):
    """A batch as a report keeps it: its statistics, and per outlier or low figure only node, subject, value, shortfall."""
    keep = dict((key, value) for key, value in batch.items() if key not in ('low', 'outliers'))
    for key in ('low', 'outliers'):
        keep[key] = [{'node': f['node'], 'subject': f.get('subject'), 'value': f['value'], 'shortfall_pct': f.get('shortfall_pct')}
                     for f in batch[key]]
    return keep


def describe_split(batch, rules):
    nodes = sorted(set(f['node'] for f in batch['low']))
    pcts = [f['shortfall_pct'] for f in batch['low']]
    return ('fleet: %s (%s) on tier %s, SKU %s splits in two: %d of %d nodes (%s) are %s-%s %% worse than the median %s %s, '
            'more than the share of outliers a batch can have (%s): two populations, not outliers, so nobody is graded against '
            'this batch; look for what those nodes share (the common-element lines, their peer, firmware, rack)'
            % (catalogue.label(batch['metric']), batch['direction'], batch['tier'], batch['sku'], len(nodes), batch['nodes'],
               ', '.join(nodes), _pct(min(pcts)), _pct(max(pcts)), figure_text(batch['median']), batch['unit'] or '',
               figure_text(rules['max_outlier_share'])))


# ---------------------------------------------------------------------------------------------------------------
# The common element of failing pairs


def _pair_entries(name, node):
    """(pair key, figure) of every node-HCA / peer-HCA figure of the node, re-test's first peer included."""
    node = _dict(node)
    for field in ('tests', 'first_peer_tests'):
        for test in _list(node.get(field)):
            if not isinstance(test, Mapping) or catalogue.family(test.get('metric')) not in PAIR_FAMILIES:
                continue
            if test.get('status') not in GRADED or not _text(test.get('peer')) or not _text(test.get('subject')):
                continue
            yield (name, test['subject'], test['peer'], _text(test.get('peer_device'))), test


def _elements(pair):
    node, subject, peer, peer_device = pair
    found = [('node', node), ('peer', peer), ('rail', subject)]
    if peer_device:
        found.append(('peer_hca', '%s %s' % (peer, peer_device)))
    return found


def _spread_ok(kind, failed):
    """An element is common only across its other dimension: a peer, peer HCA or rail fails with two nodes or more,
    a node with two peer HCAs or more (a node failing on one peer HCA proves nothing about either)."""
    if kind == 'node':
        return len(set((p[2], p[3]) for p in failed)) >= 2
    return len(set(p[0] for p in failed)) >= 2


def _figure_text(test):
    return '%s %s %s (%s)' % (test.get('metric'), figure_text(test['value']) if _finite(test.get('value')) else '?', test.get('unit') or '',
                              test.get('status'))


def common_elements(nodes, rules_by_tier, low=()):
    """The node, peer, peer HCA or rail common to the run's failing node-peer pairs, each with the pairs that support it.

    ``nodes``: {name: verdict}; ``rules_by_tier``: {tier: fleet_rules} (``common_min_share``); ``low``: {(node, test
    id)} of figures a split batch put in its low group (failing for this purpose).  Per tier: with fewer than two failing
    pairs there is nothing to share.  Each element kind (peer HCA, rail, peer, node) whose failing pairs are at least
    ``common_min_share`` of the pairs it carried, and span two nodes (or, for a node, two peer HCAs), is a candidate;
    candidates are taken greedily, the highest share first (then the most failures, then the narrower kind), each
    explaining at least two failing pairs no earlier one explained.  Returns [{tier, kind, element, failed, carried,
    share, nodes, failing_pairs, pairs: [{node, subject, peer, peer_device, figures}], detail}].
    """
    low = set(low or ())
    by_tier = {}
    for name, node in sorted((nodes or {}).items()):
        tier = _dict(node).get('tier')
        rules = (rules_by_tier or {}).get(tier)
        if rules is None:
            continue
        pairs = by_tier.setdefault(tier, {})
        for key, test in _pair_entries(name, node):
            entry = pairs.setdefault(key, {'failing': False, 'figures': []})
            failing = test.get('status') in FAILING or (name, test.get('id')) in low
            entry['failing'] = entry['failing'] or failing
            if failing:
                entry['figures'].append(test)
    found = []
    for tier in sorted(by_tier, key=str):
        found.extend(_common_in_tier(tier, by_tier[tier], rules_by_tier[tier]))
    return found


def _common_in_tier(tier, pairs, rules):
    failing = set(key for key, entry in pairs.items() if entry['failing'])
    if len(failing) < 2:
        return []
    carried, failed = {}, {}
    for key in pairs:
        for element in _elements(key):
            carried.setdefault(element, set()).add(key)
            if key in failing:
                failed.setdefault(element, set()).add(key)
    candidates = []
    for element, keys in failed.items():
        share = float(len(keys)) / len(carried[element])
        if len(keys) >= 2 and share >= rules['common_min_share'] and _spread_ok(element[0], keys):
            candidates.append((element, keys, share))
    candidates.sort(key=lambda c: (-c[2], -len(c[1]), KINDS.index(c[0][0]), str(c[0][1])))
    remaining = set(failing)
    found = []
    for (kind, value), keys, share in candidates:
        explained = keys & remaining
        if len(explained) < 2:
            continue
        remaining -= keys
        found.append(_common_entry(tier, kind, value, keys, carried[(kind, value)], share, pairs, len(failing)))
    return found


def _common_entry(tier, kind, value, keys, carried, share, pairs, failing_count):
    ordered = sorted(keys, key=lambda k: tuple(str(part) for part in k))
    supporting = [{'node': k[0], 'subject': k[1], 'peer': k[2], 'peer_device': k[3],
                   'figures': [{'metric': t.get('metric'), 'value': t.get('value'), 'unit': t.get('unit'), 'status': t.get('status')}
                               for t in pairs[k]['figures']]} for k in ordered]
    shown = '; '.join('%s %s on %s%s: %s' % (
        p['node'], p['subject'], p['peer'], ' %s' % p['peer_device'] if p['peer_device'] else '',
        ', '.join(_figure_text(f) for f in pairs[(p['node'], p['subject'], p['peer'], p['peer_device'])]['figures']))
        for p in supporting[:SHOWN_PAIRS])
    if len(supporting) > SHOWN_PAIRS:
        shown += '; and %d more pair(s)' % (len(supporting) - SHOWN_PAIRS)
    advice = {
        'peer_hca': 'check that peer HCA, its cable and its switch port before anything is held against the nodes',
        'peer': 'check the known-good peer (its NICs, PCIe links, tuning) and take it out of the pool before anything is held '
                'against the nodes',
        'rail': 'check that rail across the peers (its leaf switch, cabling, the NICs\' firmware on it)',
        'node': 'the node fails with more than one peer HCA: the fault is its own',
    }[kind]
    detail = ('%s %s is common to %d of the run\'s %d failing node-peer pairs on tier %s, and %d of the %d pairs it carried '
              'failed: %s. %s.' % (KIND_WORDS[kind], value, len(keys), failing_count, tier, len(keys), len(carried), shown,
                                   advice[0].upper() + advice[1:]))
    return {'tier': tier, 'kind': kind, 'element': value, 'failed': len(keys), 'carried': len(carried), 'share': share,
            'failing_pairs': failing_count, 'nodes': sorted(set(k[0] for k in keys)), 'pairs': supporting, 'detail': detail}
