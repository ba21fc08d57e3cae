#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: preflight_info
short_description: Read a node's RDMA ports, PCIe links, NIC settings, NIC firmware, GPUs and host tuning in one module run
version_added: 0.1.0
description:
  - Performs the reads of this collection's six C(*_info) modules on the node in one module process, side by side, as
    M(ansible.builtin.setup) gathers many facts in one run; one round trip where six tasks would take six.
  - Each read takes the options of its module (M(gpufleet.netval.rdma_info), M(gpufleet.netval.pcie_info),
    M(gpufleet.netval.nic_info), M(gpufleet.netval.mlx_fw_info), M(gpufleet.netval.gpu_info),
    M(gpufleet.netval.host_tuning_info)) and returns what that module returns; a read whose option is absent is not made.
  - A read that fails does not end the others. Its entry in RV(reads) holds its C(msg) (and its failure class, where it has
    one) instead of its facts; the task fails only when a read in O(required) failed.
  - The individual modules stay for playbooks that need one read alone.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  rdma:
    description: The options of M(gpufleet.netval.rdma_info) (a dict, empty for its defaults); the read is made when given.
    type: dict
  pcie:
    description: The options of M(gpufleet.netval.pcie_info); the read is made when given.
    type: dict
  nic:
    description: The options of M(gpufleet.netval.nic_info); the read is made when given.
    type: dict
  firmware:
    description: The options of M(gpufleet.netval.mlx_fw_info); the read is made when given.
    type: dict
  gpu:
    description: The options of M(gpufleet.netval.gpu_info); the read is made when given.
    type: dict
  host:
    description: The options of M(gpufleet.netval.host_tuning_info); the read is made when given.
    type: dict
  required:
    description: Reads whose failure fails the task, with that read's message and failure class.
    type: list
    elements: str
    choices: [rdma, pcie, nic, firmware, gpu, host]
    default: []
  packed:
    description:
      - Return the reads as RV(reads_packed), one text (canonical JSON, zlib, base64; the filter
        C(gpufleet.netval.from_packed_json) gives them back), instead of RV(reads).
      - For a controller that reads many nodes at once (validate.yml). Each node's result then holds about a thirtieth
        of what the reads take as objects, in the main process that every later task forks, and the management network
        carries a tenth of the bytes.
      - A failed task returns RV(reads) as they are, whatever this says.
    type: bool
    default: false
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Read the node for preflight
  gpufleet.netval.preflight_info:
    rdma: {ipv4: true}
    pcie: {lspci: true}
    nic: {}
    firmware: {}
    gpu: {topology: true, kernel_log: true, since: "-24h"}
    host: {irq_rdma_devices: true}
    required: [rdma, host]
  register: node_reads

- name: Use one read as its own module's task would have registered it
  ansible.builtin.debug:
    msg: "{{ node_reads.reads.rdma.live_ports | length }} live RDMA ports"
'''

RETURN = r'''
reads:
  description:
    - Per read made, its module's result (without C(changed)); for a read that failed, its C(msg) and failure fields instead.
  returned: success without O(packed), or when a required read failed
  type: dict
  sample: {"rdma": {"devices": {}, "live_ports": []}, "pcie": {"devices": [], "degraded": []}}
reads_packed:
  description: RV(reads) packed, when O(packed) is set and the task succeeds.
  returned: success with O(packed)
  type: str
  sample: eJyrVkrOz0nTUc...
node_time_epoch:
  description:
    - The node's own clock when the reads ended, in whole seconds since the epoch. A test window that starts here is the node's
      (C(journalctl --since=@<this>)), whatever the node's time zone or the controller's clock.
  returned: success or when a required read failed
  type: int
  sample: 1764582300
failed_reads:
  description: The names of the reads that failed, required or not.
  returned: success or when a required read failed
  type: list
  elements: str
msg:
  description: On failure, what failed, naming the host and the read.
  returned: failure
  type: str
error_class:
  description: C(invalid_options) for bad options, else the failed required read's class (C(unknown_error) when it gave none); null on success.
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class); null on success.
  returned: always
  type: str
error_side:
  description: Whose failure RV(error_class) is; null on success.
  returned: always
  type: str
'''

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.netval.plugins.module_utils import validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import SUCCESS, failure
from ansible_collections.gpufleet.netval.plugins.module_utils.packed_json import pack_json
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import context
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import (gpu_info, host_tuning_info, mlx_fw_info, nic_info,
                                                                            pcie_info, rdma_info)
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname

# Read name -> its reads/ module (named after the module whose work it is).
READS = {'rdma': rdma_info, 'pcie': pcie_info, 'nic': nic_info, 'firmware': mlx_fw_info, 'gpu': gpu_info, 'host': host_tuning_info}
SHAPE_KEYS = tuple(SUCCESS)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dict((name, dict(type='dict')) for name in READS),
            required=dict(type='list', elements='str', choices=sorted(READS), default=[]),
            packed=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    reads, problems = {}, []
    for name in sorted(READS):
        if module.params[name] is None:
            continue
        checked = ArgumentSpecValidator(READS[name].ARGUMENT_SPEC).validate(module.params[name])
        # Every read's options are checked before any read starts: a bad option reads nothing.
        messages = checked.error_messages or READS[name].option_problems(checked.validated_parameters)
        problems.extend('%s: %s' % (name, message) for message in messages)
        reads[name] = (READS[name].read, checked.validated_parameters)
    problems.extend('required names %s, which is not read' % name for name in module.params['required'] if name not in reads)
    validate.fail_if_invalid(module, 'preflight_info', problems)

    outcome = context.run_reads(module, reads)
    node_time_epoch = int(time.time())
    results = dict((name, result) for name, (result, _failed) in outcome.items())
    failed = sorted(name for name, (_result, broke) in outcome.items() if broke)
    for name in module.params['required']:
        if name in failed:
            result = results[name]
            shape = dict((key, result.get(key)) for key in SHAPE_KEYS) if result.get('error_class') else failure('unknown_error')
            module.fail_json(msg='%s: the %s read (%s) failed: %s' % (hostname(), name, READS[name].__name__.split('.')[-1],
                                                                      result.get('msg') or 'no message'),
                             reads=results, failed_reads=failed, node_time_epoch=node_time_epoch, **shape)
    reads_out = dict(reads_packed=pack_json(results)) if module.params['packed'] else dict(reads=results)
    module.exit_json(changed=False, failed_reads=failed, node_time_epoch=node_time_epoch, **dict(reads_out, **SUCCESS))


if __name__ == '__main__':
    main()
