"""netval lab CLI: ``python -m lab.netval_lab up|down|status|fault`` (run as root from the repo root).

    up --profile P --nodes N --peers M   build (or keep, when already up with the same arguments) the lab
       [--site real|ideal]               a real site (default: rails on switches, storage and front-end NICs, IPoIB MTUs,
                                         nodes addressed on some rails, a shaped management network) or the ideal boxes
       [--unpinned]                      new nodes name no netval_peer: each takes the first free healthy peer
                                         (only the inventory changes; a lab already up keeps running)
       [--mesh]                          also link every new node to every other one, so an accepted node can
                                         serve as a peer (netval_promote_accepted)
    down                                 remove every namespace, link, process and file of the lab
    status [--json]                      one line per host: role, mgmt IP, sshd, fabric links, faults
    fault NAME [--node HOST]             inject a fault (NAME=clear clears all)
    sim-record [--profile P]             up as 2 nodes and 1 peer of P, validate.yml with every module call recorded,
                                         the recording the simulated fleet answers from (lab/sim/<P>.json; sim.py)
"""
import argparse
import json
import os
import shutil
import sys
import time

from . import LAB_JSON, LAB_ROOT, MAX_NODES, MAX_PEERS, REPO_ROOT, netns_name, node_dir
from . import faults, inventory, netns, site
from .netns import LabError


def say(msg):
    sys.stdout.write(msg + '\n')
    sys.stdout.flush()


def _hardware():
    try:
        from . import hardware  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise LabError('the lab hardware emulation (lab/netval_lab/hardware.py) cannot be imported: %s' % exc)
    return hardware


def _profiles():
    from . import profiles  # pylint: disable=import-outside-toplevel
    return profiles


