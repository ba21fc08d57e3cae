# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: loop_measurements
short_description: The measurements of a registered loop over test-plan runs
version_added: 0.1.0
description:
  - Takes the C(results) of a task looped over the runs of P(gpufleet.netval.test_plan#filter) (directly, or over results
    whose C(item) is a run) and returns each run's measurements, read as the test catalogue says for its test.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The C(results) list of a registered loop.
    type: list
    elements: dict
    required: true
  peer:
    description: The peer the measurements were taken against.
    type: str
  end:
    description:
      - Where the looped module ran - V(node), V(peer), or the run's V(client) or V(server) end. A failure the module pins on
        its host counts against the node only when that host is the node; on the known-good peer it is ours.
    type: str
    default: node
'''

EXAMPLES = r'''
- name: Record per-HCA results
  ansible.builtin.set_fact:
    measurements: "{{ measurements + clients.results | gpufleet.netval.loop_measurements('peer01') }}"
'''

RETURN = r'''
_value:
  description: The measurements (C(id), C(metric), C(subject), C(value) in the catalogue's unit, C(as_printed), C(verbatim), C(error)).
  type: list
  elements: dict
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.policy.measurements import loop_measurements


def _loop_measurements(results, peer=None, end=None):
    try:
        return loop_measurements(results, peer, end)
    except ValueError as exc:
        raise AnsibleFilterError('loop_measurements: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'loop_measurements': _loop_measurements}
