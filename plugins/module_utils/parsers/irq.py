# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NIC IRQ placement: /proc/interrupts, /proc/irq/N/smp_affinity_list and
whether a NIC's interrupt vectors run on CPUs of the NIC's own NUMA node.
Pure functions and small readers; no Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser
from ansible_collections.gpufleet.netval.plugins.module_utils.sysfs import read_value as _read

_HWIRQ = re.compile(r'^(?:\d+(?:-\w+)?|\S+-(?:edge|level|fasteoi))$')


@tool_parser('proc_interrupts')
def parse_proc_interrupts(text):
    """/proc/interrupts -> {cpus: int, irqs: {'N' or 'NMI': {counts, total, chip, hwirq, name, numeric}}}.

    Keys are strings (JSON-safe).  A row with fewer counts than CPUs (a cut
    file) keeps the counts it has and reports ``complete: False``.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError('proc_interrupts', 'empty input')
    header = lines[0].split()
    if not header or not all(re.match(r'^CPU\d+$', token) for token in header):
        raise ParseError('proc_interrupts', 'first line is not the "CPU0 CPU1 ..." header', lines[0])
    cpus = len(header)
    irqs = {}
    for line in lines[1:]:
        match = re.match(r'^\s*([0-9A-Za-z_]+):(.*)$', line)
        if not match:
            raise ParseError('proc_interrupts', 'row is not "N: counts ..."', line)
        tokens = match.group(2).split()
        counts = []
        while tokens and len(counts) < cpus and tokens[0].isdecimal():
            counts.append(int(tokens.pop(0)))
        numeric = match.group(1).isdecimal()
        chip = hwirq = None
        if numeric and tokens:
            chip = tokens.pop(0)
            if len(tokens) >= 2 and _HWIRQ.match(tokens[0]):
                hwirq = tokens.pop(0)
        irqs[match.group(1)] = {
            'counts': counts,
            'total': sum(counts),
            'chip': chip,
            'hwirq': hwirq,
            'name': ' '.join(tokens) or None,
            'numeric': numeric,
            'complete': len(counts) == cpus or (not numeric and len(counts) == 1),
        }
    return {'cpus': cpus, 'irqs': irqs}


def cpus_of(value):
    """A CPU list ('0-3,8'), a list of ints or None -> sorted list of ints, or None when unreadable."""
    if value is None:
        return None
    if isinstance(value, (list, tuple, set)):
        try:
            return sorted(set(int(cpu) for cpu in value))
        except (TypeError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    cpus = set()
    for part in value.strip().split(','):
        if not part:
            continue
        match = re.match(r'^(\d+)(?:-(\d+))?$', part.strip())
        if not match:
            return None
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if last < first or last - first > 65536:
            return None
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def irq_placement(interrupts, affinity_by_irq, numa_cpus, name_pattern):
    """Which IRQs belong to a NIC and whether they run on its NUMA node's CPUs.

    ``interrupts`` is parse_proc_interrupts output; ``affinity_by_irq`` maps an
    IRQ ('85') to its smp_affinity_list (string or list); ``numa_cpus`` is the
    NIC's local_cpulist (string or list; None when unknown); ``name_pattern``
    a regular expression searched in the IRQ name (for example
    ``mlx5_comp\\d+@pci:0000:1b:00.0``).

    Returns {irqs: [{irq, name, total, affinity, local}], off_node: [irq...],
    unknown: [irq...], fraction_local (None when nothing is known), count}.
    An IRQ is local when all its affinity CPUs are NUMA-local.
    """
    pattern = re.compile(name_pattern)
    local_cpus = cpus_of(numa_cpus)
    local_set = set(local_cpus) if local_cpus else None
    affinity_by_irq = affinity_by_irq or {}
    entries = []
    for irq, info in sorted((interrupts or {}).get('irqs', {}).items(), key=lambda item: (len(item[0]), item[0])):
        name = info.get('name') or ''
        if not info.get('numeric') or not pattern.search(name):
            continue
        affinity = cpus_of(affinity_by_irq.get(irq, affinity_by_irq.get(int(irq)) if irq.isdecimal() else None))
        local = None
        if affinity and local_set is not None:
            local = set(affinity) <= local_set
        entries.append({'irq': irq, 'name': name, 'total': info.get('total'), 'affinity': affinity, 'local': local})
    known = [entry for entry in entries if entry['local'] is not None]
    return {
        'irqs': entries,
        'count': len(entries),
        'off_node': [entry['irq'] for entry in entries if entry['local'] is False],
        'unknown': [entry['irq'] for entry in entries if entry['local'] is None],
        'fraction_local': (float(sum(1 for entry in known if entry['local'])) / len(known)) if known else None,
    }


def read_irq_affinity(irqs, procfs_root='/proc'):
    """{irq: smp_affinity_list text (stripped) or None} for the given IRQ numbers."""
    result = {}
    for irq in irqs:
        value = _read(os.path.join(procfs_root, 'irq', str(irq), 'smp_affinity_list'))
        result[str(irq)] = value.strip() if value is not None else None
    return result


def read_pci_numa(bdf, sysfs_root='/sys'):
    """{numa_node (int, None when -1 or unreadable), local_cpulist (text or None)} of a PCI device."""
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices', bdf)
    node = _read(os.path.join(base, 'numa_node'))
    cpulist = _read(os.path.join(base, 'local_cpulist'))
    numa = None
    if node is not None and re.fullmatch(r'-?[0-9]+', node.strip()) and int(node.strip()) >= 0:
        numa = int(node.strip())
    return {'numa_node': numa, 'local_cpulist': cpulist.strip() if cpulist is not None else None}
