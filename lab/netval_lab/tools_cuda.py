"""CUDA and GPUDirect RDMA in the emulated perftest: what the node's perftest build, NVIDIA driver and GPUs let it do.

The profile's ``gpus.gdr_mode`` says which box this is, and the emulation accepts only what the real perftest accepts there:

* ``none``: the distribution's perftest (Debian's, built without CUDA): ``--help`` lists no CUDA option and any ``--use_cuda*``
  is an unrecognized option, as Debian 12's perftest 6.06 prints it.
* ``peermem``: the proprietary kernel module with nvidia_peermem loaded and a CUDA perftest without dma-buf (MLNX_OFED 5.5's):
  ``--use_cuda`` and ``--use_cuda_bus_id`` work, ``--use_cuda_dmabuf`` is not an option of this build.
* ``dmabuf``: the open kernel modules, no nvidia_peermem: GPU memory registers only through dma-buf, so ``--use_cuda`` alone
  fails at memory registration ("Couldn't allocate MR"), and ``--use_cuda_dmabuf`` before the GPU option is refused
  ("CUDA DMA-BUF cannot be used without CUDA"), as perftest reads its options in order.

A CUDA ordinal follows ``CUDA_DEVICE_ORDER``: PCI_BUS_ID numbers the GPUs as nvidia-smi does; the default (FASTEST_FIRST) is
emulated as another order (the second socket's GPUs first), so a plan that passes an nvidia-smi index without it lands on a
GPU far from the NIC and measures that.  Without persistence mode every CUDA start initialises its GPU first (seconds); with
nvidia-fabricmanager stopped on an NVSwitch board cuInit fails (802, system not yet initialized).

Standard library only (the lab's tools run under the system python3 with -S).
"""

import os
import time

from netval_lab.tool_common import ToolExit

# What a GPUDirect buffer on a GPU that is not the NIC's (another switch or socket), or behind ACS redirection (through the
# root complex), carries of the NIC's GPUDirect bandwidth.
FAR_GPU_FACTOR = 0.55
# Seconds one CUDA context takes to come up on a GPU without persistence mode (the lab's scale; seconds on hardware).
COLD_INIT_S = 3.0
CUDA_SYSTEM_NOT_READY = 802

_USAGE_HEAD = ['Usage:', '  %(tool)s            start a server and wait for connection',
               '  %(tool)s <host>     connect to server at <host>', '', 'Options:',
               '  -a, --all  Run sizes from 2 till 2^23',
               '  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)',
               '  -D, --duration  Run test for a customized period of seconds.',
               '  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.',
               '  -i, --ib-port=<port>  Use port <port> of IB device (default 1)',
               '  -p, --port=<port>  Listen on/connect to port <port> (default 18515)',
               '  -q, --qp=<num of qp\'s>  Num of qp\'s(default 1)',
               '  -s, --size=<size>  Size of message to exchange (default 65536)',
               '  -t, --tx-depth=<dep>  Size of tx queue (default 128)',
               '  -x, --gid-index=<index>  Test uses GID with GID index (Default : IB - no gid . ETH - 0)',
               '      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)']
_CUDA_HELP = ['      --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing',
              '      --use_cuda_bus_id=<cuda full BUS id> Use CUDA specific device, based on its full PCIe address, for GPUDirect RDMA testing']
_DMABUF_HELP = ['      --use_cuda_dmabuf Use CUDA DMA-BUF for GPUDirect RDMA testing']


def _mode(state):
    return state['gpus'].get('gdr_mode') or 'peermem'


def help_text(state, tool):
    """``<tool> --help``: the usage, with the CUDA options this build has."""
    lines = [line % {'tool': tool} for line in _USAGE_HEAD]
    if _mode(state) != 'none':
        lines += _CUDA_HELP
    if _mode(state) == 'dmabuf':
        lines += _DMABUF_HELP
    return '\n'.join(lines) + '\n'


def _unrecognized(tool, arg):
    return ToolExit(1, "%s: unrecognized option '%s'\n Invalid Command or flag.\n Please check command line and run again.\n\n%s"
                    % (tool, arg, '\n'.join(line % {'tool': tool} for line in _USAGE_HEAD) + '\n'))


