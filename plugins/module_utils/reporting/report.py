# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a validation run for people and for CI: the vendor letter, the
per-node Markdown summary, the run's summary table and JUnit XML.

Pure functions over the node result dicts that the verdict role builds; no
Ansible import.  Nothing here computes or rounds a measurement for the
letter: measured lines are pasted verbatim from the tools' raw output.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, verdict
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import prometheus
from ansible_collections.gpufleet.netval.plugins.module_utils.validate import one_line, visible

BUCKET_WORDS = {
    'A': 'A (accept)',
    'B': 'B (investigate)',
    'C': 'C (return to provider)',
}


class ReportError(ValueError):
    """A node result cannot be rendered; the message names the field and what was expected."""


_LIST_FIELDS = ('tests', 'findings', 'causes', 'ruled_out')
_DICT_FIELDS = ('identity', 'nic_pci', 'counts')
_TEXT_LIST_FIELDS = ('verbatim',)


def _type_name(value):
    return 'null' if value is None else type(value).__name__


def node_problems(name, node):
    """What is wrong with one node result for the renderers (a list of sentences naming the field; empty when fine)."""
    where = 'nodes.%s' % name
    if not isinstance(node, dict):
        return ['%s must be a dict (a node result), got %s' % (where, _type_name(node))]
    problems = []
    if node.get('bucket') not in BUCKET_WORDS:
        problems.append('%s.bucket must be A, B or C, got %r' % (where, node.get('bucket')))
    for field in _LIST_FIELDS:
        if field in node and not isinstance(node[field], list):
            problems.append('%s.%s must be a list, got %s' % (where, field, _type_name(node[field])))
    for field in _DICT_FIELDS:
        if node.get(field) is not None and not isinstance(node[field], dict):
            problems.append('%s.%s must be a dict, got %s' % (where, field, _type_name(node[field])))
    for field in ('tests', 'findings'):
        for index, entry in enumerate(node.get(field) if isinstance(node.get(field), list) else []):
            at = '%s.%s[%d]' % (where, field, index)
            if not isinstance(entry, dict):
                problems.append('%s must be a dict (a %s), got %s' % (at, field[:-1] if field == 'tests' else 'finding', _type_name(entry)))
                continue
            for key in _TEXT_LIST_FIELDS:
                value = entry.get(key)
                if value is not None and (not isinstance(value, list) or not all(isinstance(item, str) for item in value)):
                    problems.append('%s.%s must be a list of text lines' % (at, key))
            if entry.get('cmd') is not None and not isinstance(entry['cmd'], str):
                problems.append('%s.cmd must be text, got %s' % (at, _type_name(entry['cmd'])))
    for index, cause in enumerate(node.get('causes') if isinstance(node.get('causes'), list) else []):
        at = '%s.causes[%d]' % (where, index)
        if isinstance(cause, str):
            continue
        if not isinstance(cause, dict):
            problems.append('%s must be text or a dict with cause and detail, got %s' % (at, _type_name(cause)))
            continue
        for key in ('cause', 'detail'):
            if not isinstance(cause.get(key), str) or not cause[key]:
                problems.append('%s.%s must be non-empty text, got %r' % (at, key, cause.get(key)))
        subjects = cause.get('subjects')
        if subjects is not None and (not isinstance(subjects, list) or not all(isinstance(item, str) for item in subjects)):
            problems.append('%s.subjects must be a list of text' % at)
    for index, item in enumerate(node.get('ruled_out') if isinstance(node.get('ruled_out'), list) else []):
        if not isinstance(item, str):
            problems.append('%s.ruled_out[%d] must be text, got %s' % (where, index, _type_name(item)))
    return problems


def check_nodes(nodes):
    """Raise ReportError naming every malformed field of ``nodes`` ({name: node result})."""
    if not isinstance(nodes, dict):
        raise ReportError('nodes must be a dict of node name to node result, got %s' % _type_name(nodes))
    problems = []
    for name in sorted(nodes, key=str):
        problems.extend(node_problems(name, nodes[name]))
    if problems:
        raise ReportError('; '.join(problems))


