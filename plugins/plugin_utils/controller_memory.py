# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node's facts cost the controller's main process, kept small.

Every task of every host runs in a worker forked from ansible-playbook's main process, and a fork costs in proportion to
the main process's memory: the kernel copies its page tables, and the pages either side writes are copied again. Each
fact a node keeps (set_fact, register) comes back from a worker as objects of their own, one copy per node. On a
simulated fleet (docs/BENCH.md) 600 MiB more in the main process made the tests play about 30 % slower.

* ``plain_data``: a value as plain JSON data. Data that came from YAML (a role's vars, the tier profiles) carries
  Ansible's origin tags, an object beside each value, and a fact made from it keeps them in every node's copy: the
  resolved tier profile took 190 KiB a node with its tags and 31 KiB without.
* a document kept whole until a later step needs it (a node's preflight reads until its evidence bundle) travels and
  waits as one text: module_utils/packed_json.py, which the node's module and the controller's filters share.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping


def plain_data(value):
    """The value rebuilt from the built-in types (dict, list, str, int, float, bool, None): the same keys and values,
    none of them a subclass (so none carries a tag). Any mapping (hostvars, Ansible's lazy containers) becomes a dict, a
    tuple a list and a set a sorted list, as JSON keeps them; bytes are decoded as UTF-8 (undecodable bytes replaced); any
    other object is returned as it is."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, Mapping):
        return dict((plain_data(key) if isinstance(key, str) else key, plain_data(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain_data(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_data(item) for item in value), key=repr)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value
