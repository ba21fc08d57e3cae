"""Emulated hardware of one lab node: state.json, sysfs/procfs trees and tool wrappers.

``materialize(profile, host, role, node_dir, lab_info)`` resolves the
profile for the node's role, writes ``state.json`` (the single source of
truth the emulated tools read), a sysfs-like tree under ``sys/``, a
procfs-like tree under ``proc/`` and the tool wrappers under ``bin/``.

``apply_fault(node_dir, name)`` / ``clear_faults(node_dir)`` change the
emulated hardware: the pristine state is kept in ``state.base.json``, the
faults are re-applied to it in order, and every file whose content changes
is rewritten atomically (temporary file + rename).
"""

import collections
import copy
import hashlib
import json
import os
import re
import tempfile
import time

from . import profiles, site

REPO_ROOT = profiles.REPO_ROOT
LAB_PYTHONPATH = os.path.join(REPO_ROOT, 'lab')

TOOLS = (
    'ibstat', 'ibstatus', 'show_gids', 'ibdev2netdev', 'lspci', 'mlxconfig', 'mstconfig', 'flint',
    'mstflint', 'mlxlink', 'mstlink', 'nvidia-smi', 'dcgmi',
    'ib_send_bw', 'ib_write_bw', 'ib_read_bw', 'ib_send_lat', 'ib_write_lat', 'ib_read_lat',
    'all_reduce_perf', 'all_gather_perf', 'reduce_scatter_perf', 'broadcast_perf', 'reduce_perf', 'alltoall_perf',
    'sendrecv_perf', 'journalctl', 'dmesg', 'ethtool',
)
# mpirun is not among them: the lab launches NCCL with the real Open MPI (Debian's openmpi-bin), over the lab's real SSH.

# Faults this module emulates (others, such as link-flap, are real and belong to lab-infra).
# A degraded NIC on a known-good peer (fault peer-nic-slow): its first HCA carries this fraction of its bandwidth.
NIC_SLOW_FACTOR = 0.6
# A replaced cable that costs mlx5_3 this fraction of its bandwidth (re-validation's delta, still within a loose contract).
CABLE_SWAP_FACTOR = 0.92
REQUIRED_CMDLINE_TOKENS = ('iommu=pt', 'intel_iommu=on')
PAUSE_STORM_RATE = 50000

RATE_LABELS = {10: '4X QDR', 25: '1X EDR', 40: '4X QDR', 50: '1X HDR', 56: '4X FDR', 100: '4X EDR', 200: '4X HDR',
               400: '4X NDR', 800: '4X XDR'}
PCI_NAMES = {
    'MT4123': ('0x101b', 'MT28908 Family [ConnectX-6]'),
    'MT4125': ('0x101d', 'MT2892 Family [ConnectX-6 Dx]'),
    'MT4129': ('0x1021', 'MT2910 Family [ConnectX-7]'),
    'MT4131': ('0x1023', 'CX8 Family [ConnectX-8]'),
}
GPU_PCI_NAMES = {
    '0x2330': 'GH100 [H100 SXM5 80GB]', '0x2901': 'GB100 [B200]', '0x20b2': 'GA100 [A100 SXM4 80GB]',
    '0x20b5': 'GA100 [A100 PCIe 80GB]', '0x2e12': 'Device 2e12',
}
GPU_ARCH = {'H100': 'Hopper', 'B200': 'Blackwell', 'GB10': 'Blackwell', 'A100': 'Ampere'}


# ----------------------------------------------------------------------------- helpers

def _digest(*parts):
    return hashlib.sha256('/'.join(str(part) for part in parts).encode()).hexdigest()


def _guid(*parts):
    return '0x' + _digest('guid', *parts)[:16]


def atomic_write(path, content, mode=0o644):
    """Write content to path through a temporary file and rename; skip when unchanged."""
    data = content.encode() if isinstance(content, str) else content
    try:
        with open(path, 'rb') as handle:
            if handle.read() == data:
                return False
    except OSError:
        pass
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', dir=directory)
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def _symlink(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.islink(path):
        if os.readlink(path) == target:
            return
        os.unlink(path)
    tmp = path + '.tmp-link'
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, path)


def speed_text(gts):
    """sysfs current_link_speed text for a GT/s figure ('32.0 GT/s PCIe')."""
    return '%.1f GT/s PCIe' % float(gts)


def rate_label(gbps):
    return '%d Gb/sec (%s)' % (gbps, RATE_LABELS.get(gbps, '4X'))


def parse_bdf(bdf):
    match = re.match(r'^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$', bdf)
    return int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16), int(match.group(4))


