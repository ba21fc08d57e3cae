"""Emulated hardware tools of the netval lab.

Run as ``python3 -m netval_lab.tools <tool> [args...]`` (the wrappers in a
node's ``bin/`` do this).  Every tool reads the node's ``state.json``:
``$NETVAL_LAB_NODE_DIR/state.json`` when set, else
``/run/netval-lab/nodes/<$NETVAL_LAB_NODE or hostname>/state.json``.

Output formats reproduce the real tools (headers, spacing, units) as seen in
real captured outputs; the numbers come from the state.  Standard library
only: this runs under the system python3 on the lab nodes.
"""

import json
import os
import random
import re
import socket
import sys
import time
import uuid

from netval_lab import fabric

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
    host = os.environ.get('NETVAL_LAB_NODE') or socket.gethostname()
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


# ============================================================================ RDMA: ibstat, ibstatus, show_gids

def tool_ibstat(state, args):
    flags = [arg for arg in args if arg.startswith('-')]
    rest = [arg for arg in args if not arg.startswith('-')]
    for flag in flags:
        if flag not in ('-l', '--list_of_cas', '-s', '--short', '-p', '--port_list', '-V', '--version'):
            sys.stderr.write("ibstat: invalid option -- '%s'\n" % flag.lstrip('-')[:1])
            sys.stderr.write('Usage: ibstat [-d(ebug) -l(ist_of_cas) -s(hort) -p(ort_list) -V(ersion)] <ca_name> [portnum]\n')
            return 255
    if '-V' in flags or '--version' in flags:
        out('ibstat BUILD VERSION: 44.0 Build date: Feb 23 2023 00:00:00')
        return 0
    nics = nics_sorted(state)
    if rest:
        nics = [nic for nic in nics if nic['name'] == rest[0]]
        if not nics:
            sys.stderr.write("ibpanic: [%d] main: stat of IB device '%s' failed: No such file or directory\n" % (os.getpid(), rest[0]))
            return 255
    if '-l' in flags or '--list_of_cas' in flags:
        for nic in nics:
            out(nic['name'])
        return 0
    if '-p' in flags or '--port_list' in flags:
        for nic in nics:
            out(nic['port_guid'])
        return 0
    for nic in nics:
        out("CA '%s'" % nic['name'])
        out('\tCA type: %s' % nic['hca_type'])
        out('\tNumber of ports: 1')
        out('\tFirmware version: %s' % nic['fw_version'])
        out('\tHardware version: 0')
        out('\tNode GUID: %s' % nic['node_guid'])
        out('\tSystem image GUID: %s' % nic['sys_image_guid'])
        out('\tPort 1:')
        out('\t\tState: %s' % nic['state'].capitalize())
        out('\t\tPhysical state: %s' % nic['phys_state'])
        out('\t\tRate: %d' % nic['rate_gbps_reported'])
        out('\t\tBase lid: %d' % nic['lid'])
        out('\t\tLMC: 0')
        out('\t\tSM lid: %d' % nic['sm_lid'])
        out('\t\tCapability mask: %s' % ('0x00010000' if nic['link_layer'] == 'Ethernet' else '0xa751e848'))
        out('\t\tPort GUID: %s' % (nic['port_guid'] if nic['state'] == 'ACTIVE' or nic['link_layer'] == 'InfiniBand'
                                   else '0x0000000000000000'))
        out('\t\tLink layer: %s' % nic['link_layer'])
    return 0


def tool_ibstatus(state, args):
    for arg in args:
        if arg.startswith('-'):
            sys.stderr.write('Usage: ibstatus [-h] [devname[:port]]...\n')
            return 255 if arg not in ('-h', '--help') else 0
    nics = nics_sorted(state)
    if args:
        wanted = [arg.split(':')[0] for arg in args]
        missing = [name for name in wanted if not any(nic['name'] == name for nic in nics)]
        if missing:
            sys.stderr.write("ls: cannot access '/sys/class/infiniband/%s/ports': No such file or directory\n" % missing[0])
            return 2
        nics = [nic for nic in nics if nic['name'] in wanted]
    for nic in nics:
        gid = nic['gids'][0]['gid'] if nic['gids'] else 'unknown'
        out("Infiniband device '%s' port 1 status:" % nic['name'])
        for line in ('\tdefault gid:\t %s' % gid, '\tbase lid:\t 0x%x' % nic['lid'], '\tsm lid:\t\t 0x%x' % nic['sm_lid'],
                     '\tstate:\t\t %d: %s' % (state_num(nic), nic['state']),
                     '\tphys state:\t %d: %s' % (phys_num(nic), nic['phys_state']),
                     '\trate:\t\t %s' % nic['rate_text'], '\tlink_layer:\t %s' % nic['link_layer']):
            out(line.expandtabs(8))
        out('')
    return 0


def tool_show_gids(state, args):
    nics = nics_sorted(state)
    if args:
        nics = [nic for nic in nics if nic['name'] == args[0]]

    def row(dev, port, index, gid, ipv4, ver, netdev):
        text = ''
        for value in (dev, port, index, gid):
            text += str(value)
            text += ' ' * (8 - len(text) % 8)
        text += str(ipv4).ljust(16) if len(str(ipv4)) < 16 else str(ipv4) + ' '
        text += ver.ljust(8) + netdev
        return text.rstrip()

    out(row('DEV', 'PORT', 'INDEX', 'GID'.ljust(39), 'IPv4', 'VER', 'DEV'))
    out(row('---', '----', '-----', '---'.ljust(39), '------------', '---', '---'))
    found = 0
    for nic in nics:
        for gid in nic['gids']:
            ver = 'v2' if gid['type'] == 'RoCE v2' else 'v1'
            dev = nic['netdev'] if nic['link_layer'] == 'Ethernet' else ''
            out(row(nic['name'], 1, gid['index'], gid['gid'], gid['ipv4'] or '', ver, dev))
            found += 1
    out('n_gids_found=%d' % found)
    return 0


def tool_ibdev2netdev(state, args):
    verbose = '-v' in args
    for nic in nics_sorted(state):
        up = 'Up' if nic['state'] == 'ACTIVE' else 'Down'
        if verbose:
            out('%s %s (%s - %s) fw %s port 1 (%s) ==> %s (%s)'
                % (nic['pci_address'], nic['name'], nic['hca_type'], nic['part_number'], nic['fw_version'], nic['state'],
                   nic['netdev'], up))
        else:
            out('%s port 1 ==> %s (%s)' % (nic['name'], nic['netdev'], up))
    return 0


# ============================================================================ lspci

def _gts_text(gts):
    return ('%g' % float(gts)) + 'GT/s'


def _pci_devices(state):
    """Every PCI function lspci shows: bridges (from the upstream chains), NICs, GPUs."""
    devices = {}

    def chain(bdf, max_gts, width, current_gts):
        domain, bus = int(bdf[:4], 16), int(bdf[5:7], 16)
        if bus >= 3:
            ports = [('%04x:%02x:01.0' % (domain, bus - 3), 'root'), ('%04x:%02x:02.0' % (domain, bus - 2), 'up'),
                     ('%04x:%02x:03.0' % (domain, bus - 1), 'down')]
        else:
            ports = [('%04x:00:01.0' % domain, 'root')]
        for index, (port, kind) in enumerate(ports):
            last = index == len(ports) - 1
            devices.setdefault(port, {'bdf': port, 'kind': kind, 'cap_gts': max_gts, 'width': width,
                                      'sta_gts': current_gts if last else max_gts, 'sta_width': width})

    for nic in state['nics']:
        pcie = nic['pcie']
        chain(nic['pci_address'], pcie.get('upstream_max_gts', pcie['lnkcap_gts']), pcie.get('upstream_width', 16), pcie['lnksta_gts'])
        devices[nic['pci_address']] = {'bdf': nic['pci_address'], 'kind': 'nic', 'nic': nic, 'cap_gts': pcie['lnkcap_gts'],
                                       'width': pcie['lnkcap_width'], 'sta_gts': pcie['lnksta_gts'],
                                       'sta_width': pcie['lnksta_width']}
    gpus = state['gpus']
    gen_gts = {3: 8, 4: 16, 5: 32, 6: 64}.get(gpus['pcie_gen'], 32)
    for gpu in gpus['devices']:
        chain(gpu['bus_id'], gen_gts, gpus['pcie_width'], gen_gts)
        devices[gpu['bus_id']] = {'bdf': gpu['bus_id'], 'kind': 'gpu', 'gpu': gpu, 'cap_gts': gen_gts, 'width': gpus['pcie_width'],
                                  'sta_gts': gen_gts, 'sta_width': gpus['pcie_width']}
    return [devices[key] for key in sorted(devices)]


def _pci_ids(state, dev):
    if dev['kind'] == 'nic':
        nic = dev['nic']
        ib = nic['link_layer'] == 'InfiniBand'
        return (('Infiniband controller', '0207') if ib else ('Ethernet controller', '0200'),
                ('Mellanox Technologies', '15b3'), (nic['pci_name'], nic['pci_device_id'][2:]), None)
    if dev['kind'] == 'gpu':
        names = {'0x2330': 'GH100 [H100 SXM5 80GB]', '0x2901': 'GB100 [B200]', '0x20b2': 'GA100 [A100 SXM4 80GB]',
                 '0x20b5': 'GA100 [A100 PCIe 80GB]'}
        device_id = state['gpus']['pci_device_id']
        return (('3D controller', '0302'), ('NVIDIA Corporation', '10de'),
                (names.get(device_id, 'Device %s' % device_id[2:]), device_id[2:]), 'a1')
    if dev['kind'] == 'root':
        return (('PCI bridge', '0604'), ('Intel Corporation', '8086'), ('Device 352a', '352a'), '04')
    return (('PCI bridge', '0604'), ('Broadcom / LSI', '1000'), ('PEX890xx PCIe Gen 5 Switch', 'c030'), 'b0')


def _lspci_verbose(state, dev, level, numeric):
    lines = []
    kind = dev['kind']
    endpoint = kind in ('nic', 'gpu')
    if endpoint:
        sub = 'Mellanox Technologies Device 0026' if kind == 'nic' else 'NVIDIA Corporation Device 16c1'
        lines.append('\tSubsystem: %s' % sub)
        if kind == 'nic':
            lines.append('\tPhysical Slot: %d' % (dev['nic']['index'] + 1))
    if level >= 2:
        lines.append('\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+')
        lines.append('\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-')
        lines.append('\tLatency: 0, Cache Line Size: 32 bytes')
    else:
        lines.append('\tFlags: bus master, fast devsel, latency 0, IRQ 18, NUMA node %d' % _numa(dev))
    if level >= 2:
        lines.append('\tInterrupt: pin A routed to IRQ 18')
        lines.append('\tNUMA node: %d' % _numa(dev))
    if kind == 'nic':
        lines.append('\tRegion 0: Memory at 2%02x000000000 (64-bit, prefetchable) [size=32M]' % int(dev['bdf'][5:7], 16))
        lines.append('\tExpansion ROM at <ignored> [disabled]')
    elif kind == 'gpu':
        lines.append('\tRegion 0: Memory at %02x000000 (32-bit, non-prefetchable) [size=16M]' % (int(dev['bdf'][5:7], 16) % 0x100))
        lines.append('\tRegion 1: Memory at 2%02x000000000 (64-bit, prefetchable) [size=128G]' % int(dev['bdf'][5:7], 16))
    else:
        lines.append('\tBus: primary=%s, secondary=%02x, subordinate=%02x, sec-latency=0'
                     % (dev['bdf'][5:7], int(dev['bdf'][5:7], 16) + 1, int(dev['bdf'][5:7], 16) + 3))
    port_type = {'nic': 'Endpoint', 'gpu': 'Endpoint', 'root': 'Root Port (Slot+)', 'up': 'Upstream Port',
                 'down': 'Downstream Port (Slot+)'}[kind]
    lines.append('\tCapabilities: [60] Express (v2) %s, MSI 00' % port_type)
    if level >= 2:
        lines.append('\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited')
        lines.append('\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 75W')
        lines.append('\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+')
        lines.append('\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-')
        lines.append('\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes')
        lines.append('\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-')
        cap, sta = dev['cap_gts'], dev['sta_gts']
        lines.append('\t\tLnkCap:\tPort #0, Speed %s, Width x%d, ASPM not supported' % (_gts_text(cap), dev['width']))
        lines.append('\t\t\tClockPM- Surprise- LLActRep%s BwNot%s ASPMOptComp+' % ('-' if endpoint else '+', '-' if endpoint else '+'))
        lines.append('\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+')
        lines.append('\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-')
        if endpoint:
            speed_cmp = ' (downgraded)' if sta < cap else (' (strange)' if sta > cap else ' (ok)')
            width_cmp = ' (downgraded)' if dev['sta_width'] < dev['width'] else ' (ok)'
        else:
            speed_cmp = width_cmp = ''
        lines.append('\t\tLnkSta:\tSpeed %s%s, Width x%d%s' % (_gts_text(sta), speed_cmp, dev['sta_width'], width_cmp))
        lines.append('\t\t\tTrErr- Train- SlotClk+ DLActive%s BWMgmt- ABWMgmt-' % ('-' if endpoint else '+'))
        lines.append('\t\tDevCap2: Completion Timeout: Range ABC, TimeoutDis+ NROPrPrP- LTR-')
        lines.append('\t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Not Supported, ExtFmt- EETLPPrefix-')
        lines.append('\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq- OBFF Disabled,')
        lines.append('\t\tLnkCap2: Supported Link Speeds: 2.5-%s, Crosslink- Retimer+ 2Retimers+ DRS-' % _gts_text(cap))
        lines.append('\t\tLnkCtl2: Target Link Speed: %s, EnterCompliance- SpeedDis-' % _gts_text(cap))
        lines.append('\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+')
        lines.append('\t\t\t EqualizationPhase2+ EqualizationPhase3+ LinkEqualizationRequest-')
        lines.append('\tCapabilities: [100 v1] Advanced Error Reporting')
        lines.append('\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-')
        lines.append('\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-')
    driver = {'nic': 'mlx5_core', 'gpu': 'nvidia'}.get(kind, 'pcieport')
    lines.append('\tKernel driver in use: %s' % driver)
    if kind != 'root' and kind != 'up' and kind != 'down':
        lines.append('\tKernel modules: %s' % driver)
    del numeric
    return lines