def check_sender(sender):
    if sender is None:
        return {}
    if not isinstance(sender, dict) or not isinstance(sender.get('signature', ''), (str, type(None))):
        raise ReportError('sender must be a dict whose signature is text, got %r' % (sender,))
    return sender


def xml_text(value):
    """``value`` as text XML 1.0 can hold: characters it cannot carry (and the other control characters) become \\xNN."""
    return visible(value)


# Markdown: characters that open a link, an image, raw HTML, a table cell or a code span, or escape one of those.
_MD_INLINE = re.compile(r'[\\`|\[\]<>&]')
# An @ that starts a word mentions someone in GitHub, GitLab and most ticket systems; a backslash does not stop it.
_MD_MENTION = re.compile(r'(?<![0-9A-Za-z_.+-])@(?=[0-9A-Za-z_])')
# What turns a line into a heading, a list item, a quote or a rule when it starts one.
_MD_LINE_START = re.compile(r'#|[-+*](?=\s|$)|[-=_*]+$')


def markdown_text(value, form='inline'):
    """Node text (any value) for a Markdown file or the vendor letter, so that it renders as itself and nothing else.

    ``inline`` (prose, a list item, a table cell): line breaks, tabs and control characters written out (``\\x0a``),
    backslash, backtick, ``|``, ``[``, ``]``, ``<``, ``>`` and ``&`` backslash-escaped (no link, image, raw HTML,
    entity, code span or extra table cell), an @ that starts a word put in a code span (no mention), and a leading
    ``#``, list marker or rule escaped.  ``code``: a code span (for paths and commands outside tables; nothing inside
    renders).  ``block``: one line of an indented code block (for tool output pasted verbatim: shown as printed).
    """
    text = one_line(value)
    if form == 'block':
        return '    ' + text
    if form == 'code':
        fence = '`' * (max([len(run) for run in re.findall('`+', text)] + [0]) + 1)
        pad = ' ' if text.startswith('`') or text.endswith('`') or not text.strip(' ') else ''
        return '%s%s%s%s%s' % (fence, pad, text, pad, fence)
    text = _MD_MENTION.sub('`@`', _MD_INLINE.sub(lambda match: '\\' + match.group(), text))
    return '\\' + text if _MD_LINE_START.match(text) else text


def check_node(node):
    """Raise ReportError naming every malformed field of one node result (which must carry its ``node`` name)."""
    name = node.get('node') if isinstance(node, dict) else None
    if isinstance(node, dict) and not isinstance(name, str):
        raise ReportError('node result: node (the node name) must be text, got %s' % _type_name(name))
    check_nodes({name or '<node>': node})


def _identity_phrase(node):
    identity = node.get('identity') or {}
    parts = []
    for key, label in (('rack', 'rack'), ('asset_tag', 'asset tag'), ('serial', 'serial')):
        if identity.get(key):
            parts.append('%s %s' % (label, markdown_text(identity[key])))
    if parts:
        return '%s (%s)' % (markdown_text(node['node']), ', '.join(parts))
    return markdown_text(node['node'])


def _label(test):
    return test.get('label') or (catalogue.label(test['metric']) if test.get('metric') else test.get('id'))


def _short_cmd(cmd):
    """The command as an operator would type it: the program's name, not its path."""
    first, _sep, rest = cmd.partition(' ')
    return ('%s %s' % (first.rsplit('/', 1)[-1], rest)).strip()


def _short_of_contract(node):
    """The tests that return the node: rejected on a line the contract states (a marginal figure, one past a line this
    project chose, or one that only lies below its siblings' is ours to look into, never put to the provider)."""
    return [t for t in node.get('tests', []) if t.get('status') == 'reject' and not t.get(verdict.FLEET_OUTLIER)]


def _measured_lines(node):
    """The rejected tests' commands and output, as lines of an indented code block (pasted as printed): what is below contract."""
    lines = []
    for test in _short_of_contract(node):
        verbatim = test.get('verbatim') or []
        if test.get('server_cmd'):
            lines.append('$ %s' % _short_cmd(test['server_cmd']))
        if test.get('cmd'):
            lines.append('$ %s' % _short_cmd(test['cmd']))
        if verbatim:
            lines.extend(verbatim)
        elif test.get('as_printed'):
            lines.append(test['as_printed'])
        elif test.get('error'):
            lines.append(test['error'])
        lines.append('')
    return [markdown_text(line, 'block') if line else '' for line in lines]


