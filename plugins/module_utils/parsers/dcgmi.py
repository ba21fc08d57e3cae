# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``dcgmi diag`` results (the JSON of ``-j``, DCGM 3.x and 4.x
layouts, and the text table) and for ``dcgmi discovery -l`` (is the DCGM host
engine there, and which GPUs does it see).  Pure functions; no Ansible import.

Statuses are normalised to ``pass``, ``fail``, ``warn`` and ``skip``
(``Not Run`` is a skip); anything else is None (unknown).  A table that is
cut before its closing border is ``truncated``: a Fail already seen stays a
Fail, but nothing else is reported as healthy.

A run whose software (Deployment) tests passed while every hardware and
stress test it lists was skipped (an unsupported GPU, a missing diag package,
a level that could not run) is not a pass: its ``overall`` is ``skip`` and
``hardware_ran`` is False.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser

TOOL = 'dcgmi'

_STATUS = {'pass': 'pass', 'passed': 'pass', 'fail': 'fail', 'failed': 'fail', 'warn': 'warn', 'warning': 'warn',
           'skip': 'skip', 'skipped': 'skip', 'not run': 'skip', 'notrun': 'skip'}
_RANK = {'fail': 4, 'warn': 3, 'pass': 2, 'skip': 1}
_BORDER = re.compile(r'^\+[-=]+\+[-=]+\+$')
_SECTION = re.compile(r'^[|+]-+\s+(\S.{0,128}?)\s+-+\+-*[|+]$')
_STATUS_CELL = re.compile(r'^(Pass|Fail|Warn|Skip|Not Run)\b\s*(?:-\s*(.*))?$', re.IGNORECASE)
_GPU_STATUS_CELL = re.compile(r'^GPU\s*:?\s*(\d+)\s*:\s*(Pass|Fail|Warn|Skip|Not Run)\b', re.IGNORECASE)
_GPU_REF = re.compile(r'^GPU\s*:?\s*(\d+)\b')
_MESSAGE_LABEL = re.compile(r'^(Warning|Info|Error)s?\b\s*:?\s*(?:GPU\s*:?\s*(\d+))?', re.IGNORECASE)
# The software checks: category "Deployment" (3.x and 4.x) or "Software"; without a category, these names.
_SOFTWARE_CATEGORIES = ('deployment', 'software')
_SOFTWARE_TESTS = ('software', 'denylist', 'blacklist', 'nvml library', 'cuda main library', 'cuda toolkit libraries',
                   'permissions and os blocks', 'persistence mode', 'environment variables', 'page retirement/row remap',
                   'graphics processes', 'inforom', 'fabric manager')
_METADATA_KEYS = {'dcgm version': 'version', 'driver version detected': 'driver_version',
                  'gpu device ids detected': 'gpu_device_ids'}


def normalize_status(value):
    """'Pass'/'Fail'/'Warn'/'Skip'/'Not Run' (any case) -> pass/fail/warn/skip; anything else -> None."""
    if not isinstance(value, str):
        return None
    return _STATUS.get(value.strip().lower())


def _worst(statuses):
    ranked = [status for status in statuses if status in _RANK]
    if not ranked:
        return None
    return max(ranked, key=lambda status: _RANK[status])


def _new_test(category, name):
    return {'category': category, 'name': name, 'status': None, 'overall': None, 'per_gpu': {}, 'messages': [],
            'all_gpus': False}


def _gpu_entry(test, gpu):
    return test['per_gpu'].setdefault(str(gpu), {'status': None, 'messages': [], 'error_ids': []})


def _set_gpu_status(test, gpu, status):
    entry = _gpu_entry(test, gpu)
    entry['status'] = _worst([entry['status'], status]) or entry['status']


def is_software_test(test):
    """True for a software (deployment) check, False for a hardware, integration or stress test."""
    category = (test.get('category') or '').strip().lower()
    if category:
        return category in _SOFTWARE_CATEGORIES
    return (test.get('name') or '').strip().lower() in _SOFTWARE_TESTS


def _hardware(tests):
    """(names that ran, names skipped) among the hardware, integration and stress tests, in order, once each."""
    ran, skipped = [], []
    for test in tests:
        if is_software_test(test) or not test['name']:
            continue
        if test['overall'] in ('pass', 'warn', 'fail') and test['name'] not in ran:
            ran.append(test['name'])
    for test in tests:
        if not is_software_test(test) and test['overall'] == 'skip' and test['name'] not in ran + skipped:
            skipped.append(test['name'])
    return ran, skipped


