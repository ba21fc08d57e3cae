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

import grp
import os
import pwd
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils import host_tuning, irq, rdma
from ansible_collections.gpufleet.netval.plugins.module_utils import validate as checks
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.runner import ToolRunner, hostname, render_cmd


_BDF = re.compile(r'[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]')
_USER = re.compile(r'[A-Za-z_][A-Za-z0-9_.-]{0,31}')
# Long enough for a slow PAM stack; a shell that asks for a password is stopped here.
LOGIN_SHELL_TIMEOUT = 20


def _groups_of(user):
    """The names of the groups ``user`` belongs to, or None when the user does not exist."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    names = []
    for gid in os.getgrouplist(user, entry.pw_gid):
        try:
            names.append(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return names


def _login_shell_memlock(runner, user):
    """What ``ulimit -l`` prints in a login shell of ``user``: {cmd, soft_kib, error}."""
    for tool, args in (('runuser', ['-l', user, '-c', 'ulimit -l']), ('su', ['-', user, '-c', 'ulimit -l'])):
        if runner.find(tool, required=False) is None:
            continue
        result = runner.run(tool, args, timeout=LOGIN_SHELL_TIMEOUT, check=False)
        shown = render_cmd([tool] + args)
        if result.timed_out or result.rc != 0:
            return {'cmd': shown, 'soft_kib': None,
                    'error': '%s %s: %s' % (shown, 'timed out' if result.timed_out else 'exited %d' % result.rc,
                                            (result.stderr or '').strip()[-300:] or 'no message')}
        # A login shell may print a banner first: the limit is the last line.
        lines = [line for line in (result.stdout or '').splitlines() if line.strip()]
        try:
            return {'cmd': shown, 'soft_kib': host_tuning.parse_ulimit_l(lines[-1] if lines else '')['memlock_kib'], 'error': None}
        except ParseError as exc:
            return {'cmd': shown, 'soft_kib': None, 'error': '%s: %s' % (shown, exc)}
    return {'cmd': None, 'soft_kib': None, 'error': 'neither runuser nor su is installed: no login shell could be started'}


def memlock_login(module, procfs, process_limits):
    """The locked-memory limit of a login session of the test user (see RETURN memlock_login)."""
    user = module.params['memlock_user']
    errors = []
    groups = _groups_of(user)
    if groups is None:
        errors.append('user %s does not exist on %s' % (user, hostname()))
    files = []
    for path, text in host_tuning.read_pam_limits_files(module.params['limits_dir']):
        try:
            files.append((path, host_tuning.parse_pam_limits(text)))
        except ParseError as exc:
            errors.append('%s: %s' % (path, exc))
    pam = dict(host_tuning.resolve_pam_limit(files, 'memlock', user, groups or ()), files=[path for path, _parsed in files])
    shell = None
    other_tree = os.path.normpath(procfs) != '/proc'
    if module.params['memlock_login_shell'] and not other_tree:
        shell = _login_shell_memlock(ToolRunner(module), user)
        if shell['error']:
            errors.append(shell['error'])
    result = {'user': user, 'soft_kib': None, 'source': None, 'login_shell': shell, 'pam_limits': pam, 'errors': errors}
    soft = (process_limits or {}).get('soft')
    if shell and shell['soft_kib'] is not None:
        result.update(soft_kib=shell['soft_kib'], source='login_shell')
    elif pam['soft'] is not None:
        result.update(soft_kib=pam['soft'], source='pam_limits')
    elif other_tree and soft is not None:
        result.update(soft_kib=soft if soft == 'unlimited' else soft // 1024, source='procfs_root')
    return result


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
            irq_rdma_devices=dict(type='bool', default=False),
            memlock_user=dict(type='str', default='root'),
            memlock_login_shell=dict(type='bool', default=True),
            limits_dir=dict(type='path', default='/etc/security'),
        ),
        supports_check_mode=True,
    )
    checks.fail_if_invalid(module, 'host_tuning_info', checks.control_characters(module.params))
    if not checks.fullmatch(_USER, module.params['memlock_user']):
        module.fail_json(msg='%s: memlock_user %r is not a user name' % (hostname(), module.params['memlock_user']))
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
    irq_devices = list(module.params['irq_devices'])
    if module.params['irq_rdma_devices']:
        # An address sysfs spells otherwise (uevent of an odd device) is left out, not a failed read.
        irq_devices.extend(address for address in rdma.rdma_pci_addresses(sysfs)
                           if checks.fullmatch(_BDF, address) and address not in irq_devices)
    if irq_devices:
        sources['interrupts'] = os.path.join(procfs, 'interrupts')
        text = _read(module, sources['interrupts'], required=False)
        try:
            interrupts = irq.parse_proc_interrupts(text) if text is not None else None
        except ParseError as exc:
            module.fail_json(msg='%s: %s (read from %s)' % (hostname(), exc, sources['interrupts']))
        for bdf in irq_devices:
            if not checks.fullmatch(_BDF, bdf):
                module.fail_json(msg='%s: irq_devices entry %r is not a PCI address like 0000:1b:00.0' % (hostname(), bdf))
            numa = irq.read_pci_numa(bdf, sysfs)
            if interrupts is None:
                # Unknown placement, not a failed module: the other facts still count.
                placement[bdf] = {'numa_node': numa.get('numa_node'), 'count': 0, 'irqs': [], 'off_node': [], 'unknown': [],
                                  'fraction_local': None, 'error': 'cannot read %s' % sources['interrupts']}
                continue
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
        memlock_login=memlock_login(module, procfs, limits['memlock_bytes']),
        irq_placement=placement,
    )


if __name__ == '__main__':
    main()
