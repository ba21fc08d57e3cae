"""Properties of every parser: fed arbitrary, truncated or hostile text it returns a dict or raises ParseError; every
figure it returns is finite and within its physical range; a pasted shell prompt changes nothing; it runs in linear time.

Parsers are discovered, not listed: every function named ``parse_*`` that is
defined in a ``plugins/module_utils`` file takes one text argument.  A new
parser is covered the moment it is written.
"""
import functools
import gc
import glob
import importlib
import inspect
import math
import os
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.netval.plugins.module_utils import tool_output
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

MODULE_UTILS = os.path.join(fixtures.ROOT, 'plugins', 'module_utils')
PACKAGE = 'ansible_collections.gpufleet.netval.plugins.module_utils'


def discover_parsers():
    """Every parse_* of every module_utils file, in every layer (a parser belongs in parsers/, but one elsewhere is held to
    the same rules)."""
    found = []
    for path in sorted(glob.glob(os.path.join(MODULE_UTILS, '**', '*.py'), recursive=True)):
        name = os.path.splitext(os.path.relpath(path, MODULE_UTILS))[0].replace(os.sep, '.')
        if os.path.basename(name).startswith('_') or name.rsplit('.', 1)[-1].startswith('_'):
            continue
        module = importlib.import_module('%s.%s' % (PACKAGE, name))
        for attr, func in sorted(vars(module).items()):
            if attr.startswith('parse_') and inspect.isfunction(func) and func.__module__ == module.__name__:
                found.append(pytest.param(func, id='%s.%s' % (name, attr)))
    assert len(found) >= 30, found
    return found


def corpus():
    """Every real and local fixture body: realistic text to truncate and splice."""
    bodies = []
    for base in (fixtures.SHARED_FIXTURES, fixtures.LOCAL_FIXTURES):
        for path in sorted(glob.glob(os.path.join(base, '**', '*.txt'), recursive=True)):
            with open(path, encoding='utf-8', errors='replace') as handle:
                raw = handle.read()
            try:
                bodies.append(fixtures.strip_header(raw)[1])
            except AssertionError:
                bodies.append(raw)
    return bodies


PARSERS = discover_parsers()
CORPUS = corpus()


def check(parser, text):
    try:
        result = parser(text)
    except ParseError:
        return
    assert isinstance(result, dict), '%s returned %r' % (parser.__name__, type(result))


def test_parsers_were_discovered():
    assert len(PARSERS) >= 1


@pytest.mark.parametrize('parser', PARSERS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=st.characters(codec='utf-8'), max_size=400))
def test_arbitrary_text(parser, text):
    check(parser, text)


