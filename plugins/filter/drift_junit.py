# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: drift_junit
short_description: A drift run as JUnit XML, one test case per node and check
version_added: 0.1.0
description:
  - Returns JUnit XML text - one C(testsuite) per node, one C(testcase) per check the comparison runs (passed ones too), a
    C(failure) for a check with a red finding; expected and info findings go to the test case's C(system-out).
  - A node without a baseline has only its C(baseline) test case, failed.
  - Well-formed for any text; characters XML 1.0 cannot hold are written as backslash escapes.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  _input:
    description: Node name to C({findings, ...}) or to a list of findings.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: JUnit XML for CI
  ansible.builtin.copy:
    content: "{{ drift_nodes | gpufleet.netval.drift_junit }}"
    dest: "{{ playbook_dir }}/../reports/drift/junit.xml"
    mode: "0644"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
_value:
  description: The JUnit XML text.
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.netval.plugins.module_utils.drift import DriftError
from ansible_collections.gpufleet.netval.plugins.module_utils.drift_report import junit_xml


def drift_junit(nodes):
    try:
        return junit_xml(nodes)
    except DriftError as exc:
        raise AnsibleFilterError('drift_junit: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'drift_junit': drift_junit}
