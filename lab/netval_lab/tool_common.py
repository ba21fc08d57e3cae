"""What every emulated tool of the netval lab shares: its exit, output, node state and NIC lookup.

Standard library only: this runs under the system python3 on the lab nodes.
"""

import json
import os
import sys

STATE_ROOT = '/run/netval-lab/nodes'
PERFTEST_PORT = 18515
MIB = 1024.0 * 1024.0


class ToolExit(Exception):
    def __init__(self, rc, stderr=''):
        Exception.__init__(self, stderr)
        self.rc = rc
        self.stderr = stderr


def out(text=''):
    sys.stdout.write(text + '\n')


def node_dir():
    explicit = os.environ.get('NETVAL_LAB_NODE_DIR')
    if explicit:
        return explicit
    host = os.environ.get('NETVAL_LAB_NODE') or os.uname()[1]
    return os.path.join(STATE_ROOT, host)


def load_state():
    path = os.path.join(node_dir(), 'state.json')
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ToolExit(1, 'netval lab: cannot read the node state %s: %s\n' % (path, exc))


def find_nic(state, name):
    """A NIC by RDMA name, netdev, PCI address (with or without domain) or /dev/mst path."""
    if name is None:
        return None
    for nic in state['nics']:
        bdf = nic['pci_address']
        if name in (nic['name'], nic['netdev'], bdf, bdf[5:], mst_device(state, nic)):
            return nic
    return None


def mst_device(state, nic):
    same = [other for other in state['nics'] if other['hca_type'] == nic['hca_type']]
    return '/dev/mst/mt%s_pciconf%d' % (nic['hca_type'][2:], same.index(nic))


def nics_sorted(state):
    return sorted(state['nics'], key=lambda nic: nic['name'])


def phys_num(nic):
    return {'Polling': 2, 'Disabled': 3, 'LinkUp': 5}[nic['phys_state']]


def state_num(nic):
    return {'DOWN': 1, 'INIT': 2, 'ARMED': 3, 'ACTIVE': 4}[nic['state']]
