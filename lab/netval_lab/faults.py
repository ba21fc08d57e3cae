"""Every fault the lab can put on a node or its known-good peer, in one table: what it does, how it is applied and how
`fault clear` undoes it.

A real fault acts on the lab's real links, processes and files (tc, MTUs, links down, background loops, an inventory
file); an emulated one changes the emulated hardware's state (hardware.EMULATED: one decorated function there).  A new
real fault is one `@real_fault` function here, with its `clear` when `fault clear` must undo more than the common steps
below; then its line in lab/README.md and its test (docs/DEVELOPING.md, "Add a lab fault").
"""
import collections
import json
import os

from . import IPERF3_PORT, LAB_ROOT, PERFTEST_PORT, inventory, netns, node_dir, site

# The management link of every lab host, inside its namespace (netns.add_mgmt_link): down, Ansible cannot reach it.
MGMT_IF = 'mgmt0'
SLOW_LINK_RATE = '1gbit'
MISMATCH_MTU = 1500
# module-crash: the node's Python (set in a host_vars file the fault writes) raises before any module can answer.
CRASH_PYTHON = os.path.join(LAB_ROOT, 'crash-python')
CRASH_SCRIPT = ('#!/bin/sh\n# netval lab fault module-crash: every module this interpreter runs raises before it answers.\n'
                'exec /usr/bin/python3 -c \'raise RuntimeError("netval lab fault module-crash: the module raised")\'\n')

# What a fault is applied to: the lab, the node given (--node), its peer and their link, and --side for faults that can
# act on either end.
Target = collections.namedtuple('Target', 'lab node peer link side')
Fault = collections.namedtuple('Fault', 'name kind does apply clear')
REAL = collections.OrderedDict()


def real_fault(name, does, clear=None):
    """Register ``apply(target) -> dict`` (what lab.json keeps of it: pids, rates...) as the real fault ``name``."""
    def register(apply):
        REAL[name] = Fault(name, 'real', does, apply, clear)
        return apply
    return register


def _hardware():
    from . import hardware  # pylint: disable=import-outside-toplevel
    return hardware


def set_fabric_mtu(host, ifname, mtu):
    """The veth's MTU, mirrored into the emulated sysfs of the NIC that stands for it (what nic_info and jumbo_ping read)."""
    netns.set_mtu(host, ifname, mtu)
    _hardware().set_netdev_mtu(node_dir(host), ifname, mtu)


def state_nic(node, ifname):
    """The emulated NIC that stands for a fabric link (its PCI address and netdev name for kernel-log lines)."""
    try:
        with open(os.path.join(node_dir(node), 'state.json'), encoding='utf-8') as handle:
            nics = json.load(handle).get('nics') or []
    except (OSError, ValueError):
        nics = []
    for nic in nics:
        if isinstance(nic, dict) and (nic.get('fabric') or {}).get('netdev') == ifname:
            return nic
    return nics[0] if nics and isinstance(nics[0], dict) else {}


@real_fault('slow-link', "`tc qdisc replace ... root tbf rate 1gbit` on both ends of the node's rail (on a real site: the node's "
                         "netdev on its first addressed rail and that port's switch end)")
def _slow_link(target):
    netns.shape(target.node, target.link['node_if'], SLOW_LINK_RATE)
    if target.lab.get('rails'):
        # The node's cable on its rail: both directions of that port (its netdev and its switch port), whichever peer.
        netns.shape_root(target.link['node_root'], SLOW_LINK_RATE)
        return {'rate': SLOW_LINK_RATE, 'rail': target.link['rail'], 'netdev': target.link['node_if']}
    netns.shape(target.peer, target.link['peer_if'], SLOW_LINK_RATE)
    return {'rate': SLOW_LINK_RATE}


@real_fault('mtu-mismatch', "the node's end of the rail to MTU 1500, mirrored into its emulated sysfs (what nic_info and drift read); "
                            "`--side peer` lowers the peer's end instead, which only the jumbo ping's real packets show")
