#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_info
short_description: Inventory the NVIDIA GPUs of a node, their topology to the RDMA NICs and GPU errors in the kernel log
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x) and returns per-GPU bus id, name, UUID, serial, PCIe generation and width,
    ECC mode and error counters, retired pages, remapped rows, temperature, power draw and active clock throttle reasons.
  - With O(topology), runs C(nvidia-smi topo -m) and pairs every RDMA NIC with its closest GPU (PIX < PXB < PHB < NODE < SYS),
    which is what GPUDirect RDMA tests (C(--use_cuda=<gpu>)) need.
  - With O(kernel_log), reads C(journalctl -k -o short-iso --no-pager) (or C(dmesg) when journalctl is absent, fails or has no journal)
    and returns NVIDIA Xid events, GPUs fallen off the bus, thermal events, NIC link events and PCIe AER errors.
  - With O(gdr), reads what GPUDirect RDMA can run on here, the loaded NVIDIA kernel module (C(/proc/driver/nvidia/version); the open
    GPU kernel modules export GPU memory as dma-buf) and the CUDA options of the node's perftest (C(<perftest_tool> --help)).
  - With O(dcgm), runs C(dcgmi discovery -l) to learn whether the DCGM host engine (C(nv-hostengine), C(nvidia-dcgm.service)) answers.
  - A node without C(nvidia-smi) is not an error unless O(required=true); it reports no GPUs and C(nvidia_smi=missing).
  - With O(gpus=false) it reads only the kernel log and never runs nvidia-smi (C(nvidia_smi=skipped)), the cheap read of what
    happened during a test window; Xid events are then returned in RV(xid_events) only, not per GPU.
  - Values nvidia-smi prints as N/A are returned as null (unknown), never as 0.
author:
  - gpufleet.netval maintainers (@gpufleet)
