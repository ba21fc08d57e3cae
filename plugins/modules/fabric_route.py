#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: fabric_route
short_description: Check that a node's route to a peer's fabric address leaves through the rail under test
version_added: 0.1.0
description:
  - Runs C(ip route get DEST [from SOURCE]) and compares the interface the kernel would send through with O(interface),
    the netdev of the rail the IP tests (jumbo ping, iperf3) are meant to measure.
  - iperf3 binds an address (C(-B)), not an interface; a rail address configured without its subnet (a C(/32)) or a stray
    route sends the test out through the default route, usually the management network, and measures that instead. The
    check runs before those tests, so a wrong path is named, never graded as the fabric.
  - Fails with RV(error_class) V(wrong_route) (side C(host)) when the route leaves through another interface, V(no_route)
    when the kernel has no route at all; the route is returned either way.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  dest:
    description: The peer's address on the tested rail.
    type: str
    required: true
  source:
    description: The node's own address on that rail (C(from)), as the tests bind it.
    type: str
  interface:
    description: The netdev the route must leave through (the tested rail's).
    type: str
    required: true
  timeout:
    description: Seconds after which C(ip) is stopped.
    type: int
    default: 15
notes:
  - Reads the routing table only; runs the same in check mode.
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
seealso:
  - module: gpufleet.netval.iperf3
  - module: gpufleet.netval.jumbo_ping
'''

EXAMPLES = r'''
- name: Make sure the iperf3 test to the peer rides the rail, not the management network
  gpufleet.netval.fabric_route:
    dest: 10.252.1.12
    source: 10.252.1.11
    interface: ibp59s0
  register: route
'''

RETURN = r'''
cmd:
  description: The command line that was run.
  returned: always
  type: str
  sample: /usr/sbin/ip route get 10.252.1.12 from 10.252.1.11
dev:
  description: The interface the kernel sends to O(dest) through (null when it has no route).
  returned: always
  type: str
  sample: ibp59s0
via:
  description: The gateway, when O(dest) is not on-link (null when it is).
  returned: always
  type: str
src:
  description: The source address the kernel would use (null when it prints none).
  returned: always
  type: str
passed:
  description: Whether the route leaves through O(interface).
  returned: always
  type: bool
reason:
  description: What the check found, in one sentence.
  returned: always
  type: str
  sample: "the route to 10.252.1.12 leaves node01 through mgmt0 via 10.251.0.254, not ibp59s0 (the tested rail)"
error_class:
  description: V(wrong_route), V(no_route), V(tool_missing), V(invalid_options), V(parse_error) or V(timeout); null on success.
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description: Whose fault RV(error_class) is (C(host) for a wrong route, the node's routing table), null on success.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.rdma import parse_ip_route_get
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='str', required=True),
            source=dict(type='str'),
            interface=dict(type='str', required=True),
            timeout=dict(type='int', default=15),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = checks.control_characters(params)
    problems.append(checks.check_ip('dest', params['dest']))
    if params['source'] is not None:
        problems.append(checks.check_ip('source', params['source']))
    problems.append(checks.check_netdev('interface', params['interface']))
    problems.append(checks.check_timeout('timeout', params['timeout'], maximum=600))
    checks.fail_if_invalid(module, 'fabric_route', checks.problems_of(problems))

    args = ['route', 'get', params['dest']] + (['from', params['source']] if params['source'] else [])
    runner = ToolRunner(module)
    result = runner.run('ip', args, timeout=params['timeout'], check=False)
    if result.timed_out:
        runner.fail(result)
    try:
        route = parse_ip_route_get('\n'.join(part for part in (result.stdout, result.stderr) if part))
    except ParseError as exc:
        runner.fail_parse(result, exc)
    fields = dict(cmd=result.cmd, rc=result.rc, dest=params['dest'], source=params['source'], interface=params['interface'],
                  dev=route['dev'], via=route['via'], src=route['src'] or route['from'], route_type=route['type'])
    if route['error'] or route['dev'] is None:
        reason = 'no route from %s to %s: %s' % (hostname(), params['dest'], route['error'] or 'a %s route' % route['type'])
        module.fail_json(msg='%s: `%s`: %s' % (hostname(), result.cmd, reason), passed=False, reason=reason,
                         **dict(fields, **failure('no_route')))
    if route['dev'] != params['interface']:
        reason = 'the route to %s leaves %s through %s%s, not %s (the tested rail)' % (
            params['dest'], hostname(), route['dev'], ' via %s' % route['via'] if route['via'] else '', params['interface'])
        module.fail_json(msg='%s: `%s`: %s' % (hostname(), result.cmd, reason), passed=False, reason=reason,
                         **dict(fields, **failure('wrong_route')))
    reason = 'the route to %s leaves through %s, the tested rail' % (params['dest'], params['interface'])
    module.exit_json(changed=False, passed=True, reason=reason, **dict(fields, **SUCCESS))


if __name__ == '__main__':
    main()
