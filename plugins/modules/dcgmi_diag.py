#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: dcgmi_diag
short_description: Run the DCGM GPU diagnostic (dcgmi diag) and return per-test, per-GPU verdicts
version_added: 0.1.0
description:
  - Runs C(dcgmi diag -r <level> -j [-i <gpus>]) under a hard timeout and parses the result (the JSON of DCGM 3.x and 4.x, or
    the text table when O(json=false)).
  - Every test is returned with its overall status (C(pass), C(warn), C(fail), C(skip)) and its per-GPU status and messages.
  - By default a failing GPU does not fail the module (O(fail_on=never)); the verdict grades the results.
  - C(dcgmi) exits non-zero when a test fails; that is not treated as a tool failure when its output parses.
  - When dcgmi cannot reach the DCGM host engine the module fails with a hint to start it.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  level:
    description: Diagnostic level (C(-r)); 1 is quick (seconds), 2 medium (minutes), 3 and 4 long stress tests.
    type: int
    default: 1
    choices: [1, 2, 3, 4]
  json:
    description: Ask dcgmi for JSON (C(-j)); the text table is parsed as well.
    type: bool
    default: true
  gpus:
    description: GPU ids to test (C(-i 0,1)); all GPUs by default.
    type: list
    elements: int
  timeout:
    description: Hard limit in seconds (above 0, at most 86400); by level 120, 600, 1800 or 7200 by default.
    type: int
  fail_on:
    description: Fail the module when the diagnostic's overall result is C(fail) (O(fail_on=fail)), C(warn) or worse, or never.
    type: str
    default: never
    choices: [fail, warn, never]
notes:
  - Supports check mode; the diagnostic loads the GPUs, so in check mode nothing runs and the command is returned.
attributes:
  check_mode:
    description: In check mode the diagnostic is not run; the command line is returned.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Quick GPU diagnostic
  gpufleet.netval.dcgmi_diag:
    level: 1
  register: diag

- name: Level 3 on GPUs 0-3, failing the task on any failed test
  gpufleet.netval.dcgmi_diag:
    level: 3
    gpus: [0, 1, 2, 3]
    fail_on: fail
'''

RETURN = r'''
cmd:
  description: The command line that was (or in check mode would be) run.
  returned: always
  type: str
  sample: "/usr/bin/dcgmi diag -r 1 -j"
level:
  description: The diagnostic level that was run.
  returned: always
  type: int
overall:
  description:
    - C(fail) if any test failed, else C(warn), C(pass) or C(skip); null when there are no results or the output was cut.
    - C(skip), never C(pass), when only the software checks ran and every hardware and stress test was skipped.
  returned: success
  type: str
hardware_ran:
  description:
    - True when a hardware, integration or stress test passed, warned or failed; false when every one listed was skipped;
      null when the output lists none (level 1).
  returned: success
  type: bool
hardware_tests_run:
  description: Names of the hardware, integration and stress tests that ran.
  returned: success
  type: list
  elements: str
hardware_tests_skipped:
  description: Names of the hardware, integration and stress tests that were skipped or not run.
  returned: success
  type: list
  elements: str
level_not_run:
  description:
    - Why the level asked for did not run (a level of 2 or more whose hardware and stress tests were all skipped, or
      absent), null when it ran. The verdict grades such a run C(unknown) (the level could not run), never healthy.
  returned: success
  type: str
tests:
  description:
    - One dict per test with C(category), C(name), C(status) (the test-level status), C(overall) (worst of the test and its GPUs),
      C(per_gpu) (GPU id as a string -> C(status), C(messages), C(error_ids)) and C(messages).
  returned: success
  type: list
  elements: dict
failed_tests:
  description: Names of the tests whose overall status is C(fail).
  returned: success
  type: list
  elements: str
warned_tests:
  description: Names of the tests whose overall status is C(warn).
  returned: success
  type: list
  elements: str
skipped_tests:
  description: Names of the tests that were skipped or not run.
  returned: success
  type: list
  elements: str
gpus_failed:
  description: GPU ids with at least one failed test.
  returned: success
  type: list
  elements: int
gpus_warned:
  description: GPU ids with a warning but no failure.
  returned: success
  type: list
  elements: int
version:
  description: DCGM version from the output, when printed.
  returned: success
  type: str
driver_version:
  description: Driver version DCGM detected, when printed.
  returned: success
  type: str
