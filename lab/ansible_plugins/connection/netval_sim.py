# -*- coding: utf-8 -*-
# The netval lab's simulated hosts (lab/netval_lab/sim.py): every module call is answered from the lab's recording of a
# real lab run, after the time the call's plan gives it, scaled down; nothing runs anywhere.  Loaded with
# ANSIBLE_CONNECTION_PLUGINS=<repo>/lab/ansible_plugins/connection by `scripts/bench.py --simulate` and the suite's small
# simulated run; never part of the collection.
from __future__ import annotations

import os
import shutil
import sys

from ansible.plugins.connection import ConnectionBase

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from lab.netval_lab import sim  # noqa: E402  pylint: disable=wrong-import-position

DOCUMENTATION = '''
name: netval_sim
short_description: A simulated host of the netval lab
description:
  - Answers every module call from the lab's recording (lab/netval_lab/sim.py) after the time its plan gives it, scaled
    by NETVAL_SIM_SCALE; files put or fetched live under NETVAL_SIM_DIR/files/<host>.
author: netval lab
options:
  host:
    description: The simulated host; the simulated inventory gives every host its own name as ansible_host.
    default: inventory_hostname
    type: string
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: delegated_vars['ansible_host']
  pipelining:
    description: Modules go in on standard input (nothing to copy to a simulated host), as the lab's ssh does.
    default: true
    type: boolean
    vars:
      - name: ansible_pipelining
'''


class Connection(ConnectionBase):
    transport = 'netval_sim'
    has_pipelining = True

    def _connect(self):
        self._connected = True
        return self

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        return sim.execute(self.get_option('host'), cmd, in_data)

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        target = sim.host_path(self.get_option('host'), out_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(in_path, target)

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        sim.fetch(self.get_option('host'), in_path, out_path)

    def close(self):
        self._connected = False
