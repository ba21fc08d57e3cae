# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's callbacks share: a hook that fails is a warning, never a broken playbook; a task's role, read
through the name ansible-core prints for it rather than its private attributes."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools

from ansible.module_utils.common.text.converters import to_text


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


def role_of(task):
    """The FQCN of the role ``task`` belongs to, or None for a play's own task.

    ``Task.get_name()`` is ``ROLE : NAME`` for a task of a role and ``NAME`` for any other (the action stands in for a
    missing name). The prefix counts only when the task's own name follows it, so a play's task whose name holds
    ``' : '`` is never taken for a role's. An ``include_role`` task prints no role of its own (``IncludeRole.get_name``
    takes no arguments either), so it reads as a play's task wherever it is.
    """
    own = to_text(task.name or task.action)
    shown = to_text(task.get_name())
    suffix = ' : ' + own
    if shown != own and shown.endswith(suffix):
        return shown[:-len(suffix)]
    return None