def pci_chain(bdf, beside=None):
    """Upstream chain of an endpoint: (host bridge dir, [root port, switch up, switch down]) BDFs.

    Endpoints use device number 00; the bridges use 01/02/03 so that no bridge BDF collides with an endpoint.
    ``beside``: the NIC whose PCIe switch this device (its GPUDirect GPU, on the next bus) shares, as on an HGX board: the
    same root port and switch upstream port, its own downstream port (device 04 on the switch's internal bus).
    """
    domain, bus = parse_bdf(bdf)[:2]
    if beside is not None:
        host_bridge, chain = pci_chain(beside)
        if len(chain) == 3:
            switch_bus = parse_bdf(chain[2])[1]
            return host_bridge, chain[:2] + ['%04x:%02x:04.0' % (domain, switch_bus)]
    if bus >= 3:
        top = bus - 3
        ports = ['%04x:%02x:01.0' % (domain, top), '%04x:%02x:02.0' % (domain, bus - 2), '%04x:%02x:03.0' % (domain, bus - 1)]
        return 'pci%04x:%02x' % (domain, top), ports
    return 'pci%04x:00' % domain, ['%04x:00:01.0' % domain]


def device_path(bdf, beside=None):
    """Path of a PCI function under sys/devices (relative to sys/)."""
    bridge, chain = pci_chain(bdf, beside)
    return os.path.join('devices', bridge, *(chain + [bdf]))


# ----------------------------------------------------------------------------- state

def _gpu_buses(tier, count):
    if tier == 'roce-pair-2x100g':
        return ['000f:01:00.0'][:count] + ['000f:%02x:00.0' % (index + 2) for index in range(count - 1)]
    return ['0000:%02x:00.0' % (profiles.SLOT_BASES[index % len(profiles.SLOT_BASES)] + 4) for index in range(count)]


def build_state(profile, host, role, lab_info):
    """Resolve profile + role + lab_info into the node's hardware state (a JSON-able dict)."""
    hw = profiles.resolve_role(profile, role)
    lab_info = lab_info or {}
    fabric = list(lab_info.get('fabric') or [])
    ports = dict((port['name'], port) for port in lab_info.get('ports') or [])
    if ports:
        # A real site (site.py): the compute NICs, the front-end and storage NICs, each standing for a real port.
        hw['nics'] = site.host_nics(hw, len(hw['nics']))
        fabric = [{'netdev': port['netdev'], 'ip': port['ip'], 'prefix': port['prefix']}
                  for port in lab_info['ports'] if port['kind'] == 'rail' and port['ip']]
    now = time.time()
    nics = []
    active = [nic['name'] for nic in hw['nics'] if nic['state'] == 'ACTIVE']
    for index, nic in enumerate(hw['nics']):
        nic = copy.deepcopy(nic)
        nic['index'] = index
        nic['profile_netdev'] = nic['netdev']
        nic['netdev_real'] = False
        nic['fabric'] = None
        nic.setdefault('role', 'compute')
        port = ports.get(nic['name'])
        if port:
            nic['netdev'] = port['netdev']
            nic['netdev_real'] = True
            nic['netdev_mtu'] = port['mtu']
            nic['fabric'] = {'netdev': port['netdev'], 'ip': port['ip'], 'prefix': port['prefix'], 'rail': port['rail'],
                             'isolated': port['isolated'], 'kind': port['kind']}
        elif not ports and nic['name'] in active and active.index(nic['name']) < len(fabric):
            link = fabric[active.index(nic['name'])]
            nic['netdev'] = link.get('netdev') or nic['netdev']
            nic['netdev_real'] = bool(link.get('netdev'))
            nic['fabric'] = link
        elif not ports and fabric and nic['name'] in active and nic['link_layer'] == 'Ethernet':
            # A live RoCE port beyond the box's cables (the two-box pair's second PCIe function of its one port): RoCE
            # needs its IPv4 (its RoCE v2 GID), so it is addressed as its operator would, in a /30 of its own beside the
            # cable's (the same host part, so node and peer share it); it has no real netdev here, and its data moves
            # on the box's cable (one physical port), never on the management network its handshake crosses.
            extra = active.index(nic['name']) - len(fabric)
            cable = (fabric[0].get('ip') or '0.0.0.0').split('.')
            nic['fabric'] = {'netdev': None, 'ip': '10.%d.%s.%s' % (249 - extra, cable[2], cable[3]), 'prefix': 30,
                             'emulated_only': True, 'cable': fabric[0].get('netdev')}
        ident = (profile['name'], host, nic['name'])
        nic['node_guid'] = _guid('node', *ident)
        nic['sys_image_guid'] = nic['node_guid']
        nic['port_guid'] = _guid('port', *ident)
        mac = '02:%s' % ':'.join(_digest('mac', *ident)[i:i + 2] for i in range(0, 10, 2))
        nic['mac'] = mac
        ib = nic['link_layer'] == 'InfiniBand'
        nic['lid'] = (int(_digest('lid', *ident)[:3], 16) % 0xffe) + 1 if ib and nic['state'] == 'ACTIVE' else 0
        nic['sm_lid'] = 1 if ib and nic['state'] == 'ACTIVE' else 0
        nic['rate_gbps_reported'] = nic['rate_gbps'] if nic['state'] == 'ACTIVE' else 40
        nic['rate_text'] = rate_label(nic['rate_gbps_reported'])
        nic['pci_device_id'], nic['pci_name'] = PCI_NAMES.get(nic['hca_type'], ('0x1021', 'MT2910 Family [ConnectX-7]'))
        nic['pci_class'] = '0x020700' if ib else '0x020000'
        nic['serial'] = 'MT%s' % _digest('sn', *ident)[:10].upper()
        nic['pause_base'] = 0
        nic['pause_epoch'] = now
        nic['gids'] = _gids(nic)
        nics.append(nic)
    gpus = hw['gpus']
    buses = _gpu_buses(profile['tier'], gpus['count_expected'])
    missing = set()
    if gpus['count_present'] < gpus['count_expected']:
        for line in gpus['xid_lines']:
            match = re.search(r'PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})', line)
            if match and match.group(1).lower() + '.0' in buses:
                missing.add(match.group(1).lower() + '.0')
        for bus in reversed(buses):
            if len(buses) - len(missing) <= gpus['count_present']:
                break
            missing.add(bus)
    devices = []
    numa_nodes = gpus.get('numa_nodes') or []
    for index, bus in enumerate(buses):
        if bus in missing:
            continue
        affinity = nics[index] if index < len(nics) else (nics[0] if nics else None)
        devices.append({
            'index': len(devices), 'slot': index, 'bus_id': bus,
            'numa_node': numa_nodes[index] if index < len(numa_nodes) else (affinity['numa_node'] if affinity else 0),
            'uuid': _gpu_uuid(host, index),
            'serial': str(1650000000000 + int(_digest('serial', host, index)[:8], 16) % 999999999),
            'nic': affinity['name'] if affinity else None,
        })
    by_name = dict((nic['name'], nic) for nic in nics)
    for gpu in devices:
        nic = by_name.get(gpu['nic'])
        # The GPU on the bus after its NIC's hangs below the NIC's PCIe switch (topo -m: PXB); elsewhere it has a root port of its own.
        near = nic is not None and parse_bdf(gpu['bus_id'])[:2] == (parse_bdf(nic['pci_address'])[0], parse_bdf(nic['pci_address'])[1] + 1)
        gpu['beside'] = nic['pci_address'] if near else None
        gpu['upstream'] = pci_chain(gpu['bus_id'], gpu['beside'])[1]
    for nic in nics:
        nic['upstream'] = pci_chain(nic['pci_address'])[1]
    acs_on = []
    for nic in nics:
        if nic.get('acs_on_gpu_path'):
            gpu = next((g for g in devices if g['nic'] == nic['name'] and g['beside'] == nic['pci_address']), None)
            acs_on += [nic['upstream'][-1]] + ([gpu['upstream'][-1]] if gpu else [])
    gpus = dict(gpus, devices=devices, buses_expected=buses, missing_buses=sorted(missing))
    return {
        'host': host, 'role': role, 'profile': profile['name'], 'tier': profile['tier'], 'created': now,
        'faults': [], 'nics': nics, 'gpus': gpus, 'host_hw': hw['host'], 'nccl': hw['nccl'], 'dcgmi': _dcgmi(hw['dcgmi'], lab_info),
        'fabric': fabric, 'mgmt_ip': lab_info.get('mgmt_ip'), 'site': lab_info.get('site') or 'ideal',
        # Bridges whose ACS redirects peer-to-peer traffic (lspci ACSCtl ReqRedir+ CmpltRedir+ UpstreamFwd+).
        'acs_redirect': sorted(set(acs_on)),
    }