def _finish(tests, meta, fmt, truncated, runtime_error=None):
    """Compute each test's overall and the summary fields."""
    for test in tests:
        statuses = [test['status']] + [entry['status'] for entry in test['per_gpu'].values()]
        test['overall'] = _worst(statuses)
    overall_values = [test['overall'] for test in tests]
    failed = [test['name'] for test in tests if test['overall'] == 'fail']
    warned = [test['name'] for test in tests if test['overall'] == 'warn']
    skipped = [test['name'] for test in tests if test['overall'] == 'skip']
    gpus_failed = set()
    gpus_warned = set()
    for test in tests:
        for gpu, entry in test['per_gpu'].items():
            if entry['status'] == 'fail':
                gpus_failed.add(int(gpu))
            elif entry['status'] == 'warn':
                gpus_warned.add(int(gpu))
    overall = _worst(overall_values)
    hardware_ran, hardware_skipped = _hardware(tests)
    hardware_state = True if hardware_ran else (False if hardware_skipped else None)
    if hardware_state is False and overall == 'pass':
        # Only the software checks ran: the level's hardware and stress tests proved nothing.
        overall = 'skip'
    if runtime_error and overall != 'fail':
        overall = None
    elif truncated and overall != 'fail':
        overall = None
    return {
        'format': fmt,
        'level': meta.get('level'),
        'version': meta.get('version'),
        'driver_version': meta.get('driver_version'),
        'gpu_device_ids': meta.get('gpu_device_ids'),
        'gpus_in_run': meta.get('gpus_in_run'),
        'ran': meta.get('ran'),
        'tests': tests,
        'failed_tests': failed,
        'warned_tests': warned,
        'skipped_tests': skipped,
        'gpus_failed': sorted(gpus_failed),
        'gpus_warned': sorted(gpus_warned - gpus_failed),
        'hardware_ran': hardware_state,
        'hardware_tests_run': hardware_ran,
        'hardware_tests_skipped': hardware_skipped,
        'overall': overall,
        'truncated': truncated,
        'runtime_error': runtime_error,
    }


