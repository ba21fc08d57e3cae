# -*- coding: utf-8 -*-
# The netval lab's recorder: the ssh connection, keeping every module call (module, arguments, result, seconds) and
# every file fetched, for lab/netval_lab/sim.py to answer from.  Loaded with ANSIBLE_CONNECTION_PLUGINS=<repo>/lab/
# ansible_plugins/connection by `python -m lab.netval_lab sim record`; never part of the collection.
from __future__ import annotations

import os
import sys
import time

from ansible.plugins.connection import ssh

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from lab.netval_lab import sim  # noqa: E402  pylint: disable=wrong-import-position

DOCUMENTATION = ssh.DOCUMENTATION.replace('name: ssh', 'name: netval_record', 1)


class Connection(ssh.Connection):
    transport = 'netval_record'

    def exec_command(self, cmd, in_data=None, sudoable=True):
        started = time.time()
        rc, out, err = super().exec_command(cmd, in_data, sudoable)
        sim.record_call(self.get_option('host'), in_data, rc, out, time.time() - started)
        return rc, out, err

    def fetch_file(self, in_path, out_path):
        found = super().fetch_file(in_path, out_path)
        sim.record_file(self.get_option('host'), in_path, out_path)
        return found
