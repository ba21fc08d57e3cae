"""Emulated hardware tools of the netval lab.

Run as ``python3 -m netval_lab.tools <tool> [args...]`` (the wrappers in a
node's ``bin/`` do this).  Every tool reads the node's ``state.json``:
``$NETVAL_LAB_NODE_DIR/state.json`` when set, else
``/run/netval-lab/nodes/<$NETVAL_LAB_NODE or hostname>/state.json``.

Output formats reproduce the real tools (headers, spacing, units) as seen in
real captured outputs; the numbers come from the state.  Standard library
only: this runs under the system python3 on the lab nodes.
"""

import os
import sys

from netval_lab.tool_common import ToolExit, load_state
from netval_lab.tools_rdma import tool_ibdev2netdev, tool_ibstat, tool_ibstatus, tool_show_gids
from netval_lab.tools_pci import tool_flint, tool_lspci, tool_mlxconfig, tool_mlxlink, tool_mstconfig, tool_mstflint, tool_mstlink
from netval_lab.tools_gpu import tool_dcgmi, tool_nvidia_smi
from netval_lab.tools_perftest import PERFTEST_TITLES, tool_perftest
from netval_lab.tools_nccl import BUSBW_FACTORS, tool_mpirun, tool_nccl_perf
from netval_lab.tools_host import tool_dmesg, tool_ethtool, tool_journalctl


# ============================================================================ main

PERFTESTS = tuple(PERFTEST_TITLES)
NCCL_BINARIES = tuple(BUSBW_FACTORS)


def dispatch(tool, args):
    if tool == 'ethtool':
        try:
            state = load_state()
        except ToolExit:
            os.execv('/usr/sbin/ethtool', ['ethtool'] + list(args))
        return tool_ethtool(state, args)
    state = load_state()
    simple = {
        'ibstat': tool_ibstat, 'ibstatus': tool_ibstatus, 'show_gids': tool_show_gids, 'ibdev2netdev': tool_ibdev2netdev,
        'lspci': tool_lspci, 'mlxconfig': tool_mlxconfig, 'mstconfig': tool_mstconfig, 'flint': tool_flint,
        'mstflint': tool_mstflint, 'mlxlink': tool_mlxlink, 'mstlink': tool_mstlink, 'nvidia-smi': tool_nvidia_smi,
        'dcgmi': tool_dcgmi, 'mpirun': tool_mpirun, 'dmesg': tool_dmesg, 'journalctl': tool_journalctl,
    }
    if tool in simple:
        return simple[tool](state, args)
    if tool in PERFTESTS:
        return tool_perftest(state, tool, args)
    if tool in NCCL_BINARIES:
        return tool_nccl_perf(state, tool, args)
    sys.stderr.write('netval lab: unknown emulated tool %r\n' % tool)
    return 127


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        sys.stderr.write('usage: python3 -m netval_lab.tools <tool> [args...]\n')
        return 2
    try:
        rc = dispatch(argv[0], argv[1:])
    except ToolExit as exc:
        sys.stdout.flush()
        sys.stderr.write(exc.stderr)
        rc = exc.rc
    except BrokenPipeError:
        rc = 141
    sys.stdout.flush()
    return rc


if __name__ == '__main__':
    sys.exit(main())