def _numa(dev):
    if dev['kind'] == 'nic':
        return dev['nic']['numa_node']
    if dev['kind'] == 'gpu':
        return dev['gpu']['numa_node']
    return 0 if int(dev['bdf'][5:7], 16) < 0x80 else 1


def _lspci_usage(message):
    sys.stderr.write(message + '\n')
    sys.stderr.write('Usage: lspci [<switches>]\n\nBasic display modes:\n-mm\t\tProduce machine-readable output (single -m for an obsolete format)\n'
                     '-t\t\tShow bus tree\n\nDisplay options:\n-v\t\tBe verbose (-vv or -vvv for higher verbosity)\n'
                     '-k\t\tShow kernel drivers handling each device\n-D\t\tAlways show domain numbers\n\n'
                     'Selection of devices:\n-s [[[[<domain>]:]<bus>]:][<slot>][.[<func>]]\tShow only devices in selected slots\n'
                     '-d [<vendor>]:[<device>][:<class>]\t\tShow only devices with specified ID\'s\n')
    return 1


def _select_bdf(selector, bdf):
    match = re.match(r'^(?:(?:([0-9a-fA-F]*):)?([0-9a-fA-F]*):)?([0-9a-fA-F]*)(?:\.([0-7]?))?$', selector)
    if not match:
        return None
    domain, bus, slot, func = match.groups()
    parts = (int(bdf[:4], 16), int(bdf[5:7], 16), int(bdf[8:10], 16), int(bdf[11]))
    for wanted, have in zip((domain, bus, slot, func), parts):
        if wanted and int(wanted, 16) != have:
            return False
    return True


def tool_lspci(state, args):
    level = 0
    show_domain = numeric = False
    nn = False
    selector = ids = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ('-s', '-d'):
            if index + 1 >= len(args):
                return _lspci_usage("lspci: option requires an argument -- '%s'" % arg[1])
            if arg == '-s':
                selector = args[index + 1]
            else:
                ids = args[index + 1]
            index += 2
            continue
        if arg.startswith('-s') and len(arg) > 2:
            selector = arg[2:]
        elif arg.startswith('-d') and len(arg) > 2:
            ids = arg[2:]
        elif re.match(r'^-[vDnkqQ]+$', arg):
            for char in arg[1:]:
                if char == 'v':
                    level += 1
                elif char == 'D':
                    show_domain = True
                elif char == 'n':
                    nn = numeric
                    numeric = True
        else:
            return _lspci_usage("lspci: invalid option -- '%s'" % arg.lstrip('-')[:1])
        index += 1
    if selector is not None and _select_bdf(selector, '0000:00:00.0') is None:
        sys.stderr.write('lspci: -s: Invalid slot number\n')
        return 1
    for dev in _pci_devices(state):
        if selector is not None and not _select_bdf(selector, dev['bdf']):
            continue
        (cls_name, cls_id), (vendor, vendor_id), (device, device_id), rev = _pci_ids(state, dev)
        if ids is not None:
            parts = (ids.split(':') + ['', ''])[:2]
            if (parts[0] and parts[0].lower() != vendor_id) or (parts[1] and parts[1].lower() != device_id):
                continue
        bdf = dev['bdf'] if show_domain or not dev['bdf'].startswith('0000:') else dev['bdf'][5:]
        rev_text = ' (rev %s)' % rev if rev else ''
        if numeric and not nn:
            out('%s %s: %s:%s%s' % (bdf, cls_id, vendor_id, device_id, rev_text))
        elif nn:
            out('%s %s [%s]: %s %s [%s:%s]%s' % (bdf, cls_name, cls_id, vendor, device, vendor_id, device_id, rev_text))
        else:
            out('%s %s: %s %s%s' % (bdf, cls_name, vendor, device, rev_text))
        if level:
            for line in _lspci_verbose(state, dev, level, numeric):
                out(line)
            out('')
    return 0


# ============================================================================ Mellanox firmware tools

DEVICE_TYPES = {'MT4123': 'ConnectX6', 'MT4125': 'ConnectX6DX', 'MT4129': 'ConnectX7', 'MT4131': 'ConnectX8'}


def _device_arg(args, tool):
    for index, arg in enumerate(args):
        if arg in ('-d', '--dev', '--device') and index + 1 < len(args):
            return args[index + 1], args[:index] + args[index + 2:]
        if arg.startswith('--dev='):
            return arg.split('=', 1)[1], args[:index] + args[index + 1:]
    del tool
    return None, args


def tool_mlxconfig(state, args, name='mlxconfig'):
    dev, rest = _device_arg(args, name)
    show_default = False
    cleaned = []
    for arg in rest:
        if arg in ('-e', '--enable_verbosity'):
            show_default = True
        elif arg in ('-y', '--yes'):
            continue
        elif arg.startswith('-'):
            sys.stderr.write('-E- Unknown flag "%s"\n' % arg)
            return 1
        else:
            cleaned.append(arg)
    if not cleaned or cleaned[0] not in ('q', 'query', 'set', 's'):
        sys.stderr.write('-E- No command found. For more information please read the help message:\n')
        return 1
    if cleaned[0] in ('set', 's'):
        sys.stderr.write('-E- netval lab: %s set is not emulated (firmware configuration is read-only in the lab)\n' % name)
        return 1
    nics = [find_nic(state, dev)] if dev else state['nics']
    if nics == [None]:
        sys.stderr.write('-E- Failed to open device: %s. No such file or directory\n' % dev)
        return 1
    for number, nic in enumerate(nics, 1):
        ib = nic['link_layer'] == 'InfiniBand'
        params = [
            ('MEMIC_BAR_SIZE', '0', '0'), ('MEMIC_SIZE_LIMIT', '_256KB(1)', '_256KB(1)'),
            ('FLEX_PARSER_PROFILE_ENABLE', '0', '0'), ('ROCE_NEXT_PROTOCOL', '254', '254'),
            ('ESWITCH_HAIRPIN_DESCRIPTORS', '128(7)', '128(7)'), ('PF_LOG_BAR_SIZE', '5', '5'),
            ('NUM_OF_VFS', '0', '0'), ('SRIOV_EN', 'False(0)', 'False(0)'),
            ('PF_TOTAL_SF', '0', '0'), ('PCI_WR_ORDERING', 'per_mkey(0)', 'per_mkey(0)'),
            ('LINK_TYPE_P1', 'IB(1)' if ib else 'ETH(2)', 'IB(1)' if ib else 'ETH(2)'),
            ('CQE_COMPRESSION', 'BALANCED(0)', '%s(%d)' % (nic['cqe_compression'], 0 if nic['cqe_compression'] == 'BALANCED' else 1)),
            ('ATS_ENABLED', 'False(0)', 'False(0)'), ('ADVANCED_PCI_SETTINGS', 'False(0)', 'False(0)'),
            ('MAX_ACC_OUT_READ', '0', '0'), ('ROCE_CC_PRIO_MASK_P1', '255', '255'),
            ('LOG_MAX_QUEUE', '17', '17'), ('INTERNAL_CPU_MODEL', 'SEPERATED_HOST(0)', 'SEPERATED_HOST(0)'),
        ]
        if cleaned[1:]:
            wanted = [item.upper() for item in cleaned[1:]]
            unknown = [item for item in wanted if item not in [row[0] for row in params]]
            if unknown:
                sys.stderr.write('-E- The Device doesn\'t support %s parameter\n' % unknown[0])
                return 1
            params = [row for row in params if row[0] in wanted]
        out('')
        out('Device #%d:' % number)
        out('----------')
        out('')
        out('Device type:        %s' % DEVICE_TYPES.get(nic['hca_type'], 'ConnectX7'))
        out('Name:               %s_Ax' % nic['part_number'])
        out('Description:        %s' % nic['description'])
        out('Device:             %s' % (dev or mst_device(state, nic)))
        out('')
        if show_default:
            out('%-53s%-16s%-16s%s' % ('Configurations:', 'Default', 'Current', 'Next Boot'))
            for key, default, value in params:
                out('        %-45s%-16s%-16s%s' % (key, default, value, value))
        else:
            out('%-53s%s' % ('Configurations:', 'Next Boot'))
            for key, _default, value in params:
                out('        %-44s%s' % (key, value))
    return 0


def tool_mstconfig(state, args):
    return tool_mlxconfig(state, args, name='mstconfig')


def _release_date(fw):
    digest = sum(ord(char) for char in fw)
    return '%d.%d.%d' % (digest % 28 + 1, digest % 12 + 1, 2023 + digest % 2)


def tool_flint(state, args, name='flint'):
    dev, rest = _device_arg(args, name)
    if dev is None:
        sys.stderr.write('-E- Missing device, please specify device with -d flag.\n')
        return 1
    command = [arg for arg in rest if not arg.startswith('-')]
    if not command or command[0] not in ('q', 'query'):
        sys.stderr.write('-E- Invalid command "%s"\n' % (command[0] if command else ''))
        return 1
    nic = find_nic(state, dev)
    if nic is None:
        sys.stderr.write('-E- Cannot open Device: %s. No such file or directory. MFE_CR_ERROR\n' % dev)
        return 1
    guid = nic['node_guid'][2:]
    out('Image type:            FS4')
    out('FW Version:            %s' % nic['fw_version'])
    out('FW Release Date:       %s' % _release_date(nic['fw_version']))
    out('Product Version:       %s' % nic['fw_version'])
    out('Rom Info:              type=UEFI version=14.32.17 cpu=AMD64,AARCH64')
    out('                       type=PXE version=3.7.300 cpu=AMD64')
    out('Description:           UID                GuidsNumber')
    out('Base GUID:             %s        16' % guid)
    out('Base MAC:              %s            16' % (guid[:6] + guid[10:]))
    out('Image VSD:             N/A')
    out('Device VSD:            N/A')
    out('PSID:                  %s' % nic['psid'])
    out('Security Attributes:   secure-fw')
    return 0


def tool_mstflint(state, args):
    return tool_flint(state, args, name='mstflint')


