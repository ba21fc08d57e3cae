"""Property: every parser, fed arbitrary or truncated text, returns a dict or raises ParseError.

Parsers are discovered, not listed: every function named ``parse_*`` that is
defined in a ``plugins/module_utils`` file takes one text argument.  A new
parser is covered the moment it is written.
"""
import glob
import importlib
import inspect
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

MODULE_UTILS = os.path.join(fixtures.ROOT, 'plugins', 'module_utils')
PACKAGE = 'ansible_collections.gpufleet.netval.plugins.module_utils'


def discover_parsers():
    found = []
    for path in sorted(glob.glob(os.path.join(MODULE_UTILS, '*.py'))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name.startswith('_'):
            continue
        module = importlib.import_module('%s.%s' % (PACKAGE, name))
        for attr, func in sorted(vars(module).items()):
            if attr.startswith('parse_') and inspect.isfunction(func) and func.__module__ == module.__name__:
                found.append(pytest.param(func, id='%s.%s' % (name, attr)))
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
