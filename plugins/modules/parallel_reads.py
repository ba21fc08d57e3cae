#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: parallel_reads
short_description: Run several of this collection's read-only fact modules on a host at once, in one task
version_added: 0.1.0
description:
  - Ansible runs one task per host at a time, and each module is a round trip of its own; reads that need nothing from each
    other (RDMA, PCIe, NIC, firmware, GPU, host tuning) then cost the sum of their round trips. This task runs each read as a
    module run of its own, side by side, and returns each result under its name in RV(reads), as C(register) on a task of
    its own would hold it.
  - Only this collection's read-only modules (C(gpufleet.netval.<name>_info)) can be read this way. They change nothing on the
    host, so running them at once cannot change what any of them finds.
  - Each read runs on its own copy of the task's connection, so what one run keeps on it (a become prompt) is its own; over
    C(ssh) the reads are sessions of one ControlMaster connection (past the node's sshd C(MaxSessions), default 10, ssh opens
    connections of their own, slower but not wrong). The reads run side by side only over C(ssh) or C(local) with pipelining on;
    otherwise (pipelining off, C(become_method=su), other connection plugins) one after another, with the same result.
  - While the host's Python is still to be discovered (no C(ansible_python_interpreter)), the first read runs alone and
    discovers it for the others.
  - C(module_defaults) set for the reads' modules do not apply (only those of this task's own name do), so give every option
    in O(reads).
  - A read that fails does not fail the task unless it is in O(required); its result says it failed. A host that stops
    answering is unreachable, as it would be for any module.
  - This is an action plugin; it runs on the controller and starts the reads on the host.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  reads:
    description:
      - The reads, by name (lower-case letters, digits and C(_)). Each is a dict with C(module), the fully qualified name of a
        C(gpufleet.netval.*_info) module, and C(args), that module's options (a dict; none when absent).
    type: dict
    required: true
  required:
    description: Names of reads whose failure fails the task, with that read's message and failure class.
    type: list
    elements: str
    default: []
notes:
  - In check mode each read runs in check mode, as its module's task would.
attributes:
  action:
    description: Runs on the controller and starts each read on the host.
    support: full
  async:
    description: Cannot run asynchronously; each read is a module run of its own.
    support: none
  check_mode:
    description: Each read runs in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Read RDMA, PCIe and host tuning side by side
  gpufleet.netval.parallel_reads:
    required: [rdma]
    reads:
      rdma:
        module: gpufleet.netval.rdma_info
        args: {ipv4: true}
      pcie:
        module: gpufleet.netval.pcie_info
      host:
        module: gpufleet.netval.host_tuning_info
        args: {irq_rdma_devices: true}
  register: node_reads

- name: Use one read as its own task's register would hold it
  ansible.builtin.debug:
    msg: "{{ node_reads.reads.rdma.live_ports | length }} live RDMA ports"
'''

RETURN = r'''
reads:
  description:
    - Per read name, the module's result as C(register) on its own task would hold it (C(failed) and C(msg) when it failed).
  returned: success or when a required read failed
  type: dict
  sample: {"rdma": {"changed": false, "devices": {}, "live_ports": []}, "pcie": {"changed": false, "devices": []}}
msg:
  description: On failure, what failed, naming the host, the read and its module.
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.netval.plugins.module_utils import parallel_reads, validate
from ansible_collections.gpufleet.netval.plugins.module_utils.failures import failure
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname


def main():
    # The action plugin of the same name does the work on the controller; run as a module, on a host, this has no
    # controller to start the reads from.
    module = AnsibleModule(argument_spec=parallel_reads.ARGUMENT_SPEC, supports_check_mode=True)
    validate.fail_if_invalid(module, 'parallel_reads', parallel_reads.check_reads(module.params['reads'], module.params['required']))
    module.fail_json(msg='%s: parallel_reads runs on the controller as an action plugin; it cannot run as a module on the host'
                     % hostname(), **failure('unknown_error'))


if __name__ == '__main__':
    main()