def load_lab():
    try:
        with open(LAB_JSON, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def save_lab(lab):
    os.makedirs(LAB_ROOT, exist_ok=True)
    tmp = LAB_JSON + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as handle:
        json.dump(lab, handle, indent=2, sort_keys=True)
        handle.write('\n')
    os.replace(tmp, LAB_JSON)


# --------------------------------------------------------------------------- plan

def mesh_links(node_names):
    """One link between every two new nodes (a switched fabric's stand-in, so an accepted node can serve the others as a
    peer: netval_promote_accepted), each a /30 of 10.253.0.0/16; their veths get index 10000 + m (add_fabric_link)."""
    links = []
    for a_index, node_a in enumerate(node_names):
        for node_b in node_names[a_index + 1:]:
            m = len(links)
            base = 4 * m
            links.append({'index': MESH_INDEX_BASE + m, 'node': node_a, 'peer': node_b, 'node_if': 'fab-' + node_b,
                          'peer_if': 'fab-' + node_a, 'node_ip': '10.253.%d.%d' % (base // 256, base % 256 + 1),
                          'peer_ip': '10.253.%d.%d' % (base // 256, base % 256 + 2), 'prefix': 30, 'mtu': netns.FABRIC_MTU})
    return links


# The mesh links' veth indexes start here, clear of the node-peer links' (at most MAX_NODES x MAX_PEERS).
MESH_INDEX_BASE = 10000


def plan(profile_name, profile, nodes, peers, mesh=False, site_name=site.DEFAULT_SITE):
    """The lab's layout: hosts, addresses, links (pure; nothing is created); ``mesh`` also links the new nodes together.

    On a real site with rails (site.rail_fabric) there are no node-peer links: every host's ports are planned by build()
    (site.host_ports), each rail a switch every host is on, so the new nodes reach each other too.
    """
    node_names = ['node%02d' % i for i in range(1, nodes + 1)]
    peer_names = ['peer%02d' % j for j in range(1, peers + 1)]
    order = node_names + peer_names
    hosts = {}
    for i, host in enumerate(order, start=1):
        role = 'new' if host in node_names else 'peer'
        hosts[host] = {'role': role, 'netns': netns_name(host), 'mgmt_ip': '%s.%d' % (netns.MGMT_PREFIX, 10 + i),
                       'node_dir': node_dir(host)}
    links = []
    rails = site.rail_fabric(site_name, profile.get('tier'))
    for i, node in enumerate(node_names):
        hosts[node]['peer'] = peer_names[i % peers]
        for j, peer in enumerate(peer_names if not rails else []):
            k = i * peers + j
            links.append({'index': k, 'node': node, 'peer': peer, 'node_if': 'fab-' + peer, 'peer_if': 'fab-' + node,
                          'node_ip': '10.252.%d.1' % k, 'peer_ip': '10.252.%d.2' % k, 'prefix': 30, 'mtu': netns.FABRIC_MTU})
    return {'profile': profile_name, 'profile_path': profile.get('path'), 'tier': profile.get('tier'), 'site': site_name,
            'rails': rails, 'nodes': nodes, 'peers': peers, 'order': order, 'hosts': hosts, 'links': links,
            'mesh': bool(mesh), 'mesh_links': mesh_links(node_names) if mesh and not rails else [],
            'bridge': netns.BRIDGE, 'mgmt_gateway': netns.MGMT_GATEWAY, 'faults': [], 'status': 'building',
            'created': time.time(), 'repo_root': REPO_ROOT}


def peers_info(lab, host):
    """What hardware.materialize gets to know about a host's place in the lab."""
    info = lab['hosts'][host]
    links = []
    # The node-peer links first: a NIC stands for each in turn (hardware.build_state), the mesh's come after them.
    for link in lab['links'] + lab.get('mesh_links', []):
        if link['node'] == host:
            links.append({'ifname': link['node_if'], 'ip': link['node_ip'], 'prefix': link['prefix'],
                          'remote_host': link['peer'], 'remote_ip': link['peer_ip'], 'remote_ifname': link['peer_if']})
        elif link['peer'] == host:
            links.append({'ifname': link['peer_if'], 'ip': link['peer_ip'], 'prefix': link['prefix'],
                          'remote_host': link['node'], 'remote_ip': link['node_ip'], 'remote_ifname': link['node_if']})
    fabric = [{'netdev': entry['ifname'], 'ip': entry['ip'], 'prefix': entry['prefix'], 'remote_host': entry['remote_host'],
               'remote_ip': entry['remote_ip'], 'remote_netdev': entry['remote_ifname']} for entry in links]
    return {'host': host, 'role': info['role'], 'mgmt_ip': info['mgmt_ip'], 'peer': info.get('peer'),
            'links': links, 'fabric': fabric, 'lab_root': LAB_ROOT, 'repo_root': REPO_ROOT,
            'site': lab.get('site', 'ideal'), 'ports': info.get('ports'),
            'nodes': [h for h in lab['order'] if lab['hosts'][h]['role'] == 'new'],
            'peers': [h for h in lab['order'] if lab['hosts'][h]['role'] == 'peer']}


def lab_is_healthy(lab):
    existing = set(netns.lab_namespaces())
    for host, info in lab['hosts'].items():
        if info['netns'] not in existing or not netns.sshd_alive(host):
            return False
    return lab.get('status') == 'up' and os.path.exists(os.path.join(inventory.INVENTORY_DIR, 'hosts.yml'))


# --------------------------------------------------------------------------- commands

def cmd_up(args):
    if not 1 <= args.nodes <= MAX_NODES:
        raise LabError('--nodes must be between 1 and %d (got %d)' % (MAX_NODES, args.nodes))
    if not 1 <= args.peers <= MAX_PEERS:
        raise LabError('--peers must be between 1 and %d (got %d)' % (MAX_PEERS, args.peers))
    profiles = _profiles()
    try:
        profile = profiles.load_profile(args.profile)
    except profiles.ProfileError as exc:
        raise LabError('profile %s: %s' % (args.profile, exc))
    node_profiles = parse_node_profiles(args.node_profiles, args.nodes, profile, profiles, peers=args.peers)
    hardware = _hardware()
    unpinned = bool(getattr(args, 'unpinned', False))
    mesh = bool(getattr(args, 'mesh', False))
    started = time.time()
    current = load_lab()
    dcgmi_seconds = getattr(args, 'dcgmi_seconds', None)
    if dcgmi_seconds is not None and not 0 <= dcgmi_seconds <= 3600:
        raise LabError('--dcgmi-seconds must be between 0 and 3600 (got %s)' % dcgmi_seconds)
    site_name = getattr(args, 'site', None) or site.DEFAULT_SITE
    wanted = (args.profile, args.nodes, args.peers, args.node_profiles or '', dcgmi_seconds, mesh, site_name)
    # A lab another checkout built runs that checkout's tools: it is rebuilt from this one.
    if current and (current.get('profile'), current.get('nodes'), current.get('peers'), current.get('node_profiles', ''),
                    current.get('dcgmi_seconds'), bool(current.get('mesh')), current.get('site', 'ideal')) == wanted \
            and current.get('repo_root') == REPO_ROOT and lab_is_healthy(current):
        # Pinning is the inventory's alone: the same lab serves both, only hosts.yml is rewritten.
        current['unpinned'] = unpinned
        save_lab(current)
        inventory.write(current)
        say('lab already up: profile %s, %d new node(s), %d peer(s), %s site%s; nothing to do'
            % (args.profile, args.nodes, args.peers, site_name, ', unpinned' if unpinned else ''))
        print_access(current)
        return 0
    if current or netns.lab_namespaces() or netns.root_links() or os.path.exists(LAB_ROOT):
        say('tearing down the existing lab first')
        cmd_down(argparse.Namespace(quiet=True))

    lab = plan(args.profile, profile, args.nodes, args.peers, mesh=mesh, site_name=site_name)
    lab['node_profiles'] = args.node_profiles or ''
    lab['unpinned'] = unpinned
    lab['dcgmi_seconds'] = dcgmi_seconds
    for host, (name, _loaded) in node_profiles.items():
        lab['hosts'][host]['profile'] = name
    try:
        build(lab, profile, hardware, dict((h, loaded) for h, (_name, loaded) in node_profiles.items()))
    except BaseException:
        say('lab up failed; removing what was built')
        netns.teardown()
        raise
    say('lab up in %.1f s: profile %s, %d new node(s), %d peer(s), %s site%s%s'
        % (time.time() - started, args.profile, args.nodes, args.peers, site_name, ', unpinned' if unpinned else '',
           ', nodes meshed' if mesh else ''))
    print_access(lab)
    return 0


def parse_node_profiles(text, nodes, main_profile, profiles, peers=0):
    """``node02=gen4-nic0,node03=platform-slow,peer02=peer-rail-degraded`` -> {host: (name, profile)}; every one of the lab's tier.

    One lab then holds several failure patterns at once, so a single
    validate.yml run can check them side by side.  A peer named here gets that
    profile's ``peer:`` section (one degraded known-good peer beside healthy ones).
    """
    chosen = {}
    hosts = ['node%02d' % i for i in range(1, nodes + 1)] + ['peer%02d' % j for j in range(1, peers + 1)]
    for item in [part.strip() for part in (text or '').split(',') if part.strip()]:
        host, sep, name = item.partition('=')
        if not sep or host not in hosts:
            raise LabError('--node-profiles: %r is not HOST=PROFILE for one of %s' % (item, ', '.join(hosts)))
        try:
            loaded = profiles.load_profile(name)
        except profiles.ProfileError as exc:
            raise LabError('--node-profiles %s: %s' % (host, exc))
        if loaded.get('tier') != main_profile.get('tier'):
            raise LabError('--node-profiles %s=%s: tier %s differs from the lab tier %s' % (host, name, loaded.get('tier'), main_profile.get('tier')))
        chosen[host] = (name, loaded)
    return chosen


def build(lab, profile, hardware, node_profiles=None):
    for host in lab['order']:
        os.makedirs(os.path.join(node_dir(host), 'log'), exist_ok=True)
    key = netns.ensure_ssh_keys()
    save_lab(lab)
    netns.create_bridge()
    for host in lab['order']:
        netns.create_namespace(host)
        netns.add_mgmt_link(host, lab['hosts'][host]['mgmt_ip'])
        netns.add_docker_bridge(host)
    for link in lab['links'] + lab.get('mesh_links', []):
        netns.add_fabric_link(link)
    if lab.get('site') == 'real':
        build_site(lab, profile, node_profiles or {})
    for host in lab['order']:
        info = lab['hosts'][host]
        host_info = peers_info(lab, host)
        host_info['dcgmi_seconds'] = lab.get('dcgmi_seconds')
        state = hardware.materialize((node_profiles or {}).get(host, profile), host, info['role'], info['node_dir'], host_info)
        info['hardware'] = summarize_state(state)
    for host in lab['order']:
        netns.prepare_host_ssh(host)
    netns.write_known_hosts(dict((h, lab['hosts'][h]['mgmt_ip']) for h in lab['order']))
    for host in lab['order']:
        netns.write_sshd_config(host, lab['hosts'][host]['mgmt_ip'])
        lab['hosts'][host]['sshd_pid'] = netns.start_sshd(host)
    addresses = {h: lab['hosts'][h]['mgmt_ip'] for h in lab['order']}
    netns.wait_for_sshd(addresses)
    problems = netns.check_ssh_login(addresses, key)
    if problems:
        raise LabError('ssh login failed: %s' % '; '.join('%s: %s' % item for item in sorted(problems.items())))
    lab['status'] = 'up'
    lab['pids'] = {h: lab['hosts'][h]['sshd_pid'] for h in lab['order']}
    lab['ssh_key'] = key
    save_lab(lab)
    inventory.write(lab)


def build_site(lab, profile, node_profiles):
    """A real site (site.py): the management network shaped and the default route; with rails, a switch per rail and the
    storage and front-end networks, and every host's ports (lab['hosts'][host]['ports'])."""
    profiles = _profiles()
    for host in lab['order']:
        netns.shape_management(host, site.MGMT_GATEWAY, site.MGMT_RATE)
    if not lab.get('rails'):
        return
    for index, host in enumerate(lab['order'], start=1):
        info = lab['hosts'][host]
        hw = profiles.resolve_role(node_profiles.get(host, profile), info['role'])
        nics = site.host_nics(hw, len(hw['nics']))
        info['ports'] = site.host_ports(index, info['role'], nics, len(hw['nics']))
        info['host_index'] = index
    bridges = sorted(set(port['bridge'] for info in lab['hosts'].values() for port in info['ports'] if port['bridge']))
    for name in bridges:
        netns.create_switch(name)
    for host in lab['order']:
        info = lab['hosts'][host]
        for port_index, port in enumerate(info['ports']):
            netns.add_site_port(host, info['host_index'], port_index, port)
    save_lab(lab)


def summarize_state(state):
    """A few facts of the materialized hardware for lab.json/status (state.json stays the source of truth)."""
    if not isinstance(state, dict):
        return {}
    nics = state.get('nics') or []
    return {'nics': [nic.get('name') for nic in nics if isinstance(nic, dict)],
            'netdevs': [nic.get('netdev') for nic in nics if isinstance(nic, dict)],
            'live': [nic.get('name') for nic in nics if isinstance(nic, dict) and nic.get('state', 'ACTIVE') == 'ACTIVE']}


def print_access(lab):
    key = os.path.join(LAB_ROOT, 'ssh', 'id_ed25519')
    say('inventory: %s/hosts.yml' % os.path.relpath(inventory.INVENTORY_DIR, os.getcwd()))
    for host in lab['order']:
        info = lab['hosts'][host]
        say('  %-8s %-4s ssh -i %s root@%s' % (host, info['role'], key, info['mgmt_ip']))
    if os.path.exists(os.path.join(REPO_ROOT, 'playbooks', 'validate.yml')):
        say('validate: ansible-playbook -i inventories/lab playbooks/validate.yml -l new_nodes')
    else:
        say('playbooks/validate.yml does not exist yet; try: ansible -i inventories/lab all -m ansible.builtin.ping')


def cmd_down(args):
    problems = netns.teardown()
    inventory.remove()
    shutil.rmtree(LAB_ROOT, ignore_errors=True)
    if os.path.exists(LAB_ROOT):
        problems.append('%s could not be removed' % LAB_ROOT)
    left = netns.lab_namespaces()
    if left:
        problems.append('namespaces left: %s' % ' '.join(left))
    if problems:
        raise LabError('down left things behind: %s' % '; '.join(problems))
    if not getattr(args, 'quiet', False):
        say('lab down: no namespaces, links, processes or files of the lab remain')
    return 0


def _fabric_ifnames(lab, host):
    """The host's fabric netdevs: its rail ports on a real site, else its end of each node-peer link."""
    if lab.get('rails'):
        return [port['netdev'] for port in lab['hosts'][host].get('ports') or [] if port['kind'] == 'rail']
    return [link['node_if'] if link['node'] == host else link['peer_if'] for link in lab['links'] if host in (link['node'], link['peer'])]


def host_status(lab, host):
    info = lab['hosts'][host]
    exists = info['netns'] in netns.lab_namespaces()
    links = []
    for ifname in _fabric_ifnames(lab, host):
        state = netns.link_info(host, ifname) if exists else None
        if state is None:
            links.append({'ifname': ifname, 'up': False, 'mtu': None, 'qdisc': None})
        else:
            links.append(dict(state, ifname=ifname))
    active = ['%s' % f['name'] for f in lab.get('faults', []) if host in (f.get('node'), f.get('peer'))]
    mgmt = netns.link_info(host, faults.MGMT_IF) if exists else None
    return {'host': host, 'role': info['role'], 'mgmt_ip': info['mgmt_ip'], 'netns': exists, 'mgmt_up': bool(mgmt and mgmt['up']),
            'sshd': netns.sshd_alive(host), 'links': links, 'faults': active}


def cmd_status(args):
    lab = load_lab()
    if not lab:
        left = netns.lab_namespaces()
        if args.json:
            say(json.dumps({'up': False, 'namespaces': left}))
        else:
            say('lab is down' + (' (but namespaces remain: %s; run down)' % ' '.join(left) if left else ''))
        return 0 if not left else 1
    rows = [host_status(lab, h) for h in lab['order']]
    if args.json:
        say(json.dumps({'up': lab.get('status') == 'up', 'profile': lab['profile'], 'tier': lab['tier'],
                        'hosts': rows, 'faults': lab.get('faults', [])}, indent=2))
        return 0
    say('profile %s (tier %s), %d new node(s), %d peer(s), %s site, status %s' % (
        lab['profile'], lab['tier'], lab['nodes'], lab['peers'], lab.get('site', 'ideal'), lab.get('status')))
    say('%-8s %-5s %-13s %-5s %-5s %-44s %s' % ('HOST', 'ROLE', 'MGMT_IP', 'MGMT', 'SSHD', 'FABRIC (link state/mtu/qdisc)', 'FAULTS'))
    for row in rows:
        fabric = ' '.join('%s:%s/%s/%s' % (entry['ifname'], 'up' if entry['up'] else 'DOWN', entry['mtu'], entry['qdisc'])
                          for entry in row['links'])
        sshd = 'up' if row['sshd'] else 'DOWN'
        say('%-8s %-5s %-13s %-5s %-5s %-44s %s' % (row['host'], row['role'], row['mgmt_ip'], 'up' if row['mgmt_up'] else 'DOWN', sshd,
                                                    fabric, ','.join(row['faults']) or '-'))
    return 0


def _node_link(lab, node):
    """The node's link to its peer that a fault acts on: on a real site the node's first addressed rail (the one its IP
    tests ride) and the peer's port on that rail, with the root-namespace ends of both ports; else their node-peer link."""
    peer = lab['hosts'][node]['peer']
    if not lab.get('rails'):
        return [link for link in lab['links'] if link['node'] == node and link['peer'] == peer][0]
    node_info, peer_info = lab['hosts'][node], lab['hosts'][peer]
    rails = [(i, p) for i, p in enumerate(node_info['ports']) if p['kind'] == 'rail']
    index, port = ([(i, p) for i, p in rails if p['ip']] or rails)[0]
    peer_index, peer_port = [(i, p) for i, p in enumerate(peer_info['ports']) if p['rail'] == port['rail']][0]
    return {'node': node, 'peer': peer, 'node_if': port['netdev'], 'peer_if': peer_port['netdev'], 'node_ip': port['ip'],
            'peer_ip': peer_port['ip'], 'rail': port['rail'], 'mtu': port['mtu'],
            'node_root': netns.port_root_name(node_info['host_index'], index),
            'peer_root': netns.port_root_name(peer_info['host_index'], peer_index)}


def cmd_fault(args):
    lab = load_lab()
    if not lab or lab.get('status') != 'up':
        raise LabError('the lab is not up (run: python -m lab.netval_lab up --profile healthy-400g)')
    name = args.name
    if name == 'clear':
        faults.clear_all(lab)
        lab['faults'] = []
        save_lab(lab)
        say('faults cleared')
        return 0
    known = faults.table()
    if name not in known:
        raise LabError('unknown fault %r; known: %s, clear' % (name, ', '.join(known)))
    nodes = [h for h in lab['order'] if lab['hosts'][h]['role'] == 'new']
    node = args.node or nodes[0]
    if node not in nodes:
        raise LabError('--node %s is not a new node of this lab (new nodes: %s)' % (node, ', '.join(nodes)))
    link = _node_link(lab, node)
    peer = link['peer']
    record = {'name': name, 'node': node, 'peer': peer, 'since': time.time()}
    record.update(known[name].apply(faults.Target(lab, node, peer, link, args.side)))
    lab['faults'] = [f for f in lab.get('faults', []) if (f['name'], f['node']) != (name, node)] + [record]
    save_lab(lab)
    say('fault %s on %s (peer %s)' % (name, node, peer))
    return 0


# --------------------------------------------------------------------------- sim-record

def cmd_sim_record(args):
    """A recording for the simulated fleet (sim.py): validate.yml on a lab of 2 nodes and 1 peer of the profile, through
    the netval_record connection (ssh, keeping every module call and every file fetched), compiled to lab/sim/<P>.json."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import tempfile  # pylint: disable=import-outside-toplevel
    import yaml  # pylint: disable=import-outside-toplevel
    from . import sim  # pylint: disable=import-outside-toplevel
    # The ideal site: the simulated fleet gives each host one fabric address and carries it into the recorded answers,
    # where a real site's boxes answer with an address per rail (the controller's work, which the simulation measures,
    # is the same on both).
    rc = cmd_up(argparse.Namespace(profile=args.profile, node_profiles='', nodes=2, peers=1, dcgmi_seconds=None, unpinned=False,
                                   mesh=False, site='ideal'))
    if rc:
        return rc
    work = tempfile.mkdtemp(prefix='netval-sim-record-')
    shutil.copytree(inventory.INVENTORY_DIR, os.path.join(work, 'inventory'))
    hosts_yml = os.path.join(work, 'inventory', 'hosts.yml')
    with open(hosts_yml, encoding='utf-8') as handle:
        hosts = yaml.safe_load(handle)
    lab_group = hosts['all']['children']['lab']
    lab_group['vars'] = dict(lab_group.get('vars') or {}, ansible_connection='netval_record')
    with open(hosts_yml, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(hosts, handle)
    calls = os.path.join(work, 'calls.jsonl')
    env = dict(os.environ, NETVAL_SIM_RECORD=calls, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, '.cache', 'collections'),
               ANSIBLE_CONNECTION_PLUGINS=os.path.join(REPO_ROOT, 'lab', 'ansible_plugins', 'connection'))
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    argv = [playbook, '-i', os.path.join(work, 'inventory'), 'playbooks/validate.yml', '-l', 'new_nodes',
            '-e', 'report_root=%s' % os.path.join(work, 'reports'), '-e', 'evidence_controller_dir=%s' % os.path.join(work, 'evidence'),
            '-e', 'netval_lease_dir=%s' % os.path.join(work, 'leases')]
    say('sim-record: %s (log %s)' % (' '.join(argv), os.path.join(work, 'playbook.log')))
    with open(os.path.join(work, 'playbook.log'), 'w', encoding='utf-8') as log:
        done = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise LabError('validate.yml failed (rc %d) while recording: see %s' % (done.returncode, os.path.join(work, 'playbook.log')))
    shutil.copyfile(LAB_JSON, os.path.join(work, 'lab.json'))
    with open(calls, encoding='utf-8') as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    with open(LAB_JSON, encoding='utf-8') as handle:
        lab = json.load(handle)
    recording = sim.compile_recording(lines, lab, args.profile)
    target = os.path.join(sim.RECORDINGS, '%s.json' % args.profile)
    os.makedirs(sim.RECORDINGS, exist_ok=True)
    with open(target, 'w', encoding='utf-8') as handle:
        json.dump(recording, handle, indent=1, sort_keys=True)
        handle.write('\n')
    say('sim-record: %d module calls and %d files from %s -> %s' % (len(recording['calls']), len(recording['files']), work, target))
    return 0


# --------------------------------------------------------------------------- main

def parser():
    top = argparse.ArgumentParser(prog='python -m lab.netval_lab', description='The gpufleet.netval lab: a small GPU fleet on one machine.')
    sub = top.add_subparsers(dest='command', required=True)
    up = sub.add_parser('up', help='build the lab (idempotent)')
    up.add_argument('--profile', default='healthy-400g', help='lab/profiles/<name>.yml (default healthy-400g)')
    up.add_argument('--site', choices=site.SITES, default=site.DEFAULT_SITE,
                    help='real (default): rails on switches, storage and front-end NICs, IPoIB MTUs, nodes addressed on some '
                         'rails, a 1 Gbit/s management network as the default route; ideal: the lab\'s first boxes')
    up.add_argument('--node-profiles', default='',
                    help='per-host profiles of the same tier, e.g. node02=gen4-nic0,peer02=peer-rail-degraded (a peer gets its peer: section)')
    up.add_argument('--nodes', type=int, default=2, help='new nodes, 1..%d (default 2)' % MAX_NODES)
    up.add_argument('--peers', type=int, default=1, help='known-good peers, 1..%d (default 1)' % MAX_PEERS)
    up.add_argument('--dcgmi-seconds', type=float, default=None,
                    help="every host's emulated dcgmi diag takes this long at any level (default: the profile's seconds_by_level)")
    up.add_argument('--unpinned', action='store_true',
                    help='leave netval_peer out of the new nodes\' host vars: each takes whichever healthy peer frees first '
                         '(default: each node pinned to a peer, round-robin)')
    up.add_argument('--mesh', action='store_true',
                    help='also link every new node to every other one (a switched fabric, so an accepted node can serve '
                         'as a peer: netval_promote_accepted)')
    sub.add_parser('down', help='remove everything the lab made')
    status = sub.add_parser('status', help='show hosts, sshd, fabric links, faults')
    status.add_argument('--json', action='store_true')
    fault = sub.add_parser('fault', help='inject a fault: %s; or clear' % ', '.join(faults.REAL) + ' or an emulated one (lab/README.md)')
    fault.add_argument('name')
    fault.add_argument('--node', help='new node to break (default: the first)')
    fault.add_argument('--side', choices=('node', 'peer'), default='node',
                       help="mtu-mismatch: which end of the node's fabric link drops to %d (default node)" % faults.MISMATCH_MTU)
    record = sub.add_parser('sim-record', help='record a validate.yml run for the simulated fleet (lab/sim/<profile>.json)')
    record.add_argument('--profile', default='healthy-400g', help='lab/profiles/<name>.yml (default healthy-400g)')
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    if os.geteuid() != 0:
        sys.stderr.write('netval-lab: error: must run as root (it creates network namespaces, veth links and sshd '
                         'processes); try: sudo %s -m lab.netval_lab %s\n' % (sys.executable, args.command))
        return 2
    handlers = {'up': cmd_up, 'down': cmd_down, 'status': cmd_status, 'fault': cmd_fault, 'sim-record': cmd_sim_record}
    try:
        return handlers[args.command](args)
    except LabError as exc:
        sys.stderr.write('netval-lab: error: %s\n' % exc)
        return 1
    except KeyboardInterrupt:
        sys.stderr.write('netval-lab: interrupted; run `python -m lab.netval_lab down` to clean up\n')
        return 130


if __name__ == '__main__':
    sys.exit(main())
