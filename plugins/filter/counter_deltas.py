# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: counter_deltas
short_description: Deltas and rates between two NIC counter snapshots
version_added: 0.1.0
description:
  - Compares two C(ethtool -S) snapshots taken before and after a test and returns per-counter deltas and rates per second.
  - Counters that went backwards (driver reload, reset, wrap) are listed in C(reset) with a null delta, never a negative one.
  - Pause, PFC, discard, error and link-down counters that moved are listed in C(watched); counters whose rate exceeds
    a threshold are listed in C(suspicious).
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description:
      - The snapshot taken before the test, as the raw text of C(ethtool -S DEV), a
        C(gpufleet.netval.parse_ethtool_stats) result, a plain dict of counter name to integer,
        or an entry of the C(nics) result of M(gpufleet.netval.nic_info) run with C(counters=true).
    type: raw
    required: true
  after:
    description: The snapshot taken after the test, in any of the forms accepted for the input.
    type: raw
    required: true
  seconds:
    description:
      - Seconds between the two snapshots.
      - May be omitted when both snapshots carry a C(timestamp) (as M(gpufleet.netval.nic_info) entries do).
    type: float
  thresholds:
    description:
      - Rates (counts per second) above which a counter is suspicious.
      - Keys are a group (C(pause_per_s), C(pfc_per_s), C(discards_per_s), C(errors_per_s), C(link_per_s)) or a counter name.
      - Group thresholds ignore C(*_duration) counters, which count time rather than frames.
    type: dict
'''

EXAMPLES = r'''
- name: Flag pause storms and NIC discards during the test
  ansible.builtin.set_fact:
    nic_deltas: "{{ before_out.stdout | gpufleet.netval.counter_deltas(after_out.stdout, 60, {'pause_per_s': 1000, 'discards_per_s': 0}) }}"

- name: Use two nic_info snapshots (their timestamps give the interval)
  ansible.builtin.debug:
    msg: "{{ nics_before.nics.ens3np0 | gpufleet.netval.counter_deltas(nics_after.nics.ens3np0) }}"
'''

RETURN = r'''
_value:
  description:
    - C(deltas) and C(rates_per_s) (counter name to delta and to rate; null for a counter that went backwards),
      C(reset) (names that went backwards), C(watched) (pause/PFC/discard/error/link counters with a non-zero delta),
      C(suspicious) (names over a threshold) with C(suspicious_detail), C(seconds), C(only_before) and C(only_after).
  type: dict
'''

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import counter_deltas, parse_ethtool_stats


def _snapshot(value, label):
    if value is None:
        raise AnsibleFilterError('counter_deltas: the %s snapshot is empty' % label)
    if isinstance(value, (str, bytes)):
        try:
            return parse_ethtool_stats(to_text(value, errors='surrogate_or_strict'))
        except ParseError as exc:
            raise AnsibleFilterError('counter_deltas: %s snapshot: %s' % (label, exc))
    if isinstance(value, dict):
        return value
    raise AnsibleFilterError('counter_deltas: the %s snapshot must be ethtool -S text or a dict, got %s' % (label, type(value).__name__))


def counter_deltas_filter(before, after, seconds=None, thresholds=None):
    """Jinja2 wrapper of module_utils.ethtool.counter_deltas."""
    if thresholds is not None and not isinstance(thresholds, dict):
        raise AnsibleFilterError('counter_deltas: thresholds must be a dict such as {"pause_per_s": 1000}')
    try:
        return counter_deltas(_snapshot(before, 'before'), _snapshot(after, 'after'), seconds, thresholds)
    except ValueError as exc:
        raise AnsibleFilterError('counter_deltas: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'counter_deltas': counter_deltas_filter}