def _ids(value):
    """GPU ids from 0, "0", "0,1", [0, 1] or ["0", "1"]."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        return [int(part) for part in re.findall(r'\d+', value)]
    if isinstance(value, list):
        found = []
        for item in value:
            found.extend(_ids(item))
        return found
    return []


def _messages(value):
    """Strings from a list of strings or of {warning|message|info, error_id} objects; plus error ids."""
    texts = []
    error_ids = []
    items = value if isinstance(value, list) else ([value] if value not in (None, '') else [])
    for item in items:
        if isinstance(item, dict):
            text = item.get('warning') or item.get('message') or item.get('info') or item.get('msg')
            if isinstance(text, str) and text.strip():
                texts.append(text.strip())
            if isinstance(item.get('error_id'), int) and not isinstance(item.get('error_id'), bool):
                error_ids.append(item['error_id'])
        elif isinstance(item, str) and item.strip():
            texts.append(item.strip())
    return texts, error_ids


def _json_tests(data):
    """[(category, test_dict)] from the 3.x, 4.x and hoisted-4.x layouts."""
    root = data
    for key in ('DCGM GPU Diagnostic', 'DCGM Diagnostic'):
        if isinstance(data.get(key), dict):
            root = data[key]
            break
    found = []
    categories = root.get('test_categories')
    if isinstance(categories, list):
        for category in categories:
            if isinstance(category, dict) and isinstance(category.get('tests'), list):
                found.extend((category.get('category'), test) for test in category['tests'] if isinstance(test, dict))
    if not found:
        for holder in (root, data):
            if isinstance(holder.get('tests'), list):
                found.extend((test.get('category'), test) for test in holder['tests'] if isinstance(test, dict))
                break
    return root, found


def _str_or_none(value):
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and all(isinstance(item, str) for item in value) and value:
        return ', '.join(value)
    return None


def _parse_json(text):
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(TOOL, 'output looks like JSON but does not parse (cut or edited?): %s' % exc, text[:120])
    if not isinstance(data, dict):
        raise ParseError(TOOL, 'JSON output is not an object', text[:120])
    root, found = _json_tests(data)
    if not found:
        raise ParseError(TOOL, 'JSON has no test_categories/tests with results', text[:120])
    metadata = data.get('metadata') if isinstance(data.get('metadata'), dict) else {}
    meta = {'ran': True}
    for holder in (metadata, root, data):
        meta['version'] = meta.get('version') or _str_or_none(holder.get('version')) or _str_or_none(holder.get('DCGM Version'))
        meta['driver_version'] = meta.get('driver_version') or _str_or_none(holder.get('Driver Version Detected'))
        meta['gpu_device_ids'] = meta.get('gpu_device_ids') or _str_or_none(holder.get('GPU Device IDs Detected'))
    level = data.get('level', root.get('level'))
    meta['level'] = level if isinstance(level, int) and not isinstance(level, bool) else None
    runtime_error = _str_or_none(root.get('runtime_error')) or _str_or_none(data.get('runtime_error'))
    tests = []
    for category, raw in found:
        name = raw.get('name') or raw.get('test_name')
        test = _new_test(category if isinstance(category, str) else None, name if isinstance(name, str) else None)
        summary = raw.get('test_summary') if isinstance(raw.get('test_summary'), dict) else {}
        test['status'] = normalize_status(summary.get('status'))
        for key in ('warnings', 'info'):
            test['messages'].extend(_messages(summary.get(key))[0])
        results = raw.get('results') if isinstance(raw.get('results'), list) else []
        for result in results:
            if not isinstance(result, dict):
                continue
            status = normalize_status(result.get('status'))
            group = result.get('entity_group')
            if 'entity_id' in result and group not in (None, 'GPU'):
                gpus = []
            elif 'entity_id' in result:
                gpus = _ids(result.get('entity_id'))
            else:
                gpus = _ids(result.get('gpu_ids', result.get('gpu_id')))
            texts, error_ids = [], []
            for key in ('warnings', 'warning', 'info'):
                more_texts, more_ids = _messages(result.get(key))
                texts.extend(more_texts)
                error_ids.extend(more_ids)
            if not gpus:
                test['status'] = _worst([test['status'], status]) or test['status']
                test['messages'].extend(texts)
                continue
            for gpu in gpus:
                _set_gpu_status(test, gpu, status)
                entry = _gpu_entry(test, gpu)
                entry['messages'].extend(texts)
                entry['error_ids'].extend(error_ids)
        tests.append(test)
    return _finish(tests, meta, 'json', truncated=False, runtime_error=runtime_error)


def _cells(line):
    """(first, chunk, closed) of a two-column table row.

    dcgmi wraps long messages by cutting them into fixed-width slices (mid-word, spaces kept), one per row, between a
    leading space and two trailing pad characters; ``chunk`` is that slice, so joining chunks rebuilds the message.
    """
    closed = line.endswith('|') and line.count('|') >= 3
    parts = line.split('|')
    first = parts[1].strip() if len(parts) > 1 else ''
    if closed:
        cell = '|'.join(parts[2:-1])
        chunk = cell[1:len(cell) - 2] if len(cell) > 3 else cell.strip()
    else:
        chunk = '|'.join(parts[2:])[1:]
    return first, chunk, closed


def _parse_table(text):
    tests = []
    meta = {'ran': None}
    category = None
    current = None
    message = None
    saw_table = False
    last_line = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        last_line = line
        if line.startswith('Successfully ran diagnostic'):
            meta['ran'] = True
            continue
        if _BORDER.match(line):
            saw_table = True
            message = None
            continue
        match = _SECTION.match(line)
        if match:
            saw_table = True
            category = match.group(1).strip()
            current = None
            message = None
            continue
        if not line.startswith('|'):
            continue
        saw_table = True
        first, second, closed = _cells(line)
        value = ' '.join(second.split())
        if first == 'Diagnostic' and value == 'Result':
            continue
        if category == 'Metadata' and first:
            key = _METADATA_KEYS.get(first.lower())
            if key:
                meta[key] = value or None
            continue
        label = _MESSAGE_LABEL.match(first) if first else None
        if label and current is None:
            continue
        if label:
            text_value = second
            gpu = label.group(2)
            if gpu is None:
                ref = _GPU_REF.match(value)
                gpu = ref.group(1) if ref else None
            message = {'gpu': gpu, 'parts': [text_value]}
            _store_message(current, message)
            continue
        if first:
            current = _new_test(category, first)
            tests.append(current)
            message = None
            if closed:
                # A row cut before its closing bar may have lost part of its status ("Pass - GPU: 1").
                _apply_status(current, value)
            continue
        # A continuation row: a per-GPU status line or the next piece of a wrapped message.
        if current is None:
            continue
        if message is None and (_GPU_STATUS_CELL.match(value) or _STATUS_CELL.match(value)):
            _apply_status(current, value)
            continue
        if message is not None:
            message['parts'].append(second)
            _store_message(current, message)
    if not saw_table:
        return None
    meta['gpus_in_run'] = _gpus_in_run(tests, meta.get('gpu_device_ids'))
    for test in tests:
        if test['all_gpus'] and test['status'] is not None:
            for gpu in meta['gpus_in_run'] or []:
                _set_gpu_status(test, gpu, test['status'])
    complete = last_line is not None and bool(_BORDER.match(last_line))
    return _finish(tests, meta, 'text', truncated=not complete)


def _gpus_in_run(tests, device_ids):
    """The GPU ids a text table covers, read from the table itself; None when it names none and lists no devices.

    GPU ids named anywhere (per-GPU status rows, "Warning GPU 3" rows) are the run's GPUs; when the Metadata lists more
    device ids than that ("GPU Device IDs Detected | 2330,2330,..." has one entry per GPU, in id order) and the named
    ids fit below that count, the run covered GPUs 0..count-1.  An output with neither (DCGM 2.x has no Metadata) gives
    None: its "All" rows keep their status on the test (``all_gpus`` True) but cannot name GPUs.
    """
    named = set()
    for test in tests:
        named.update(int(gpu) for gpu in test['per_gpu'])
    count = len([part for part in (device_ids or '').split(',') if part.strip()])
    if count > len(named) and all(gpu < count for gpu in named):
        return list(range(count))
    return sorted(named) or None


def _store_message(test, message):
    text = ''.join(message['parts']).strip()
    if not text:
        return
    holder = _gpu_entry(test, message['gpu'])['messages'] if message['gpu'] is not None else test['messages']
    if message.get('stored_in') is holder and holder:
        holder[-1] = text
    else:
        holder.append(text)
        message['stored_in'] = holder


def _apply_status(test, value):
    match = _GPU_STATUS_CELL.match(value)
    if match:
        _set_gpu_status(test, int(match.group(1)), normalize_status(match.group(2)))
        return
    match = _STATUS_CELL.match(value)
    if not match:
        return
    status = normalize_status(match.group(1))
    target = match.group(2) or ''
    if target.strip().lower() == 'all':
        test['all_gpus'] = True
    gpus = [int(gpu) for gpu in re.findall(r'\d+', target)] if 'GPU' in target.upper() else []
    if gpus:
        for gpu in gpus:
            _set_gpu_status(test, gpu, status)
    else:
        test['status'] = _worst([test['status'], status]) or test['status']


@tool_parser(TOOL)
def parse_dcgmi_diag(text):
    """``dcgmi diag`` output (``-j`` JSON of DCGM 3.x/4.x, or the text table) -> per-test and per-GPU verdicts.

    Returns {format, level, version, driver_version, gpu_device_ids, gpus_in_run, ran, tests: [{category, name, status,
    overall, per_gpu: {"<gpu id>": {status, messages, error_ids}}, messages, all_gpus}], failed_tests, warned_tests,
    skipped_tests, gpus_failed: [int], gpus_warned: [int], hardware_ran, hardware_tests_run, hardware_tests_skipped,
    overall: pass|warn|fail|skip|None, truncated, runtime_error}.
    ``hardware_ran`` is True when a hardware, integration or stress test passed, warned or failed, False when every one
    the output lists was skipped (``overall`` is then ``skip``, never ``pass``: only the software checks ran), None
    when it lists none (a level-1 run, or an output cut before them).
    A text row such as "Fail - All" sets ``all_gpus`` and gives every GPU of ``gpus_in_run`` (see ``_gpus_in_run``)
    that status; ``gpus_in_run`` is None for JSON and for a table naming no GPU.
    ``overall`` is None (unknown) when there are no results, when a table is cut (unless a Fail was already seen)
    or when DCGM reported a runtime error.
    """
    if '\x00' in text:
        raise ParseError(TOOL, 'contains NUL bytes; expected dcgmi text or JSON')
    stripped = text.strip()
    if not stripped:
        raise ParseError(TOOL, 'empty output')
    start = None
    for index, line in enumerate(text.splitlines(True)):
        if line.lstrip().startswith('{'):
            start = sum(len(previous) for previous in text.splitlines(True)[:index])
            break
        if line.startswith(('|', '+')):
            break
    if start is not None:
        return _parse_json(text[start:])
    result = _parse_table(text)
    if result is None:
        first = next(line for line in text.splitlines() if line.strip())
        raise ParseError(TOOL, 'neither dcgmi diag JSON nor its result table', first)
    return result


def level_not_run(parsed, level=None):
    """Why a parsed run did not run its level, or None when it did (or when that cannot be told).

    A run of level 2 or more must run hardware tests (PCIe, memory, stress): when every one it lists was skipped, or
    a complete output of such a level lists none, the level did not run and the result proves nothing about the GPUs.
    ``level`` is the level asked for (``-r``); the parsed ``level`` is used when it is not given.  Level 1 (software
    checks only) and a cut or failed output never count as "not run" here: they have their own unknowns.
    """
    if not isinstance(parsed, dict):
        return None
    level = level if level is not None else parsed.get('level')
    if parsed.get('runtime_error') or parsed.get('truncated') or parsed.get('overall') in ('fail', 'warn'):
        return None
    if parsed.get('hardware_ran') is False:
        return 'every hardware and stress test was skipped (%s); only the software checks ran' % (
            ', '.join(parsed.get('hardware_tests_skipped') or []) or 'none named')
    number = level if isinstance(level, int) and not isinstance(level, bool) else None
    if parsed.get('hardware_ran') is None and number is not None and number >= 2 and parsed.get('tests'):
        return 'the output of a level-%d run lists no hardware or stress test; only the software checks ran' % number
    return None


def classify_connection_error(text):
    """A hint when dcgmi could not reach the DCGM host engine, else None."""
    if not isinstance(text, str):
        return None
    if re.search(r'unable to establish a connection|Unable to connect to host engine|host engine is not running|'
                 r'Error connecting to|Host engine connection invalid', text, re.IGNORECASE):
        return ('dcgmi could not reach the DCGM host engine: start it (systemctl start nvidia-dcgm, '
                'or run nv-hostengine) and retry')
    return None


_HOSTENGINE_DOWN = re.compile(r'unable to establish a connection|Unable to connect to host engine|host engine is not running'
                              r'|Host engine connection invalid', re.IGNORECASE)
_FOUND = re.compile(r'^(\d{1,4}) GPUs? found\b')
_SWITCHES = re.compile(r'^(\d{1,4}) NvSwitch(?:es)? found\b', re.IGNORECASE)
_GPU_ROW = re.compile(r'^\|\s*(\d{1,4})?\s*\|\s*(Name|PCI Bus ID|Device UUID):\s*(.*?)\s*\|$')


def _bus_id(raw):
    """'00000000:18:00.0' -> '0000:18:00.0' (the short domain the other readers use); None when it is not one."""
    match = re.match(r'^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$', raw or '')
    if not match:
        return None
    return '%04x:%s:%s.%s' % (int(match.group(1), 16), match.group(2).lower(), match.group(3).lower(), match.group(4))


@tool_parser('dcgmi discovery -l')
def parse_dcgmi_discovery(text):
    """``dcgmi discovery -l`` -> {hostengine, gpu_count, gpus: [{id, name, bus_id, uuid}], nvswitch_count, error}.

    ``hostengine`` is ``reachable`` when dcgmi listed what the DCGM host engine sees, ``unreachable`` when dcgmi says it
    could not connect to it (nv-hostengine / nvidia-dcgm.service not running), with ``error`` its lines.  Raises
    ParseError for text that is neither.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    down = [line for line in lines if _HOSTENGINE_DOWN.search(line)]
    if down:
        return {'hostengine': 'unreachable', 'gpu_count': None, 'gpus': [], 'nvswitch_count': None, 'error': ' '.join(down)}
    count = None
    switches = None
    gpus = []
    for line in lines:
        found = _FOUND.match(line)
        if found and count is None:
            count = int(found.group(1))
            continue
        found = _SWITCHES.match(line)
        if found:
            switches = int(found.group(1))
            continue
        row = _GPU_ROW.match(line)
        if not row:
            continue
        if row.group(1) is not None:
            gpus.append({'id': int(row.group(1)), 'name': None, 'bus_id': None, 'uuid': None})
        if not gpus:
            continue
        key, value = row.group(2), row.group(3)
        if key == 'Name':
            gpus[-1]['name'] = value or None
        elif key == 'PCI Bus ID':
            gpus[-1]['bus_id'] = _bus_id(value)
        else:
            gpus[-1]['uuid'] = value or None
    if count is None:
        raise ParseError('dcgmi discovery -l', 'no "N GPUs found." line and no host engine error', lines[0] if lines else None)
    return {'hostengine': 'reachable', 'gpu_count': count, 'gpus': gpus, 'nvswitch_count': switches, 'error': None}
