# -*- coding: utf-8 -*-
# The netval lab's simulation, loaded once in ansible-playbook's main process (ANSIBLE_CALLBACKS_ENABLED=netval_sim) so
# that every worker it forks answers from the recording without reading it again.  Never part of the collection.
from __future__ import annotations

import json
import os
import sys

from ansible.plugins.callback import CallbackBase

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from lab.netval_lab import sim  # noqa: E402  pylint: disable=wrong-import-position

DOCUMENTATION = '''
name: netval_sim
type: aggregate
short_description: Load the netval lab's simulation in the controller's main process
description:
  - Loads the recording the simulated hosts answer from (lab/netval_lab/sim.py) before the first play, so that the
    forked workers share it.
  - At the end writes plays.json in the run's folder (NETVAL_SIM_DIR): each play's name and how many role entries it
    ended with (every task's variables walk them: tests/e2e/test_simulated_fleet.py checks they do not grow with nodes).
author: netval lab
'''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'netval_sim'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plays = []

    def v2_playbook_on_start(self, playbook):
        sim.load()

    def v2_playbook_on_play_start(self, play):
        self._plays.append(play)

    def v2_playbook_on_stats(self, stats):
        plays = [{'name': play.get_name(), 'role_entries': len(play.get_roles())} for play in self._plays]
        with open(os.path.join(sim.sim_dir(), 'plays.json'), 'w', encoding='utf-8') as handle:
            json.dump(plays, handle, indent=1)
