#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_tuning_info
short_description: Read the host tuning that RDMA throughput depends on
version_added: 0.1.0
description:
  - Reads the kernel command line, the hugepage pools, the loaded kernel modules,
    the CPU frequency governor, C(intel_pstate/no_turbo), NIC IRQ placement and the memlock limit of a node.
  - The memlock limit that matters is the one a login session of the test user gets (RV(memlock_login)), read as C(ulimit -l) in a
    login shell of O(memlock_user) (C(runuser -l), else C(su -)) and from the pam_limits files (C(limits.conf), C(limits.d/*.conf))
    as pam_limits applies them. The module's own process limit (RV(memlock)) is NOT that answer (Ansible's process inherits
    whatever sshd or sudo gave it) and is returned only for the record.
  - Everything is read from C(/proc) and C(/sys); nothing is changed.
  - Facts that do not exist on the host (no cpufreq in a VM, no intel_pstate on AMD) are returned as empty or null, not as errors.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  sysfs_root:
    description: Root of the sysfs tree to read (tests point this at a fixture tree).
    type: path
    default: /sys
  procfs_root:
    description: Root of the procfs tree to read.
    type: path
    default: /proc
  irq_devices:
    description:
      - PCI addresses (C(0000:1b:00.0)) of NICs whose interrupt placement to check against the NIC's NUMA node.
      - Each IRQ whose name carries the address (mlx5 names them C(mlx5_comp3@pci:0000:1b:00.0)) is compared with the
        node's C(local_cpulist).
    type: list
    elements: str
    default: []
  irq_rdma_devices:
    description:
      - Also check the interrupt placement of every RDMA device under O(sysfs_root)C(/class/infiniband) (its C(device) link's
        PCI address), beside O(irq_devices), so this read needs nothing from M(gpufleet.netval.rdma_info) and can run beside it.
    type: bool
    default: false
  memlock_user:
    description: The user the tests run as; RV(memlock_login) is the locked-memory limit of a login session of this user.
    type: str
    default: root
  memlock_login_shell:
    description:
      - Start a login shell of O(memlock_user) (C(runuser -l USER -c 'ulimit -l'), else C(su - USER -c 'ulimit -l'), as an argument
        list) to read the limit its session really gets, pam_limits and service defaults included.
      - Not started when O(procfs_root) is not C(/proc) (the module reads another system's tree, a test or a lab, and a shell here
        would describe this machine); the tree's C(self/limits) then stands for that system's login session.
      - A shell that cannot start (no runuser or su, a password asked, a timeout) is recorded in RV(memlock_login), never fatal.
    type: bool
    default: true
  limits_dir:
    description: Directory holding pam_limits' C(limits.conf) and C(limits.d/) (tests point this at a tree).
    type: path
    default: /etc/security
notes:
  - Supports check mode; it only reads.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Read host tuning facts
  gpufleet.netval.host_tuning_info:
  register: tuning

- name: Require iommu=pt on the kernel command line
  ansible.builtin.assert:
    that: "'iommu=pt' in tuning.cmdline.tokens"
'''

RETURN = r'''
cmdline:
  description: The kernel command line, split into tokens and key=value parameters.
  returned: always
  type: dict
  sample: {"tokens": ["ro", "iommu=pt"], "params": {"ro": true, "iommu": "pt"}, "params_all": {"ro": [true], "iommu": ["pt"]}}
hugepages:
  description: Hugepage counters from /proc/meminfo and the per-size pools from /sys/kernel/mm/hugepages (KiB -> count).
  returned: always
  type: dict
  sample: {"total": 128, "free": 128, "reserved": 0, "surplus": 0, "page_size_bytes": 1073741824, "pools_kib": {"1048576": 128}}
modules:
  description: Loaded kernel modules by name (empty when the kernel has no loadable modules).
  returned: always
  type: dict
  sample: {"mlx5_core": {"size": 2101248, "refcount": 1, "used_by": ["mlx5_ib"], "state": "Live"}}
cpu_governor:
  description: The scaling governor, C(uniform) when every CPU agrees, with per-governor CPU counts; null uniform and empty counts without cpufreq.
  returned: always
  type: dict
  sample: {"uniform": "performance", "counts": {"performance": 64}}
no_turbo:
  description: Value of intel_pstate/no_turbo as a boolean, null when the file does not exist.
  returned: always
  type: bool
irq_placement:
  description:
    - Per PCI address in O(irq_devices), its IRQs, their affinity, which are off the NIC's NUMA node, and the local fraction.
    - C(fraction_local) is null when it cannot be known; C(error) then says why (for example no C(/proc/interrupts) to read).
  returned: always
  type: dict
  sample: {"0000:1b:00.0": {"numa_node": 0, "count": 2, "off_node": ["87"], "fraction_local": 0.5, "irqs": []}}
memlock:
  description:
    - Max locked memory of the module's own process in bytes (soft and hard), or the string unlimited.
    - NOT the test user's limit (the process inherits sshd's or sudo's); preflight grades RV(memlock_login).
  returned: always
  type: dict
  sample: {"soft": "unlimited", "hard": "unlimited"}
memlock_login:
  description:
    - The locked-memory limit of a login session of O(memlock_user), in KiB or the string unlimited (C(soft_kib), null when unknown),
      and where it came from (C(source) C(login_shell), C(pam_limits) or C(procfs_root), null when unknown).
    - C(login_shell) is what the shell printed (C(cmd), C(soft_kib), C(error)); C(pam_limits) the soft and hard memlock lines that
      apply to the user (C(soft_from)/C(hard_from) name the file and the line), from the C(files) read; C(errors) says what could not be read.
  returned: always
  type: dict
  sample:
    user: root
    soft_kib: unlimited
    source: login_shell
    login_shell: {"cmd": "runuser -l root -c 'ulimit -l'", "soft_kib": "unlimited", "error": null}
    pam_limits: {"soft": "unlimited", "hard": "unlimited", "soft_from": "/etc/security/limits.d/99-rdma.conf: * soft memlock unlimited",
                 "hard_from": "/etc/security/limits.d/99-rdma.conf: * hard memlock unlimited", "files": ["/etc/security/limits.conf"]}
    errors: []
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import host_tuning_info as reads


def main():
    module = AnsibleModule(argument_spec=reads.ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **reads.read(module))


if __name__ == '__main__':
    main()
