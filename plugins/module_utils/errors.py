# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error type every parser in this collection raises.

Parsers are pure functions: text in, dict out.  When text cannot be read as
the tool's output, they raise ParseError and nothing else, so callers
(modules, filters, tests) have exactly one thing to catch.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ParseError(ValueError):
    """Raised when a tool's output cannot be parsed.

    Attributes:
        tool: the tool whose output was being read (for example ``ibstat``).
        reason: what was expected and not found.
        excerpt: a short piece of the offending input, or None.
    """

    def __init__(self, tool, reason, excerpt=None):
        self.tool = tool
        self.reason = reason
        self.excerpt = excerpt
        message = '%s output: %s' % (tool, reason)
        if excerpt:
            message += ' (near: %r)' % (excerpt[:120],)
        super(ParseError, self).__init__(message)


def require_text(tool, text):
    """Return text as str, raising ParseError for None, bytes that are not UTF-8 or non-strings."""
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError:
            raise ParseError(tool, 'input is not UTF-8 text')
    if not isinstance(text, str):
        raise ParseError(tool, 'expected text, got %s' % type(text).__name__)
    return text