@pytest.mark.parametrize('parser', PARSERS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncated_real_outputs(parser, data):
    body = data.draw(st.sampled_from(CORPUS))
    start = data.draw(st.integers(min_value=0, max_value=len(body)))
    end = data.draw(st.integers(min_value=start, max_value=len(body)))
    check(parser, body[:end])
    check(parser, body[start:end])


@pytest.mark.parametrize('parser', PARSERS)
def test_non_text_input_raises_parse_error(parser):
    for bad in (None, 42, b'\xff\xfe\x00garbage'):
        with pytest.raises(ParseError):
            parser(bad)


# --------------------------------------------------------------------------- every parser goes through tool_output

@functools.lru_cache(maxsize=None)
def accepted_bodies(parser, limit=3):
    """Up to ``limit`` real fixture bodies this parser reads without error (its own tool's outputs)."""
    found = []
    for body in CORPUS:
        try:
            parser(body)
        except ParseError:
            continue
        found.append(body)
        if len(found) == limit:
            break
    return tuple(found)


@pytest.mark.parametrize('parser', PARSERS)
def test_every_parser_is_wrapped_by_tool_output(parser):
    assert isinstance(getattr(parser, 'tool', None), str) and isinstance(parser.signed, tuple), \
        '%s is not decorated with tool_output.tool_parser' % parser.__name__
    assert accepted_bodies(parser, limit=1), '%s reads none of the real fixtures' % parser.__name__


# The leading prompt forms operators paste, and trailing prompts; {cmd} is the tool's command line.
PROMPTS = ('$ sudo {cmd}', 'root@gpu-node-07:~# {cmd}', '[ops@gpu-node-07 ~]$ {cmd}', 'sh-5.1# {cmd}',
           'ops@gpu07 ~/runbook [main] $ {cmd}')
TRAILING = ('root@gpu-node-07:~# ', '[ops@gpu-node-07 ~]$', '$')


def _first_line(body):
    return next((line for line in body.splitlines() if line.strip()), '')


@pytest.mark.parametrize('parser', PARSERS)
def test_pasted_prompt_lines_give_the_same_result(parser):
    """Prompt + command before a real output and a prompt after it change nothing (perftest/nccl also read the command)."""
    command = '%s --example-option' % parser.tool.split()[0]
    checked = 0
    for body in accepted_bodies(parser):
        if tool_output.prompt_command(_first_line(body).strip())[0]:
            body = body.replace(_first_line(body), '', 1)  # pasted with its own prompt: start from the bare output
        expected = parser(command + '\n' + body) if parser.keep_command else parser(body)
        for index, prompt in enumerate(PROMPTS):
            pasted = prompt.format(cmd=command) + '\n' + body.rstrip('\n') + '\n' + TRAILING[index % len(TRAILING)] + '\n'
            assert parser(pasted) == expected, '%s read %r differently' % (parser.__name__, prompt)
            checked += 1
    assert checked, 'no real fixture for %s' % parser.__name__


# Real outputs published with the prompt and command they were run with: (parser, fixture).
PASTED_WITH_PROMPT = (
    ('mlx.parse_flint', 'shared', 'flint/flint_query_cx4_fs3_terrencemiao.txt'),
    ('rdma.parse_ibv_devinfo', 'shared', 'ibv_devinfo/ibv_devinfo_cx7_ib_port_down_deepep60_truncated.txt'),
    ('ethtool.parse_ethtool', 'shared', 'ethtool/ethtool_link_settings_cx4_100g_dac_terrencemiao.txt'),
    ('iperf3.parse_iperf3', 'shared', 'iperf3/iperf3_tcp_single_stream_retr_cwnd_36G_esnet55.txt'),
    ('dcgmi.parse_dcgmi_diag', 'local', 'dcgmi/dcgmi_diag_r3_dcgm3.3.8_gpu_memory_fail_all_8xh100_prompt_nccltests264.txt'),
    ('dcgmi.parse_dcgmi_diag', 'local', 'dcgmi/dcgmi_diag_r2_dcgm3.3.0_pcie_fail_all_one_gpu_named_8gpu_prompt_blog.txt'),
    ('dcgmi.parse_dcgmi_diag', 'local', 'dcgmi/dcgmi_diag_r2_dcgm2_pass_all_no_gpu_list_prompt_ppc64le_notes.txt'),
    ('nvidia.parse_nvidia_smi_xml', 'local', 'nvidia/nvidia_smi_qx_575.51.02_rtx4070_laptop_instant_average_power_prompt.xml.txt'),
    ('host_tuning.parse_lsmod', 'local', 'lsmod/lsmod_talos_cx4_mlx5_rdma_modules_prompt.txt'),
    ('perftest.parse_perftest', 'local', 'perftest/ib_send_bw_ndr_perftest24_header_cpu_warning_in_table_prompt.txt'),
    ('perftest.parse_perftest', 'local', 'perftest/ib_send_lat_ndr_perftest24_header_two_cpu_warnings_prompt_next_command.txt'),
    ('mlx.parse_mlxlink', 'local', 'mlx/mlxlink_cx7_ndr_show_mo_doca3.3_prompt_truncated_in_source.txt'),
)


@pytest.mark.parametrize('name, where, relpath', PASTED_WITH_PROMPT, ids=[entry[2].split('/')[-1] for entry in PASTED_WITH_PROMPT])
def test_real_outputs_pasted_with_their_prompt(name, where, relpath):
    module, attr = name.split('.')
    parser = getattr(importlib.import_module('%s.parsers.%s' % (PACKAGE, module)), attr)
    body = getattr(fixtures, where)(relpath)
    first = _first_line(body)
    assert tool_output.prompt_command(first.strip())[0], 'fixture does not start with a prompt: %r' % first
    without_prompt = body.replace(first, '', 1)
    assert parser(body) == parser(without_prompt)
    assert parser(body + TRAILING[0] + '\n') == parser(without_prompt)


# --------------------------------------------------------------------------- every figure finite and in range

HOSTILE_NUMBERS = ('inf', '-inf', 'nan', '-nan', '1e309', '-1', '-0.5', '1.', '9' * 400, '1' * 5000, '18446744073709551617',
                   '1e-400', '0x10', '٣')


def _possible(parser, value, key):
    name = str(key).lower() if key is not None else ''
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if value < 0 and key not in parser.signed:
        return False
    if abs(value) > 2 ** 64:
        return False
    if (name.endswith('percent') or name.endswith('_pct')) and value > 100:
        return False
    return not (name.endswith('ber') and value > 1)


def impossible_figures(parser, result):
    """[(path, value)] of every number in a parser's result that cannot be a real reading."""
    found = []
    stack = [('result', None, result)]
    while stack:
        path, key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(('%s.%s' % (path, name), name, item) for name, item in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend(('%s[%d]' % (path, index), key, item) for index, item in enumerate(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and not _possible(parser, value, key):
            found.append((path, value))
    return found


def check_figures_possible(parser, text):
    try:
        result = parser(text)
    except ParseError:
        return 'error'
    bad = impossible_figures(parser, result)
    assert not bad, '%s returned impossible figures %r' % (parser.__name__, bad[:5])
    return 'result'


NUMBER_TOKEN = re.compile(r'\d+(?:\.\d+)?')


@pytest.mark.parametrize('parser', PARSERS)
def test_real_outputs_give_only_possible_figures(parser):
    for body in CORPUS:
        check_figures_possible(parser, body)


@pytest.mark.parametrize('parser', PARSERS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_numbers_in_real_outputs_are_refused_or_dropped(parser, data):
    """A number of a real output replaced by inf, nan, a negative, a cut '1.' or a huge run: error or a possible figure."""
    bodies = accepted_bodies(parser)
    body = data.draw(st.sampled_from(bodies))
    spans = [match.span() for match in NUMBER_TOKEN.finditer(body)]
    if not spans:
        check_figures_possible(parser, body)
        return
    for _replacement in range(data.draw(st.integers(min_value=1, max_value=3))):
        start, end = data.draw(st.sampled_from(spans))
        body = body[:start] + data.draw(st.sampled_from(HOSTILE_NUMBERS)) + body[end:]
        spans = [match.span() for match in NUMBER_TOKEN.finditer(body)] or [(0, 0)]
    check_figures_possible(parser, body)


# --------------------------------------------------------------------------- linear time

# Runs that make a regex with nested or overlapping quantifiers retry every start position.
RUNS = ('1', '1.', '1 ', '1,', '0.0 ', ' ', ':', '-', '[', '|', 'a ', '0:', '\t', 'x=')
SMALL = 15000  # characters; the large input is 4x, within the 64 KiB line limit


def _seconds(parser, text, repeat):
    """Best of ``repeat`` runs, with the garbage collector off: a collection of the whole test session's heap would
    add the same ~15 ms to any run and fake a super-linear ratio."""
    best = None
    gc.disable()
    try:
        for _run in range(repeat):
            start = time.perf_counter()
            try:
                parser(text)
            except ParseError:
                pass
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
    finally:
        gc.enable()
    return best


def pathological_inputs(parser, size):
    """(name, text) inputs of about ``size`` characters: runs alone, after real line prefixes, and as many lines."""
    inputs = []
    for run in RUNS:
        inputs.append(('run %r' % run, run * (size // len(run))))
        inputs.append(('%d lines of %r' % (size // 64, run), ((run * (63 // len(run))) + '\n') * (size // 64)))
    for body in accepted_bodies(parser, limit=2):
        lines = [line for line in body.splitlines() if line.strip()]
        for line in lines[:3] + lines[len(lines) // 2:len(lines) // 2 + 2]:
            for run in ('1', ' ', ':', '[', '1.', '1 '):
                prefix = line[:len(line) // 2] if len(line) > 20 else line
                inputs.append(('%r + run %r' % (prefix[:30], run), body + '\n' + prefix + run * (size // len(run)) + '\n'))
    return inputs


@pytest.mark.parametrize('parser', PARSERS)
def test_parsers_run_in_linear_time(parser):
    """4x the input may cost at most 12x the time, measured as a ratio in this run: no quadratic regex anywhere.

    Robust on a loaded 2-core machine (CI runs the quality gates beside this): an input whose 4x run takes under
    200 ms is linear enough to skip (a quadratic case at 60 KB took 20-90 s before it was fixed, and still takes
    seconds at the smallest); otherwise both sizes are timed alternately, best of 5 each, so that a burst of load
    hits both, and a ratio over the limit is measured again up to three times before it fails (a 4x run over 1 s
    is timed once: it fails fast).
    """
    small, large = pathological_inputs(parser, SMALL), pathological_inputs(parser, 4 * SMALL)
    for (name, short), (_name, long_text) in zip(small, large):
        ratio, short_time, long_time = 0.0, None, _seconds(parser, long_text, 1)
        for _attempt in range(3):
            if long_time < 0.2:
                break
            short_time = _seconds(parser, short, 3)
            for _round in range(5 if long_time < 1.0 else 0):
                short_time = min(short_time, _seconds(parser, short, 1))
                long_time = min(long_time, _seconds(parser, long_text, 1))
            ratio = long_time / max(short_time, 1e-4)
            if ratio <= 12 or long_time >= 1.0:
                break
            long_time = _seconds(parser, long_text, 1)
        assert long_time < 0.2 or ratio <= 12, '%s: %s took %.3fs at %d chars and %.3fs at 4x (ratio %.1f)' % (
            parser.__name__, name, short_time or 0.0, len(short), long_time, ratio)
