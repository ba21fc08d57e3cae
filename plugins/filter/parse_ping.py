# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: parse_ping
short_description: Parse the output of iputils ping
version_added: 0.1.0
description:
  - Reads the output of iputils C(ping) (stdout and stderr together) into counts, loss, round-trip times
    and the fragmentation and reachability problems it reported.
  - "C(frag_needed) is true for 'Frag needed and DF set (mtu = N)', 'message too long, mtu=N' and 'Packet too big: mtu=N',
    with the smallest reported MTU in C(path_mtu)."
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: The output of C(ping).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Check a ping captured in an evidence bundle
  ansible.builtin.assert:
    that: not (lookup('ansible.builtin.file', 'ping.txt') | gpufleet.netval.parse_ping).frag_needed
'''

RETURN = r'''
_value:
  description:
    - C(destination), C(transmitted), C(received), C(loss_percent), C(errors), C(rtt_min_ms), C(rtt_avg_ms), C(rtt_max_ms),
      C(rtt_mdev_ms), C(frag_needed), C(path_mtu), C(unreachable), C(error) and C(messages); unknown values are null.
  type: dict
'''

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ping import parse_ping
from ansible_collections.gpufleet.netval.plugins.plugin_utils.filters import as_filter


class FilterModule(object):
    def filters(self):
        return {'parse_ping': as_filter('parse_ping', parse_ping)}
