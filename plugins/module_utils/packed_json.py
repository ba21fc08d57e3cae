# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A document as one short text: canonical JSON (keys sorted, no spaces) compressed with zlib, in base64.

A node's whole preflight reads travel and wait so (preflight_info's ``packed``, the ``to_packed_json`` and
``from_packed_json`` filters): 13-20 KB of text where the objects would take about 600 KiB of every process forked from
the controller's main process.  Pure functions; the module side and the controller side share them.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii
import json
import zlib


class PackedJsonError(ValueError):
    """A text that pack_json did not make."""


def canonical_json(value):
    """``value`` as canonical JSON text: sorted keys, no spaces, UTF-8 characters kept (also what a baseline's profile
    digest is taken over)."""
    return json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=str)


def pack_json(value):
    """The value as canonical JSON, compressed with zlib, as base64 text; unpack_json gives it back as plain data. An
    object JSON cannot hold is written as its text."""
    text = canonical_json(value)
    return base64.b64encode(zlib.compress(text.encode('utf-8'), 6)).decode('ascii')


def unpack_json(packed):
    """The value pack_json packed. Raises PackedJsonError, saying what it expected, for anything else."""
    if not isinstance(packed, str):
        raise PackedJsonError('expected the text pack_json made (base64 of zlib-compressed JSON), got %s' % type(packed).__name__)
    try:
        return json.loads(zlib.decompress(base64.b64decode(packed.encode('ascii'), validate=True)).decode('utf-8'))
    except (UnicodeError, binascii.Error, zlib.error, ValueError) as exc:
        raise PackedJsonError('expected the text pack_json made (base64 of zlib-compressed JSON), got %d characters that are '
                              'not: %s' % (len(packed), exc))