def _healthy_lines(node, limit=10):
    """Healthy results of the same kinds as the rejected ones: the comparison the provider needs."""
    failing = set(t.get('metric') for t in _short_of_contract(node))
    lines = []
    for test in node.get('tests', []):
        if test.get('status') == 'healthy' and test.get('metric') in failing and test.get('as_printed'):
            lines.append(markdown_text('%s, %s: %s' % (_label(test), test.get('subject'), test['as_printed'])))
    return lines[:limit]


def _subject_phrase(subject, node):
    pci = (node.get('nic_pci') or {}).get(subject)
    return markdown_text('%s (%s)' % (subject, pci) if pci else subject)


# What a letter may say of a cause that returns a node: the provider's side of the pattern, never our own to-do list.  A cause
# not named here (our setup, a gap in what we measured, a line this project chose) never reaches a provider.
LETTER_CAUSES = {
    'gpu_hardware': 'a GPU hardware fault (a GPU missing from the system, or uncorrectable memory errors)',
    'gpu_diagnostics': 'a GPU failing the DCGM diagnostic',
    'link_instability': 'link instability during validation (a port went down or logged cable-module events)',
    'nic_link': 'RDMA ports that are not Active at the contracted rate',
    'link_quality': 'links whose FEC mode or bit error rate is outside the contract',
    'pcie_link': 'a PCIe link below the contracted speed or width',
    'pcie_errors': 'PCIe errors (AER) during validation',
    'platform_aggregate': 'aggregate throughput 30% or more below contract with every NIC running at once',
    'platform_tuning': 'every NIC below the contracted throughput by about the same fraction',
    'rdma_all_slow': 'every NIC below the contracted per-port RDMA throughput',
    'single_nic_slow': 'a NIC below the contracted per-port RDMA throughput while the others meet it',
    'rdma_specific': 'RDMA throughput below contract while TCP throughput meets it',
    'firmware_throttle': 'a rail far below its line rate, the pattern of the ConnectX-7 firmware throttle',
    'gdr': 'GPUDirect RDMA throughput below contract while host-memory RDMA meets it',
    'pfc_pause': 'pause frames far above normal during the sustained test',
    'nccl_socket_fallback': 'NCCL unable to use the RDMA fabric (it fell back to TCP sockets)',
    'nccl_wrong_results': 'collective operations returning wrong results',
    'unexplained': 'a figure below contract that matches no known failure pattern',
}


def letter_causes(node):
    """[(what the letter says, the subjects)] of the causes that return the node and a letter may name."""
    found = []
    for cause in node.get('causes') or []:
        if isinstance(cause, dict) and cause.get('returns_node') and cause.get('cause') in LETTER_CAUSES:
            found.append((LETTER_CAUSES[cause['cause']], [s for s in cause.get('subjects') or [] if s]))
    return found


def ruled_out_facts(node):
    """What the run itself rules out, from its healthy findings of the subjects that did not fail: the other NICs' PCIe links
    and ports, uniform firmware at or above the contracted minimum, every GPU present (the runbook's "The other six NICs all show
    Speed 32GT/s, Width x16 ... the firmware on the NIC is current")."""
    findings = [f for f in node.get('findings') or [] if isinstance(f, dict)]
    failing = set(str(f.get('subject')) for f in findings + list(node.get('tests') or []) if isinstance(f, dict) and f.get('status') == 'reject')
    facts = []
    links = {}
    for finding in findings:
        if finding.get('check') == 'pcie_link' and finding.get('status') == 'healthy' and str(finding.get('subject')) not in failing:
            links.setdefault(str(finding.get('actual')), []).append(str(finding.get('subject')))
    for actual, subjects in sorted(links.items()):
        facts.append('%s %s show %s' % ('the other NICs' if failing else 'all NICs', '(%s)' % ', '.join(sorted(subjects)), actual))
    ports = [f for f in findings if f.get('check') == 'port_state' and f.get('status') == 'healthy'
             and str(f.get('subject')).split('/', maxsplit=1)[0] not in failing]
    if ports:
        facts.append('%d %sRDMA ports are Active at their rate' % (len(ports), 'other ' if failing else ''))
    for finding in findings:
        if finding.get('check') == 'firmware_uniform' and finding.get('status') == 'healthy':
            facts.append(str(finding.get('detail')))
    floors = [f for f in findings if f.get('check') == 'firmware_min_version']
    if floors and all(f.get('status') == 'healthy' for f in floors):
        facts.append('every NIC runs at least the contracted minimum firmware (%s)' % ', '.join(sorted(set(str(f.get('expected')) for f in floors))))
    for finding in findings:
        if finding.get('check') == 'gpu_count' and finding.get('status') == 'healthy':
            facts.append(str(finding.get('detail')))
    return facts


