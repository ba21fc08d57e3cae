#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: launcher_key
short_description: Make the SSH key pair the NCCL launcher uses for one run and one node-peer pair (on the controller)
version_added: 0.2.0
description:
  - Makes a new ed25519 key pair in the controller's memory (the action plugin of the same name; nothing is written to disk), its
    public key's comment C(netval-launcher:<run>:<node>:<peer>:<nonce>) marking it as the collection's for this run and pair.
  - P(gpufleet.netval.launcher_trust#module) installs the public half on the peer and hands the private half to the node for the
    length of the NCCL test, and removes both again. Register the result with C(no_log) - it holds the private key.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  run:
    description: The run's name (its UTC timestamp).
    type: str
    required: true
  node:
    description: The node under test (its inventory name).
    type: str
    required: true
  peer:
    description: The peer the node's mpirun launches on (its inventory name).
    type: str
    required: true
notes:
  - Runs on the controller (an action plugin); it needs the Python C(cryptography) package, a dependency of ansible-core.
attributes:
  check_mode:
    description: Makes a key in check mode too (nothing is written anywhere).
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: A key for this run and this pair
  gpufleet.netval.launcher_key:
    run: "{{ netval_run_timestamp }}"
    node: "{{ inventory_hostname }}"
    peer: "{{ netval_peer_host }}"
  register: launcher_key
  no_log: true
'''

RETURN = r'''
public_key:
  description: The public key line, C(ssh-ed25519 <base64> <comment>).
  returned: success
  type: str
private_key:
  description: The private key in OpenSSH format (keep the task under C(no_log)).
  returned: success
  type: str
comment:
  description: The key's comment, C(netval-launcher:<run>:<node>:<peer>:<nonce>).
  returned: success
  type: str
error_class:
  description: Null on success; C(invalid_options) or C(tool_missing) (the controller lacks cryptography).
  returned: always
  type: str
error_hint:
  description: What to check for RV(error_class), null on success.
  returned: always
  type: str
error_side:
  description: Whose fault RV(error_class) is, null on success (always C(ours)).
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import launcher
from ansible_collections.gpufleet.netval.plugins.module_utils import validate


def main():
    # The action plugin of the same name makes the key in the controller's worker; this makes it where the module runs.
    module = AnsibleModule(argument_spec=launcher.KEY_ARGUMENT_SPEC, supports_check_mode=True)
    validate.finish(module, launcher.key_result(module.params, module.check_mode))


if __name__ == '__main__':
    main()
