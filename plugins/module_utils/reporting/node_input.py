# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's trust boundary for what a node under test returned.

A node being validated is a provider's machine: every byte it returns is its own (tool output, device names, firmware
strings, kernel-log lines).  Before anything is graded or written, one node's result goes through ``clean_node``,
which returns a copy that every writer can render and the sentences saying what the node returned that it should not
have:

* text: valid Unicode (a lone surrogate cannot be written as UTF-8), control, escape and bidirectional characters
  made visible as ``\\x1b`` or ``\\u202e`` (``visible``; newlines and tabs stay, writers of one-line formats make them
  visible too), capped in length (``LIMITS``);
* structure: only dicts, lists, text, numbers, booleans and null; nesting, items per list or dict and the node's
  text in all bounded; numbers finite and within 64 bits;
* names: RDMA device and network interface names where the collection's modules expect them
  (``validate.check_device`` / ``check_netdev``), PCI addresses in ``nic_pci``.

``with_problems(node, problems)`` turns the sentences into one finding of the node, ``node_data`` (status unknown,
a cause of ours: bucket B at worst, never C), so a node that returns garbage is looked at, and never stops the run or
another node's report.  The limits are generous for real results: a real 8-GPU node's verdict is about 50 KB of text,
5 levels deep, its longest field a tool's whole output (``raw``).  Pure functions, no Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils import validate
from ansible_collections.gpufleet.netval.plugins.module_utils.validate import visible
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue, verdict

NODE_DATA = 'node_data'

LIMITS = {
    'depth': 24,                 # dicts and lists inside one another (a verdict is 5 deep)
    'items': 10000,              # entries of one list or dict (a verdict has about 110 tests)
    'text_chars': 64 * 1024,     # one text value: a detail, an error, one line of tool output
    'raw_chars': 4 * 1024 * 1024,  # one whole tool output (RAW_FIELDS)
    'name_chars': 256,           # a dict key or a name (NAME_FIELDS)
    'node_chars': 32 * 1024 * 1024,  # all the text of one node result
    'problems': 20,              # sentences kept in the finding (the count says how many more)
}
# Fields that hold a tool's whole output.
RAW_FIELDS = ('raw', 'stdout', 'stderr')
# Fields that hold one name or one word.
NAME_FIELDS = ('node', 'bucket', 'peer', 'first_peer', 'retested_against', 'tier', 'subject', 'check', 'metric', 'id', 'test',
               'status', 'unit', 'cause', 'kind', 'error_class', 'error_side', 'severity', 'timestamp')
# Tests whose subject is the node's RDMA device (catalogue scopes), and findings whose subject is a device or an interface.
DEVICE_SCOPES = (catalogue.SCOPE_HCA, catalogue.SCOPE_GPU_NIC, catalogue.SCOPE_FIRST_HCA)
SUBJECT_CHECKS = {
    'rx_ring': validate.check_netdev,
    'channels': validate.check_netdev,
    'cqe_compression': validate.check_device,
    'firmware_min_version': validate.check_device,
}
_INT_LIMIT = 1 << 64
_PROBLEMS_KEPT = 1000

_SURROGATE = re.compile('[\ud800-\udfff]')


def _cut(text, limit):
    """``text`` in at most ``limit`` characters, saying how many were cut (cutting it again changes nothing)."""
    if len(text) <= limit:
        return text
    note = '... [%d characters cut]' % (len(text) - limit)
    return text[:max(limit - len(note), 0)] + note[:limit]


class _Cleaner(object):
    """One walk over one node result: the copy, the problems, the text budget."""

    def __init__(self, where, limits):
        self.where = where
        self.limits = limits
        self.problems = []
        self.chars = 0

    def problem(self, path, text):
        # A node can make one problem per value: the finding names the first few, the rest are only counted.
        if len(self.problems) < _PROBLEMS_KEPT:
            self.problems.append('%s%s: %s' % (self.where, ''.join(path), text))
        elif len(self.problems) == _PROBLEMS_KEPT:
            self.problems.append('%s: more problems than these (the rest not listed)' % self.where)

    def text(self, path, value, limit):
        if _SURROGATE.search(value):
            self.problem(path, 'text that is not valid Unicode (a lone surrogate; written out as \\udXXX)')
        text = visible(value)
        if len(text) > limit:
            self.problem(path, 'text of %d characters (limit %d; cut)' % (len(text), limit))
            text = _cut(text, limit)
        self.chars += len(text)
        if self.chars > self.limits['node_chars']:
            if self.chars - len(text) <= self.limits['node_chars']:
                self.problem(path, 'more than %d characters of text in all (the rest dropped)' % self.limits['node_chars'])
            return ''
        return text

    def value(self, path, value, depth, field=None):
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            limit = self.limits['raw_chars'] if field in RAW_FIELDS else \
                self.limits['name_chars'] if field in NAME_FIELDS else self.limits['text_chars']
            return self.text(path, value, limit)
        if isinstance(value, int):
            if abs(value) >= _INT_LIMIT:
                self.problem(path, 'an integer of %d bits (limit 64; dropped)' % value.bit_length())
                return None
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                self.problem(path, 'a number that is not finite (%r; dropped)' % value)
                return None
            return value
        if isinstance(value, (dict, list, tuple)):
            if depth >= self.limits['depth']:
                self.problem(path, 'values nested deeper than %d levels (dropped)' % self.limits['depth'])
                return None
            if len(value) > self.limits['items']:
                self.problem(path, '%d entries (limit %d; the rest dropped)' % (len(value), self.limits['items']))
            if isinstance(value, dict):
                return self.mapping(path, value, depth)
            return [self.value(path + ('[%d]' % index,), item, depth + 1, field)
                    for index, item in enumerate(value[:self.limits['items']])]
        self.problem(path, 'a value of type %s (dropped)' % type(value).__name__)
        return None

    def mapping(self, path, value, depth):
        out = {}
        for index, key in enumerate(value):
            if index >= self.limits['items']:
                break
            name = key
            if not isinstance(key, str):
                self.problem(path, 'a key that is not text (%s)' % type(key).__name__)
                name = str(key)
            name = self.text(path, name, self.limits['name_chars'])
            out[name] = self.value(path + ('.%s' % name,), value[key], depth + 1, name)
        return out