def _closing_ids(node):
    """The runbook's "Cluster identifier and support contract attached", or what is missing for it."""
    cluster, contract = node.get('cluster_id'), node.get('support_contract')
    if cluster and contract:
        return 'Cluster identifier %s; support contract %s (attached).' % (markdown_text(cluster), markdown_text(contract))
    missing = [name for name, value in (('netval_cluster_id', cluster), ('netval_support_contract', contract)) if not value]
    return ('[Cluster identifier and support contract: %s not set in the inventory; add them before this letter is sent.]'
            % ' and '.join(missing))


def vendor_letter(node, sender=None):
    """A plain-prose draft for the provider about a bucket C node (no markdown headers).

    Node text is neutralised with markdown_text (the letter is pasted into ticket systems that render Markdown): prose
    inline, tool output as an indented code block.  Raises ReportError naming the field when ``node`` is malformed.
    """
    check_node(node)
    sender = check_sender(sender)
    tier = markdown_text(node.get('tier_description') or node.get('tier') or 'the contracted')
    paragraphs = ['Hi,']
    paragraphs.append(
        "We've validated node %s against the %s tier acceptance criteria as part of new-node delivery. "
        "Some measurements are below contract, so we cannot accept the node yet." % (_identity_phrase(node), tier))
    contract = node.get('contract_text')
    expected = [t for t in _short_of_contract(node) if t.get('expected')]
    expectation = ''
    if contract:
        expectation = 'The contract specifies %s.' % markdown_text(str(contract).rstrip('.'))
    if expected:
        seen = []
        for test in expected:
            phrase = markdown_text('%s %s' % (_label(test), test['expected']))
            if phrase not in seen:
                seen.append(phrase)
        expectation += (' ' if expectation else '') + 'We expected %s, measured against a known-good peer (%s).' % (
            '; '.join(seen), markdown_text(node.get('peer') or 'unknown peer'))
    if expectation:
        paragraphs.append(expectation)
    if node.get('retested_against'):
        paragraphs.append(
            'To rule out the peer and its cables, we re-ran the tests that failed against a second known-good peer '
            '(%s; the first was %s). Where a test was re-run, the figures below are from that second peer.'
            % (markdown_text(node['retested_against']), markdown_text(node.get('first_peer') or 'another peer')))
    measured = _measured_lines(node)
    if measured:
        paragraphs.append('Measured results (pasted from the tools\' output):\n\n' + '\n'.join(measured).rstrip())
    # Only what returns the node: a marginal finding is ours to look into, not the provider's to answer for.
    differences = [f for f in node.get('findings', []) if f.get('status') == 'reject']
    if differences:
        diff_lines = []
        for finding in differences:
            diff_lines.extend([markdown_text(finding.get('detail')), ''])
            verbatim = [markdown_text('$ %s' % _short_cmd(raw[2:]) if raw.startswith('$ ') else raw, 'block')
                        for raw in finding.get('verbatim') or []]
            if verbatim:
                diff_lines.extend(verbatim + [''])
        paragraphs.append('What differs from the specification:\n\n' + '\n'.join(diff_lines).rstrip())
    healthy = _healthy_lines(node)
    if healthy:
        paragraphs.append('For comparison, these passed on the same node and peer:\n\n' + '\n'.join(healthy))
    causes = letter_causes(node)
    if causes:
        paragraphs.append('Our reading of the pattern: %s.' % '; '.join(
            markdown_text('%s (%s)' % (words, ', '.join(subjects)) if subjects else words) for words, subjects in causes))
    ruled_out = [markdown_text(r.rstrip('.')) for r in node.get('ruled_out') or []]
    facts = [markdown_text(fact.rstrip('.')) for fact in ruled_out_facts(node)]
    if ruled_out:
        paragraphs.append('Already ruled out on our side: %s.' % '; '.join(ruled_out))
    else:
        paragraphs.append('We have not yet reseated cards or swapped cables on this node.')
    if facts:
        paragraphs.append('The same run shows: %s.' % '; '.join(facts))
    subjects = []
    for _words, named in causes:
        subjects.extend(s for s in named if s not in subjects)
    ask = markdown_text(node['ask']) if node.get('ask') else (
        'Could you confirm whether the platform delivers the contracted configuration%s, and repair or replace '
        'what does not? We have left the node in this state so you can run your own diagnostics.'
        % ((' on %s' % ', '.join(_subject_phrase(s, node) for s in subjects)) if subjects else ''))
    paragraphs.append('%s %s' % (ask, _closing_ids(node)))
    paragraphs.append('Once the node meets the specification we will re-validate it end to end before it joins '
                      'the production pool. Until then it stays cordoned.')
    paragraphs.append('Thanks,\n%s' % (sender.get('signature') or '[name], [role]'))
    return '\n\n'.join(paragraphs) + '\n'