format:
  description: C(json) or C(text), the format that was parsed.
  returned: success
  type: str
truncated:
  description: True when the text table was cut before its closing border.
  returned: success
  type: bool
runtime_error:
  description: DCGM's C(runtime_error), when the diagnostic could not run.
  returned: success
  type: str
rc:
  description: Exit status of dcgmi (non-zero when a test failed).
  returned: when run
  type: int
stdout:
  description: Output of dcgmi (the evidence).
  returned: when run
  type: str
stderr:
  description: Error output of dcgmi.
  returned: when run
  type: str
error_class:
  description:
    - Failure class, null on success; one of C(invalid_options), C(tool_missing) (no dcgmi), C(timeout), C(tool_failed),
      C(hostengine_unreachable), C(parse_error) or C(diag_failed) (with O(fail_on)).
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description:
    - Whose fault RV(error_class) is, null on success; C(ours) (a missing dcgmi, a stopped host engine, our timeout, unreadable
      output; never the provider's), C(host) (a GPU of this host failed the diagnostic) or C(unknown).
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import dcgmi
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd

DEFAULT_TIMEOUTS = {1: 120, 2: 600, 3: 1800, 4: 7200}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            level=dict(type='int', default=1, choices=[1, 2, 3, 4]),
            json=dict(type='bool', default=True),
            gpus=dict(type='list', elements='int'),
            timeout=dict(type='int'),
            fail_on=dict(type='str', default='never', choices=['fail', 'warn', 'never']),
        ),
        supports_check_mode=True,
    )
    params = module.params
    level = params['level']
    timeout = params['timeout'] if params['timeout'] is not None else DEFAULT_TIMEOUTS[level]
    problems = [checks.check_timeout('timeout', timeout)]
    problems.extend(checks.check_number('gpus[%d]' % index, gpu, 0, 1023) for index, gpu in enumerate(params['gpus'] or []))
    checks.fail_if_invalid(module, 'dcgmi_diag', checks.problems_of(problems))
    args = ['diag', '-r', str(level)]
    if params['json']:
        args.append('-j')
    if params['gpus']:
        args += ['-i', ','.join(str(gpu) for gpu in params['gpus'])]

    runner = ToolRunner(module)
    if module.check_mode:
        binary = runner.find('dcgmi', required=False) or 'dcgmi'
        module.exit_json(changed=False, cmd=render_cmd([binary] + args), level=level, timeout=timeout, **SUCCESS)

    result = runner.run('dcgmi', args, timeout=timeout, check=False)
    if result.timed_out:
        runner.fail(result, reason='timed out after %ss (level %d; raise timeout for long levels)' % (timeout, level), level=level,
                    error_class='timeout')
    output = '\n'.join(part for part in (result.stdout, result.stderr) if part)
    hint = dcgmi.classify_connection_error(output)
    if hint:
        runner.fail(result, reason='exited with rc=%s; %s' % (result.rc, hint), level=level, error_class='hostengine_unreachable',
                    error_hint=hint)
    try:
        parsed = dcgmi.parse_dcgmi_diag(result.stdout or '')
    except ParseError as exc:
        runner.fail(result, reason='exited with rc=%s and gave output that could not be parsed (%s)' % (result.rc, exc), level=level,
                    error_class='parse_error')
    parsed['level'] = level
    parsed['level_not_run'] = dcgmi.level_not_run(parsed, level)
    if parsed['level_not_run']:
        module.warn('%s: `%s`: level %d did not run: %s' % (hostname(), result.cmd, level, parsed['level_not_run']))
    fields = dict(parsed, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
    overall = parsed['overall']
    should_fail = (params['fail_on'] == 'fail' and overall == 'fail') or \
        (params['fail_on'] == 'warn' and overall in ('fail', 'warn'))
    if should_fail:
        names = parsed['failed_tests'] + (parsed['warned_tests'] if params['fail_on'] == 'warn' else [])
        module.fail_json(msg='%s: `%s`: diagnostic result %s (%s; GPUs failed: %s)' % (
            hostname(), result.cmd, overall, ', '.join(names) or 'no test named',
            ', '.join(str(gpu) for gpu in parsed['gpus_failed']) or 'none'), **dict(fields, **failure('diag_failed')))
    module.exit_json(changed=False, **dict(fields, **SUCCESS))


if __name__ == '__main__':
    main()
