# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared glue for the parse_* filters: the parser's ParseError becomes AnsibleFilterError."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError


def as_filter(name, parser):
    """Wrap ``parser(text)`` as a Jinja2 filter named ``name``."""

    def _filter(text, *args, **kwargs):
        if text is None:
            raise AnsibleFilterError('%s: expected the text of a command output, got nothing' % name)
        try:
            return parser(to_text(text, errors='surrogate_or_strict'), *args, **kwargs)
        except ParseError as exc:
            raise AnsibleFilterError('%s: %s' % (name, exc))

    _filter.__name__ = name
    _filter.__doc__ = parser.__doc__
    return _filter
