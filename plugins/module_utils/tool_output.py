# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every parser does with a tool's output before and after reading it.

Before: the text must be text (``errors.require_text``), no line may be longer
than ``MAX_LINE_CHARS`` and no run of digits longer than ``MAX_DIGITS`` (no tool
prints such lines or numbers; a parser that never sees them stays fast and never
converts a 5,000-digit integer), and a shell prompt line pasted with the
output is removed: the first line when it is a prompt followed by a command
(``$ sudo lspci -vvv``, ``root@host:~# flint -d ... q``, ``[user@h ~]$ ibstat``)
and the last line when it is a prompt (with or without a next command).
A bare ``#`` or ``%`` prompt is only taken for one when a known tool follows it,
because nccl-tests prints its own ``# ...`` lines; a trailing bare ``#`` line is
kept for the same reason.

After: every number in the result must be finite and within its physical
range (``check_figures``): no NaN or infinity, nothing negative unless the key
is listed as signed, nothing above 2**64 (the largest counter any tool keeps),
no percentage above 100 and no bit-error ratio above 1.
A result breaking that raises ParseError naming the key: an impossible figure
is never handed on to be graded.

Use: decorate each ``parse_*`` function with ``@tool_parser(TOOL)``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError, require_text

MAX_LINE_CHARS = 64 * 1024
MAX_FIGURE = 2 ** 64
# 2**64 has 20 digits; a counter, byte count or GUID in decimal never has more than this.
MAX_DIGITS = 64
_LONG_NUMBER = re.compile(r'\d{%d}' % (MAX_DIGITS + 1))

# Prompts with a user/host part: user@host:~$  root@host:/x#  [user@h ~]$  user@host ~ %  user@host ~/dir [main] $
# host:~ #  sh-5.1#
# Quantifiers are bounded and the match is anchored, so a hostile line costs linear time.
_HOST_PROMPT = re.compile(
    r'^(?:\([^()\s]{1,64}\)\s{1,4})?'
    r'(?:[\w.-]{1,64}@[\w.-]{1,253}(?::[^\s$#%>]{0,4096})?(?:\s[^\s$#%>]{1,4096}){0,4}'
    r'|\[[\w.-]{1,64}@[\w.-]{1,253}(?:[\s:][^\]\n]{0,4096})?\]'
    r'|[\w.-]{1,253}:[^\s$#%>]{0,4096}\s?(?=#)'
    r'|(?:ba|z|k)?sh-\d{1,3}(?:\.\d{1,3}){0,2})'
    r'\s?[$#%>]')
_BARE_PROMPT = re.compile(r'^([$#%>])')
_SUDO = re.compile(r'^(?:sudo|doas)(?:\s{1,16}-[\w-]{1,32}(?:[= ][^\s-][^\s]{0,255})?){0,8}\s{1,16}')
# The tools this collection reads, and the wrappers operators put in front of them.
_KNOWN_COMMAND = re.compile(
    r'^(?:lspci|setpci|flint|mstflint|mlxconfig|mstconfig|mlxlink|mstlink|mlxfwmanager|ibstat|ibstatus|ibv_devinfo'
    r'|ibv_devices|ibdev2netdev|show_gids|nvidia-smi|dcgmi|ethtool|iperf3|ib_\w{1,32}|ping6?|\w{1,32}_perf|mpirun'
    r'|srun|dmesg|journalctl|cat|grep|lsmod|ulimit|ip|numactl|logread|ibdiagnet|ibping)$')


def _command_after(prompt_end, line):
    """The command typed after a prompt ending at ``prompt_end`` (sudo removed), or None when nothing follows."""
    rest = line[prompt_end:]
    if not rest[:1].isspace():
        return None if rest else ''
    rest = rest.strip()
    return _SUDO.sub('', rest, count=1)


def prompt_command(line):
    """(is a prompt line, the command typed on it or '') for one line of pasted output."""
    if len(line) > MAX_LINE_CHARS:
        return False, None
    match = _HOST_PROMPT.match(line)
    if match:
        command = _command_after(match.end(), line)
        return command is not None, command
    match = _BARE_PROMPT.match(line)
    if not match:
        return False, None
    command = _command_after(match.end(), line)
    if not command:
        # A lone '$' is a prompt; a lone '#', '%' or '>' may be the tool's own line.
        return match.group(1) == '$' and command == '', ''
    program = command.split(None, 1)[0].rsplit('/', 1)[-1]
    if match.group(1) == '$':
        return bool(re.match(r'^[\w.+-]{1,64}$', program)), command
    return bool(_KNOWN_COMMAND.match(program)), command


def _line_bounds(text, first):
    """(start, end) of the first (or last) non-blank line of text, or None when all lines are blank."""
    if first:
        lead = len(text) - len(text.lstrip())
        if lead == len(text):
            return None
        end = text.find('\n', lead)
        return text.rfind('\n', 0, lead) + 1, len(text) if end < 0 else end
    body = text.rstrip()
    if not body:
        return None
    end = text.find('\n', len(body))
    return body.rfind('\n') + 1, len(text) if end < 0 else end


def prepare_text(tool, text, keep_command=False):
    """Text of a tool's output ready to parse: checked, line lengths bounded, pasted prompt lines removed.

    With ``keep_command`` a leading prompt line is replaced by the command typed on it (for parsers that read
    the options of their own command line, such as perftest and nccl-tests) instead of being dropped.
    """
    text = require_text(tool, text)
    lines = text.split('\n')
    longest = max(map(len, lines))
    if longest > MAX_LINE_CHARS:
        line = next(line for line in lines if len(line) == longest)
        raise ParseError(tool, "a line is %d characters long, more than the %d any tool prints: not this tool's output"
                         % (longest, MAX_LINE_CHARS), line[:80])
    long_number = _LONG_NUMBER.search(text)
    if long_number:
        raise ParseError(tool, 'a number of more than %d digits: no tool prints such a figure' % MAX_DIGITS,
                         text[long_number.start():long_number.start() + 80])
    bounds = _line_bounds(text, first=True)
    if bounds:
        is_prompt, command = prompt_command(text[bounds[0]:bounds[1]].strip())
        if is_prompt and command:
            replacement = command if keep_command else ''
            text = text[:bounds[0]] + replacement + text[bounds[1]:]
    bounds = _line_bounds(text, first=False)
    if bounds:
        is_prompt, command = prompt_command(text[bounds[0]:bounds[1]].strip())
        if is_prompt:
            text = text[:bounds[0]] + text[bounds[1]:]
    return text


def _limit_error(tool, path, value, why):
    return ParseError(tool, 'impossible figure %s = %r: %s' % (path, value, why))


def check_figures(tool, result, signed=(), path='result'):
    """Raise ParseError unless every number under ``result`` is finite and within its physical range.

    ``signed`` names the keys whose values may be negative (a temperature, a signed offset).  Keys ending in
    ``percent`` or ``_pct`` must be at most 100; keys ending in ``ber`` at most 1.  Returns ``result``.
    """
    stack = [(path, None, result)]
    while stack:
        where, key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(('%s.%s' % (where, name), name, item) for name, item in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend(('%s[%d]' % (where, index), key, item) for index, item in enumerate(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            name = str(key).lower() if key is not None else ''
            if isinstance(value, float) and not math.isfinite(value):
                raise _limit_error(tool, where, value, 'not a finite number')
            if abs(value) > MAX_FIGURE:
                raise _limit_error(tool, where, value, 'larger than any counter a tool keeps (2**64)')
            if value < 0 and key not in signed:
                raise _limit_error(tool, where, value, 'negative, and this figure cannot be')
            if (name.endswith('percent') or name.endswith('_pct')) and value > 100:
                raise _limit_error(tool, where, value, 'a percentage above 100')
            if name.endswith('ber') and value > 1:
                raise _limit_error(tool, where, value, 'a bit-error ratio above 1')
    return result


def tool_parser(tool, signed=(), keep_command=False):
    """Decorator for a ``parse_*(text)`` function: ``prepare_text`` before it, ``check_figures`` after it."""
    def decorate(parse):
        @functools.wraps(parse)
        def checked(text):
            text = prepare_text(tool, text, keep_command)
            try:
                result = parse(text)
            except RecursionError:
                raise ParseError(tool, 'nested too deeply to be this tool\'s output')
            return check_figures(tool, result, signed)
        # What the wrapper does, for callers and tests that reason about every parser alike.
        checked.tool, checked.signed, checked.keep_command = tool, tuple(signed), keep_command
        return checked
    return decorate