def _dcgmi(dcgmi, lab_info):
    """The profile's dcgmi, every level taking the lab-wide --dcgmi-seconds when one is given."""
    seconds = lab_info.get('dcgmi_seconds')
    if seconds is None:
        return dcgmi
    return dict(dcgmi, seconds_by_level=dict((str(level), seconds) for level in (1, 2, 3, 4)))


def _gpu_uuid(host, index):
    digest = _digest('uuid', host, index)
    return 'GPU-%s-%s-%s-%s-%s' % (digest[0:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32])


def _gids(nic):
    mac = [int(part, 16) for part in nic['mac'].split(':')]
    eui = [mac[0] ^ 2] + mac[1:3] + [0xff, 0xfe] + mac[3:]
    link_local = 'fe80:0000:0000:0000:%02x%02x:%02x%02x:%02x%02x:%02x%02x' % tuple(eui)
    if nic['link_layer'] == 'InfiniBand':
        guid = nic['port_guid'][2:]
        return [{'index': 0, 'gid': 'fe80:0000:0000:0000:%s:%s:%s:%s' % (guid[0:4], guid[4:8], guid[8:12], guid[12:16]),
                 'type': 'IB/RoCE v1', 'ipv4': None}]
    gids = [{'index': 0, 'gid': link_local, 'type': 'IB/RoCE v1', 'ipv4': None},
            {'index': 1, 'gid': link_local, 'type': 'RoCE v2', 'ipv4': None}]
    ip = (nic.get('fabric') or {}).get('ip')
    if ip:
        octets = [int(part) for part in ip.split('.')]
        mapped = '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' % tuple(octets)
        gids.append({'index': 2, 'gid': mapped, 'type': 'IB/RoCE v1', 'ipv4': ip})
        gids.append({'index': 3, 'gid': mapped, 'type': 'RoCE v2', 'ipv4': ip})
    return gids


