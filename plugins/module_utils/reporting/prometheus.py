# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus text exposition format, as node_exporter's textfile collector reads it: gauges, one family after another.

The validation report (netval.prom of a validate run) and the drift report (of a drift or re-validation run) write their
textfiles through ``exposition``.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def label_value(value):
    """A label value as the text exposition format writes it: backslash, double quote and line feed escaped."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def help_text(text):
    return text.replace('\\', '\\\\').replace('\n', '\\n')


def sample(metric, labels, value):
    """One sample line; ``labels`` is a sequence of (name, value) pairs, kept in its order."""
    if not labels:
        return '%s %s' % (metric, value)
    return '%s{%s} %s' % (metric, ','.join('%s="%s"' % (key, label_value(val)) for key, val in labels), value)


def number_text(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    value = float(value)
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def exposition(families):
    """The textfile of ``families``: (metric, help, sample lines) each, every one a gauge."""
    out = []
    for metric, help_line, lines in families:
        out.append('# HELP %s %s' % (metric, help_text(help_line)))
        out.append('# TYPE %s gauge' % metric)
        out.extend(lines)
    return '\n'.join(out) + '\n'