def node_markdown(node):
    """Per-node Markdown summary; node text through markdown_text."""
    check_node(node)
    md = markdown_text
    lines = ['# %s: bucket %s' % (md(node['node']), BUCKET_WORDS.get(node.get('bucket'), md(node.get('bucket')))), '',
             '- tier: %s' % md(node.get('tier')), '- peer: %s' % md(node.get('peer')), '- validated: %s' % md(node.get('timestamp')), '']
    for index, lost in enumerate(node.get('lost_peers') or []):
        lines.insert(4 + index, '- peer gone: %s (it left the pool; the node was rescheduled)' % md(lost.get('detail')))
    if node.get('promoted'):
        lines.insert(4, '- promoted: accepted with every test healthy, it served the run\'s later nodes as a peer')
    causes = node.get('causes') or []
    if causes:
        lines.append('## Likely causes')
        lines.extend('- %s' % md(c['detail'] if isinstance(c, dict) else c) for c in causes)
        lines.append('')
    lines.append('## Checks')
    lines.append('| check | subject | status | measured | expected |')
    lines.append('| --- | --- | --- | --- | --- |')
    for entry in list(node.get('findings', [])) + list(node.get('tests', [])):
        measured = entry.get('as_printed') or entry.get('actual') or entry.get('error') or ''
        lines.append('| %s |' % ' | '.join(md(cell) for cell in (
            entry.get('label') or entry.get('check') or entry.get('id'), entry.get('subject') or '', entry.get('status'), measured,
            entry.get('expected') or '')))
    return '\n'.join(lines) + '\n'


def run_line(nodes, hosts=None):
    """The summary's first line: how many of the run's hosts are reported, and how many are in each bucket.

    ``hosts``: every host of the run's limit (a node missing from ``nodes`` counts against the total)."""
    total = len(set(hosts or []) | set(nodes))
    buckets = [node.get('bucket') for node in nodes.values()]
    return '%d of %d nodes reported: %s' % (len(nodes), total, ', '.join('%d %s' % (buckets.count(b), BUCKET_WORDS[b]) for b in sorted(BUCKET_WORDS)))