def pause_counter(nic, now=None):
    """Current rx/tx pause frame counter of a NIC (grows at pause_rate_per_s since pause_epoch)."""
    now = time.time() if now is None else now
    return int(nic.get('pause_base', 0) + nic.get('pause_rate_per_s', 0) * max(0.0, now - nic.get('pause_epoch', now)))


# ----------------------------------------------------------------------------- faults

# The emulated hardware faults, by name: what the fault does (its line in `lab fault --help` and lab/README.md), on whose
# hardware (the node's, or its known-good peer's) and how it changes the emulated state.  faults.py lists them with the
# lab's real faults; a new one is one decorated function here.
EmulatedFault = collections.namedtuple('EmulatedFault', 'name target does change')
EMULATED = {}


def emulated_fault(name, does, target='node'):
    def register(change):
        EMULATED[name] = EmulatedFault(name, target, does, change)
        return change
    return register


@emulated_fault('nic0-gen4', "the node's first NIC trains at Gen4 (16 GT/s) and delivers what that link carries")
def _nic0_gen4(state):
    nics = state['nics']
    if nics:
        nics[0]['pcie']['lnksta_gts'] = 16
        nics[0]['bw_gbytes_s'] = 38.0
        nics[0]['gdr_bw_gbytes_s'] = min(nics[0]['gdr_bw_gbytes_s'], 37.6)


@emulated_fault('cmdline-drop', 'the kernel command line loses its first required token (iommu=pt, else intel_iommu=on)')
def _cmdline_drop(state):
    tokens = state['host_hw']['cmdline']
    for token in REQUIRED_CMDLINE_TOKENS:
        if token in tokens:
            tokens.remove(token)
            state['host_hw']['cmdline_dropped'] = token
            break


@emulated_fault('pause-storm', 'every cabled NIC receives PAUSE_STORM_RATE pause frames a second from now on')
def _pause_storm(state):
    now = time.time()
    # A port without a link (the storage card's uncabled second port) receives no frames at all.
    for nic in (n for n in state['nics'] if n.get('state', 'ACTIVE') == 'ACTIVE'):
        nic['pause_base'] = pause_counter(nic, now)
        nic['pause_epoch'] = now
        nic['pause_rate_per_s'] = PAUSE_STORM_RATE


@emulated_fault('peer-nic-slow', "the known-good peer's first HCA carries NIC_SLOW_FACTOR of its bandwidth", target='peer')
def _peer_nic_slow(state):
    nics = state['nics']
    if nics:
        nics[0]['bw_gbytes_s'] = round(nics[0]['bw_gbytes_s'] * NIC_SLOW_FACTOR, 2)
        nics[0]['gdr_bw_gbytes_s'] = round(nics[0]['gdr_bw_gbytes_s'] * NIC_SLOW_FACTOR, 2)


@emulated_fault('cable-swap', "a replaced cable costs the node's fourth HCA (mlx5_3) CABLE_SWAP_FACTOR of its bandwidth")
def _cable_swap(state):
    nics = state['nics']
    if len(nics) > 3:
        nics[3]['bw_gbytes_s'] = round(nics[3]['bw_gbytes_s'] * CABLE_SWAP_FACTOR, 2)
        nics[3]['gdr_bw_gbytes_s'] = round(nics[3]['gdr_bw_gbytes_s'] * CABLE_SWAP_FACTOR, 2)


@emulated_fault('fw-change', "the node's first NIC runs a newer firmware (its minor version one up, its build 1000)")
def _fw_change(state):
    nics = state['nics']
    if nics:
        parts = nics[0]['fw_version'].split('.')
        parts[1] = str(int(parts[1]) + 1) if parts[1].isdigit() else parts[1]
        parts[-1] = '1000'
        nics[0]['fw_version'] = '.'.join(parts)


FAULTS = tuple(EMULATED)


def _apply_one(state, name):
    if name not in EMULATED:
        raise ValueError('unknown emulated fault %r (known: %s)' % (name, ', '.join(FAULTS)))
    EMULATED[name].change(state)


def _load(node_dir, name):
    with open(os.path.join(node_dir, name), encoding='utf-8') as handle:
        return json.load(handle)


def _rebuild(node_dir, faults):
    base = _load(node_dir, 'state.base.json')
    state = copy.deepcopy(base)
    previous = None
    try:
        previous = _load(node_dir, 'state.json')
    except (OSError, ValueError):
        pass
    for name in faults:
        _apply_one(state, name)
    if previous and 'pause-storm' in faults and 'pause-storm' in previous.get('faults', []):
        for nic, old in zip(state['nics'], previous['nics']):
            nic['pause_base'], nic['pause_epoch'] = old.get('pause_base', 0), old.get('pause_epoch', nic['pause_epoch'])
    elif previous and 'pause-storm' not in faults:
        now = time.time()
        for nic, old in zip(state['nics'], previous['nics']):
            nic['pause_base'], nic['pause_epoch'] = pause_counter(old, now), now
    state['faults'] = list(faults)
    write_state(node_dir, state)
    return state


