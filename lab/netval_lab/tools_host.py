"""Host tools: the kernel log (dmesg, journalctl -k) and ethtool.

Part of the netval lab's emulated tools (see tools.py); standard library only.
"""

import calendar
import json
import os
import random
import re
import sys
import time

from netval_lab import fabric
from netval_lab.tool_common import node_dir, out


# ============================================================================ kernel log: dmesg, journalctl -k

def _node_clock(state):
    """The node's local time zone (the profile's host.timezone) for this process: journalctl prints and reads times in it."""
    os.environ['TZ'] = state['host_hw'].get('timezone') or 'UTC'
    time.tzset()


def _boot_time(state):
    """The node booted 15 minutes before it was handed over, or before its burn-in when that was longer ago."""
    return state['created'] - max(900.0, float(state['host_hw'].get('burnin_hours_ago') or 0) * 3600.0 + 900.0)


_UNITS = {'s': 1, 'sec': 1, 'second': 1, 'seconds': 1, 'm': 60, 'min': 60, 'minute': 60, 'minutes': 60, 'h': 3600, 'hr': 3600,
          'hour': 3600, 'hours': 3600, 'd': 86400, 'day': 86400, 'days': 86400, 'w': 604800, 'week': 604800, 'weeks': 604800}


def journal_time(text, now=None):
    """Seconds since the epoch of a journalctl --since/--until value, read as systemd.time(7) does: @<epoch>; a relative
    time (-24h, -1h 30min, +5min); now, today, yesterday, tomorrow; or YYYY-MM-DD [HH:MM[:SS]] in the node's local time zone
    unless it ends in UTC (or another zone name).  None when it is none of these."""
    now = time.time() if now is None else now
    text = text.strip()
    if re.match(r'^@\d+(\.\d+)?$', text):
        return float(text[1:])
    relative = re.match(r'^([-+])\s*((?:\d+(?:\.\d+)?\s*[a-z]+\s*)+)$', text)
    if relative:
        total = 0.0
        for number, unit in re.findall(r'(\d+(?:\.\d+)?)\s*([a-z]+)', relative.group(2)):
            if unit not in _UNITS:
                return None
            total += float(number) * _UNITS[unit]
        return now - total if relative.group(1) == '-' else now + total
    local = time.localtime(now)
    midnight = time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 0, 0, 0, 0, 0, -1))
    words = {'now': now, 'today': midnight, 'yesterday': midnight - 86400, 'tomorrow': midnight + 86400}
    if text in words:
        return words[text]
    absolute = re.match(r'^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d))?)?(?:\s+(\S+))?$', text)
    if not absolute:
        return None
    fields = [int(absolute.group(index) or 0) for index in range(1, 7)]
    zone = absolute.group(7)
    if zone in ('UTC', 'Z', 'GMT'):
        return float(calendar.timegm(tuple(fields) + (0, 0, 0)))
    if zone:
        previous = os.environ.get('TZ')
        os.environ['TZ'] = zone
        time.tzset()
        try:
            return time.mktime(tuple(fields) + (0, 0, -1))
        finally:
            os.environ['TZ'] = previous or 'UTC'
            time.tzset()
    return time.mktime(tuple(fields) + (0, 0, -1))


def _kernel_messages(state):
    """[(seconds since boot, message)] from the state and node_dir/log/kernel.log."""
    boot = _boot_time(state)
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
    # The profile's Xids: five minutes before the node was handed over (inside a preflight's window, before its tests).
    stamp = state['created'] - 300.0 - boot
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
    _node_clock(state)
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
    window = {}
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
        elif arg in ('--since', '-S', '--until', '-U') and nxt is not None:
            window['since' if arg in ('--since', '-S') else 'until'] = nxt
            index += 2
            continue
        elif arg.startswith('--since=') or arg.startswith('--until='):
            key, value = arg[2:].split('=', 1)
            window[key] = value
        elif arg in ('-p', '--priority', '-b', '--boot') and nxt is not None and not nxt.startswith('-'):
            index += 2
            continue
        elif arg in ('-k', '--dmesg', '--no-pager', '-q', '--quiet', '-b', '--boot', '-a', '--all', '--no-hostname', '-kb', '-bk') \
                or arg.startswith('--priority='):
            pass
        else:
            sys.stderr.write("journalctl: unrecognized option '%s'\n" % arg)
            return 1
        index += 1
    _node_clock(state)
    bounds = {}
    for key, value in window.items():
        bounds[key] = journal_time(value)
        if bounds[key] is None:
            sys.stderr.write('Failed to parse timestamp: %s\n' % value)
            return 1
    boot, messages = _kernel_messages(state)
    # As systemd does: entries from --since on, up to --until, on the node's clock.
    messages = [item for item in messages if bounds.get('since', float('-inf')) <= boot + item[0] <= bounds.get('until', float('inf'))]
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