def _mlxlink_speed(nic):
    if nic['state'] != 'ACTIVE':
        return 'N/A'
    if nic['link_layer'] == 'InfiniBand':
        return 'IB-%s' % nic['rate_text'].split()[-1].rstrip(')')
    return '%dG' % nic['rate_gbps']


def tool_mlxlink(state, args, name='mlxlink'):
    dev, rest = _device_arg(args, name)
    if dev is None:
        sys.stderr.write('-E- Please provide a device name\n')
        return 1
    as_json = '--json' in rest
    pcie = False
    index = 0
    while index < len(rest):
        arg = rest[index]
        if arg in ('-p', '--port', '--port_type'):
            if arg == '--port_type' and index + 1 < len(rest) and rest[index + 1].upper() == 'PCIE':
                pcie = True
            index += 2
            continue
        if arg not in ('--json', '-c', '--show_module', '-m', '-e', '--show_eye'):
            sys.stderr.write('-E- Invalid argument: %s\n' % arg)
            return 1
        index += 1
    nic = find_nic(state, dev)
    if nic is None:
        sys.stderr.write('-E- Failed to open device: "%s", No such file or directory\n' % dev)
        return 1
    if pcie:
        gen = {2.5: 1, 5: 2, 8: 3, 16: 4, 32: 5, 64: 6}
        p = nic['pcie']
        sections = [('PCIe Operational (Enabled) Info', [
            ('Depth, pcie index, node', '0, 0, 0'),
            ('Link Speed Active (Enabled)', '%dG-Gen %d (%dG-Gen %d)'
             % (p['lnksta_gts'], gen.get(p['lnksta_gts'], 0), p['lnkcap_gts'], gen.get(p['lnkcap_gts'], 0))),
            ('Link Width Active (Enabled)', '%dX (%dX)' % (p['lnksta_width'], p['lnkcap_width']))])]
    else:
        active = nic['state'] == 'ACTIVE'
        fec = ('Standard_RS-FEC - (544,514)' if nic['rate_gbps'] >= 200 else 'Standard RS-FEC - (528,514)') if active else 'N/A'
        sections = [
            ('Operational Info', [('State', 'Active' if active else ('Polling' if nic['phys_state'] == 'Polling' else 'Disable')),
                                  ('Physical state', nic['phys_state'] if active else ('Polling' if nic['phys_state'] == 'Polling' else 'Disabled')),
                                  ('Speed', _mlxlink_speed(nic)), ('Width', '4x' if active else 'N/A'), ('FEC', fec),
                                  ('Loopback Mode', 'No Loopback'), ('Auto Negotiation', 'ON')]),
            ('Supported Info', [('Enabled Link Speed', '0x000000ff (%s)' % _mlxlink_speed(nic)),
                                ('Supported Cable Speed', '0x000000ff (%s)' % _mlxlink_speed(nic))]),
            ('Troubleshooting Info', [('Status Opcode', '0' if active else '1'), ('Group Opcode', 'N/A'),
                                      ('Recommendation', 'No issue was observed' if active else 'Check cable and peer port')]),
            ('Tool Information', [('Firmware Version', nic['fw_version']), ('amBER Version', '3.6'),
                                  ('MFT Version', 'mft 4.28.0-92')]),
        ]
    if as_json:
        payload = {'result': {'output': {title: dict(rows) for title, rows in sections}}, 'status': {'code': 0, 'message': 'Success'}}
        out(json.dumps(payload, indent=3))
        return 0
    for title, rows in sections:
        out('')
        out(title)
        out('-' * len(title))
        for key, value in rows:
            out('%-32s: %s' % (key, value))
    out('')
    return 0


def tool_mstlink(state, args):
    return tool_mlxlink(state, args, name='mstlink')


# ============================================================================ nvidia-smi

def _gpu_arch(model):
    for key, arch in (('H100', 'Hopper'), ('B200', 'Blackwell'), ('GB10', 'Blackwell'), ('A100', 'Ampere')):
        if key in model:
            return arch
    return 'Hopper'


def _gpu_mem(model):
    return 81559 if '80GB' in model else (183359 if 'B200' in model else 122502)


def _bus_long(bdf):
    return ('0000' + bdf).upper() if len(bdf) == 12 else bdf.upper()


def tool_nvidia_smi(state, args):
    gpus = state['gpus']
    devices = gpus['devices']
    if not devices:
        out('No devices were found')
        return 6
    index_filter = None
    rest = []
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ('-i', '--id') and position + 1 < len(args):
            index_filter = args[position + 1]
            position += 2
            continue
        if arg.startswith('--id='):
            index_filter = arg.split('=', 1)[1]
        else:
            rest.append(arg)
        position += 1
    if index_filter is not None:
        devices = [gpu for gpu in devices if str(gpu['index']) == index_filter or gpu['uuid'] == index_filter]
        if not devices:
            out('No devices were found')
            return 6
    if rest[:1] == ['topo']:
        if '-m' in rest or '--matrix' in rest:
            return _nvsmi_topo(state)
        sys.stderr.write('ERROR: Option -m (matrix) is the only topo mode the lab emulates\n')
        return 2
    query = '-q' in rest or '--query' in rest or any(re.match(r'^-q?x+q?$', arg) for arg in rest if arg.startswith('-') and 'x' in arg)
    xml = '-x' in rest or '--xml-format' in rest or any(arg in ('-qx', '-xq') for arg in rest)
    for arg in rest:
        if arg in ('-q', '--query', '-x', '--xml-format', '-qx', '-xq', '-L', '--list-gpus', '-d', 'ECC', 'PCIE'):
            continue
        if arg.startswith('--query-gpu=') or arg.startswith('--format='):
            continue
        out('Invalid combination of input arguments. Please run \'nvidia-smi -h\' for help.')
        return 2
    fields = [arg.split('=', 1)[1] for arg in rest if arg.startswith('--query-gpu=')]
    if fields:
        fmt = [arg.split('=', 1)[1] for arg in rest if arg.startswith('--format=')]
        return _nvsmi_csv(state, devices, fields[0].split(','), fmt[0] if fmt else 'csv')
    if '-L' in rest or '--list-gpus' in rest:
        for gpu in devices:
            out('GPU %d: %s (UUID: %s)' % (gpu['index'], gpus['model'], gpu['uuid']))
        return 0
    if query and xml:
        return _nvsmi_xml(state, devices)
    if query:
        return _nvsmi_query(state, devices)
    return _nvsmi_table(state, devices)


def _nvsmi_csv(state, devices, fields, fmt):
    gpus = state['gpus']
    noheader = 'noheader' in fmt
    nounits = 'nounits' in fmt
    mem = _gpu_mem(gpus['model'])
    values = {
        'index': lambda g: str(g['index']), 'name': lambda g: gpus['model'], 'uuid': lambda g: g['uuid'],
        'serial': lambda g: g['serial'], 'pci.bus_id': lambda g: '0000' + _bus_long(g['bus_id']) if len(g['bus_id']) == 12 else '',
        'driver_version': lambda g: gpus['driver_version'], 'count': lambda g: str(len(devices)),
        'memory.total': lambda g: '%d%s' % (mem, '' if nounits else ' MiB'),
        'pcie.link.gen.current': lambda g: str(gpus['pcie_gen']), 'pcie.link.gen.max': lambda g: str(gpus['pcie_gen']),
        'pcie.link.width.current': lambda g: str(gpus['pcie_width']), 'pcie.link.width.max': lambda g: str(gpus['pcie_width']),
        'ecc.errors.uncorrected.volatile.total': lambda g: str(gpus['ecc']['volatile_dram_uncorrectable']),
        'ecc.errors.corrected.volatile.total': lambda g: str(gpus['ecc']['volatile_dram_correctable']),
        'persistence_mode': lambda g: 'Enabled', 'temperature.gpu': lambda g: '31',
    }
    values['pci.bus_id'] = lambda g: '0000' + g['bus_id'].upper()
    for field in fields:
        if field.strip() not in values:
            out('Field "%s" is not a valid field to query.' % field.strip())
            out('')
            return 2
    if not noheader:
        out(', '.join(field.strip() + ('' if nounits or field.strip() != 'memory.total' else ' [MiB]') for field in fields))
    for gpu in devices:
        out(', '.join(values[field.strip()](gpu) for field in fields))
    return 0


def _nvsmi_table(state, devices):
    gpus = state['gpus']
    mem = _gpu_mem(gpus['model'])
    out(time.strftime('%a %b %d %H:%M:%S %Y'))
    rule = '+-----------------------------------------+------------------------+----------------------+'
    out('+' + '-' * 89 + '+')
    title = ' NVIDIA-SMI %-21s Driver Version: %-14s CUDA Version: %s' % (
        gpus['driver_version'], gpus['driver_version'], gpus['cuda_version'])
    out('|' + title.ljust(89) + '|')
    out('|-----------------------------------------+------------------------+----------------------+')
    out('| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |')
    out('| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |')
    out('|                                         |                        |               MIG M. |')
    out('|=========================================+========================+======================|')
    for gpu in devices:
        first = ' %3d  %-31sOn  ' % (gpu['index'], gpus['model'][:31])
        out('|%s|%s|%s|' % (first, ('%s Off ' % ('0000' + gpu['bus_id'].upper())).rjust(24),
                            ('%d ' % gpus['ecc']['volatile_dram_uncorrectable']).rjust(22)))
        left = ' N/A   %2dC    P0' % (30 + gpu['index'] % 5)
        left += ('%dW / %dW' % (70 + gpu['index'], 700)).rjust(40 - len(left)) + ' '
        out('|%s|%s|%s|' % (left, ('%s / %s ' % ('1MiB', '%dMiB' % mem)).rjust(24), '      0%      Default '))
        out('|                                         |                        |             Disabled |')
        out(rule)
    out('')
    out('+-----------------------------------------------------------------------------------------+')
    out('| Processes:                                                                              |')
    out('|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |')
    out('|        ID   ID                                                               Usage      |')
    out('|=========================================================================================|')
    out('|  No running processes found                                                             |')
    out('+-----------------------------------------------------------------------------------------+')
    return 0


def _kv(indent, key, value, width=42):
    return '%s%s: %s' % (' ' * indent, key.ljust(width - indent), value)


