"""PCI and Mellanox firmware tools: lspci, mlxconfig/mstconfig, flint/mstflint, mlxlink/mstlink.

Part of the netval lab's emulated tools (see tools.py); standard library only.
"""

import json
import re
import sys
import time

from netval_lab.tool_common import find_nic, mst_device, out


# ============================================================================ lspci

def _gts_text(gts):
    return ('%g' % float(gts)) + 'GT/s'


def _pci_devices(state):
    """Every PCI function lspci shows: bridges (from the upstream chains), NICs, GPUs."""
    devices = {}

    def chain(bdf, max_gts, width, current_gts, upstream=None):
        domain, bus = int(bdf[:4], 16), int(bdf[5:7], 16)
        if upstream:
            # The chain hardware.py laid out (a GPU below its NIC's switch shares its root and upstream port).
            ports = list(zip(upstream, ('root', 'up', 'down')[-len(upstream):] if len(upstream) < 3 else ('root', 'up', 'down')))
        elif bus >= 3:
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
        chain(nic['pci_address'], pcie.get('upstream_max_gts', pcie['lnkcap_gts']), pcie.get('upstream_width', 16), pcie['lnksta_gts'],
              nic.get('upstream'))
        devices[nic['pci_address']] = {'bdf': nic['pci_address'], 'kind': 'nic', 'nic': nic, 'cap_gts': pcie['lnkcap_gts'],
                                       'width': pcie['lnkcap_width'], 'sta_gts': pcie['lnksta_gts'],
                                       'sta_width': pcie['lnksta_width']}
    gpus = state['gpus']
    gen_gts = {3: 8, 4: 16, 5: 32, 6: 64}.get(gpus['pcie_gen'], 32)
    for gpu in gpus['devices']:
        chain(gpu['bus_id'], gen_gts, gpus['pcie_width'], gen_gts, gpu.get('upstream'))
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
        if kind in ('root', 'down'):
            # Root and switch downstream ports carry ACS; with its redirection on, peer-to-peer traffic goes up to the root complex.
            on = '+' if dev['bdf'] in (state.get('acs_redirect') or []) else '-'
            lines.append('\tCapabilities: [148 v1] Access Control Services')
            lines.append('\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-')
            lines.append('\t\tACSCtl:\tSrcValid%s TransBlk- ReqRedir%s CmpltRedir%s UpstreamFwd%s EgressCtrl- DirectTrans-' % ((on,) * 4))
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
    counters = '-c' in rest
    module_info = '-m' in rest or '--show_module' in rest
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
        if module_info:
            sections.insert(2, ('Module Info', [('Identifier', 'OSFP'), ('Compliance', 'Active Copper Cable'),
                                                ('Cable Technology', 'Copper cable unequalized'), ('Cable Type', 'Passive copper cable'),
                                                ('Vendor Name', 'NVIDIA'), ('Vendor Part Number', 'MCP4Y10-N001'),
                                                ('Temperature [C]', '38'), ('Voltage [mV]', '3280')]))
        if counters:
            # The BER an active link of the profile shows: effectively error-free behind RS-FEC unless the profile says otherwise.
            sections.insert(2, ('Physical Counters and BER Info', [
                ('Time Since Last Clear [Min]', '%.1f' % (max(0.0, time.time() - state['created']) / 60.0)),
                ('Symbol Errors', '0'), ('Symbol BER', '15E-255'),
                ('Effective Physical Errors', '0'), ('Effective Physical BER', nic.get('effective_ber', '15E-255') if active else 'N/A'),
                ('Raw Physical Errors Per Lane', '0,0,0,0'), ('Raw Physical BER', nic.get('raw_ber', '2E-9') if active else 'N/A'),
                ('Raw Physical BER Per Lane', '2E-9,2E-9,2E-9,2E-9'), ('Link Down Counter', '0'),
                ('Link Error Recovery Counter', '0')]))
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