# mlx5's pre-set RX/TX ring maximum (1 << MLX5E_PARAMS_MAXIMUM_LOG_RQ_SIZE).
RING_MAX = 8192


def _set_ring(dev, settings):
    """ethtool -G DEV rx N [tx N]: the kernel refuses a ring above the pre-set maximum (ethtool exits 81), else the NIC
    runs the new ring from now on (state.json and state.base.json: it is configuration, not a fault)."""
    if len(settings) % 2 or not settings:
        sys.stderr.write('ethtool: bad command line argument(s)\nFor more information run ethtool -h\n')
        return 1
    wanted = {}
    for key, value in zip(settings[0::2], settings[1::2]):
        if key not in ('rx', 'tx', 'rx-mini', 'rx-jumbo') or not value.isdigit():
            sys.stderr.write('ethtool (-G): invalid value \'%s\' for parameter \'%s\'\n' % (value, key))
            return 1
        wanted[key] = int(value)
    if any(key in ('rx-mini', 'rx-jumbo') for key in wanted):
        sys.stderr.write('netlink error: Operation not supported\n')
        return 81
    if any(value > RING_MAX for value in wanted.values()):
        sys.stderr.write('netlink error: requested ring size exceeds maximum (offset 36)\nnetlink error: Invalid argument\n')
        return 81
    if 'rx' in wanted:
        for name in ('state.json', 'state.base.json'):
            path = os.path.join(node_dir(), name)
            with open(path, encoding='utf-8') as handle:
                saved = json.load(handle)
            for entry in saved['nics']:
                if entry['netdev'] == dev:
                    entry['rx_ring'] = wanted['rx']
            tmp = path + '.tmp-ring'
            with open(tmp, 'w', encoding='utf-8') as handle:
                json.dump(saved, handle, indent=1, sort_keys=True)
                handle.write('\n')
            os.replace(tmp, path)
    return 0


def tool_ethtool(state, args):
    real = '/usr/sbin/ethtool'
    emulated_options = ('-i', '--driver', '-g', '--show-ring', '-l', '--show-channels', '-S', '--statistics',
                        '-a', '--show-pause', '-G', '--set-ring')
    option = args[0] if args and args[0].startswith('-') else None
    dev = args[1] if option and len(args) > 1 else (args[0] if args and not option else None)
    nic = _ethtool_nic(state, dev) if dev else None
    setting = option in ('-G', '--set-ring')
    if nic is None or (option is None and nic['netdev_real']) or (option and option not in emulated_options) \
            or (len(args) > (2 if option else 1) and not setting):
        os.execv(real, ['ethtool'] + list(args))
    if setting:
        return _set_ring(dev, list(args[2:]))
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
        for name, value in (('RX:\t\t\t', RING_MAX), ('RX Mini:\t\tn/a', None), ('RX Jumbo:\t\tn/a', None), ('TX:\t\t\t', RING_MAX)):
            out(name + ('' if value is None else str(value)))
        out('Current hardware settings:')
        # Never above the maximum: the kernel refuses such a ring (-G above).
        ring = min(nic['rx_ring'], RING_MAX)
        for name, value in (('RX:\t\t\t', ring), ('RX Mini:\t\tn/a', None), ('RX Jumbo:\t\tn/a', None), ('TX:\t\t\t', ring)):
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
    if ib and nic.get('netdev_real') and state.get('site') == 'real':
        # An IPoIB netdev counts its own packets; InfiniBand has no pause frames, no priorities, no Ethernet PHY counters.
        stats = list(stats[:14])
    out('NIC statistics:')
    for key, value in stats:
        out('     %s: %d' % (key, value))
    return 0


def _pause_counter(nic):
    return int(nic.get('pause_base', 0) + nic.get('pause_rate_per_s', 0) * max(0.0, time.time() - nic.get('pause_epoch', time.time())))