def _nvsmi_query(state, devices):
    gpus = state['gpus']
    ecc = gpus['ecc']
    lines = ['', '==============NVSMI LOG==============', '',
             'Timestamp                                 : %s' % time.strftime('%a %b %d %H:%M:%S %Y'),
             'Driver Version                            : %s' % gpus['driver_version'],
             'CUDA Version                              : %s' % gpus['cuda_version'], '',
             'Attached GPUs                             : %d' % len(gpus['devices'])]
    for gpu in devices:
        bus = '0000' + gpu['bus_id'].upper()
        lines.append('GPU %s' % bus)
        lines.append(_kv(4, 'Product Name', gpus['model']))
        lines.append(_kv(4, 'Product Brand', 'NVIDIA'))
        lines.append(_kv(4, 'Product Architecture', _gpu_arch(gpus['model'])))
        lines.append(_kv(4, 'Persistence Mode', 'Enabled'))
        lines.append(_kv(4, 'MIG Mode', '').rstrip(': ').rstrip())
        lines.append(_kv(8, 'Current', 'Disabled'))
        lines.append(_kv(8, 'Pending', 'Disabled'))
        lines.append(_kv(4, 'Serial Number', gpu['serial']))
        lines.append(_kv(4, 'GPU UUID', gpu['uuid']))
        lines.append(_kv(4, 'Minor Number', gpu['index']))
        lines.append(_kv(4, 'VBIOS Version', '96.00.74.00.0D'))
        lines.append(_kv(4, 'Module ID', gpu['slot'] + 1))
        lines.append('    PCI')
        lines.append(_kv(8, 'Bus', '0x%s' % gpu['bus_id'][5:7].upper()))
        lines.append(_kv(8, 'Device', '0x00'))
        lines.append(_kv(8, 'Domain', '0x%s' % gpu['bus_id'][:4]))
        lines.append(_kv(8, 'Device Id', '0x%s10DE' % gpus['pci_device_id'][2:].upper()))
        lines.append(_kv(8, 'Bus Id', bus))
        lines.append('        GPU Link Info')
        lines.append('            PCIe Generation')
        for key in ('Max', 'Current', 'Device Current', 'Device Max', 'Host Max'):
            lines.append(_kv(16, key, gpus['pcie_gen']))
        lines.append('            Link Width')
        lines.append(_kv(16, 'Max', '%dx' % gpus['pcie_width']))
        lines.append(_kv(16, 'Current', '%dx' % gpus['pcie_width']))
        lines.append(_kv(8, 'Replays Since Reset', 0))
        lines.append(_kv(8, 'Replay Number Rollovers', 0))
        lines.append(_kv(4, 'Performance State', 'P0'))
        lines.append('    FB Memory Usage')
        lines.append(_kv(8, 'Total', '%d MiB' % _gpu_mem(gpus['model'])))
        lines.append(_kv(8, 'Used', '1 MiB'))
        lines.append('    ECC Mode')
        lines.append(_kv(8, 'Current', 'Enabled'))
        lines.append(_kv(8, 'Pending', 'Enabled'))
        lines.append('    ECC Errors')
        for scope in ('Volatile', 'Aggregate'):
            low = scope.lower()
            lines.append('        %s' % scope)
            lines.append(_kv(12, 'SRAM Correctable', 0))
            lines.append(_kv(12, 'SRAM Uncorrectable Parity', 0))
            lines.append(_kv(12, 'SRAM Uncorrectable SEC-DED', 0))
            lines.append(_kv(12, 'DRAM Correctable', ecc['%s_dram_correctable' % low]))
            lines.append(_kv(12, 'DRAM Uncorrectable', ecc['%s_dram_uncorrectable' % low]))
        lines.append(_kv(12, 'SRAM Threshold Exceeded', 'No'))
        lines.append('    Retired Pages')
        lines.append(_kv(8, 'Single Bit ECC', 'N/A'))
        lines.append(_kv(8, 'Double Bit ECC', 'N/A'))
        lines.append(_kv(8, 'Pending Page Blacklist', 'N/A'))
        lines.append('    Remapped Rows')
        lines.append(_kv(8, 'Correctable Error', 0))
        lines.append(_kv(8, 'Uncorrectable Error', 0))
        lines.append(_kv(8, 'Pending', 'No'))
        lines.append(_kv(8, 'Remapping Failure Occurred', 'No'))
        lines.append('')
    out('\n'.join(lines))
    return 0


def _xml_escape(text):
    return str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _nvsmi_xml(state, devices):
    gpus = state['gpus']
    ecc = gpus['ecc']
    lines = ['<?xml version="1.0" ?>', '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">', '<nvidia_smi_log>',
             '\t<timestamp>%s</timestamp>' % time.strftime('%a %b %d %H:%M:%S %Y'),
             '\t<driver_version>%s</driver_version>' % gpus['driver_version'],
             '\t<cuda_version>%s</cuda_version>' % gpus['cuda_version'],
             '\t<attached_gpus>%d</attached_gpus>' % len(gpus['devices'])]

    def el(depth, tag, value):
        lines.append('%s<%s>%s</%s>' % ('\t' * depth, tag, _xml_escape(value), tag))

    def open_(depth, tag):
        lines.append('%s<%s>' % ('\t' * depth, tag))

    def close(depth, tag):
        lines.append('%s</%s>' % ('\t' * depth, tag))

    for gpu in devices:
        bus = '0000' + gpu['bus_id'].upper()
        lines.append('\t<gpu id="%s">' % bus)
        el(2, 'product_name', gpus['model'])
        el(2, 'product_brand', 'NVIDIA')
        el(2, 'product_architecture', _gpu_arch(gpus['model']))
        el(2, 'persistence_mode', 'Enabled')
        open_(2, 'mig_mode')
        el(3, 'current_mig', 'Disabled')
        el(3, 'pending_mig', 'Disabled')
        close(2, 'mig_mode')
        el(2, 'serial', gpu['serial'])
        el(2, 'uuid', gpu['uuid'])
        el(2, 'minor_number', gpu['index'])
        el(2, 'vbios_version', '96.00.74.00.0D')
        el(2, 'gpu_module_id', gpu['slot'] + 1)
        open_(2, 'pci')
        el(3, 'pci_bus', gpu['bus_id'][5:7].upper())
        el(3, 'pci_device', '00')
        el(3, 'pci_domain', gpu['bus_id'][:4])
        el(3, 'pci_device_id', '%s10DE' % gpus['pci_device_id'][2:].upper())
        el(3, 'pci_bus_id', bus)
        open_(3, 'pci_gpu_link_info')
        open_(4, 'pcie_gen')
        for tag in ('max_link_gen', 'current_link_gen', 'device_current_link_gen', 'max_device_link_gen', 'max_host_link_gen'):
            el(5, tag, gpus['pcie_gen'])
        close(4, 'pcie_gen')
        open_(4, 'link_widths')
        el(5, 'max_link_width', '%dx' % gpus['pcie_width'])
        el(5, 'current_link_width', '%dx' % gpus['pcie_width'])
        close(4, 'link_widths')
        close(3, 'pci_gpu_link_info')
        el(3, 'replay_counter', 0)
        el(3, 'replay_rollover_counter', 0)
        close(2, 'pci')
        el(2, 'performance_state', 'P0')
        open_(2, 'fb_memory_usage')
        el(3, 'total', '%d MiB' % _gpu_mem(gpus['model']))
        el(3, 'used', '1 MiB')
        close(2, 'fb_memory_usage')
        open_(2, 'ecc_mode')
        el(3, 'current_ecc', 'Enabled')
        el(3, 'pending_ecc', 'Enabled')
        close(2, 'ecc_mode')
        open_(2, 'ecc_errors')
        for scope in ('volatile', 'aggregate'):
            open_(3, scope)
            el(4, 'sram_correctable', 0)
            el(4, 'sram_uncorrectable_parity', 0)
            el(4, 'sram_uncorrectable_secded', 0)
            el(4, 'dram_correctable', ecc['%s_dram_correctable' % scope])
            el(4, 'dram_uncorrectable', ecc['%s_dram_uncorrectable' % scope])
            if scope == 'aggregate':
                el(4, 'sram_threshold_exceeded', 'No')
            close(3, scope)
        close(2, 'ecc_errors')
        open_(2, 'retired_pages')
        open_(3, 'multiple_single_bit_retirement')
        el(4, 'retired_count', 'N/A')
        el(4, 'retired_pagelist', 'N/A')
        close(3, 'multiple_single_bit_retirement')
        open_(3, 'double_bit_retirement')
        el(4, 'retired_count', 'N/A')
        el(4, 'retired_pagelist', 'N/A')
        close(3, 'double_bit_retirement')
        el(3, 'pending_blacklist', 'N/A')
        el(3, 'pending_retirement', 'N/A')
        close(2, 'retired_pages')
        open_(2, 'remapped_rows')
        el(3, 'remapped_row_corr', 0)
        el(3, 'remapped_row_unc', 0)
        el(3, 'remapped_row_pending', 'No')
        el(3, 'remapped_row_failure', 'No')
        close(2, 'remapped_rows')
        lines.append('\t</gpu>')
        lines.append('')
    lines.append('</nvidia_smi_log>')
    out('\n'.join(lines))
    return 0


