"""RDMA device tools: ibstat, ibstatus, show_gids, ibdev2netdev.

Part of the netval lab's emulated tools (see tools.py); standard library only.
"""

import os
import sys

from netval_lab.tool_common import nics_sorted, out, phys_num, state_num


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
