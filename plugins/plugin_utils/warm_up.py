# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import the collection's filters (and ansible-core's filters and tests) once, in the controller's main process.

Every task of every host runs in a worker process forked from the main process. A worker that templates a filter of this
collection imports its file and the module_utils behind it; the collection loader keeps no bytecode, so each worker
compiled them again from source (about 0.2 s of CPU per worker, 130 workers per node in validate.yml). What the main
process has imported before the workers fork they inherit: the plugin loader finds the module in sys.modules and uses it.
The callbacks call this when the playbook starts; without them the run is the same, only slower.

They also call ``freeze_inherited_objects_in_workers``. A worker shares the main process's memory until it writes to a
page. Python's cyclic garbage collector writes to every container object it examines, so a worker that runs a full
collection copies every page of the main process's objects: at 256 simulated nodes a worker forked just before the main
process's own full collection went from 6 to 154 MiB in two seconds, and a burst of such workers took the controller's
tree of processes to 18 GiB. Frozen at the fork (``gc.freeze``: the inherited objects move to the permanent generation,
which no collection examines), a worker's collections look only at the objects it makes itself. The main process's own
collections are unchanged; a worker lives for one task, so inherited garbage it cannot collect is gone when it exits.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import gc
import importlib
import os
import pkgutil

PACKAGES = (
    'ansible.plugins.filter',
    'ansible.plugins.test',
    'ansible_collections.gpufleet.netval.plugins.filter',
)

# The packages this process has imported already (both callbacks call warm_up).
_WARMED = set()

# Whether this process has registered the freeze for the processes it forks (both callbacks ask for it).
_FREEZE_REGISTERED = []


def warm_up(packages=PACKAGES, importer=importlib.import_module):
    """Import every module of ``packages`` not imported yet by this process; returns the names imported. A module that
    fails to import is left to the plugin loader, which reports it where a task uses it."""
    names = []
    for package_name in packages:
        if package_name in _WARMED:
            continue
        _WARMED.add(package_name)
        try:
            package = importer(package_name)
        except Exception:  # pylint: disable=broad-except
            continue
        for info in pkgutil.iter_modules(getattr(package, '__path__', None) or []):
            name = '%s.%s' % (package_name, info.name)
            try:
                importer(name)
            except Exception:  # pylint: disable=broad-except
                continue
            names.append(name)
    return names


def freeze_inherited_objects_in_workers(register=os.register_at_fork):
    """Have every process this one forks from now on freeze the objects it inherits (``gc.freeze`` in the child), once
    per process; returns True when this call registered it."""
    if _FREEZE_REGISTERED:
        return False
    register(after_in_child=gc.freeze)
    _FREEZE_REGISTERED.append(True)
    return True