def _nvsmi_topo(state):
    gpus = state['gpus']['devices']
    nics = state['nics']
    hw = state['host_hw']
    names = ['GPU%d' % gpu['index'] for gpu in gpus] + ['NIC%d' % index for index in range(len(nics))]
    nvlink = state['gpus'].get('nvlink') or 'NV18'

    def cpus(numa):
        per = max(1, hw['cpus'] // max(1, hw['numa_nodes']))
        return '%d-%d' % (numa * per, numa * per + per - 1)

    def relation(a, b):
        if a is b:
            return 'X'
        if a['kind'] == 'gpu' and b['kind'] == 'gpu':
            return nvlink if len(gpus) > 1 else 'X'
        pair = {a['kind']: a, b['kind']: b}
        if 'gpu' in pair and 'nic' in pair:
            if pair['gpu']['obj'].get('nic') == pair['nic']['obj']['name']:
                return 'PXB'
        numa_a, numa_b = a['numa'], b['numa']
        if a['kind'] == 'nic' and b['kind'] == 'nic' and a['obj']['pci_address'][:10] == b['obj']['pci_address'][:10]:
            return 'PIX'
        return 'NODE' if numa_a == numa_b else 'SYS'

    items = [{'kind': 'gpu', 'obj': gpu, 'numa': gpu['numa_node']} for gpu in gpus]
    items += [{'kind': 'nic', 'obj': nic, 'numa': nic['numa_node']} for nic in nics]
    header = '\t' + '\t'.join(names) + '\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID'
    out(header)
    for name, item in zip(names, items):
        row = [name] + [relation(item, other) if relation(item, other) != 'X' else ' X ' for other in items]
        if item['kind'] == 'gpu':
            row += [cpus(item['numa']), str(item['numa']), 'N/A']
        else:
            row += ['', '', '']
        out(('\t'.join(row)).rstrip('\t') if item['kind'] == 'nic' else '\t'.join(row))
    out('')
    out('Legend:')
    out('')
    out('  X    = Self')
    out('  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)')
    out('  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node')
    out('  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)')
    out('  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)')
    out('  PIX  = Connection traversing at most a single PCIe bridge')
    out('  NV#  = Connection traversing a bonded set of # NVLinks')
    out('')
    out('NIC Legend:')
    out('')
    for index, nic in enumerate(nics):
        out('  NIC%d: %s' % (index, nic['name']))
    out('')
    return 0


# ============================================================================ dcgmi

DCGMI_CATEGORIES = (
    ('Deployment', 1, ['Denylist', 'NVML Library', 'CUDA Main Library', 'Permissions and OS Blocks', 'Persistence Mode',
                       'Environment Variables', 'Page Retirement/Row Remap', 'Graphics Processes', 'Inforom']),
    ('Integration', 2, ['PCIe']),
    ('Hardware', 2, ['GPU Memory']),
    ('Stress', 3, ['Targeted Stress', 'Targeted Power', 'Memory Bandwidth']),
)


def tool_dcgmi(state, args):
    if not args or args[0] != 'diag':
        if args and args[0] == 'discovery' and '-l' in args:
            devices = state['gpus']['devices']
            out('%d GPU%s found.' % (len(devices), '' if len(devices) == 1 else 's'))
            out('+--------+----------------------------------------------------------------------+')
            out('| GPU ID | Device Information                                                   |')
            out('+--------+----------------------------------------------------------------------+')
            for gpu in devices:
                out('| %-6d | Name: %-63s|' % (gpu['index'], state['gpus']['model']))
                out('|        | PCI Bus ID: %-57s|' % ('0000' + gpu['bus_id'].upper()))
                out('|        | Device UUID: %-56s|' % gpu['uuid'])
                out('+--------+----------------------------------------------------------------------+')
            return 0
        sys.stderr.write('ERROR: netval lab emulates only "dcgmi diag" and "dcgmi discovery -l"\n')
        return 255
    level = None
    as_json = False
    index = 1
    while index < len(args):
        arg = args[index]
        if arg in ('-r', '--run') and index + 1 < len(args):
            level = args[index + 1]
            index += 2
            continue
        if arg in ('-j', '--json'):
            as_json = True
        elif arg in ('-g', '--group', '-i', '--gpuList', '-p', '--parameters') and index + 1 < len(args):
            index += 2
            continue
        elif arg in ('-v', '--verbose'):
            pass
        else:
            sys.stderr.write('PARSE ERROR:  \n             Argument: %s\n             Couldn\'t find match for argument\n\n' % arg)
            sys.stderr.write('Brief USAGE: \n   dcgmi diag  [--host <IP/FQDN>] [-g <groupId>] [-r <diag>] [-j] [-v]\n')
            return 255
        index += 1
    names = {'short': 1, 'medium': 2, 'long': 3, 'xlong': 4}
    if level is None:
        sys.stderr.write('Error: one of -r/--run or -c/--configfile must be specified\n')
        return 255
    level_num = names.get(level) or (int(level) if level.isdigit() else None)
    if level_num not in (1, 2, 3, 4):
        sys.stderr.write('Error: Invalid value "%s" for diag run. Valid values are 1, 2, 3, 4 or short, medium, long, xlong\n' % level)
        return 255
    gpus = state['gpus']
    results = state['dcgmi']['results']
    devices = gpus['devices']
    categories = []
    for category, minimum, tests in DCGMI_CATEGORIES:
        if level_num >= minimum:
            categories.append((category, [(test, results.get(test, 'Pass')) for test in tests]))
    failed_gpu = devices[-1]['index'] if devices else 0
    if as_json:
        doc = {'DCGM GPU Diagnostic': {'test_categories': [], 'version': state['dcgmi']['version']},
               'Driver Version Detected': gpus['driver_version'],
               'GPU Device IDs': [gpus['pci_device_id'][2:]] * len(devices)}
        for category, tests in categories:
            entry = {'category': category, 'tests': []}
            for test, result in tests:
                if category == 'Deployment':
                    rows = [{'status': result}]
                else:
                    rows = []
                    for gpu in devices:
                        status = result if (result == 'Pass' or gpu['index'] == failed_gpu) else 'Pass'
                        row = {'gpu_ids': str(gpu['index']), 'status': status}
                        if status == 'Fail':
                            row['warnings'] = [{'warning': _dcgm_warning(test, gpu['index']), 'error_id': 28}]
                        rows.append(row)
                entry['tests'].append({'name': test, 'results': rows})
            doc['DCGM GPU Diagnostic']['test_categories'].append(entry)
        out(json.dumps(doc, indent=4))
        return 0 if all(result != 'Fail' for _c, tests in categories for _t, result in tests) else 226
    border = '+---------------------------+------------------------------------------------+'
    out('Successfully ran diagnostic for group.')
    out(border)
    out('| %-25s | %-46s |' % ('Diagnostic', 'Result'))
    out('+===========================+================================================+')
    out('|%s+------------------------------------------------|' % ('-----  Metadata  ').ljust(27, '-'))
    out('| %-25s | %-46s |' % ('DCGM Version', state['dcgmi']['version']))
    out('| %-25s | %-46s |' % ('Driver Version Detected', gpus['driver_version']))
    ids = ', '.join([gpus['pci_device_id'][2:]] * len(devices))
    if len(ids) > 46:
        ids = ','.join([gpus['pci_device_id'][2:]] * len(devices))
    out('| %-25s | %-46s |' % ('GPU Device IDs Detected', ids))
    for position, (category, tests) in enumerate(categories):
        edge = '|' if position == 0 else '+'
        out('%s%s+------------------------------------------------%s' % (edge, ('-----  %s  ' % category).ljust(27, '-'), edge))
        for test, result in tests:
            if category == 'Deployment':
                out('| %-25s | %-46s |' % (test, result))
            elif result == 'Pass':
                out('| %-25s | %-46s |' % (test, 'Pass - All'))
            else:
                out('| %-25s | %-46s |' % (test, '%s - GPU: %d' % (result, failed_gpu)))
                if result == 'Fail':
                    out('| %-25s | %-46s |' % ('Warning', _dcgm_warning(test, failed_gpu)[:46]))
    out(border)
    return 0 if all(result != 'Fail' for _c, tests in categories for _t, result in tests) else 226


def _dcgm_warning(test, gpu):
    if test == 'PCIe':
        return 'GPU %d PCIe link is degraded or GPU unreachable' % gpu
    return 'GPU %d %s check failed' % (gpu, test)


# ============================================================================ perftest

PERFTEST_TITLES = {
    'ib_write_bw': 'RDMA_Write BW Test', 'ib_read_bw': 'RDMA_Read BW Test', 'ib_send_bw': 'Send BW Test',
    'ib_write_lat': 'RDMA_Write Latency Test', 'ib_read_lat': 'RDMA_Read Latency Test', 'ib_send_lat': 'Send Latency Test',
}
PERFTEST_FLAGS_WITH_VALUE = {'-d', '--ib-dev', '-i', '--ib-port', '-x', '--gid-index', '-p', '--port', '-D', '--duration',
                             '-s', '--size', '-n', '--iters', '-q', '--qp', '-m', '--mtu', '-c', '--connection', '-S', '--sl',
                             '-I', '--inline_size', '-t', '--tx-depth', '-r', '--rx-depth', '-u', '--qp-timeout',
                             '--tclass', '-T', '--tos', '-Q', '--cq-mod', '-o', '--outs', '-l', '--post_list',
                             '--out_json_file', '--output', '--use_cuda', '--source_ip', '-f', '--margin', '-O'}
PERFTEST_FLAGS = {'-a', '--all', '-F', '--CPU-freq', '-b', '--bidirectional', '-R', '--rdma_cm', '--report_gbits',
                  '-e', '--events', '-z', '--com_rdma_cm', '--out_json', '--cpu_util', '-H', '--report-histogram',
                  '-U', '--report-unsorted', '--run_infinitely', '--use_cuda_dmabuf', '--use_data_direct',
                  '--report-both', '--ipv6', '--ipv6-addr', '--use_hugepages', '--odp', '-N', '--noPeak'}


def _perftest_args(tool, args):
    opts = {'host': None, 'flags': set()}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith('--') and '=' in arg:
            key, value = arg.split('=', 1)
            if key not in PERFTEST_FLAGS_WITH_VALUE:
                return None, "%s: unrecognized option '%s'" % (tool, key)
            opts[key] = value
        elif arg in PERFTEST_FLAGS_WITH_VALUE:
            if index + 1 >= len(args):
                return None, "%s: option requires an argument -- '%s'" % (tool, arg.lstrip('-'))
            if arg == '--use_cuda' and not re.match(r'^\d+$', args[index + 1]):
                opts[arg] = '0'
            else:
                opts[arg] = args[index + 1]
                index += 1
        elif arg in PERFTEST_FLAGS:
            opts['flags'].add(arg)
        elif arg.startswith('-'):
            return None, "%s: unrecognized option '%s'" % (tool, arg) if arg.startswith('--') else \
                "%s: invalid option -- '%s'" % (tool, arg[1:2])
        elif opts['host'] is None:
            opts['host'] = arg
        else:
            return None, ' Invalid Command or flag.'
        index += 1
    return opts, None


def _opt(opts, *names, **kwargs):
    for name in names:
        if name in opts:
            return opts[name]
    return kwargs.get('default')


def _perftest_error(lines, rc=1):
    sys.stderr.write(''.join(line + '\n' for line in lines))
    return rc


def tool_perftest(state, tool, args):
    opts, error = _perftest_args(tool, args)
    if error:
        return _perftest_error([error, ' Invalid Command or flag.', ' Please check command line and run again.', ''])
    is_bw = tool.endswith('_bw')
    devname = _opt(opts, '-d', '--ib-dev')
    if not state['nics']:
        return _perftest_error(['No IB devices found', ' Unable to find the Infiniband/RoCE device'])
    nic = state['nics'][0] if devname is None else next((n for n in state['nics'] if n['name'] == devname), None)
    if nic is None:
        return _perftest_error(['IB device %s not found' % devname, ' Unable to find the Infiniband/RoCE device'])
    if nic['state'] != 'ACTIVE':
        return _perftest_error([' Port number 1 state is Down', " Couldn't set the link layer",
                                " Couldn't get context for the device"])
    try:
        port = int(_opt(opts, '-p', '--port', default=PERFTEST_PORT))
        duration = float(_opt(opts, '-D', '--duration', default=0)) or None
        size = _parse_size(_opt(opts, '-s', '--size', default='65536' if is_bw else '2'))
        iters = int(_opt(opts, '-n', '--iters', default=5000 if is_bw else 1000))
        qps = int(_opt(opts, '-q', '--qp', default=1))
        cuda = _opt(opts, '--use_cuda')
    except ValueError:
        return _perftest_error([' Invalid Command or flag.', ' Please check command line and run again.'])
    if not 0 < port < 65536:
        return _perftest_error([' Invalid port number %d' % port])
    params = {'tool': tool, 'size': size, 'iters': iters, 'duration': duration, 'qps': qps,
              'sweep': '-a' in opts['flags'] or '--all' in opts['flags'],
              'gbits': '--report_gbits' in opts['flags'], 'bidir': '-b' in opts['flags'] or '--bidirectional' in opts['flags'],
              'cuda': cuda, 'gid_index': _opt(opts, '-x', '--gid-index'), 'rdma_cm': '-R' in opts['flags']}
    if opts['host'] is None:
        return _perftest_server(state, nic, params, port)
    return _perftest_client(state, nic, params, opts['host'], port)


def _parse_size(text):
    match = re.match(r'^(\d+)([KMG]?)$', str(text), re.I)
    if not match:
        raise ValueError(text)
    return int(match.group(1)) * {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}[match.group(2).upper()]


def _local_fabric_ip(nic, state):
    link = nic.get('fabric') or (state['fabric'][0] if state.get('fabric') else {})
    return link.get('ip') or '127.0.0.1'


def _perftest_header(state, nic, params, server, cuda_lines):
    ib = nic['link_layer'] == 'InfiniBand'
    lines = []
    if params['duration'] and params['tool'].endswith('_bw'):
        lines.append(" WARNING: BW peak won't be measured in this run.")
    lines.extend(cuda_lines)
    title = PERFTEST_TITLES[params['tool']]
    if params['bidir'] and params['tool'].endswith('_bw'):
        title = title.replace(' BW Test', ' Bidirectional BW Test')
    lines.append('-' * 87)
    lines.append('                    %s' % title)
    lines.append(' Dual-port       : OFF\t\tDevice         : %s' % nic['name'])
    lines.append(' Number of qps   : %d\t\tTransport type : IB' % params['qps'])
    lines.append(' Connection type : RC\t\tUsing SRQ      : OFF')
    lines.append(' PCIe relax order: ON')
    lines.append(' ibv_wr* API     : ON')
    if not server or params['tool'].endswith('_lat'):
        lines.append(' TX depth        : %d' % (128 if params['tool'].endswith('_bw') else 1))
    if params['tool'].endswith('_bw'):
        lines.append(' CQ Moderation   : 1')
    lines.append(' Mtu             : %d[B]' % (nic['mtu'] if ib else 4096))
    lines.append(' Link type       : %s' % ('IB' if ib else 'Ethernet'))
    gid_index = params['gid_index'] if params['gid_index'] is not None else (nic['gid_index'] if not ib else None)
    if not ib:
        lines.append(' GID index       : %s' % gid_index)
    if params['tool'] == 'ib_read_lat' or params['tool'] == 'ib_read_bw':
        lines.append(' Outstand reads  : 16')
    else:
        lines.append(' Max inline data : %d[B]' % (0 if params['tool'].endswith('_bw') else 220))
    lines.append(' rdma_cm QPs\t : %s' % ('ON' if params['rdma_cm'] else 'OFF'))
    lines.append(' Data ex. method : %s' % ('rdma_cm' if params['rdma_cm'] else 'Ethernet'))
    lines.append('-' * 87)
    return lines


def _gid_line(ip):
    return ' GID: 00:00:00:00:00:00:00:00:00:00:255:255:%s' % ':'.join('%02d' % int(part) for part in ip.split('.'))


def _address_lines(nic, local, remote, local_ip, remote_ip):
    ib = nic['link_layer'] == 'InfiniBand'
    lines = []
    for label, info, ip in (('local', local, local_ip), ('remote', remote, remote_ip)):
        lid = '0x%02x' % info['lid'] if ib else '0000'
        lines.append(' %s address: LID %s QPN 0x%04x PSN 0x%06x RKey 0x%06x VAddr 0x%014x'
                     % (label, lid, info['qpn'], info['psn'], info['rkey'], info['vaddr']))
        if not ib:
            lines.append(_gid_line(ip))
    lines.append('-' * 87)
    return lines


def _endpoint_info(nic):
    rnd = random.Random()
    return {'lid': nic['lid'], 'qpn': rnd.randint(0x100, 0xffff), 'psn': rnd.randint(0, 0xffffff),
            'rkey': rnd.randint(0, 0xffffff), 'vaddr': 0x7f0000000000 + rnd.randint(0, 0xffffff) * 0x1000}


def _bw_rows(params, bw_bytes):
    sizes = [2 ** power for power in range(1, 24)] if params['sweep'] else [params['size']]
    rows = []
    for size in sizes:
        factor = 1.0 if size >= 65536 else size / (size + 128.0)
        bw = bw_bytes * factor * (2 if params['bidir'] else 1)
        if params['duration']:
            iterations = int(bw * params['duration'] / size)
            peak = 0.0
        else:
            iterations = params['iters']
            peak = bw * 1.0004
        scale = 8 / 1e9 if params['gbits'] else 1 / MIB
        rows.append(' %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f'
                    % (size, iterations, peak * scale, bw * scale, bw / size / 1e6))
    unit = 'Gb/sec' if params['gbits'] else 'MB/sec'
    header = ' #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]' % (unit, unit)
    return [header] + rows + ['-' * 87]


def _lat_rows(params, lat):
    header = (' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]'
              '   99% percentile[usec]   99.9% percentile[usec] ')
    row = (' %-7d %-10d    %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f'
           % (params['size'], params['iters'], lat * 0.96, lat * 6.2, lat, lat * 1.03, lat * 0.12, lat * 1.15, lat * 6.2))
    return [header, row, '-' * 87]


def _cuda_lines(state, params):
    if params['cuda'] is None:
        return []
    devices = state['gpus']['devices']
    index = int(params['cuda'])
    if index >= len(devices):
        raise ToolExit(1, 'initializing CUDA\nThere are %d devices supporting CUDA, picking first...\n'
                          'cuDeviceGet() failed with error 101\n Couldn\'t init GPU context\n' % len(devices))
    gpu = devices[index]
    lines = ['initializing CUDA', 'Listing all CUDA devices in system:']
    lines += ['CUDA device %d: PCIe address is %s' % (dev['index'], dev['bus_id'][5:].upper()) for dev in devices]
    lines += ['', 'Picking device No. %d' % index,
              '[pid = %d, dev = %d] device name = [%s]' % (os.getpid(), index, state['gpus']['model']),
              'creating CUDA Ctx', 'making it the current CUDA Ctx', 'CUDA device integrated: 0',
              'cuMemAlloc() of a %d bytes GPU buffer' % max(131072, params['size'] * 2),
              'allocated GPU buffer address at 00007f%010x pointer=0x7f%010x' % (gpu['slot'] << 24, gpu['slot'] << 24)]
    return lines


WAITING = ['', '************************************', '* Waiting for client to connect... *', '************************************']


def _send_line(sock, obj):
    sock.sendall((json.dumps(obj) + '\n').encode())


def _recv_line(sock, timeout):
    sock.settimeout(timeout)
    data = b''
    while not data.endswith(b'\n'):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return json.loads(data.decode() or 'null')


def _perftest_server(state, nic, params, port):
    wait = float(os.environ.get('NETVAL_LAB_PERFTEST_WAIT', '60'))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(('0.0.0.0', port))
        listener.listen(1)
    except OSError:
        return _perftest_error(["Couldn't listen to port %d" % port, ' Unable to open file descriptor for socket connection',
                                ' Unable to init the socket connection'])
    cuda = _cuda_lines(state, params)
    out('\n'.join(WAITING))
    sys.stdout.flush()
    listener.settimeout(wait)
    try:
        conn, peer = listener.accept()
    except socket.timeout:
        return _perftest_error(["Couldn't accept a client connection within %d s (netval lab timeout)" % wait,
                                ' Unable to open file descriptor for socket connection', ' Unable to init the socket connection'])
    finally:
        listener.close()
    mine = None
    with conn:
        try:
            hello = _recv_line(conn, 30)
            if not hello or hello.get('tool') != params['tool']:
                return _perftest_error([' Failed to exchange data between server and clients'])
            local = _endpoint_info(nic)
            mine = _open_session(nic, conn.getsockname()[0], '%s server port %d' % (params['tool'], port), params, hello.get('session'))
            _send_line(conn, {'ok': True, 'info': local, 'ip': _local_fabric_ip(nic, state), 'capacity': mine['hca'][0],
                              'lat': _own_latency(nic, params)})
            done = _recv_line(conn, 60)
            ours = _close_session(mine)
            if done:
                _send_line(conn, {'shares': ours})
        except (OSError, ValueError):
            return _perftest_error([' Failed to exchange data between server and clients'])
        finally:
            _close_session(mine)
    if not done:
        return _perftest_error([' Failed to exchange data between server and clients'])
    for key in ('sweep', 'size', 'iters', 'duration', 'bidir', 'gbits', 'qps'):
        params[key] = hello['params'].get(key, params[key])
    lines = cuda + _perftest_header(state, nic, params, True, [])
    lines += _address_lines(nic, local, hello['info'], _local_fabric_ip(nic, state), peer[0])
    if params['tool'].endswith('_bw'):
        lines += _bw_rows(params, fabric.session_bytes(ours + (done.get('shares') or [])))
    else:
        lines += _lat_rows(params, max(_own_latency(nic, params), hello['lat']))
    out('\n'.join(lines))
    return 0


def _own_latency(nic, params):
    return nic['lat_us'] * (1.8 if params['tool'] == 'ib_read_lat' else 1.0)


def _open_session(nic, local_address, label, params, session_id):
    """Enter this session in the ledgers of this end's HCA and rail (both kept under this host's node dir)."""
    rail = fabric.rail_of(local_address)
    session = {'hca': (fabric.hca_capacity_bytes(nic, params['cuda'] is not None), fabric.Ledger(node_dir(), nic['name'])),
               'rail': (fabric.rail_rate_bytes(rail), fabric.Ledger(node_dir(), 'rail-%s' % (rail or 'unknown')))}
    for capacity, ledger in session.values():
        ledger.open(label, session_id, capacity)
    return session


def _close_session(session):
    """[(capacity, overlapping sessions)] of this end's HCA and rail, to combine with the other end's.  Closing twice is harmless."""
    if session is None:
        return []
    return [[capacity, ledger.close()] for capacity, ledger in (session['hca'], session['rail'])]


def _perftest_client(state, nic, params, host, port):
    """The client end: both ends' HCAs, the rail and the sessions sharing either HCA decide what it prints (fabric.py)."""
    cuda = _cuda_lines(state, params)
    try:
        sock = socket.create_connection((host, port), timeout=float(os.environ.get('NETVAL_LAB_PERFTEST_CONNECT', '5')))
    except OSError:
        return _perftest_error(["Couldn't connect to %s:%d" % (host, port),
                                ' Unable to open file descriptor for socket connection',
                                ' Unable to init the socket connection'])
    local = _endpoint_info(nic)
    mine = None
    with sock:
        try:
            session_id = uuid.uuid4().hex
            mine = _open_session(nic, sock.getsockname()[0], '%s client to %s:%d' % (params['tool'], host, port), params, session_id)
            _send_line(sock, {'tool': params['tool'], 'session': session_id, 'info': local, 'capacity': mine['hca'][0], 'lat': _own_latency(nic, params),
                              'params': {key: params[key] for key in ('sweep', 'size', 'iters', 'duration', 'bidir', 'gbits', 'qps')}})
            reply = _recv_line(sock, 30)
            if not reply or not reply.get('ok'):
                raise ValueError('no reply')
            if params['duration']:
                time.sleep(min(params['duration'], 2))
            ours = _close_session(mine)
            _send_line(sock, {'done': True, 'shares': ours})
            remote = _recv_line(sock, 30) or {}
        except (OSError, ValueError):
            return _perftest_error([' Failed to exchange data between server and clients'])
        finally:
            _close_session(mine)
    lines = _perftest_header(state, nic, params, False, cuda)
    lines += _address_lines(nic, local, reply['info'], _local_fabric_ip(nic, state), reply.get('ip') or host)
    if params['tool'].endswith('_bw'):
        lines += _bw_rows(params, fabric.session_bytes(ours + (remote.get('shares') or [])))
    else:
        lines += _lat_rows(params, max(_own_latency(nic, params), reply['lat']))
    out('\n'.join(lines))
    return 0


# ============================================================================ nccl-tests and mpirun

BUSBW_FACTORS = {'all_reduce_perf': lambda n: 2.0 * (n - 1) / n, 'all_gather_perf': lambda n: (n - 1.0) / n,
                 'reduce_scatter_perf': lambda n: (n - 1.0) / n, 'alltoall_perf': lambda n: (n - 1.0) / n,
                 'broadcast_perf': lambda n: 1.0, 'reduce_perf': lambda n: 1.0, 'sendrecv_perf': lambda n: 1.0}
REDOPS = {'all_reduce_perf': 'sum', 'reduce_scatter_perf': 'sum', 'reduce_perf': 'sum'}


def _mpirun_args(args):
    opts = {'np': None, 'hosts': [], 'env': {}, 'hostfile': None}
    index = 0
    while index < len(args):
        arg = args[index]
        nxt = args[index + 1] if index + 1 < len(args) else None
        if arg in ('-np', '-n', '--np', '-c'):
            opts['np'] = int(nxt)
            index += 2
        elif arg in ('--hostfile', '-hostfile', '--machinefile', '-machinefile', '--default-hostfile'):
            opts['hostfile'] = nxt
            index += 2
        elif arg in ('-H', '--host', '-host'):
            opts['hosts'] += [item for item in nxt.split(',') if item]
            index += 2
        elif arg == '-x':
            key, _sep, value = nxt.partition('=')
            opts['env'][key] = value if _sep else os.environ.get(key, '')
            index += 2
        elif arg in ('--mca', '-mca', '--gmca'):
            index += 3
        elif arg in ('--bind-to', '--map-by', '--rank-by', '-N', '--npernode', '--prefix', '--wdir', '-wdir'):
            index += 2
        elif arg.startswith('-'):
            if arg in ('--allow-run-as-root', '--oversubscribe', '--tag-output', '-v', '--verbose', '--report-bindings',
                       '--display-map', '-q', '--quiet', '--noprefix'):
                index += 1
                continue
            raise ToolExit(1, 'mpirun: Error: unknown option "%s"\nType \'mpirun --help\' for usage.\n' % arg)
        else:
            return opts, args[index:]
    return opts, []


def _read_hostfile(path):
    hosts = []
    try:
        with open(path, encoding='utf-8') as handle:
            for line in handle:
                line = line.split('#', 1)[0].strip()
                if not line:
                    continue
                parts = line.split()
                slots = 1
                for part in parts[1:]:
                    if part.startswith('slots='):
                        slots = int(part.split('=', 1)[1])
                hosts.append((parts[0], slots))
    except OSError:
        raise ToolExit(1, '--------------------------------------------------------------------------\n'
                          'Open RTE was unable to open the hostfile:\n    %s\nCheck to make sure the path and filename are correct.\n'
                          '--------------------------------------------------------------------------\n' % path)
    return hosts


def tool_mpirun(state, args):
    opts, program = _mpirun_args(args)
    if not program:
        sys.stderr.write('mpirun could not find anything to do.\n')
        return 1
    binary = os.path.basename(program[0])
    if binary not in BUSBW_FACTORS:
        sys.stderr.write('--------------------------------------------------------------------------\n'
                         'mpirun was unable to find the specified executable file, and therefore\n'
                         'did not launch the job.  This error was first reported for process\n'
                         'rank 0; it may have occurred for other processes as well.\n\n'
                         'NOTE: A common cause for this error is misspelling a mpirun command\n'
                         '      line parameter option (remember that mpirun interprets the first\n'
                         '      unrecognized command line token as the executable).\n\n'
                         'Node:       %s\nExecutable: %s\n'
                         '--------------------------------------------------------------------------\n'
                         % (state['host'], program[0]))
        return 1
    slots = []
    if opts['hostfile']:
        for host, count in _read_hostfile(opts['hostfile']):
            slots += [host] * count
    for host in opts['hosts']:
        name, _sep, count = host.partition(':')
        slots += [name] * (int(count) if count.isdigit() else 1)
    if not slots:
        slots = [state['host']] * (opts['np'] or 1)
    np_ = opts['np'] or len(slots)
    if np_ > len(slots):
        sys.stderr.write('--------------------------------------------------------------------------\n'
                         'There are not enough slots available in the system to satisfy the %d\n'
                         'slots that were requested by the application:\n\n  %s\n\n'
                         'Either request fewer slots for your application, or make more slots\n'
                         'available for use.\n'
                         '--------------------------------------------------------------------------\n' % (np_, program[0]))
        return 1
    env = dict((key, value) for key, value in os.environ.items() if key.startswith('NCCL_'))
    env.update(opts['env'])
    return run_nccl_test(state, binary, program[1:], slots[:np_], env)


def tool_nccl_perf(state, binary, args):
    env = dict((key, value) for key, value in os.environ.items() if key.startswith('NCCL_'))
    return run_nccl_test(state, binary, args, [state['host']], env)


def _nccl_args(args):
    opts = {'-b': '33554432', '-e': '33554432', '-f': '2', '-g': '1', '-t': '1', '-n': '20', '-w': '5', '-c': '1',
            '-i': None, '-d': 'float', '-o': 'sum', '-G': '0', '-a': '3', '-z': '0'}
    aliases = {'--minbytes': '-b', '--maxbytes': '-e', '--stepfactor': '-f', '--ngpus': '-g', '--nthreads': '-t',
               '--iters': '-n', '--warmup_iters': '-w', '--check': '-c', '--stepbytes': '-i', '--datatype': '-d',
               '--op': '-o', '--cudagraph': '-G', '--average': '-a', '--blocking': '-z'}
    index = 0
    while index < len(args):
        arg = args[index]
        key, _sep, value = arg.partition('=')
        key = aliases.get(key, key)
        if key not in opts:
            raise ToolExit(1, 'invalid option: %s\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n'
                              '\t[-g,--ngpus <gpus per thread>] \n\t[-b,--minbytes <min size in bytes>] \n'
                              '\t[-e,--maxbytes <max size in bytes>] \n\t[-i,--stepbytes <increment size>] \n'
                              '\t[-f,--stepfactor <increment factor>] \n\t[-n,--iters <iteration count>] \n' % arg)
        if not _sep:
            if index + 1 >= len(args):
                raise ToolExit(1, 'option requires an argument -- \'%s\'\n' % key.lstrip('-'))
            value = args[index + 1]
            index += 1
        opts[key] = value
        index += 1
    return opts


def _nccl_size(text):
    match = re.match(r'^(\d+)([KMGT]?)$', text.strip(), re.I)
    if not match:
        raise ToolExit(1, 'invalid size specified for [-b,--minbytes] or [-e,--maxbytes]: %s\n' % text)
    return int(match.group(1)) * {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4}[match.group(2).upper()]


def run_nccl_test(state, binary, args, ranks_hosts, env):
    opts = _nccl_args(args)
    min_bytes, max_bytes = _nccl_size(opts['-b']), _nccl_size(opts['-e'])
    ngpus = int(opts['-g'])
    gpus = state['gpus']['devices']
    if ngpus > len(gpus):
        sys.stdout.write('# nThread 1 nGpus %d minBytes %d maxBytes %d\n' % (ngpus, min_bytes, max_bytes))
        sys.stdout.write('%s: Test CUDA failure common.cu:%d \'invalid device ordinal\'\n .. %s pid %d: Test failure common.cu:%d\n'
                         % (state['host'], 1008, state['host'], os.getpid(), 1150))
        return 2
    nccl = state['nccl']
    model = state['gpus']['model']
    total = len(ranks_hosts) * ngpus
    multi_node = len(set(ranks_hosts)) > 1
    debug = (env.get('NCCL_DEBUG') or '').upper()
    pid = os.getpid()
    lines = ['# nccl-tests version %s nccl-headers=%s nccl-library=%s'
             % (nccl['nccl_tests_version'], _nccl_code(nccl['version']), _nccl_code(nccl['version'])),
             '# Collective test starting: %s' % binary,
             '# nThread %s nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %s iters: %s agg iters: 1 validation: %s graph: %s'
             % (opts['-t'], ngpus, min_bytes, max_bytes, ('%s(factor)' % opts['-f']) if opts['-i'] is None else ('%s(bytes)' % opts['-i']),
                opts['-w'], opts['-n'], opts['-c'], opts['-G']),
             '#', '# Using devices']
    local_counter = {}
    rank = 0
    for host in ranks_hosts:
        local = local_counter.get(host, 0)
        local_counter[host] = local + ngpus
        for gpu_index in range(ngpus):
            device = (local + gpu_index) % max(1, len(gpus))
            bus = gpus[device]['bus_id'] if device < len(gpus) else gpus[0]['bus_id']
            lines.append('#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s'
                         % (rank, 0, pid + 7 * (ranks_hosts.index(host)), host, device, bus[:10], model))
            rank += 1
    transport = nccl['transport']
    hcas = [nic for nic in state['nics'] if nic['state'] == 'ACTIVE']
    if env.get('NCCL_IB_HCA'):
        wanted = [item.split(':')[0].lstrip('^=') for item in env['NCCL_IB_HCA'].split(',')]
        hcas = [nic for nic in hcas if any(nic['name'].startswith(item) for item in wanted)]
    if env.get('NCCL_IB_DISABLE') == '1' or not hcas:
        transport = 'Socket'
    bootstrap = state['fabric'][0] if state.get('fabric') else {'netdev': 'lo', 'ip': '127.0.0.1'}
    if_label = '%s:%s<0>' % (bootstrap.get('netdev', 'lo'), bootstrap.get('ip', '127.0.0.1'))
    gdr = nccl['gdr'] and transport == 'IB'
    if debug in ('VERSION', 'WARN', 'INFO', 'TRACE'):
        lines.append('NCCL version %s+cuda%s' % (nccl['version'], state['gpus']['cuda_version']))
    if debug in ('INFO', 'TRACE'):
        prefix = '%s:%d:%d [0] NCCL INFO ' % (state['host'], pid, pid)
        lines.append(prefix + 'Bootstrap : Using %s' % if_label)
        lines.append(prefix + 'NET/Plugin: No plugin found (libnccl-net.so)')
        lines.append(prefix + 'NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: '
                     'No such file or directory : when loading libnccl-net.so')
        lines.append(prefix + 'NET/Plugin: Using internal network plugin.')
        if transport == 'IB':
            devs = ' '.join('[%d]%s:1/%s' % (index, nic['name'], 'IB' if nic['link_layer'] == 'InfiniBand' else 'RoCE')
                            for index, nic in enumerate(hcas))
            lines.append(prefix + 'NET/IB : Using %s [RO]; OOB %s' % (devs, if_label))
            lines.append(prefix + 'Using network IB')
        else:
            if env.get('NCCL_IB_DISABLE') != '1':
                lines.append(prefix + 'NET/IB : No device found.')
            lines.append(prefix + 'NET/Socket : Using [0]%s' % if_label)
            lines.append(prefix + 'Using network Socket')
        lines.append(prefix + 'ncclCommInitRank comm 0x55d0c0a1b2c0 rank 0 nranks %d cudaDev 0 nvmlDev 0 busId %s commId 0x%x - Init START'
                     % (total, (gpus[0]['bus_id'][5:7] + '000') if gpus else '0', pid))
        if multi_node:
            chan_prefix = '%s:%d:%d [0] NCCL INFO ' % (state['host'], pid, pid + 41)
            via = ('NET/IB/0/GDRDMA' if gdr else 'NET/IB/0') if transport == 'IB' else 'NET/Socket/0'
            if gdr:
                lines.append(chan_prefix + "GPU Direct RDMA Enabled for HCA 0 '%s'" % hcas[0]['name'])
            peer_rank = ngpus
            for channel in range(2):
                lines.append(chan_prefix + 'Channel %02d/0 : %d[0] -> 0[0] [receive] via %s' % (channel, peer_rank, via))
                lines.append(chan_prefix + 'Channel %02d/0 : 0[0] -> %d[0] [send] via %s' % (channel, peer_rank, via))
        else:
            lines.append(prefix + 'Channel 00/0 : 0[0] -> 0[0] via P2P/CUMEM')
        lines.append(prefix + 'Connected all rings')
        lines.append(prefix + 'ncclCommInitRank comm 0x55d0c0a1b2c0 rank 0 nranks %d cudaDev 0 nvmlDev 0 - Init COMPLETE' % total)
    lines.append('#')
    lines.append('#                                                              out-of-place                       in-place          ')
    lines.append('#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ')
    lines.append('#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ')
    peak = nccl['busbw_gbs'] if multi_node or total == 1 else nccl['busbw_gbs']
    if transport == 'Socket' and nccl['transport'] == 'IB':
        peak = min(peak, 2.0)
    factor = BUSBW_FACTORS[binary](total) if total > 1 else 1.0
    sizes = []
    size = min_bytes
    step_bytes = _nccl_size(opts['-i']) if opts['-i'] else None
    step_factor = int(opts['-f'])
    while size <= max_bytes and len(sizes) < 64:
        sizes.append(size)
        if step_bytes:
            size += step_bytes
        elif step_factor > 1:
            size *= step_factor
        else:
            break
    if not sizes:
        sizes = [min_bytes]
    type_size = {'float': 4, 'half': 2, 'double': 8, 'int8': 1, 'int32': 4, 'bfloat16': 2}.get(opts['-d'], 4)
    redop = REDOPS.get(binary, 'none')
    root = '0' if binary in ('broadcast_perf', 'reduce_perf') else '-1'
    rnd = random.Random(pid)
    busbw_sum = 0.0
    count_rows = 0
    for size in sizes:
        count = size // type_size
        if binary in ('all_gather_perf', 'alltoall_perf', 'reduce_scatter_perf'):
            count = size // type_size // max(1, total)
        cells = []
        for variant in range(2):
            busbw = peak * size / (size + 1048576.0) * (1.0 + 0.003 * variant) if total > 1 else 0.0
            busbw = min(busbw, peak)
            algbw = busbw / factor if factor else busbw
            seconds = size / (algbw * 1e9) if algbw > 0 else 5e-6 + rnd.random() * 1e-6
            usec = seconds * 1e6 + (8.0 if size < 65536 else 0.0)
            algbw = size / (usec * 1e3)
            busbw = algbw * factor if total > 1 else 0.0
            if usec >= 10000:
                time_text = '%7.0f' % usec
            elif usec >= 100:
                time_text = '%7.1f' % usec
            else:
                time_text = '%7.2f' % usec
            cells.append('  %7s  %6.2f  %6.2f  %6s' % (time_text, algbw, busbw, '0' if opts['-c'] != '0' else 'N/A'))
            busbw_sum += busbw
            count_rows += 1
        lines.append('%12d  %12d  %8s  %6s  %6s%s' % (size, count, opts['-d'], redop, root, ''.join(cells)))
    lines.append('# Out of bounds values : 0 OK')
    lines.append('# Avg bus bandwidth    : %g ' % round(busbw_sum / max(1, count_rows), 4))
    lines.append('#')
    lines.append('# Collective test concluded: %s' % binary)
    lines.append('')
    out('\n'.join(lines))
    return 0


def _nccl_code(version):
    parts = (version.split('.') + ['0', '0'])[:3]
    return '%d%02d%02d' % (int(parts[0]), int(parts[1]), int(parts[2]))


# ============================================================================ kernel log: dmesg, journalctl -k

def _kernel_messages(state):
    """[(seconds since boot, message)] from the state and node_dir/log/kernel.log."""
    boot = state['created'] - 900.0
    messages = []
    stamp = 2.0
    for nic in state['nics']:
        bdf = nic['pci_address']
        pcie = nic['pcie']
        messages.append((stamp, 'mlx5_core %s: firmware version: %s' % (bdf, nic['fw_version'])))
        lanes = {2.5: 2000, 5: 4000, 8: 7876, 16: 15753, 32: 31507, 64: 64000}
        have = lanes.get(pcie['lnksta_gts'], 31507) * pcie['lnksta_width']
        cap = lanes.get(pcie['lnkcap_gts'], 31507) * pcie['lnkcap_width']
        if have < cap:
            messages.append((stamp + 0.01, 'mlx5_core %s: %d.%03d Gb/s available PCIe bandwidth, limited by %.1f GT/s PCIe x%d link at %s '
                             '(capable of %d.%03d Gb/s with %.1f GT/s PCIe x%d link)'
                             % (bdf, have // 1000, have % 1000, pcie['lnksta_gts'], pcie['lnksta_width'], bdf,
                                cap // 1000, cap % 1000, pcie['lnkcap_gts'], pcie['lnkcap_width'])))
        else:
            messages.append((stamp + 0.01, 'mlx5_core %s: %d.%03d Gb/s available PCIe bandwidth (%.1f GT/s PCIe x%d link)'
                             % (bdf, have // 1000, have % 1000, pcie['lnksta_gts'], pcie['lnksta_width'])))
        stamp += 0.35
    stamp = 40.0
    for line in state['host_hw'].get('kernel_lines') or []:
        messages.append((stamp, line))
        stamp += 1.5
    stamp = 600.0
    for line in state['gpus'].get('xid_lines') or []:
        messages.append((stamp, line))
        stamp += 0.002
    path = os.path.join(node_dir(), 'log', 'kernel.log')
    try:
        with open(path, encoding='utf-8') as handle:
            for raw in handle:
                raw = raw.rstrip('\n')
                if not raw.strip():
                    continue
                match = re.match(r'^\[\s*(\d+\.\d+)\]\s?(.*)$', raw)
                epoch = re.match(r'^(\d{9,}(?:\.\d+)?)\s+(.*)$', raw)
                if match:
                    messages.append((float(match.group(1)), match.group(2)))
                elif epoch:
                    messages.append((max(0.0, float(epoch.group(1)) - boot), epoch.group(2)))
                else:
                    messages.append((max(0.0, os.path.getmtime(path) - boot), raw))
    except OSError:
        pass
    messages.sort(key=lambda item: item[0])
    return boot, messages


def tool_dmesg(state, args):
    human_time = False
    no_time = False
    for arg in args:
        if arg in ('-T', '--ctime'):
            human_time = True
        elif arg in ('-t', '--notime'):
            no_time = True
        elif arg in ('-x', '--decode', '-k', '--kernel', '-H', '--human', '-L', '--color', '--color=never', '-P', '--nopager',
                     '-w', '--follow') or arg.startswith('--level') or arg.startswith('-l') or arg.startswith('--color='):
            continue
        else:
            sys.stderr.write("dmesg: unrecognized option '%s'\nTry 'dmesg --help' for more information.\n" % arg)
            return 1
    boot, messages = _kernel_messages(state)
    for offset, message in messages:
        if no_time:
            out(message)
        elif human_time:
            out('[%s] %s' % (time.strftime('%a %b %d %H:%M:%S %Y', time.localtime(boot + offset)), message))
        else:
            out('[%12.6f] %s' % (offset, message))
    return 0


def tool_journalctl(state, args):
    if not any(arg in ('-k', '--dmesg') or (arg.startswith('-') and not arg.startswith('--') and 'k' in arg[1:])
               for arg in args):
        if os.path.exists('/usr/bin/journalctl'):
            os.execv('/usr/bin/journalctl', ['journalctl'] + list(args))
        sys.stderr.write('journalctl: netval lab emulates only the kernel log (-k)\n')
        return 1
    output = 'short'
    grep = None
    lines_limit = None
    index = 0
    while index < len(args):
        arg = args[index]
        nxt = args[index + 1] if index + 1 < len(args) else None
        if arg in ('-o', '--output'):
            output = nxt
            index += 2
            continue
        if arg.startswith('--output='):
            output = arg.split('=', 1)[1]
        elif arg in ('-g', '--grep'):
            grep = nxt
            index += 2
            continue
        elif arg.startswith('--grep='):
            grep = arg.split('=', 1)[1]
        elif arg in ('-n', '--lines'):
            lines_limit = int(nxt)
            index += 2
            continue
        elif arg in ('--since', '-S', '--until', '-U', '-p', '--priority', '-b', '--boot') and nxt is not None and not nxt.startswith('-'):
            index += 2
            continue
        elif arg in ('-k', '--dmesg', '--no-pager', '-q', '--quiet', '-b', '--boot', '-a', '--all', '--no-hostname', '-kb', '-bk') \
                or arg.startswith('--since=') or arg.startswith('--until=') or arg.startswith('--priority='):
            pass
        else:
            sys.stderr.write("journalctl: unrecognized option '%s'\n" % arg)
            return 1
        index += 1
    boot, messages = _kernel_messages(state)
    if grep:
        messages = [item for item in messages if re.search(grep, item[1])]
    if lines_limit is not None:
        messages = messages[-lines_limit:] if lines_limit else []
    host = state['host']
    for offset, message in messages:
        moment = boot + offset
        if output == 'cat':
            out(message)
        elif output == 'short-iso':
            out('%s %s kernel: %s' % (time.strftime('%Y-%m-%dT%H:%M:%S%z', time.localtime(moment)), host, message))
        elif output == 'short-precise':
            out('%s.%06d %s kernel: %s' % (time.strftime('%b %d %H:%M:%S', time.localtime(moment)), int((moment % 1) * 1e6), host, message))
        elif output == 'short-monotonic':
            out('[%12.6f] %s kernel: %s' % (offset, host, message))
        else:
            out('%s %s kernel: %s' % (time.strftime('%b %d %H:%M:%S', time.localtime(moment)), host, message))
    if not messages:
        out('-- No entries --')
    return 0


# ============================================================================ ethtool

def _ethtool_nic(state, dev):
    for nic in state['nics']:
        if nic['netdev'] == dev:
            return nic
    return None


def tool_ethtool(state, args):
    real = '/usr/sbin/ethtool'
    emulated_options = ('-i', '--driver', '-g', '--show-ring', '-l', '--show-channels', '-S', '--statistics',
                        '-a', '--show-pause')
    option = args[0] if args and args[0].startswith('-') else None
    dev = args[1] if option and len(args) > 1 else (args[0] if args and not option else None)
    nic = _ethtool_nic(state, dev) if dev else None
    if nic is None or (option is None and nic['netdev_real']) or (option and option not in emulated_options) \
            or len(args) > (2 if option else 1):
        os.execv(real, ['ethtool'] + list(args))
    ib = nic['link_layer'] == 'InfiniBand'
    if option is None:
        out('Settings for %s:' % dev)
        if ib:
            out('\tSupported ports: [  ]')
            out('\tSupported link modes:   Not reported')
            out('\tSpeed: %s' % ('%dMb/s' % (nic['rate_gbps'] * 1000) if nic['state'] == 'ACTIVE' else 'Unknown!'))
            out('\tDuplex: %s' % ('Full' if nic['state'] == 'ACTIVE' else 'Unknown! (255)'))
            out('\tAuto-negotiation: on')
            out('\tPort: Other')
        else:
            out('\tSupported ports: [ Backplane ]')
            out('\tSupported link modes:   %dbaseCR4/Full' % (nic['rate_gbps'] * 1000))
            out('\tSupported pause frame use: Symmetric')
            out('\tSupports auto-negotiation: Yes')
            out('\tSupported FEC modes: None\t RS\t BASER')
            out('\tAdvertised link modes:  %dbaseCR4/Full' % (nic['rate_gbps'] * 1000))
            out('\tAdvertised pause frame use: Symmetric')
            out('\tAdvertised auto-negotiation: Yes')
            out('\tAdvertised FEC modes: RS')
            out('\tSpeed: %s' % ('%dMb/s' % (nic['rate_gbps'] * 1000) if nic['state'] == 'ACTIVE' else 'Unknown!'))
            out('\tDuplex: %s' % ('Full' if nic['state'] == 'ACTIVE' else 'Unknown! (255)'))
            out('\tAuto-negotiation: on')
            out('\tPort: Direct Attach Copper')
        out('\tPHYAD: 0')
        out('\tTransceiver: internal')
        out('\tLink detected: %s' % ('yes' if nic['state'] == 'ACTIVE' else 'no'))
        return 0
    if option in ('-i', '--driver'):
        out('driver: %s' % ('mlx5_core[ib_ipoib]' if ib else 'mlx5_core'))
        out('version: %s' % state['host_hw'].get('kernel_version', '6.1.0-28-amd64'))
        out('firmware-version: %s (%s)' % (nic['fw_version'], nic['psid']))
        out('expansion-rom-version: ')
        out('bus-info: %s' % nic['pci_address'])
        for key, value in (('supports-statistics', 'yes'), ('supports-test', 'yes'), ('supports-eeprom-access', 'no'),
                           ('supports-register-dump', 'no'), ('supports-priv-flags', 'yes')):
            out('%s: %s' % (key, value))
        return 0
    if option in ('-g', '--show-ring'):
        out('Ring parameters for %s:' % dev)
        out('Pre-set maximums:')
        for name, value in (('RX:\t\t\t', 8192), ('RX Mini:\t\tn/a', None), ('RX Jumbo:\t\tn/a', None), ('TX:\t\t\t', 8192)):
            out(name + ('' if value is None else str(value)))
        out('Current hardware settings:')
        for name, value in (('RX:\t\t\t', nic['rx_ring']), ('RX Mini:\t\tn/a', None), ('RX Jumbo:\t\tn/a', None),
                            ('TX:\t\t\t', nic['rx_ring'])):
            out(name + ('' if value is None else str(value)))
        out('RX Buf Len:\t\tn/a')
        out('CQE Size:\t\tn/a')
        out('TX Push:\t\toff')
        out('TCP data split:\t\tn/a')
        return 0
    if option in ('-l', '--show-channels'):
        out('Channel parameters for %s:' % dev)
        out('Pre-set maximums:')
        out('RX:\t\tn/a')
        out('TX:\t\tn/a')
        out('Other:\t\t1')
        out('Combined:\t%d' % max(nic['channels'], 63))
        out('Current hardware settings:')
        out('RX:\t\tn/a')
        out('TX:\t\tn/a')
        out('Other:\t\t0')
        out('Combined:\t%d' % nic['channels'])
        return 0
    if option in ('-a', '--show-pause'):
        out('Pause parameters for %s:' % dev)
        out('Autonegotiate:\toff')
        out('RX:\t\ton')
        out('TX:\t\ton')
        return 0
    pause = _pause_counter(nic)
    rnd = random.Random(nic['name'])
    packets = int((time.time() - state['created']) * 1000) + rnd.randint(10 ** 6, 10 ** 7)
    # RoCE traffic rides priority 3 and the physical counters, as on a real mlx5: bytes and packets grow with the
    # sessions this HCA carried (the fabric ledger), by billions a second under a sustained test.
    rdma_bytes = int(fabric.carried_bytes(node_dir(), nic['name']))
    rdma_packets = rdma_bytes // 4096
    stats = [('rx_packets', packets), ('rx_bytes', packets * 1024), ('tx_packets', packets - 17), ('tx_bytes', (packets - 17) * 1024),
             ('tx_tso_packets', 0), ('rx_csum_complete', packets), ('rx_out_of_buffer', 0), ('rx_cqe_compress_pkts', 0),
             ('tx_queue_stopped', 0), ('tx_queue_dropped', 0), ('rx_xdp_drop', 0), ('link_down_events_phy', 0),
             ('rx_pci_signal_integrity', 0), ('tx_pci_signal_integrity', 0),
             ('rx_packets_phy', packets + pause + rdma_packets), ('rx_bytes_phy', packets * 1024 + pause * 64 + rdma_bytes),
             ('tx_packets_phy', packets - 17 + pause + rdma_packets), ('tx_bytes_phy', (packets - 17) * 1024 + pause * 64 + rdma_bytes),
             ('rx_crc_errors_phy', 0), ('rx_symbol_err_phy', 0), ('rx_discards_phy', 0), ('tx_discards_phy', 0),
             ('rx_pause_ctrl_phy', pause), ('tx_pause_ctrl_phy', pause),
             ('rx_prio3_bytes', rdma_bytes), ('rx_prio3_packets', rdma_packets), ('tx_prio3_bytes', rdma_bytes),
             ('tx_prio3_packets', rdma_packets),
             ('rx_prio3_pause', pause), ('rx_prio3_pause_duration', pause * 2), ('tx_prio3_pause', pause),
             ('tx_prio3_pause_duration', pause * 2), ('rx_prio3_pause_transition', pause // 2), ('module_unplug', 0),
             ('module_bus_stuck', 0), ('module_high_temp', 0), ('module_bad_shorted', 0)]
    out('NIC statistics:')
    for key, value in stats:
        out('     %s: %d' % (key, value))
    return 0


def _pause_counter(nic):
    return int(nic.get('pause_base', 0) + nic.get('pause_rate_per_s', 0) * max(0.0, time.time() - nic.get('pause_epoch', time.time())))


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
