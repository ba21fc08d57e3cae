# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument validators shared by every module: one per kind of value.

Each ``check_*`` returns None when the value is acceptable, else a sentence
naming the option and what was expected; modules collect the sentences and
fail once with all of them.  Patterns are matched in full (``re.fullmatch``),
so a trailing newline never passes, and no value that lands in argv as an
option's value may start with ``-`` (it would be read as another option).
No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import math
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.failures import failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname

_LABEL = r'[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
HOSTNAME_RE = re.compile(r'(?=.{1,253}\Z)%s(?:\.%s)*\.?' % (_LABEL, _LABEL))
# RDMA device names: mlx5_0, rocep1s0f0, ibp12s0, rxe0, irdma-x722.
DEVICE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}')
# Linux network interface names: 1-15 bytes (IFNAMESIZ 16), no '/', no whitespace.
NETDEV_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}')
# One component of a path we create (node names, evidence file names).
PATH_COMPONENT_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._@+-]{0,254}')
# A program name or path: safe characters, and no component that is '.', '..' or starts with '-'.
BINARY_RE = re.compile(r'/?(?:[A-Za-z0-9_+][A-Za-z0-9_.+-]*/)*[A-Za-z0-9_+][A-Za-z0-9_.+-]*')
PCI_ADDRESS_RE = re.compile(r'(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]')
CONTROL_RE = re.compile(r'[\x00-\x1f\x7f]')

# Upper bound of any timeout-like option: nothing we run may take longer than a day.
MAX_TIMEOUT = 86400


def _show(value):
    return repr(value)


def fullmatch(pattern, value):
    """True when ``value`` is a str matched in full by ``pattern``."""
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def is_ip(value):
    if not isinstance(value, str) or CONTROL_RE.search(value):
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_ipv6(value):
    return is_ip(value) and ipaddress.ip_address(value).version == 6


def check_host(option, value):
    """A host name (RFC 1123 labels) or an IPv4/IPv6 address."""
    if is_ip(value) or fullmatch(HOSTNAME_RE, value):
        return None
    return '%s must be a host name or an IP address, got %s' % (option, _show(value))


def check_ip(option, value):
    if is_ip(value):
        return None
    return '%s must be an IP address, got %s' % (option, _show(value))


def check_device(option, value):
    if fullmatch(DEVICE_RE, value):
        return None
    return '%s must be an RDMA device name such as mlx5_0 (letters, digits, _ . : -, not starting with -), got %s' % (
        option, _show(value))


def check_netdev(option, value):
    if fullmatch(NETDEV_RE, value) and value not in ('.', '..'):
        return None
    return '%s must be a network interface name (1-15 of letters, digits, _ . : @ -, not starting with -), got %s' % (
        option, _show(value))


def check_path_component(option, value):
    if fullmatch(PATH_COMPONENT_RE, value) and value not in ('.', '..'):
        return None
    return '%s must be one file name (letters, digits, . _ @ + -, starting with a letter or digit), got %s' % (
        option, _show(value))


def check_binary(option, value, suffix=None):
    """A program name or path (``suffix``: what its last component must end with)."""
    if fullmatch(BINARY_RE, value) and (suffix is None or value.endswith(suffix)):
        return None
    return '%s must be a program name or path%s (letters, digits, _ . + - /, no component starting with - or .), got %s' % (
        option, (' ending in %s' % suffix) if suffix else '', _show(value))


def check_arg(option, value):
    """A free-form argv item (extra_args): any text without control characters."""
    if isinstance(value, str) and value and not CONTROL_RE.search(value):
        return None
    return '%s must be non-empty text without newlines or control characters, got %s' % (option, _show(value))


def check_number(option, value, low, high):
    """A finite number within [low, high] (None is accepted: the option is unset)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not low <= value <= high:
        return '%s must be a number from %s to %s, got %s' % (option, low, high, _show(value))
    return None


def check_timeout(option, value, maximum=MAX_TIMEOUT, allow_zero=False):
    """A finite, positive number of seconds of at most ``maximum`` (0 too with ``allow_zero``)."""
    if value is None:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value <= maximum
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if ok:
        return None
    return '%s must be a finite number of seconds, %s %s, got %s' % (
        option, 'from 0 to' if allow_zero else 'above 0 and at most', maximum, _show(value))


def control_characters(params, skip=()):
    """Sentences for every text parameter (nested in lists and dicts) holding a newline or another control character."""
    problems = []

    def walk(name, value):
        if isinstance(value, str):
            if CONTROL_RE.search(value):
                problems.append('%s must not contain newlines or control characters, got %s' % (name, _show(value)))
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                walk('%s.%s' % (name, key), key)
                walk('%s.%s' % (name, key), value[key])
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                walk('%s[%d]' % (name, index), item)

    for name in sorted(params):
        if name in skip or name.startswith('_ansible'):
            continue
        walk(name, params[name])
    return problems


def problems_of(checks):
    """The non-None results of a list of check_* calls."""
    return [problem for problem in checks if problem]


def invalid_result(what, problems):
    """The failed task result for options of ``what`` that cannot be used (``problems``: the sentences), in the one shape."""
    return dict(failed=True, msg='%s: invalid %s options: %s' % (hostname(), what, '; '.join(problems)), **failure('invalid_options'))


def fail_if_invalid(module, what, problems):
    """Fail ``module`` (anything with fail_json) once with every problem, in the one failure shape."""
    if problems:
        module.fail_json(**invalid_result(what, problems))


def finish(module, result):
    """End ``module`` with a task function's ``result``: fail_json when it says failed, else exit_json."""
    result = dict(result)
    if result.pop('failed', False):
        module.fail_json(**result)
    module.exit_json(**result)


# C0 and C1 controls (newline and tab apart), DEL, line and paragraph separators, bidirectional overrides and
# isolates, lone surrogates and the two non-characters XML cannot hold.
_OTHER_INVISIBLE = '\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff'
_INVISIBLE = re.compile('[\x00-\x08%s]' % _OTHER_INVISIBLE)
_INVISIBLE_LINES = re.compile('[\x00-\x0a%s]' % _OTHER_INVISIBLE)


def _char_escape(match):
    code = ord(match.group())
    return '\\x%02x' % code if code < 0x100 else '\\u%04x' % code


def visible(value, lines=True):
    """``value`` as text with every control, escape and bidirectional character written out (``\\x1b``, ``\\u202e``),
    lone surrogates too, so the text is valid UTF-8 and shows what it holds.  ``lines``: newlines and tabs stay (for
    JSON and multi-line text); with False they are written out as ``\\x0a`` and ``\\x09`` (one-line formats)."""
    text = value if isinstance(value, str) else ('' if value is None else str(value))
    return (_INVISIBLE if lines else _INVISIBLE_LINES).sub(_char_escape, text)


def one_line(value):
    """``value`` as one line of visible text (``visible(value, lines=False)``)."""
    return visible(value, lines=False)