def summary_table(nodes, hosts=None, qualification=None):
    """The run line, then a fixed-width text table of the run: node, peer, tier, bucket, counts (unknown: not measured, with
    a reason), first cause."""
    check_nodes(nodes)
    header = ('node', 'peer', 'tier', 'bucket', 'healthy', 'marginal', 'reject', 'unknown', 'likely cause')
    rows = []
    for name in sorted(nodes):
        node = nodes[name]
        counts = node.get('counts') or {}
        causes = node.get('causes') or []
        first = ''
        if causes:
            first = causes[0]['cause'] if isinstance(causes[0], dict) else str(causes[0])
        rows.append(tuple(one_line(cell) for cell in (
            name, node.get('peer') or '-', node.get('tier') or '-', node.get('bucket'), counts.get('healthy', 0),
            counts.get('marginal', 0), counts.get('reject', 0), counts.get('unknown', 0), first or '-')))
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    out = [run_line(nodes, hosts), '  '.join(h.ljust(widths[i]) for i, h in enumerate(header)).rstrip(),
           '  '.join('-' * w for w in widths)]
    for row in rows:
        out.append('  '.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    out.extend(qualification_lines(qualification))
    for peer, entry in sorted(lost_peers(nodes).items()):
        out.append(one_line('peer %s went away mid-run and left the pool: %s' % (peer, '; '.join(
            '%s was on it (%s), then %s' % (e['node'], e['detail'], 'measured on %s' % e['then'] if e.get('then') else 'not measured')
            for e in entry))))
    if promoted_nodes(nodes):
        out.extend(one_line(line) for line in chain_lines(nodes))
    for peer, entry in sorted(suspect_peers(nodes).items()):
        out.append(one_line('suspect peer %s%s: %s' % (peer, ' (left the pool)' if entry['left_pool'] else '', '; '.join(
            '%s %s %s %s %s on %s, %s on %s' % (f['node'], f['metric'], f['subject'], _figure(f['first_value']), f.get('unit') or '',
                                                f['first_peer'], _figure(f['second_value']), f['second_peer'])
            for f in entry['figures']))))
    return '\n'.join(out) + '\n'


def _figure(value):
    """A measured figure as the summary writes it (7.26, not 7.260004679680001); anything else as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return catalogue.figure_text(value)
    return str(value)


def validation_chain(nodes):
    """{validator: [nodes it measured]}: who validated whom (each measured node's report peer), known-good peers and
    nodes promoted in the run alike (netval_promote_accepted)."""
    found = {}
    for name in sorted(nodes):
        node = nodes[name] or {}
        if node.get('peer') and node.get('tests'):
            found.setdefault(node['peer'], []).append(name)
    return found


def promoted_nodes(nodes):
    """{node: {validated_by, validated}} for the nodes that served the run as peers after they were accepted."""
    chain = validation_chain(nodes)
    return dict((name, {'validated_by': (nodes[name] or {}).get('peer'), 'validated': chain.get(name, [])})
                for name in sorted(nodes) if (nodes[name] or {}).get('promoted'))


def chain_lines(nodes):
    """The chain as text, one line per known-good peer at its root: 'chain from peer01: peer01 validated node01, node02;
    node01 validated node03'."""
    chain = validation_chain(nodes)
    lines = []
    for root in sorted(v for v in chain if v not in nodes):
        steps, queue, seen = [], [root], set()
        while queue:
            validator = queue.pop(0)
            if validator in seen or validator not in chain:
                continue
            seen.add(validator)
            steps.append('%s validated %s' % (validator, ', '.join(chain[validator])))
            queue.extend(chain[validator])
        lines.append('chain from %s: %s' % (root, '; '.join(steps)))
    return lines


def lost_peers(nodes):
    """{peer: [{node, step, detail, then}]} from the nodes' ``lost_peers``: peers that went away while a node was tested on
    them; ``then`` is the peer that measured the node afterwards (its report's peer), or None."""
    found = {}
    for name in sorted(nodes):
        node = nodes[name] or {}
        for entry in node.get('lost_peers') or []:
            if not isinstance(entry, dict) or not entry.get('peer'):
                continue
            then = node.get('peer') if node.get('peer') and node.get('peer') != entry['peer'] and node.get('tests') else None
            found.setdefault(entry['peer'], []).append({'node': name, 'step': entry.get('step'), 'detail': entry.get('detail'), 'then': then})
    return found


def suspect_peers(nodes):
    """{peer: {suspected_by: [nodes], left_pool, figures: [{node, metric, subject, first_value, second_value, ...}]}} from the
    nodes' ``suspect_peer`` (a node that failed against the peer and passed against another)."""
    found = {}
    for name in sorted(nodes):
        suspect = (nodes[name] or {}).get('suspect_peer') or {}
        if not suspect.get('peer'):
            continue
        entry = found.setdefault(suspect['peer'], {'suspected_by': [], 'left_pool': False, 'figures': []})
        entry['suspected_by'].append(name)
        entry['left_pool'] = entry['left_pool'] or bool(suspect.get('left_pool'))
        entry['figures'].extend(dict(f, node=name) for f in suspect.get('figures') or [])
    return found


def qualification_lines(qualification):
    """summary.txt's lines on the known-good peers: one per peer that left the pool before the run, with why."""
    lines = []
    for peer, entry in sorted((qualification or {}).items()):
        if isinstance(entry, dict) and not entry.get('qualified'):
            lines.append(one_line('peer %s not qualified, left the pool: %s' % (peer, '; '.join(entry.get('reasons') or ['no reason']))))
    return lines


def junit_xml(nodes):
    """JUnit XML: one testsuite per node, one testcase per check; marginal is reported as a failure of type marginal.

    Well-formed for any text: characters XML cannot carry are written as \\xNN.
    """
    check_nodes(nodes)
    suites = []
    total = failures = 0
    for name in sorted(nodes):
        node = nodes[name]
        cases = []
        node_failures = 0
        for entry in list(node.get('findings', [])) + list(node.get('tests', [])):
            case_name = xml_text('%s[%s]' % (entry.get('check') or entry.get('metric') or entry.get('id'), entry.get('subject') or name))
            status = entry.get('status')
            body = ''
            if status in ('reject', 'marginal'):
                node_failures += 1
                message = '%s: %s (expected %s)' % (status, entry.get('as_printed') or entry.get('actual') or entry.get('detail') or '',
                                                    entry.get('expected') or '-')
                body = '<failure type=%s message=%s>%s</failure>' % (quoteattr(status), quoteattr(xml_text(message)),
                                                                     escape(xml_text(entry.get('detail') or message)))
            elif status == 'unknown':
                body = '<skipped message=%s/>' % quoteattr(xml_text(entry.get('detail') or entry.get('error') or 'not measured'))
            classname = quoteattr(xml_text('netval.%s' % name))
            cases.append('    <testcase classname=%s name=%s>%s</testcase>' % (classname, quoteattr(case_name), body))
        total += len(cases)
        failures += node_failures
        suites.append('  <testsuite name=%s tests="%d" failures="%d">\n%s\n  </testsuite>'
                      % (quoteattr(xml_text('%s (bucket %s)' % (name, node.get('bucket')))), len(cases), node_failures, '\n'.join(cases)))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="gpufleet.netval" tests="%d" failures="%d">\n%s\n</testsuites>\n'
            % (total, failures, '\n'.join(suites)))


def validation_textfile(nodes, seconds, hosts=None):
    """node_exporter textfile of a validation run: netval_validation_nodes (the run's hosts), netval_node_bucket{node,bucket}
    (1 for the node's bucket, as the drift textfile has it), netval_validation_run_incomplete{node} (1 when its run broke)
    and netval_last_run_timestamp_seconds{node,playbook="validate"} (``seconds``: the run's start)."""
    check_nodes(nodes)
    buckets, broke, times = [], [], []
    for name in sorted(nodes):
        node = nodes[name]
        buckets.extend(prometheus.sample('netval_node_bucket', (('node', name), ('bucket', bucket)), 1 if node['bucket'] == bucket else 0)
                       for bucket in sorted(BUCKET_WORDS))
        broke.append(prometheus.sample('netval_validation_run_incomplete', (('node', name),), 1 if node.get('run_incomplete') else 0))
        times.append(prometheus.sample('netval_last_run_timestamp_seconds', (('node', name), ('playbook', 'validate')),
                                       prometheus.number_text(seconds)))
    return prometheus.exposition((
        ('netval_validation_nodes', 'Hosts of the validation run\'s limit, each of them in its reports.',
         [prometheus.sample('netval_validation_nodes', (), len(set(hosts or []) | set(nodes)))]),
        ('netval_node_bucket', 'The node\'s validation bucket: 1 for the current one (A accept, B investigate, C return to provider).',
         buckets),
        ('netval_validation_run_incomplete', 'Whether the node\'s validation run broke before it finished (1): bucket B, cause run_incomplete.',
         broke),
        ('netval_last_run_timestamp_seconds', 'When a gpufleet.netval playbook last ran for the node, in seconds since the epoch.', times)))