def _mtu_mismatch(target):
    # The node's end by default: an OS update resetting the interface config is what drift must see; the far end (--side
    # peer) is visible only to real packets, the jumbo ping of a validation.
    host, ifname = (target.peer, target.link['peer_if']) if target.side == 'peer' else (target.node, target.link['node_if'])
    set_fabric_mtu(host, ifname, MISMATCH_MTU)
    mtu = {target.node: target.link.get('mtu', netns.FABRIC_MTU), target.peer: target.link.get('mtu', netns.FABRIC_MTU)}
    mtu[host] = MISMATCH_MTU
    return {'mtu': mtu, 'side': target.side}


def _stop_flaps(lab):
    for host in lab['order']:
        netns.stop_pidfile(os.path.join(node_dir(host), 'flap.pid'))


@real_fault('link-flap', "a background loop (nodes/<node>/flap.pid) sets the rail down for 2 s every 5 s and appends each event to "
                         "nodes/<node>/log/kernel.log, which the emulated journalctl/dmesg print", clear=_stop_flaps)
def _link_flap(target):
    return {'pid': netns.start_flap(target.link, state_nic(target.node, target.link['node_if']))}


@real_fault('node-down', "the node's management link (mgmt0 in its namespace) down: Ansible cannot reach the node")
def _node_down(target):
    netns.set_link(target.node, MGMT_IF, False)
    return {}


@real_fault('peer-down', "the peer's management link down (not its sshd: an ssh ControlPersist master outlives its sshd)")
def _peer_down(target):
    netns.set_link(target.peer, MGMT_IF, False)
    return {}


def _crash_host_vars(host):
    return os.path.join(inventory.INVENTORY_DIR, 'host_vars', '%s.yml' % host)


def _remove_crash_host_vars(lab):
    for host in lab['order']:
        if os.path.exists(_crash_host_vars(host)):
            os.unlink(_crash_host_vars(host))


@real_fault('module-crash', "writes inventories/lab/host_vars/<node>.yml pointing the node's ansible_python_interpreter at "
                            "/run/netval-lab/crash-python, which raises before any module answers (a crash of our own code on one node)",
            clear=_remove_crash_host_vars)
def _module_crash(target):
    with open(CRASH_PYTHON, 'w', encoding='utf-8') as handle:
        handle.write(CRASH_SCRIPT)
    os.chmod(CRASH_PYTHON, 0o755)
    os.makedirs(os.path.dirname(_crash_host_vars(target.node)), exist_ok=True)
    with open(_crash_host_vars(target.node), 'w', encoding='utf-8') as handle:
        handle.write('---\n# lab fault module-crash (removed by `fault clear`)\nansible_python_interpreter: %s\n' % CRASH_PYTHON)
    return {}


def _restore_tools(lab):
    for host in lab['order']:
        netns.restore_tools(host)


@real_fault('orted-missing', "Open MPI's daemon is not on the peer at the node's prefix: an overlay over /usr/bin in the peer's own mount "
                             "namespace with orted removed; the node's mpirun fails to start it there", clear=_restore_tools)
def _orted_missing(target):
    # Open MPI's daemon is not where the node's mpirun starts it on the peer (its prefix): the launcher breaks there.
    netns.hide_tool(target.peer, netns.HIDDEN_TOOL)
    return {'hidden': '/usr/bin/' + netns.HIDDEN_TOOL}


def _stop_pidfiles(name):
    def stop(lab):
        for host in lab['order']:
            netns.stop_pidfile(os.path.join(node_dir(host), name))
    return stop


@real_fault('peer-down-midrun', "arms a watcher (nodes/<peer>/down-midrun.pid): at the first RDMA session a node opens on the peer "
                                "after the fault, the peer's sshd and every process in its namespace stop; its links stay up",
            clear=_stop_pidfiles('down-midrun.pid'))
def _peer_down_midrun(target):
    return {'pid': netns.start_down_midrun(target.peer)}


