"""netval_lab: a small GPU fleet on one Linux machine, for developing and testing gpufleet.netval.

Real parts: one network namespace + UTS namespace per host, a real sshd in each,
veth links (MTU 9000) between new nodes and known-good peers, real tc shaping,
link flaps and busy ports.  Emulated parts (hardware.py, tools.py): the sysfs/procfs
trees and the vendor tools, whose numbers come from a profile (lab/profiles/*.yml).

Importable both as ``lab.netval_lab`` (the CLI, from the repo root) and as
``netval_lab`` (the emulated tools, with PYTHONPATH=<repo>/lab).  Stdlib + PyYAML only.
"""
import os

LAB_ROOT = os.environ.get('NETVAL_LAB_ROOT', '/run/netval-lab')
NODES_ROOT = os.path.join(LAB_ROOT, 'nodes')
SSH_DIR = os.path.join(LAB_ROOT, 'ssh')
LAB_JSON = os.path.join(LAB_ROOT, 'lab.json')
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS_PREFIX = 'nvlab-'
MAX_NODES = 64
MAX_PEERS = 4
PERFTEST_PORT = 18515
IPERF3_PORT = 5201


def node_dir(host):
    """Directory of one lab host: sys/, proc/, bin/, state.json, log/."""
    return os.path.join(NODES_ROOT, host)


def netns_name(host):
    return NS_PREFIX + host