options:
  gpus:
    description:
      - Run C(nvidia-smi -q -x) for the GPU inventory. C(false) needs O(topology=false), O(kernel_log=true) and
        O(required=false) and skips nvidia-smi altogether (on a node with eight GPUs C(-q -x) takes seconds).
    type: bool
    default: true
  topology:
    description: Also run C(nvidia-smi topo -m) and return the GPU/NIC matrix and the NIC to GPU pairs.
    type: bool
    default: true
  kernel_log:
    description: Also read the kernel log for Xid, thermal, link and AER events.
    type: bool
    default: true
  since:
    description:
      - Only kernel log entries since this time, passed to C(journalctl --since) (for example C(-1h), C(today), C(@1764582300)).
      - journalctl reads a time without a zone (C(2024-05-01 10:00:00)) in the node's own time zone; C(@<epoch seconds>) (read on the
        node) or a time ending in C(UTC) mean the same instant on every node.
      - C(dmesg) has no such filter; when it is the source, the whole ring buffer is read and C(since_applied) in RV(kernel_log) is false.
    type: str
  required:
    description: Fail when C(nvidia-smi) is not installed, instead of reporting a node without GPUs.
    type: bool
    default: false
  timeout:
    description: Seconds each command may run before it is stopped (nvidia-smi can hang on a failing GPU).
    type: int
    default: 60
  gdr:
    description: Also read the NVIDIA kernel module flavour and perftest's CUDA options (RV(gdr_support)).
    type: bool
    default: false
  perftest_tool:
    description: The perftest tool whose C(--help) says which CUDA options this perftest has (the GPUDirect test's tool).
    type: str
    choices: [ib_send_bw, ib_write_bw, ib_read_bw]
    default: ib_send_bw
  procfs_root:
    description: Where procfs is mounted (C(driver/nvidia/version) is read under it).
    type: path
    default: /proc
  dcgm:
    description: Also run C(dcgmi discovery -l) (RV(dcgm)).
    type: bool
    default: false
notes:
  - Supports check mode; it only reads.
  - Needs root (or membership of the systemd-journal/adm groups) to read the kernel log on most distributions.
attributes:
  check_mode:
    description: Can run in check mode; the module only reads, so it runs the same commands.
    support: full
  diff_mode:
    description: Reports no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Inventory GPUs, topology and kernel-log GPU errors of the last day
  gpufleet.netval.gpu_info:
    since: -24h
  register: gpu

- name: Every GPU must be present and free of Xid 79
  ansible.builtin.assert:
    that:
      - gpu.gpu_count == 8
      - gpu.gpus | length == 8
      - gpu.xid_events | selectattr('code', 'equalto', 79) | list | length == 0

- name: Run the GPUDirect test of mlx5_0 on its closest GPU
  ansible.builtin.debug:
    msg: "--use_cuda={{ (gpu.gpu_nic_pairs | selectattr('nic', 'equalto', 'mlx5_0') | first).gpu }}"

- name: Only the kernel log since the tests began (link flaps, AER, Xid), no nvidia-smi
  gpufleet.netval.gpu_info:
    gpus: false
    topology: false
    since: "@1764582300"
  register: test_window
'''

RETURN = r'''
nvidia_smi:
  description: C(present) when nvidia-smi ran, C(missing) when it is not installed, C(skipped) with O(gpus=false).
  returned: always
  type: str
  sample: present
driver_version:
  description: NVIDIA driver version, null without nvidia-smi.
  returned: always
  type: str
  sample: 535.161.08
cuda_version:
  description: CUDA version the driver supports, null without nvidia-smi.
  returned: always
  type: str
  sample: "12.2"
gpu_count:
  description: Attached GPUs as the driver reports them (0 without nvidia-smi).
  returned: always
  type: int
  sample: 8
gpu_count_mismatch:
  description: True when the number of GPU records differs from gpu_count.
  returned: always
  type: bool
gpus:
  description:
    - One record per GPU with index, bus_id (0000:1b:00.0 form), bus_id_raw, name, uuid, serial, persistence_mode,
      mig_mode_current, pcie (gen/width current and max, replays), ecc_mode_current, ecc_errors (volatile and aggregate counters),
      retired_pages, remapped_rows, temperature_c, power_draw_w, clocks_throttle_reasons (active reasons), fabric (state and status of
      the GPU's handshake with nvidia-fabricmanager, null where there is none) and xid (kernel-log Xid events on it).
  returned: always
  type: list
  elements: dict
topology:
  description: The parsed C(nvidia-smi topo -m) with devices, matrix, affinity and nic_legend; null when not requested or without nvidia-smi.
  returned: always
  type: dict
  sample: {"devices": ["GPU0", "NIC0"], "matrix": {"GPU0": {"GPU0": "X", "NIC0": "PIX"}}, "affinity": {}, "nic_legend": {"NIC0": "mlx5_0"}}
gpu_nic_pairs:
  description: For every NIC of the topology its closest GPU (gpu is the index for --use_cuda), the link type and NUMA locality.
  returned: always
  type: list
  elements: dict
  sample: [{"nic": "mlx5_0", "nic_column": "NIC0", "gpu": 0, "gpu_name": "GPU0", "link": "PIX", "numa_node": 0, "numa_local": true}]
xid_events:
  description: NVIDIA Xid events from the kernel log (code, bus_id, pid, process, message, time, line); null when the log could not be read.
  returned: always
  type: list
  elements: dict
thermal_events:
  description: Thermal/throttle lines from the kernel log; null when the log could not be read.
  returned: always
  type: list
  elements: dict
kernel_log:
  description:
    - Where the kernel log came from (source journalctl or dmesg, cmd, since_applied, error when unreadable) and the other events found
      (fallen_off_bus, sxid, link_events, aer, pcie_link_changes, line_count); null when O(kernel_log=false).
  returned: always
  type: dict
gdr_support:
  description:
    - With O(gdr), C(driver) (version, open_kernel_module, banner, error when the module is not loaded) and C(perftest) (tool, cmd,
      cuda, cuda_bus_id, cuda_dmabuf, error when it is missing or printed no usage); null otherwise.
  returned: always
  type: dict
  sample: {"driver": {"version": "555.42.02", "open_kernel_module": true, "error": null},
           "perftest": {"tool": "ib_send_bw", "cuda": true, "cuda_bus_id": true, "cuda_dmabuf": true, "error": null}}
dcgm:
  description: With O(dcgm), C(hostengine) (reachable or unreachable), C(gpu_count), C(cmd) and C(error); null otherwise.
  returned: always
  type: dict
  sample: {"hostengine": "unreachable", "gpu_count": null, "cmd": "/usr/bin/dcgmi discovery -l",
           "error": "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."}
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.netval.plugins.module_utils.reads import gpu_info as reads


def main():
    module = AnsibleModule(argument_spec=reads.ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **reads.read(module))


if __name__ == '__main__':
    main()
