# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How GPUDirect RDMA can run on a node, decided from its preflight reads before any test.

Three ways a perftest GPU buffer reaches the NIC:

* ``peermem``: the nvidia_peermem kernel module is loaded; perftest registers GPU memory with ``--use_cuda``.
* ``dmabuf``: NVIDIA's open GPU kernel modules export GPU memory as dma-buf (no nvidia_peermem needed, the path DOCA-OFED
  and the open modules support); perftest needs ``--use_cuda_dmabuf`` after the GPU option.
* ``none``: neither works here (a perftest built without CUDA, such as Debian's; the open modules with a perftest that has
  no dma-buf support; the proprietary module without nvidia_peermem): the GPUDirect figures cannot be measured, and
  the reason says what to install or load.  That is our setup, never the provider's fault.

The GPU is named by its PCI address where this perftest supports ``--use_cuda_bus_id``; otherwise by CUDA ordinal
with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so that the ordinal is the nvidia-smi index.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

PEERMEM = 'peermem'
DMABUF = 'dmabuf'
NONE = 'none'
MODES = (PEERMEM, DMABUF, NONE)
PEERMEM_MODULE = 'nvidia_peermem'
# What to install for a perftest that can run GPUDirect (the distributions' perftest is built without CUDA).
CUDA_PERFTEST_HINT = ('install a perftest built with CUDA (the perftest of MLNX_OFED or DOCA-OFED, or linux-rdma/perftest built with '
                      'CUDA_H_PATH=/usr/local/cuda/include/cuda.h; Debian and Ubuntu\'s perftest package has no CUDA)')


def _loaded(host, name):
    modules = (host or {}).get('modules')
    return None if not modules else name in modules


def decide(gpu, host):
    """The node's GPUDirect mode from gpu_info (``gdr_support``) and host_tuning_info (``modules``).

    Returns {mode, reason, peermem_loaded, open_kernel_module, driver_version, perftest_tool, cuda_bus_id, cuda_dmabuf,
    needs_peermem}: ``mode`` None when gpu_info did not read it (``gdr: false``); ``reason`` why GPUDirect cannot run
    (mode none); ``needs_peermem`` True where nvidia_peermem is the only way (the proprietary kernel module).
    """
    support = (gpu or {}).get('gdr_support')
    decided = {'mode': None, 'reason': None, 'peermem_loaded': _loaded(host, PEERMEM_MODULE), 'open_kernel_module': None,
               'driver_version': None, 'perftest_tool': None, 'cuda_bus_id': False, 'cuda_dmabuf': False, 'needs_peermem': None}
    if not isinstance(support, dict):
        return decided
    driver = support.get('driver') or {}
    perftest = support.get('perftest') or {}
    decided.update(open_kernel_module=driver.get('open_kernel_module'), driver_version=driver.get('version'),
                   perftest_tool=perftest.get('tool'), cuda_bus_id=bool(perftest.get('cuda_bus_id')))
    decided['needs_peermem'] = driver.get('open_kernel_module') is not True
    tool = perftest.get('tool') or 'perftest'
    if perftest.get('error') or perftest.get('cuda') is None:
        return dict(decided, mode=NONE, reason='%s: %s' % (perftest.get('error') or 'the perftest usage could not be read',
                                                           CUDA_PERFTEST_HINT))
    if not perftest['cuda']:
        return dict(decided, mode=NONE, reason='%s on this node is built without CUDA (its --help lists no --use_cuda): %s'
                    % (tool, CUDA_PERFTEST_HINT))
    if decided['peermem_loaded']:
        return dict(decided, mode=PEERMEM)
    if driver.get('open_kernel_module'):
        if perftest.get('cuda_dmabuf'):
            return dict(decided, mode=DMABUF, cuda_dmabuf=True)
        return dict(decided, mode=NONE, reason='the open GPU kernel modules (driver %s) register GPU memory through dma-buf, and '
                    '%s here has no --use_cuda_dmabuf: install a perftest built with dma-buf support (CUDA 11.7 or later headers), '
                    'or load nvidia_peermem' % (driver.get('version') or '?', tool))
    if driver.get('error'):
        return dict(decided, mode=NONE, reason='the NVIDIA kernel module is not loaded (%s)' % driver['error'])
    return dict(decided, mode=NONE, reason='nvidia_peermem is not loaded and the proprietary NVIDIA kernel module (driver %s) has no '
                'dma-buf path: load it (modprobe nvidia_peermem; it ships with the driver) or move to the open kernel modules'
                % (driver.get('version') or '?'))


def perftest_options(decided, ready_timeout):
    """The perftest module options of the node's GPUDirect end: {use_cuda_dmabuf, cuda_device_order, ready_timeout, by_bus_id}."""
    return {'use_cuda_dmabuf': decided.get('mode') == DMABUF, 'by_bus_id': bool(decided.get('cuda_bus_id')),
            # A CUDA ordinal is FASTEST_FIRST unless told otherwise; PCI_BUS_ID makes it the nvidia-smi index.
            'cuda_device_order': None if decided.get('cuda_bus_id') else 'PCI_BUS_ID', 'ready_timeout': ready_timeout}


def node_gpudirect(reads, profile):
    """decide() from preflight_info's reads, with ``perftest`` (perftest_options, the ready timeout from the profile's
    tests.gdr.server_ready_timeout) and ``gpu_bus_ids`` ({nvidia-smi index as text: PCI address})."""
    reads = reads or {}
    decided = decide(reads.get('gpu'), reads.get('host'))
    timeout = (((profile or {}).get('tests') or {}).get('gdr') or {}).get('server_ready_timeout')
    gpus = ((reads.get('gpu') or {}).get('gpus')) or []
    return dict(decided, perftest=perftest_options(decided, timeout),
                gpu_bus_ids=dict((str(g.get('index')), g.get('bus_id')) for g in gpus if g.get('bus_id')))