@real_fault('port-busy', "a process in the peer's namespace listening on TCP 18515 (perftest) and 5201 (iperf3)",
            clear=_stop_pidfiles('busy-ports.pid'))
def _port_busy(target):
    ports = [PERFTEST_PORT, IPERF3_PORT]
    return {'ports': ports, 'pid': netns.start_busy_ports(target.peer, ports)}


def _site_rails(target, name):
    if not target.lab.get('rails'):
        raise netns.LabError('fault %s changes a real site\'s rail addresses: bring the lab up with --site real' % name)
    return [port for port in target.lab['hosts'][target.node]['ports'] if port['kind'] == 'rail' and port['ip']]


@real_fault('fabric-unaddressed', "a real site's node loses the IPv4 addresses of its rails (the inventory still names none): its IP "
                                  "tests have no fabric address, never the management network's")
def _fabric_unaddressed(target):
    for port in _site_rails(target, 'fabric-unaddressed'):
        netns.set_port_address(target.node, port['netdev'], None, port['prefix'])
    return {}


@real_fault('fabric-route-mgmt', "a real site's node keeps its rail addresses as /32s: no on-link route, so its route to the peer's rail "
                                 "address leaves through the default route, the management network")
def _fabric_route_mgmt(target):
    for port in _site_rails(target, 'fabric-route-mgmt'):
        netns.set_port_address(target.node, port['netdev'], port['ip'], 32)
    return {}


def _restore_site(lab):
    """A real site as built: the management network shaped and the default route again (a link set down loses its routes),
    and every rail port as planned: unshaped (its switch port too), its MTU, link state and address."""
    if lab.get('site') != 'real':
        return
    for host in lab['order']:
        netns.shape_management(host, site.MGMT_GATEWAY, site.MGMT_RATE)
    for host in lab['order'] if lab.get('rails') else []:
        info = lab['hosts'][host]
        for index, port in enumerate(info['ports']):
            if port['kind'] != 'rail':
                continue
            netns.unshape(host, port['netdev'])
            netns.unshape_root(netns.port_root_name(info['host_index'], index))
            set_fabric_mtu(host, port['netdev'], port['mtu'])
            netns.set_link(host, port['netdev'], port['up'])
            netns.set_port_address(host, port['netdev'], port['ip'], port['prefix'])


def table():
    """Every fault, real then emulated: name -> Fault."""
    hardware = _hardware()
    faults = collections.OrderedDict(REAL)
    for name, emulated in hardware.EMULATED.items():
        faults[name] = Fault(name, 'emulated', emulated.does + (' (emulated, on the peer)' if emulated.target == 'peer' else ' (emulated)'),
                             _emulated_apply(emulated), None)
    return faults


def _emulated_apply(emulated):
    def apply(target):
        _hardware().apply_fault(node_dir(target.peer if emulated.target == 'peer' else target.node), emulated.name)
        return {}
    return apply


def clear_all(lab):
    """Undo every fault: the common steps (management and fabric links up at MTU 9000, unshaped; a real site's rails as
    built; sshd restarted), each
    real fault's own clear, and the emulated hardware back to its profile where an emulated fault was applied."""
    for host in lab['order']:
        netns.set_link(host, MGMT_IF, True)
    for fault in REAL.values():
        if fault.clear:
            fault.clear(lab)
    for link in lab['links']:
        for host, ifname in ((link['node'], link['node_if']), (link['peer'], link['peer_if'])):
            netns.unshape(host, ifname)
            set_fabric_mtu(host, ifname, netns.FABRIC_MTU)
            netns.set_link(host, ifname, True)
    _restore_site(lab)
    for host in lab['order']:
        if not netns.sshd_alive(host):
            lab['hosts'][host]['sshd_pid'] = netns.start_sshd(host)
    hardware = _hardware()
    if any(f['name'] in hardware.EMULATED for f in lab.get('faults', [])):
        for host in lab['order']:
            hardware.clear_faults(node_dir(host))
    netns.wait_for_sshd({h: lab['hosts'][h]['mgmt_ip'] for h in lab['order']})
