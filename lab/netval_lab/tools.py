"""Emulated hardware tools of the netval lab.

Run as ``python3 -m netval_lab.tools <tool> [args...]`` (the wrappers in a
node's ``bin/`` do this).  Every tool reads the node's ``state.json``:
``$NETVAL_LAB_NODE_DIR/state.json`` when set, else
``/run/netval-lab/nodes/<$NETVAL_LAB_NODE or hostname>/state.json``.

Output formats reproduce the real tools (headers, spacing, units) as seen in
real captured outputs; the numbers come from the state.  Standard library
only: this runs under the system python3 on the lab nodes.
"""

import importlib
import os
import sys

from netval_lab.tool_common import ToolExit, load_state

# Each tool's family module and function. A tool imports its own family only: the lab runs several hundred tool calls
# per node, and importing every family (json, random, uuid, subprocess, ipaddress ...) on each cost about 25 ms of CPU.
PERFTESTS = ('ib_write_bw', 'ib_read_bw', 'ib_send_bw', 'ib_write_lat', 'ib_read_lat', 'ib_send_lat')
NCCL_BINARIES = ('all_reduce_perf', 'all_gather_perf', 'reduce_scatter_perf', 'alltoall_perf', 'broadcast_perf',
                 'reduce_perf', 'sendrecv_perf')
TOOLS = {
    'ibstat': ('tools_rdma', 'tool_ibstat'), 'ibstatus': ('tools_rdma', 'tool_ibstatus'),
    'show_gids': ('tools_rdma', 'tool_show_gids'), 'ibdev2netdev': ('tools_rdma', 'tool_ibdev2netdev'),
    'lspci': ('tools_pci', 'tool_lspci'), 'mlxconfig': ('tools_pci', 'tool_mlxconfig'),
    'mstconfig': ('tools_pci', 'tool_mstconfig'), 'flint': ('tools_pci', 'tool_flint'),
    'mstflint': ('tools_pci', 'tool_mstflint'), 'mlxlink': ('tools_pci', 'tool_mlxlink'),
    'mstlink': ('tools_pci', 'tool_mstlink'), 'nvidia-smi': ('tools_gpu', 'tool_nvidia_smi'),
    'dcgmi': ('tools_gpu', 'tool_dcgmi'),
    'dmesg': ('tools_host', 'tool_dmesg'), 'journalctl': ('tools_host', 'tool_journalctl'),
}


def _tool(module, function):
    return getattr(importlib.import_module('netval_lab.' + module), function)


# ============================================================================ main

def dispatch(tool, args):
    if tool == 'ethtool':
        try:
            state = load_state()
        except ToolExit:
            os.execv('/usr/sbin/ethtool', ['ethtool'] + list(args))
        return _tool('tools_host', 'tool_ethtool')(state, args)
    state = load_state()
    if tool in TOOLS:
        return _tool(*TOOLS[tool])(state, args)
    if tool in PERFTESTS:
        return _tool('tools_perftest', 'tool_perftest')(state, tool, args)
    if tool in NCCL_BINARIES:
        return _tool('tools_nccl', 'tool_nccl_perf')(state, tool, args)
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
