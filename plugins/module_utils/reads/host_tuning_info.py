# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's kernel cmdline, hugepages, modules, CPU governor, memlock limits and NIC IRQ placement.

``read(module)`` is the work of the host_tuning_info module: ``module`` is the AnsibleModule, or one read's stand-in inside
preflight_info (reads/context.py), with ``params`` validated against ``ARGUMENT_SPEC``.  It returns the module's result
(without ``changed``) or fails through ``module.fail_json``.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import os
import pwd
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import host_tuning, irq, rdma
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


ARGUMENT_SPEC = dict(
    sysfs_root=dict(type='path', default='/sys'),
    procfs_root=dict(type='path', default='/proc'),
    irq_devices=dict(type='list', elements='str', default=[]),
    irq_rdma_devices=dict(type='bool', default=False),
    memlock_user=dict(type='str', default='root'),
    memlock_login_shell=dict(type='bool', default=True),
    limits_dir=dict(type='path', default='/etc/security'),
)


def option_problems(params):
    """What is wrong with the (type-checked) options, before anything is read: sentences, empty when none."""
    problems = checks.control_characters(params)
    if not checks.fullmatch(_USER, params['memlock_user']):
        problems.append('memlock_user %r is not a user name' % (params['memlock_user'],))
    problems.extend('irq_devices entry %r is not a PCI address like 0000:1b:00.0' % (bdf,)
                    for bdf in params['irq_devices'] if not checks.fullmatch(_BDF, bdf))
    return checks.problems_of(problems)


def read(module):
    """The host_tuning_info module's result (see its RETURN), without ``changed``."""
    checks.fail_if_invalid(module, 'host_tuning_info', option_problems(module.params))
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
                                  numa_node=numa.get('numa_node'), local_cpus=irq.cpus_of(numa.get('local_cpulist')))

    hugepages = dict(meminfo['hugepages'])
    hugepages['pools_kib'] = host_tuning.read_hugepage_pools(sysfs)

    return dict(
        cmdline=cmdline,
        hugepages=hugepages,
        modules=modules,
        cpu_governor=host_tuning.summarize_governors(host_tuning.read_cpu_governors(sysfs)),
        no_turbo=host_tuning.read_no_turbo(sysfs),
        memlock=limits['memlock_bytes'],
        memlock_login=memlock_login(module, procfs, limits['memlock_bytes']),
        irq_placement=placement,
    )
