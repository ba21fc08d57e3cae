# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parallel_reads: what to run and what the task returns, as pure functions (the action plugin runs the reads).

Only this collection's read-only ``*_info`` modules may be read side by side: they change nothing on the host, so
running them at once cannot change what any of them finds, and each supports check mode.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.netval.plugins.module_utils import validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure

ARGUMENT_SPEC = dict(
    reads=dict(type='dict', required=True),
    required=dict(type='list', elements='str', default=[]),
)

READ_NAME = re.compile(r'[a-z][a-z0-9_]{0,39}')
READ_MODULE = re.compile(r'gpufleet\.netval\.[a-z][a-z0-9_]*_info')
READ_KEYS = ('module', 'args')


def check_reads(reads, required):
    """Every problem with the options (sentences): names, modules, args and the required names."""
    problems = []
    if not reads:
        problems.append('reads must name at least one read')
    for name in sorted(reads, key=str):
        spec = reads[name]
        if not isinstance(name, str) or not validate.fullmatch(READ_NAME, name):
            problems.append('reads key %r must be a name of lower-case letters, digits and _' % (name,))
            continue
        if not isinstance(spec, dict):
            problems.append('reads.%s must be a dict with module and args, got %r' % (name, spec))
            continue
        unknown = sorted(set(spec) - set(READ_KEYS), key=str)
        if unknown:
            problems.append('reads.%s has keys %s; a read takes only %s' % (name, ', '.join(map(str, unknown)), ' and '.join(READ_KEYS)))
        module = spec.get('module')
        if not isinstance(module, str) or not validate.fullmatch(READ_MODULE, module):
            problems.append('reads.%s.module must be one of this collection\'s read-only modules (gpufleet.netval.<name>_info), got %r'
                            % (name, module))
        if not isinstance(spec.get('args', {}), dict):
            problems.append('reads.%s.args must be a dict of the module\'s options, got %r' % (name, spec.get('args')))
    for name in required:
        if name not in reads:
            problems.append('required names %r, which is not a read' % (name,))
    return problems


def read_result(raw):
    """One read's result as a registered task result would hold it: without ansible's internal keys."""
    return dict((key, value) for key, value in raw.items() if not key.startswith('_ansible_') and key != 'ansible_facts')


def combine(host, reads, raw_results, required):
    """The task's result from each read's raw module result (``raw_results``: name -> dict).

    ``reads`` is read name -> its result; the task fails when a ``required`` read failed, with that read's message
    (a read that is not required fails nothing: its result says it failed).  Warnings of the reads are the task's,
    named by read; what ansible itself learnt (the discovered interpreter) stays in the task's ansible_facts.
    """
    results = dict((name, read_result(raw)) for name, raw in raw_results.items())
    warnings = []
    facts = {}
    for name in sorted(raw_results):
        for warning in raw_results[name].get('warnings') or []:
            warnings.append('%s (%s): %s' % (name, reads[name]['module'], warning))
        facts.update(dict((key, value) for key, value in (raw_results[name].get('ansible_facts') or {}).items()
                          if key.startswith('discovered_interpreter_')))
    task = dict(changed=False, reads=results, **SUCCESS)
    if warnings:
        task['warnings'] = warnings
    if facts:
        task['ansible_facts'] = facts
    failed = [name for name in required if results[name].get('failed')]
    if failed:
        name = failed[0]
        shape = dict((key, results[name].get(key)) for key in SUCCESS) if results[name].get('error_class') else failure('unknown_error')
        task.update(shape, failed=True, msg='%s: the %s read (%s) failed: %s'
                    % (host, name, reads[name]['module'], results[name].get('msg') or 'no message'))
    return task