def clean_value(where, value, limits=None):
    """(copy of ``value`` within ``limits`` (default LIMITS) with visible text, the problems) for any JSON-like value;
    ``where`` starts each problem's sentence (``nodes.node01``)."""
    cleaner = _Cleaner(where, dict(LIMITS, **(limits or {})))
    return cleaner.value((), value, 0), cleaner


def _name_problems(node):
    """Sentences for device and interface names that are not what the modules accept."""
    problems = []
    for device, address in sorted((node.get('nic_pci') or {}).items()) if isinstance(node.get('nic_pci'), dict) else []:
        problems.append(validate.check_device('.nic_pci key', device))
        if address and not validate.fullmatch(validate.PCI_ADDRESS_RE, address):
            problems.append('.nic_pci.%s must be a PCI address such as 0000:1b:00.0, got %r' % (device, address))
    for field in ('tests', 'first_peer_tests'):
        for index, test in enumerate(node.get(field) if isinstance(node.get(field), list) else []):
            metric = test.get('metric') if isinstance(test, dict) else None
            scope = catalogue.test(catalogue.test_of_metric(metric))['scope'] if isinstance(metric, str) and metric in catalogue.METRICS else None
            if scope in DEVICE_SCOPES and test.get('subject') is not None:
                problems.append(validate.check_device('.%s[%d].subject' % (field, index), test['subject']))
    for index, finding in enumerate(node.get('findings') if isinstance(node.get('findings'), list) else []):
        check = SUBJECT_CHECKS.get(finding.get('check')) if isinstance(finding, dict) and isinstance(finding.get('check'), str) else None
        if check and finding.get('subject') is not None:
            problems.append(check('.findings[%d].subject' % index, finding['subject']))
    return validate.problems_of(problems)


def clean_node(name, node, limits=None):
    """(clean copy of one node's result, problems): ``node`` is the verdict the playbook hands to validation_report
    (tests, findings, causes, identity, nic_pci, ...), ``name`` its node name (the one its files are named after, which
    the copy carries as ``node``).  The copy holds only what every writer can render; ``problems`` are sentences, each
    naming the field, empty when the node returned nothing it should not have."""
    clean, cleaner = clean_value('nodes.%s' % name, node, limits)
    if isinstance(clean, dict):
        clean['node'] = name
        cleaner.problems.extend('nodes.%s%s' % (name, problem) for problem in _name_problems(clean))
    return clean, cleaner.problems


def problems_text(problems, limit=None):
    """The problems as one sentence: the first ``limit`` (LIMITS['problems']) and how many more."""
    limit = LIMITS['problems'] if limit is None else limit
    text = '; '.join(problems[:limit])
    if len(problems) > limit:
        text += '; and %d more' % (len(problems) - limit)
    return text


def with_problems(node, problems):
    """``node`` (a clean verdict) with the finding ``node_data`` (status unknown) and a cause of ours when ``problems``:
    the node returned data that is not what a real node's tools return.  Bucket A becomes B; B and C stay."""
    if not problems:
        return node
    what = problems_text(problems)
    detail = ('The node returned data the controller does not take as it is (%s). Its text was kept visible and within '
              'bounds; look at the node and its tools before trusting this result, then re-run the validation.' % what)
    node = dict(node)
    node['findings'] = list(node.get('findings') or []) + [{
        'check': NODE_DATA, 'subject': 'node result', 'status': verdict.UNKNOWN, 'blocking': False,
        'expected': 'tool output and names as the collection\'s modules return them', 'actual': what, 'detail': detail}]
    node['causes'] = list(node.get('causes') or []) + [{'cause': NODE_DATA, 'detail': detail, 'subjects': ['node result']}]
    if isinstance(node.get('counts'), dict):
        counts = node['counts'] = dict(node['counts'])
        counts[verdict.UNKNOWN] = (counts.get(verdict.UNKNOWN) if isinstance(counts.get(verdict.UNKNOWN), int) else 0) + 1
    if node.get('bucket') == verdict.BUCKET_ACCEPT:
        node['bucket'] = verdict.BUCKET_INVESTIGATE
    return node
