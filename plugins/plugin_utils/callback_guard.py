# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's callbacks share: a hook that fails is a warning, never a broken playbook."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools


def soft(plugin, consequence=''):
    """Decorate a callback hook so an error of ours is one warning per hook (naming ``plugin`` and ``consequence``).

    The callback needs ``self._warned`` (a set) and ``self._display``.
    """

    def decorator(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:  # pylint: disable=broad-except
                if method.__name__ not in self._warned:
                    self._warned.add(method.__name__)
                    self._display.warning('%s: %s failed (%s: %s)%s' % (plugin, method.__name__, type(exc).__name__, exc,
                                                                        '; ' + consequence if consequence else ''))
                return None
        return wrapper
    return decorator