def apply_fault(node_dir, name):
    """Apply an emulated fault (one of FAULTS) to the node; returns the new state."""
    if name not in FAULTS:
        raise ValueError('unknown emulated fault %r (known: %s)' % (name, ', '.join(FAULTS)))
    current = _load(node_dir, 'state.json')
    faults = [fault for fault in current.get('faults', []) if fault != name] + [name]
    return _rebuild(node_dir, faults)


def clear_faults(node_dir):
    """Back to the profile's hardware (pause counters keep their current value)."""
    return _rebuild(node_dir, [])


def set_netdev_mtu(node_dir, netdev, mtu):
    """The MTU of an emulated netdev (interface configuration, not a fault: it survives clear_faults); no-op for
    a netdev the host's emulated NICs do not have."""
    for name in ('state.base.json', 'state.json'):
        state = _load(node_dir, name)
        nics = [nic for nic in state['nics'] if nic.get('netdev') == netdev]
        if not nics:
            return None
        for nic in nics:
            nic['netdev_mtu'] = mtu
        if name == 'state.json':
            write_state(node_dir, state)
        else:
            atomic_write(os.path.join(node_dir, name), json.dumps(state, indent=1, sort_keys=True) + '\n')
    return mtu


# ----------------------------------------------------------------------------- trees

def write_state(node_dir, state):
    atomic_write(os.path.join(node_dir, 'state.json'), json.dumps(state, indent=1, sort_keys=True) + '\n')
    render_sys(os.path.join(node_dir, 'sys'), state)
    render_proc(os.path.join(node_dir, 'proc'), state)


def _pci_function(root, bdf, attrs, beside=None):
    base = os.path.join(root, device_path(bdf, beside))
    for key, value in attrs.items():
        atomic_write(os.path.join(base, key), '%s\n' % value)
    _symlink(os.path.relpath(base, os.path.join(root, 'bus', 'pci', 'devices')),
             os.path.join(root, 'bus', 'pci', 'devices', bdf))
    return base


def _bridges(root, bdf, max_gts, width, current_gts, beside=None):
    bridge, chain = pci_chain(bdf, beside)
    path = os.path.join(root, 'devices', bridge)
    for index, port in enumerate(chain):
        path = os.path.join(path, port)
        last = index == len(chain) - 1
        attrs = {'max_link_speed': speed_text(max_gts), 'max_link_width': width,
                 'current_link_speed': speed_text(current_gts if last else max_gts), 'current_link_width': width,
                 'class': '0x060400', 'vendor': '0x8086' if index == 0 else '0x1000',
                 'device': '0x352a' if index == 0 else '0xc030'}
        for key, value in attrs.items():
            atomic_write(os.path.join(path, key), '%s\n' % value)
        _symlink(os.path.relpath(path, os.path.join(root, 'bus', 'pci', 'devices')),
                 os.path.join(root, 'bus', 'pci', 'devices', port))


