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
    the CPU frequency governor, C(intel_pstate/no_turbo) and the memlock limit of a node.
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
  description: Per PCI address in I(irq_devices), its IRQs, their affinity, which are off the NIC's NUMA node, and the local fraction.
  returned: always
  type: dict
  sample: {"0000:1b:00.0": {"numa_node": 0, "count": 2, "off_node": ["87"], "fraction_local": 0.5, "irqs": []}}
memlock:
  description: Max locked memory of the module's process in bytes (soft and hard), or the string unlimited.
  returned: always
  type: dict
  sample: {"soft": "unlimited", "hard": "unlimited"}
'''

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import host_tuning, irq
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname


_BDF = re.compile(r'[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]')


def _read(module, path, required=True):
    try:
        with open(path, 'r') as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if required:
            module.fail_json(msg='%s: cannot read %s: %s' % (hostname(), path, exc))
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type='path', default='/sys'),
            procfs_root=dict(type='path', default='/proc'),
            irq_devices=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    checks.fail_if_invalid(module, 'host_tuning_info', checks.control_characters(module.params))
    sysfs = module.params['sysfs_root']
    procfs = module.params['procfs_root']

    sources = {}
    try:
        sources['cmdline'] = os.path.join(procfs, 'cmdline')
        cmdline = host_tuning.parse_cmdline(_read(module, sources['cmdline']))
        sources['meminfo'] = os.path.join(procfs, 'meminfo')
        meminfo = host_tuning.parse_meminfo(_read(module, sources['meminfo']))
        # A kernel built without loadable modules has no /proc/modules.
        sources['modules'] = os.path.join(procfs, 'modules')
        modules_text = _read(module, sources['modules'], required=False)
        modules = host_tuning.parse_proc_modules(modules_text)['modules'] if modules_text is not None else {}
        sources['limits'] = os.path.join(procfs, 'self', 'limits')
        limits = host_tuning.parse_limits(_read(module, sources['limits']))
    except ParseError as exc:
        module.fail_json(msg='%s: %s (read from %s)' % (hostname(), exc, ', '.join(sorted(sources.values()))))

    placement = {}
    if module.params['irq_devices']:
        sources['interrupts'] = os.path.join(procfs, 'interrupts')
        try:
            interrupts = irq.parse_proc_interrupts(_read(module, sources['interrupts']))
        except ParseError as exc:
            module.fail_json(msg='%s: %s (read from %s)' % (hostname(), exc, sources['interrupts']))
        for bdf in module.params['irq_devices']:
            if not checks.fullmatch(_BDF, bdf):
                module.fail_json(msg='%s: irq_devices entry %r is not a PCI address like 0000:1b:00.0' % (hostname(), bdf))
            numa = irq.read_pci_numa(bdf, sysfs)
            pattern = re.escape(bdf)
            owned = [number for number, info in interrupts['irqs'].items() if re.search(pattern, info.get('name') or '')]
            affinity = irq.read_irq_affinity(owned, procfs)
            placement[bdf] = dict(irq.irq_placement(interrupts, affinity, numa.get('local_cpulist'), pattern),
                                  numa_node=numa.get('numa_node'))

    hugepages = dict(meminfo['hugepages'])
    hugepages['pools_kib'] = host_tuning.read_hugepage_pools(sysfs)

    module.exit_json(
        changed=False,
        cmdline=cmdline,
        hugepages=hugepages,
        modules=modules,
        cpu_governor=host_tuning.summarize_governors(host_tuning.read_cpu_governors(sysfs)),
        no_turbo=host_tuning.read_no_turbo(sysfs),
        memlock=limits['memlock_bytes'],
        irq_placement=placement,
    )


if __name__ == '__main__':
    main()
