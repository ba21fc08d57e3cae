# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading single-value files under /sys and /proc, shared by the inventory readers."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def read_value(path):
    """Stripped content of a sysfs/procfs file; None when it is missing or unreadable (EINVAL on a down port)."""
    try:
        with open(path, 'r') as handle:
            return handle.read().strip()
    except (IOError, OSError, UnicodeDecodeError):
        return None