def _cpulist(node, nodes, cpus):
    per = max(1, cpus // max(1, nodes))
    return '%d-%d' % (node * per, node * per + per - 1)


def render_sys(root, state):
    hw = state['host_hw']
    for nic in state['nics']:
        pcie = nic['pcie']
        upstream = pcie.get('upstream_max_gts', pcie['lnkcap_gts'])
        _bridges(root, nic['pci_address'], upstream, pcie.get('upstream_width', pcie['lnkcap_width']), pcie['lnksta_gts'])
        dev = _pci_function(root, nic['pci_address'], {
            'current_link_speed': speed_text(pcie['lnksta_gts']), 'max_link_speed': speed_text(pcie['lnkcap_gts']),
            'current_link_width': pcie['lnksta_width'], 'max_link_width': pcie['lnkcap_width'],
            'numa_node': nic['numa_node'], 'class': nic['pci_class'], 'vendor': '0x15b3', 'device': nic['pci_device_id'],
            'subsystem_vendor': '0x15b3', 'subsystem_device': '0x0026',
            'local_cpulist': _cpulist(nic['numa_node'], hw['numa_nodes'], hw['cpus']),
        })
        ib = os.path.join(root, 'class', 'infiniband', nic['name'])
        for key, value in (('fw_ver', nic['fw_version']), ('hca_type', nic['hca_type']), ('board_id', nic['psid']),
                           ('node_guid', _colon_guid(nic['node_guid'])), ('sys_image_guid', _colon_guid(nic['sys_image_guid'])),
                           ('node_type', '1: CA')):
            atomic_write(os.path.join(ib, key), '%s\n' % value)
        _symlink(os.path.relpath(dev, ib), os.path.join(ib, 'device'))
        port = os.path.join(ib, 'ports', '1')
        state_num = {'DOWN': 1, 'INIT': 2, 'ARMED': 3, 'ACTIVE': 4}[nic['state']]
        phys_num = {'Polling': 2, 'Disabled': 3, 'LinkUp': 5}[nic['phys_state']]
        for key, value in (('state', '%d: %s' % (state_num, nic['state'])), ('phys_state', '%d: %s' % (phys_num, nic['phys_state'])),
                           ('rate', nic['rate_text']), ('link_layer', nic['link_layer']), ('lid', '0x%x' % nic['lid']),
                           ('sm_lid', '0x%x' % nic['sm_lid']), ('lid_mask_count', 0),
                           ('cap_mask', '0x00010000' if nic['link_layer'] == 'Ethernet' else '0xa751e848')):
            atomic_write(os.path.join(port, key), '%s\n' % value)
        for gid in nic['gids']:
            atomic_write(os.path.join(port, 'gids', str(gid['index'])), gid['gid'] + '\n')
            atomic_write(os.path.join(port, 'gid_attrs', 'types', str(gid['index'])), gid['type'] + '\n')
            atomic_write(os.path.join(port, 'gid_attrs', 'ndevs', str(gid['index'])),
                         (nic['netdev'] if nic['link_layer'] == 'Ethernet' else '') + '\n')
        for counter in ('symbol_error', 'link_error_recovery', 'link_downed', 'port_rcv_errors', 'port_xmit_discards',
                        'port_rcv_remote_physical_errors', 'local_link_integrity_errors', 'excessive_buffer_overrun_errors',
                        'port_xmit_wait'):
            atomic_write(os.path.join(port, 'counters', counter), '%d\n' % nic.get('counters', {}).get(counter, 0))
        net = os.path.join(dev, 'net', nic['netdev'])
        # A NIC that stands for an ideal site's fabric veth has the veth's jumbo MTU whatever its link layer; on a real site
        # the port's own MTU (netdev_mtu: IPoIB 4092 or 2044, RoCE 9000).
        default_mtu = 9000 if nic.get('fabric') or nic['link_layer'] != 'InfiniBand' else 4092
        for key, value in (('mtu', nic.get('netdev_mtu') or default_mtu), ('address', nic['mac']),
                           ('operstate', 'up' if nic['state'] == 'ACTIVE' else 'down'),
                           ('speed', nic['rate_gbps'] * 1000 if nic['state'] == 'ACTIVE' else -1)):
            atomic_write(os.path.join(net, key), '%s\n' % value)
        _symlink(os.path.relpath(net, os.path.join(root, 'class', 'net')), os.path.join(root, 'class', 'net', nic['netdev']))
    gpus = state['gpus']
    for gpu in gpus['devices']:
        gen_gts = {3: 8, 4: 16, 5: 32, 6: 64}.get(gpus['pcie_gen'], 32)
        beside = gpu.get('beside')
        if beside is None:
            _bridges(root, gpu['bus_id'], gen_gts, gpus['pcie_width'], gen_gts)
        else:
            # Only its own downstream port: the root port and the switch's upstream port are the NIC's, written with it.
            host_bridge, chain = pci_chain(gpu['bus_id'], beside)
            port = os.path.join(root, 'devices', host_bridge, *chain)
            for key, value in (('max_link_speed', speed_text(gen_gts)), ('max_link_width', gpus['pcie_width']),
                               ('current_link_speed', speed_text(gen_gts)), ('current_link_width', gpus['pcie_width']),
                               ('class', '0x060400'), ('vendor', '0x1000'), ('device', '0xc030')):
                atomic_write(os.path.join(port, key), '%s\n' % value)
            _symlink(os.path.relpath(port, os.path.join(root, 'bus', 'pci', 'devices')), os.path.join(root, 'bus', 'pci', 'devices', chain[-1]))
        _pci_function(root, gpu['bus_id'], {
            'current_link_speed': speed_text(gen_gts), 'max_link_speed': speed_text(gen_gts),
            'current_link_width': gpus['pcie_width'], 'max_link_width': gpus['pcie_width'],
            'numa_node': gpu['numa_node'], 'class': '0x030200', 'vendor': '0x10de', 'device': gpus['pci_device_id'],
        }, beside)
    cpu_base = os.path.join(root, 'devices', 'system', 'cpu')
    for cpu in range(hw['cpus']):
        atomic_write(os.path.join(cpu_base, 'cpu%d' % cpu, 'cpufreq', 'scaling_governor'), hw['governor'] + '\n')
    atomic_write(os.path.join(cpu_base, 'intel_pstate', 'no_turbo'), '%d\n' % (1 if hw['no_turbo'] else 0))
    pools = {'1G': '1048576', '2M': '2048'}
    for size, kib in pools.items():
        count = hw['hugepages_total'] if hw['hugepagesz'] == size else 0
        atomic_write(os.path.join(root, 'kernel', 'mm', 'hugepages', 'hugepages-%skB' % kib, 'nr_hugepages'), '%d\n' % count)
    for node in range(hw['numa_nodes']):
        atomic_write(os.path.join(root, 'devices', 'system', 'node', 'node%d' % node, 'cpulist'),
                     _cpulist(node, hw['numa_nodes'], hw['cpus']) + '\n')


def _colon_guid(guid):
    raw = guid[2:]
    return ':'.join(raw[i:i + 4] for i in range(0, 16, 4))


MODULE_SIZES = {'mlx5_ib': (483328, 0, '-'), 'mlx5_core': (2453504, 1, 'mlx5_ib,'), 'ib_uverbs': (196608, 2, 'rdma_ucm,mlx5_ib,'),
                'ib_core': (479232, 4, 'rdma_ucm,ib_uverbs,mlx5_ib,nvidia_peermem,'), 'rdma_ucm': (36864, 0, '-'),
                'nvidia_peermem': (16384, 0, '-'), 'nvidia': (56766464, 2, 'nvidia_peermem,')}


# /proc/driver/nvidia/version of the two kernel-module flavours (the open modules export GPU memory as dma-buf).
DRIVER_BANNERS = {
    'open': 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U22-I3-B12-02-1)  Tue Oct  1 19:51:52 UTC 2024',
    'proprietary': 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Oct  1 19:42:04 UTC 2024',
}


