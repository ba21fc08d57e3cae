# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one failure shape of the test modules: error_class, error_hint and error_side.

Every test module (perftest, iperf3, jumbo_ping, nccl_tests, dcgmi_diag) fails
with ``error_class`` (a short token from ERROR_CLASSES), ``error_hint`` (what to
check) and ``error_side``, which says whose fault the class is:

* ``ours``: our tooling or our run (a missing tool, an invalid option, our own
  timeout, a port we found busy, a server we could not reach, output we could
  not read).  The verdict must never blame the provider for these.
* ``host``: the host the module ran on (the node under test, or the peer when
  the task was delegated to it) failed what it was asked to do.
* ``unknown``: the output does not say which end is at fault.

On success the three keys are null.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

SIDE_OURS = 'ours'
SIDE_HOST = 'host'
SIDE_UNKNOWN = 'unknown'

# error_class -> (error_side, error_hint)
ERROR_CLASSES = {
    'invalid_options': (SIDE_OURS, 'fix the task options named in msg'),
    'tool_missing': (SIDE_OURS, 'install the package named in msg on the host named in msg'),
    'tool_failed': (SIDE_UNKNOWN, 'the tool exited with an error: read rc, stderr and msg'),
    'timeout': (SIDE_OURS, 'our hard timeout stopped the command: the peer may be down or its server not started, '
                           'or the timeout is too short for the test'),
    'parse_error': (SIDE_OURS, 'the output could not be read: check the tool version against the parser and read stdout'),
    'port_in_use': (SIDE_OURS, 'the port is already taken: stop the leftover server or use another port'),
    'connect_failed': (SIDE_OURS, 'could not reach the server: check that it was started on the peer, the address and port, '
                                  'and that no firewall is in the way'),
    'connect_refused': (SIDE_OURS, 'nothing listens on the server port: start the server on the peer and check the port'),
    'server_busy': (SIDE_OURS, 'the server is running another test: wait for it or use another port'),
    'server_failed': (SIDE_UNKNOWN, 'the server exited or never got ready: read output and msg'),
    'peer_unreachable': (SIDE_UNKNOWN, 'no route to the peer: check both ends\' links, addresses and routes'),
    'no_route': (SIDE_UNKNOWN, 'no route to the peer: check both ends\' links, addresses and routes'),
    'wrong_route': (SIDE_HOST, 'the route to the peer\'s rail address leaves through another interface than the tested rail '
                               '(often the management network): check the rail\'s address and prefix (a /32 has no on-link route) '
                               'and the routing table'),
    'no_interface': (SIDE_OURS, 'the interface named in the options does not exist on this host: check the option'),
    'bad_mtu': (SIDE_HOST, 'the interface MTU is unreadable or too small: check the interface configuration'),
    'jumbo_failed': (SIDE_HOST, 'full-size frames did not make it: check the MTU on both NICs and on the switch ports'),
    'iperf3_error': (SIDE_UNKNOWN, 'iperf3 reported an error: read msg'),
    'no_rdma_device': (SIDE_HOST, 'no RDMA device found: check that mlx5_ib is loaded, that ibv_devices lists the device '
                                  'and that the device option names it'),
    'qp_modify_failed': (SIDE_OURS, 'QP modify failure: check the GID index (show_gids, the RoCE v2 GID of the interface)'),
    'cuda_unavailable': (SIDE_UNKNOWN, 'CUDA/GPUDirect unavailable: check nvidia-smi, nvidia_peermem and that perftest was built '
                                       'with CUDA'),
    'completion_error': (SIDE_UNKNOWN, 'a work completion failed: check link state, MTU on both ends, PFC/ECN and the peer'),
    'argument_error': (SIDE_OURS, 'the tool rejected its command line: check the option combination and the tool version'),
    'unknown_error': (SIDE_UNKNOWN, 'the failure is not classified: read msg and the raw output'),
    'hostengine_unreachable': (SIDE_OURS, 'dcgmi could not reach the DCGM host engine: start it (systemctl start nvidia-dcgm, '
                                          'or nv-hostengine) and retry'),
    'diag_failed': (SIDE_HOST, 'the GPU diagnostic failed: read tests and gpus_failed'),
    'diag_level_not_run': (SIDE_OURS, 'dcgmi diag ran only its software checks: every hardware and stress test of the level was '
                                      'skipped (an unsupported GPU or DCGM version, a missing diag package, GPUs held by another '
                                      'process): read level_not_run and the Skip rows'),
    'multiple_jobs': (SIDE_OURS, 'mpirun ran one job per rank: build nccl-tests with MPI=1 and check the launcher'),
    'launcher_failed': (SIDE_OURS, 'mpirun could not start the job on every host: check the launcher\'s SSH session to the peer '
                                   '(its key and host key), orted there and Open MPI\'s out-of-band network (netval_fabric_subnet)'),
    'launcher_missing': (SIDE_OURS, 'a program the launcher needs is not where it looks: Open MPI (mpirun, orted under the same '
                                    'prefix) and the nccl-tests binary on both boxes; set netval_mpirun and netval_nccl_binary'),
    'trust_failed': (SIDE_OURS, 'the launcher\'s key could not be added to or removed from the test user\'s authorized_keys, or its '
                                'folder on the node written or removed: read msg'),
    'launcher_unreachable': (SIDE_OURS, 'the node could not open an SSH session to the peer as the launcher will: check the peer\'s '
                                        'address, its host keys and the test user\'s authorized key there'),
    'no_results': (SIDE_UNKNOWN, 'the benchmark printed no result rows: read errors and stdout'),
    'wrong_results': (SIDE_HOST, 'nccl-tests reported wrong results (#wrong > 0): check GPU memory and the fabric'),
    'peer_busy': (SIDE_OURS, 'every known-good peer stayed leased to other nodes: add peers, raise the wait, or look for a stuck run'),
    'evidence_error': (SIDE_UNKNOWN, 'the bundle could not be fetched (a failed transfer, or a copy whose sha256 is not the '
                                     'capture\'s), unpacked, verified or kept on the controller: read msg; the node keeps its '
                                     'own copy of the bundle'),
    'lease_error': (SIDE_OURS, 'the lease folder must be a writable local folder on the controller, shared by every run that uses '
                               'the peers'),
}

SUCCESS = {'error_class': None, 'error_hint': None, 'error_side': None}


def failure(error_class, hint=None):
    """{error_class, error_hint, error_side} for ``error_class``; ``hint`` overrides the table's hint."""
    side, table_hint = ERROR_CLASSES.get(error_class, (SIDE_UNKNOWN, None))
    return {'error_class': error_class, 'error_hint': hint or table_hint, 'error_side': side}


def failure_text(result):
    """What a failed task said, on one line: its msg, and the last line of a module's stderr (a crash's exception)."""
    if not isinstance(result, Mapping):
        return str(result) if result else ''
    text = str(result.get('msg') or 'failed')
    lines = str(result.get('module_stderr') or '').strip().splitlines()
    exception = str(result.get('exception') or '').strip()
    if not lines and exception != '(traceback unavailable)':
        lines = exception.splitlines()
    if lines and lines[-1].strip() not in text:
        text += ': ' + lines[-1].strip()
    return text