def gpu_request(state, tool, args):
    """The GPU options of a perftest command line, as this build reads them: {ordinal, bus_id, dmabuf} or None for host memory.
    Raises ToolExit as the real perftest refuses them."""
    request = {'ordinal': None, 'bus_id': None, 'dmabuf': False}
    seen_gpu = False
    for arg in args:
        if not arg.startswith('--use_cuda'):
            continue
        name = arg.split('=', 1)[0]
        if _mode(state) == 'none' or (name == '--use_cuda_dmabuf' and _mode(state) != 'dmabuf'):
            raise _unrecognized(tool, arg)
        if name == '--use_cuda':
            request['ordinal'] = arg.split('=', 1)[1] if '=' in arg else '0'
            seen_gpu = True
        elif name == '--use_cuda_bus_id':
            request['bus_id'] = arg.split('=', 1)[1] if '=' in arg else ''
            seen_gpu = True
        elif name == '--use_cuda_dmabuf':
            if not seen_gpu:
                raise ToolExit(1, 'CUDA DMA-BUF cannot be used without CUDA\n')
            request['dmabuf'] = True
        else:
            raise _unrecognized(tool, arg)
    if request['ordinal'] is not None and not request['ordinal'].isdigit():
        raise ToolExit(1, ' Invalid Command or flag.\n Please check command line and run again.\n')
    return request if seen_gpu else None


def _cuda_order(state):
    """The GPUs as CUDA numbers them: PCI order with CUDA_DEVICE_ORDER=PCI_BUS_ID, else the emulated FASTEST_FIRST."""
    devices = list(state['gpus']['devices'])
    if os.environ.get('CUDA_DEVICE_ORDER') == 'PCI_BUS_ID':
        return devices
    return sorted(devices, key=lambda gpu: (-int(gpu['numa_node']), gpu['bus_id']))


def _bus(text):
    parts = str(text).lower().split(':')
    if len(parts) == 2:
        parts = ['0000'] + parts
    return ':'.join(['%04x' % int(parts[0], 16)] + parts[1:]) if len(parts) == 3 and parts[0] else None


def gpu_setup(state, nic, request, size):
    """(the lines perftest prints while it sets the GPU buffer up, the fraction of the NIC's GPUDirect bandwidth it gets) for a
    ``request`` of gpu_request; ([], 1.0) for host memory.  Raises ToolExit as the real perftest fails."""
    if request is None:
        return [], 1.0
    gpus = state['gpus']
    devices = _cuda_order(state)
    lines = []
    if request['bus_id'] is not None:
        lines += ['Got PCIe address of: %s' % request['bus_id'], 'initializing CUDA']
    else:
        lines.append('initializing CUDA')
    if gpus.get('fabric_manager') == 'stopped':
        raise ToolExit(1, '\n'.join(lines + ['cuInit(0) returned %d' % CUDA_SYSTEM_NOT_READY,
                                             "Couldn't init GPU context: %d" % CUDA_SYSTEM_NOT_READY]) + '\n')
    if not gpus.get('persistence_mode', True):
        time.sleep(COLD_INIT_S)
    if request['bus_id'] is not None:
        lines.append('Finding PCIe BUS %s' % request['bus_id'])
        wanted = _bus(request['bus_id'])
        matches = [index for index, gpu in enumerate(devices) if gpu['bus_id'] == wanted]
        if not matches:
            raise ToolExit(1, '\n'.join(lines) + '\ncuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID (%s)\n'
                           % request['bus_id'])
        index = matches[0]
        lines.append('Picking GPU number %d' % index)
    else:
        index = int(request['ordinal'])
        if index >= len(devices):
            raise ToolExit(1, '\n'.join(lines) + '\nNo such device ID (%d) exists in system\n' % index)
        lines.append('Listing all CUDA devices in system:')
        lines += ['CUDA device %d: PCIe address is %s' % (number, gpu['bus_id'][5:12].upper()) for number, gpu in enumerate(devices)]
        lines += ['', 'Picking device No. %d' % index]
    gpu = devices[index]
    lines += ['[pid = %d, dev = %d] device name = [%s]' % (os.getpid(), index, gpus['model']), 'creating CUDA Ctx',
              'making it the current CUDA Ctx', 'CUDA device integrated: 0']
    address = 0x7f0000000000 + (gpu['slot'] << 24)
    if _mode(state) == 'dmabuf' and not request['dmabuf']:
        # The open kernel modules export GPU memory only as dma-buf: a plain registration has no peer-memory client.
        raise ToolExit(1, '\n'.join(lines + ['cuMemAlloc() of a %d bytes GPU buffer' % max(131072, size * 2),
                                             'allocated GPU buffer address at %016x pointer=0x%x' % (address, address),
                                             "Couldn't allocate MR", ' Failed to create MR']) + '\n')
    lines.append('cuMemAlloc() of a %d bytes GPU buffer' % max(131072, size * 2))
    if request['dmabuf']:
        lines.append('using DMA-BUF for GPU buffer address at %#x aligned at %#x with aligned size %d' % (address, address, max(131072, size * 2)))
    else:
        lines.append('allocated GPU buffer address at %016x pointer=0x%x' % (address, address))
    factor = 1.0
    if gpu.get('nic') != nic['name']:
        factor = FAR_GPU_FACTOR
    elif nic.get('upstream') and nic['upstream'][-1] in (state.get('acs_redirect') or []):
        factor = FAR_GPU_FACTOR
    return lines, factor