def render_proc(root, state):
    hw = state['host_hw']
    atomic_write(os.path.join(root, 'cmdline'), ' '.join(hw['cmdline']) + '\n')
    gpus = state['gpus']
    flavour = 'open' if gpus.get('gdr_mode') == 'dmabuf' else 'proprietary'
    atomic_write(os.path.join(root, 'driver', 'nvidia', 'version'), DRIVER_BANNERS[flavour] % gpus['driver_version']
                 + '\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n')
    page_kb = 1048576 if hw['hugepagesz'] == '1G' else 2048
    total = hw['mem_total_kb']
    huge = hw['hugepages_total'] * page_kb
    fields = [('MemTotal', total), ('MemFree', total - huge - 12582912), ('MemAvailable', total - huge - 8388608),
              ('Buffers', 524288), ('Cached', 6291456), ('SwapCached', 0), ('Active', 4194304), ('Inactive', 3145728),
              ('SwapTotal', 0), ('SwapFree', 0), ('Dirty', 128), ('Writeback', 0), ('AnonPages', 2097152),
              ('Mapped', 524288), ('Shmem', 65536), ('Slab', 2097152), ('PageTables', 65536), ('CommitLimit', total // 2),
              ('HugePages_Total', hw['hugepages_total']), ('HugePages_Free', hw['hugepages_total']), ('HugePages_Rsvd', 0),
              ('HugePages_Surp', 0), ('Hugepagesize', page_kb), ('Hugetlb', huge)]
    lines = []
    for name, value in fields:
        unit = '' if name.startswith('HugePages_') else ' kB'
        lines.append('%-16s%8d%s' % (name + ':', value, unit))
    atomic_write(os.path.join(root, 'meminfo'), '\n'.join(lines) + '\n')
    mods = []
    for index, name in enumerate(hw['modules']):
        size, refs, users = MODULE_SIZES.get(name, (65536, 0, '-'))
        users = ','.join(user for user in users.rstrip(',').split(',') if user in hw['modules'] or user == '-')
        users = (users + ',') if users and users != '-' else '-'
        mods.append('%s %d %d %s Live 0x%016x' % (name, size, refs, users, 0))
        del index
    atomic_write(os.path.join(root, 'modules'), '\n'.join(mods) + '\n')
    memlock = hw['memlock']
    memlock = memlock if isinstance(memlock, str) else str(memlock * 1024)
    rows = [('Max cpu time', 'unlimited', 'unlimited', 'seconds'), ('Max file size', 'unlimited', 'unlimited', 'bytes'),
            ('Max data size', 'unlimited', 'unlimited', 'bytes'), ('Max stack size', '8388608', 'unlimited', 'bytes'),
            ('Max core file size', '0', 'unlimited', 'bytes'), ('Max resident set', 'unlimited', 'unlimited', 'bytes'),
            ('Max processes', '1031189', '1031189', 'processes'), ('Max open files', '1048576', '1048576', 'files'),
            ('Max locked memory', memlock, memlock, 'bytes'), ('Max address space', 'unlimited', 'unlimited', 'bytes'),
            ('Max file locks', 'unlimited', 'unlimited', 'locks'), ('Max pending signals', '1031189', '1031189', 'signals'),
            ('Max msgqueue size', '819200', '819200', 'bytes'), ('Max nice priority', '0', '0', ''),
            ('Max realtime priority', '0', '0', ''), ('Max realtime timeout', 'unlimited', 'unlimited', 'us')]
    text = '%-26s%-21s%-21s%-10s\n' % ('Limit', 'Soft Limit', 'Hard Limit', 'Units')
    text += ''.join('%-26s%-21s%-21s%-10s\n' % row for row in rows)
    atomic_write(os.path.join(root, 'self', 'limits'), text)
    render_interrupts(root, state)


# mlx5 completion vectors per NIC in the lab (a real one has one per channel; a few show the placement as well).
IRQS_PER_NIC = 4


def render_interrupts(root, state):
    """/proc/interrupts with each NIC's mlx5 vectors, and each vector's smp_affinity_list on the NIC's own NUMA node."""
    hw = state['host_hw']
    cpus = hw['cpus']
    rows = ['           ' + ''.join('CPU%-8d' % cpu for cpu in range(cpus)).rstrip()]
    rows.append('%4s: %s  IO-APIC    2-edge      timer' % ('0', ''.join('%10d ' % (100 if cpu == 0 else 0) for cpu in range(cpus))))
    number = 80
    for nic in state['nics']:
        local = _cpulist(nic['numa_node'], hw['numa_nodes'], hw['cpus'])
        first, _dash, _last = local.partition('-')
        for vector in range(IRQS_PER_NIC):
            counts = ''.join('%10d ' % (1000 + vector if cpu == int(first) + vector else 0) for cpu in range(cpus))
            rows.append('%4d: %s  IR-PCI-MSIX-%s %4d-edge      mlx5_comp%d@pci:%s'
                        % (number, counts, nic['pci_address'], vector + 1, vector, nic['pci_address']))
            atomic_write(os.path.join(root, 'irq', str(number), 'smp_affinity_list'), local + '\n')
            number += 1
    atomic_write(os.path.join(root, 'interrupts'), '\n'.join(rows) + '\n')


def write_wrappers(bin_dir, node_dir, missing=()):
    unknown = sorted(set(missing) - set(TOOLS))
    if unknown:
        raise ValueError('tools_missing: %s not among the emulated tools (%s)' % (', '.join(unknown), ', '.join(TOOLS)))
    for tool in missing:
        try:
            os.unlink(os.path.join(bin_dir, tool))
        except OSError:
            pass
    for tool in TOOLS:
        if tool in missing:
            continue
        # -S and no -m: neither site nor runpy is imported (about 10 ms of CPU on each of the lab's thousands of calls).
        script = ('#!/bin/sh\n'
                  '# netval lab: emulated %s (reads %s/state.json)\n'
                  ': "${NETVAL_LAB_NODE_DIR:=%s}"\n'
                  'PYTHONPATH=%s\n'
                  'export NETVAL_LAB_NODE_DIR PYTHONPATH\n'
                  'exec /usr/bin/python3 -S -c "import sys; from netval_lab.tools import main; sys.exit(main())" %s "$@"\n'
                  ) % (tool, node_dir, node_dir, LAB_PYTHONPATH, tool)
        atomic_write(os.path.join(bin_dir, tool), script, mode=0o755)


def materialize(profile, host, role, node_dir, lab_info=None):
    """Write node_dir/{state.json,state.base.json,sys,proc,bin,log} for one lab host; returns the state."""
    if isinstance(profile, str):
        profile = profiles.load_profile(profile)
    if role not in ('new', 'peer'):
        raise ValueError('role must be new or peer, not %r' % (role,))
    if not re.match(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$', host):
        raise ValueError('bad host name %r' % (host,))
    node_dir = os.path.abspath(node_dir)
    os.makedirs(os.path.join(node_dir, 'log'), exist_ok=True)
    state = build_state(profile, host, role, lab_info)
    state['node_dir'] = node_dir
    atomic_write(os.path.join(node_dir, 'state.base.json'), json.dumps(state, indent=1, sort_keys=True) + '\n')
    write_state(node_dir, state)
    write_wrappers(os.path.join(node_dir, 'bin'), node_dir, state['host_hw'].get('tools_missing') or ())
    kernel_log = os.path.join(node_dir, 'log', 'kernel.log')
    if not os.path.exists(kernel_log):
        atomic_write(kernel_log, burnin_lines(state))
    return state


# What a provider's burn-in leaves in the kernel log: every port bounced while cables were checked, and the Xids its stress
# programs raised (13 graphics exception, 31 MMU fault, 43 GPU stopped processing), none of them the node's fault now.
BURNIN_XIDS = ((13, 'pid=4711, name=burn_gpu, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address'),
               (31, 'pid=4711, name=burn_gpu, Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted'),
               (43, 'pid=4711, name=burn_gpu, Ch 00000010'))


def burnin_lines(state):
    """kernel.log lines (<epoch> <message>) of the burn-in ``host.burnin_hours_ago`` hours before now; '' without one."""
    hours = float(state['host_hw'].get('burnin_hours_ago') or 0)
    if hours <= 0:
        return ''
    at = state['created'] - hours * 3600.0
    lines = []
    for nic in state['nics']:
        for offset, what in ((0.0, 'Link down'), (4.0, 'Link up')):
            lines.append('%.3f mlx5_core %s %s: %s' % (at + offset, nic['pci_address'], nic['netdev'], what))
        at += 9.0
    for gpu in state['gpus']['devices'][:3]:
        for code, text in BURNIN_XIDS:
            lines.append('%.3f NVRM: Xid (PCI:%s): %d, %s' % (at, gpu['bus_id'][:-2], code, text))
            at += 1.5
    return '\n'.join(lines) + '\n'
