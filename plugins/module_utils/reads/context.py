# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several reads of this package in one module process on the node, side by side (preflight_info).

Each read (``reads/<module>.py``'s ``read(module)``) gets a ``ReadModule``: its own validated options, and a
``fail_json`` that ends that read alone (``ReadFailed``); warnings and tool lookups go to the real module.  The reads
run in threads of the module's own process on the node: nothing of Ansible's runs in them but module_utils code that
holds no shared state (the runner sets each command's locale in its environment, never in os.environ).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import concurrent.futures

from ansible_collections.gpufleet.netval.plugins.module_utils.runner import hostname


class ReadFailed(Exception):
    """One read called fail_json: ``result`` is what it would have failed the module with."""

    def __init__(self, result):
        super(ReadFailed, self).__init__(result.get('msg'))
        self.result = result


class ReadModule(object):
    """One read's stand-in for the AnsibleModule: ``params`` are its own (validated), ``fail_json`` raises ReadFailed."""

    def __init__(self, module, params):
        self._module = module
        self.params = params
        self.check_mode = module.check_mode

    def fail_json(self, msg, **kwargs):
        kwargs.pop('failed', None)
        raise ReadFailed(dict(kwargs, msg=msg))

    def warn(self, warning):
        self._module.warn(warning)

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        path = self._module.get_bin_path(arg, required=False, opt_dirs=opt_dirs or [])
        if path is None and required:
            self.fail_json(msg='%s: required tool %r was not found on PATH' % (hostname(), arg))
        return path


def run_read(module, read, params):
    """(result, failed) of one read: its result, or what it failed with (msg and the failure shape)."""
    try:
        return read(ReadModule(module, params)), False
    except ReadFailed as exc:
        return exc.result, True
    except Exception as exc:  # pylint: disable=broad-except
        # A bug in one read is that read's failure, named, not the end of the others.
        return {'msg': '%s: the read failed with %s: %s' % (hostname(), type(exc).__name__, exc)}, True


def run_reads(module, reads):
    """{name: (result, failed)} of ``reads`` ({name: (read function, validated params)}), all at once."""
    names = sorted(reads)
    if not names:
        return {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = dict((name, pool.submit(run_read, module, reads[name][0], reads[name][1])) for name in names)
        return dict((name, futures[name].result()) for name in names)
