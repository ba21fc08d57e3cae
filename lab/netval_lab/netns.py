"""The real half of the lab: namespaces, the management bridge, veth fabric links,
one sshd per host, tc shaping and the faults that act on the real network.

Everything here shells out to iproute2 / tc / sshd with full keywords
(``name``, ``dev``, ``master``, ``netns``) and raises LabError with the
command line and its stderr when something fails.
"""
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time

from . import LAB_ROOT, NS_PREFIX, SSH_DIR, netns_name, node_dir

BRIDGE = 'nvlab-mgmt'
MGMT_PREFIX = '10.251.0'
MGMT_GATEWAY = MGMT_PREFIX + '.1'
FABRIC_MTU = 9000
# Root-namespace link names the lab creates: the bridge, the bridge ports
# (nvm-<host>), and temporary names of links on their way into a namespace.
# On a real site (site.py) also a rail's, the storage and the front-end bridge's ports (nvr<host>-<port>) and the temporary
# name of a port's inner end (nvq<host>-<port>).
ROOT_LINK_PREFIXES = ('nvlab-', 'nvm-', 'nvi-', 'nvfa', 'nvfb', 'nvr', 'nvq')
SSH_PATH = '/run/netval-lab/nodes/%s/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


class LabError(Exception):
    """A lab operation failed; the message names the command and the cause."""


def run(argv, check=True, timeout=60, input_text=None):
    """Run argv (a list, never a shell); raise LabError naming the command and stderr on failure."""
    try:
        proc = subprocess.run(argv, input=input_text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise LabError('%s: command not found (install it: apt-get install iproute2 openssh-server iperf3)' % argv[0])
    except subprocess.TimeoutExpired:
        raise LabError('%s: timed out after %s s' % (' '.join(argv), timeout))
    if check and proc.returncode != 0:
        raise LabError('%s: rc=%d: %s' % (' '.join(argv), proc.returncode, (proc.stderr or proc.stdout).strip()))
    return proc


def ip(*args, check=True):
    return run(['ip'] + list(args), check=check)


def ipn(host, *args, check=True):
    return run(['ip', '-n', netns_name(host)] + list(args), check=check)


def nsexec(host, argv, check=True, timeout=60):
    return run(['ip', 'netns', 'exec', netns_name(host)] + list(argv), check=check, timeout=timeout)


# --------------------------------------------------------------------------- discovery

def lab_namespaces():
    """Names of the lab's network namespaces that exist now (nvlab-*)."""
    proc = run(['ip', 'netns', 'list'], check=False)
    names = []
    for line in proc.stdout.splitlines():
        name = line.split()[0] if line.split() else ''
        if name.startswith(NS_PREFIX):
            names.append(name)
    return sorted(names)


def root_links():
    """Root-namespace links the lab made (bridge, bridge ports, half-moved veths)."""
    proc = run(['ip', '-o', 'link', 'show'], check=False)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split(':', 2)
        if len(parts) < 2:
            continue
        name = parts[1].strip().split('@')[0]
        if name.startswith(ROOT_LINK_PREFIXES):
            names.append(name)
    return names


def link_exists(name, host=None):
    argv = ['ip'] + (['-n', netns_name(host)] if host else []) + ['link', 'show', 'dev', name]
    return run(argv, check=False).returncode == 0


def link_info(host, ifname):
    """{'up': bool, 'mtu': int, 'qdisc': str} of a link inside a host's namespace, or None."""
    proc = run(['ip', '-n', netns_name(host), '-j', 'link', 'show', 'dev', ifname], check=False)
    if proc.returncode != 0:
        return None
    try:
        data = json.loads(proc.stdout)[0]
    except (ValueError, IndexError):
        return None
    return {'up': 'UP' in data.get('flags', []) and 'LOWER_UP' in data.get('flags', []),
            'admin_up': 'UP' in data.get('flags', []), 'mtu': data.get('mtu'), 'qdisc': data.get('qdisc')}


# --------------------------------------------------------------------------- building

def create_bridge():
    if not link_exists(BRIDGE):
        ip('link', 'add', 'name', BRIDGE, 'type', 'bridge')
    proc = ip('-o', 'addr', 'show', 'dev', BRIDGE)
    if ' %s/24 ' % MGMT_GATEWAY not in proc.stdout:
        ip('addr', 'add', MGMT_GATEWAY + '/24', 'dev', BRIDGE)
    ip('link', 'set', 'dev', BRIDGE, 'up')


def create_switch(name):
    """A bridge in the root namespace standing for one switch (a rail's, the storage or the front-end network's); no address."""
    if not link_exists(name):
        ip('link', 'add', 'name', name, 'type', 'bridge')
    ip('link', 'set', 'dev', name, 'up')


def port_root_name(host_index, port_index):
    """The root-namespace end of one port's veth (<= 15 characters)."""
    return 'nvr%d-%d' % (host_index, port_index)


def add_site_port(host, host_index, port_index, port):
    """One NIC port of a real site: a veth whose inner end is the NIC's netdev in the host's namespace (its MTU, its address)
    and whose root end is a port of the port's switch; a port that is not cabled has no switch, so its netdev has no carrier."""
    outer, temp = port_root_name(host_index, port_index), 'nvq%d-%d' % (host_index, port_index)
    if not link_exists(port['netdev'], host):
        for name in (outer, temp):
            if link_exists(name):
                ip('link', 'del', 'dev', name)
        ip('link', 'add', 'name', outer, 'type', 'veth', 'peer', 'name', temp)
        ip('link', 'set', 'dev', temp, 'netns', netns_name(host))
        ipn(host, 'link', 'set', 'dev', temp, 'name', port['netdev'])
    ip('link', 'set', 'dev', outer, 'mtu', str(port['mtu']))
    ipn(host, 'link', 'set', 'dev', port['netdev'], 'mtu', str(port['mtu']))
    set_port_address(host, port['netdev'], port.get('ip'), port['prefix'])
    ipn(host, 'link', 'set', 'dev', port['netdev'], 'up')
    if port.get('bridge') and port.get('up', True):
        ip('link', 'set', 'dev', outer, 'master', port['bridge'])
        ip('link', 'set', 'dev', outer, 'up')
    else:
        ip('link', 'set', 'dev', outer, 'down')


def set_port_address(host, netdev, address, prefix):
    """A port's IPv4 address (and only it): ``address`` None leaves the netdev unaddressed."""
    ipn(host, 'addr', 'flush', 'dev', netdev, check=False)
    if address:
        ipn(host, 'addr', 'add', '%s/%s' % (address, prefix), 'dev', netdev)


def shape_management(host, gateway, rate):
    """A real site's management network: the host's default route (via a gateway nobody answers, so a fallback to it
    reaches no fabric address and nothing outside the lab) and 1 Gbit/s both ways on its management link."""
    ipn(host, 'route', 'replace', 'default', 'via', gateway, 'dev', 'mgmt0')
    shape(host, 'mgmt0', rate)
    run(['tc', 'qdisc', 'replace', 'dev', 'nvm-' + host, 'root', 'tbf', 'rate', rate, 'burst', '256kb', 'latency', '50ms'])


def create_namespace(host):
    ns = netns_name(host)
    if ns not in lab_namespaces():
        ip('netns', 'add', ns)
    ipn(host, 'link', 'set', 'dev', 'lo', 'up')


def add_mgmt_link(host, address):
    """veth nvm-<host> (bridge port) <-> mgmt0 inside the host's namespace, address/24."""
    outer, inner = 'nvm-' + host, 'nvi-' + host
    if len(outer) > 15:
        raise LabError('host name %s is too long for an interface name' % host)
    if not link_exists('mgmt0', host):
        if link_exists(outer):
            ip('link', 'del', 'dev', outer)
        ip('link', 'add', 'name', outer, 'type', 'veth', 'peer', 'name', inner)
        ip('link', 'set', 'dev', outer, 'master', BRIDGE)
        ip('link', 'set', 'dev', outer, 'up')
        ip('link', 'set', 'dev', inner, 'netns', netns_name(host))
        ipn(host, 'link', 'set', 'dev', inner, 'name', 'mgmt0')
        ipn(host, 'addr', 'add', '%s/24' % address, 'dev', 'mgmt0')
    ipn(host, 'link', 'set', 'dev', 'mgmt0', 'up')


# The two-box RoCE pair's docker0 trap: Docker gives every host the same 172.17.0.1/16 bridge, so
# Open MPI's out-of-band layer, left to choose, sees an overlapping subnet on both ends and takes the
# peers for directly reachable over it.  Every lab host gets one, as a fleet's hosts do.
DOCKER_BRIDGE = 'docker0'
DOCKER_ADDRESS = '172.17.0.1/16'


def add_docker_bridge(host):
    """An empty docker0 bridge (172.17.0.1/16, admin up, no carrier) inside the host's namespace."""
    if not link_exists(DOCKER_BRIDGE, host):
        ipn(host, 'link', 'add', 'name', DOCKER_BRIDGE, 'type', 'bridge')
    proc = ipn(host, '-o', 'addr', 'show', 'dev', DOCKER_BRIDGE)
    if ' %s ' % DOCKER_ADDRESS not in proc.stdout:
        ipn(host, 'addr', 'add', DOCKER_ADDRESS, 'dev', DOCKER_BRIDGE)
    ipn(host, 'link', 'set', 'dev', DOCKER_BRIDGE, 'up')


def add_fabric_link(link):
    """One rail: fab-<peer> in the node <-> fab-<node> in the peer, MTU 9000, /30 addresses."""
    node, peer = link['node'], link['peer']
    if link_exists(link['node_if'], node) and link_exists(link['peer_if'], peer):
        return
    for host, ifname in ((node, link['node_if']), (peer, link['peer_if'])):
        if link_exists(ifname, host):
            ipn(host, 'link', 'del', 'dev', ifname)
    tmp_a, tmp_b = 'nvfa%d' % link['index'], 'nvfb%d' % link['index']
    for name in (tmp_a, tmp_b):
        if link_exists(name):
            ip('link', 'del', 'dev', name)
    ip('link', 'add', 'name', tmp_a, 'type', 'veth', 'peer', 'name', tmp_b)
    ip('link', 'set', 'dev', tmp_a, 'netns', netns_name(node))
    ip('link', 'set', 'dev', tmp_b, 'netns', netns_name(peer))
    for host, tmp, ifname, address in ((node, tmp_a, link['node_if'], link['node_ip']),
                                       (peer, tmp_b, link['peer_if'], link['peer_ip'])):
        ipn(host, 'link', 'set', 'dev', tmp, 'name', ifname)
        ipn(host, 'link', 'set', 'dev', ifname, 'mtu', str(FABRIC_MTU))
        ipn(host, 'addr', 'add', '%s/30' % address, 'dev', ifname)
        ipn(host, 'link', 'set', 'dev', ifname, 'up')


def ensure_ssh_keys():
    """The lab's client key pair (the controller's, for Ansible) under /run/netval-lab/ssh."""
    os.makedirs(SSH_DIR, mode=0o700, exist_ok=True)
    path = os.path.join(SSH_DIR, 'id_ed25519')
    if not os.path.exists(path):
        run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'netval-lab-controller', '-f', path])
    os.chmod(path, 0o600)
    os.makedirs('/run/sshd', mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    return path


def host_key_path(host):
    """The host's own ed25519 host key (each lab host has its own, as real boxes do)."""
    return os.path.join(node_dir(host), 'ssh', 'ssh_host_ed25519_key')


def home_dir(host):
    """The login user's home on one host: sshd bind-mounts it over /root in the host's own mount namespace."""
    return os.path.join(node_dir(host), 'home')


def prepare_host_ssh(host):
    """The host's own host key, and its root's ~/.ssh with the controller's key the only one it trusts (no node key)."""
    key = host_key_path(host)
    os.makedirs(os.path.dirname(key), mode=0o700, exist_ok=True)
    if not os.path.exists(key):
        run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'root@%s' % host, '-f', key])
    os.chmod(key, 0o600)
    dot_ssh = os.path.join(home_dir(host), '.ssh')
    os.makedirs(dot_ssh, mode=0o700, exist_ok=True)
    os.chmod(home_dir(host), 0o700)
    with open(os.path.join(SSH_DIR, 'id_ed25519.pub'), encoding='utf-8') as handle:
        controller = handle.read()
    authorized = os.path.join(dot_ssh, 'authorized_keys')
    with open(authorized, 'w', encoding='utf-8') as handle:
        handle.write(controller)
    os.chmod(authorized, 0o600)
    return key


def write_known_hosts(addresses):
    """The controller's known_hosts: each host's address with that host's own key (``addresses``: {host: address})."""
    lines = []
    for host, address in sorted(addresses.items()):
        with open(host_key_path(host) + '.pub', encoding='utf-8') as handle:
            lines.append('%s %s\n' % (address, ' '.join(handle.read().split()[:2])))
    with open(os.path.join(SSH_DIR, 'known_hosts'), 'w', encoding='utf-8') as handle:
        handle.writelines(lines)


def sshd_config_path(host):
    return os.path.join(node_dir(host), 'sshd_config')


def sshd_pidfile(host):
    return os.path.join(node_dir(host), 'sshd.pid')


def write_sshd_config(host, address):
    text = '\n'.join([
        '# netval lab sshd for %s (generated by lab/netval_lab/netns.py)' % host,
        'ListenAddress %s' % address,
        'Port 22',
        'PidFile %s' % sshd_pidfile(host),
        'HostKey %s' % host_key_path(host),
        # The host's own root home (bind-mounted over /root): only the keys its ~/.ssh/authorized_keys lists log in.
        'AuthorizedKeysFile .ssh/authorized_keys',
        'PermitRootLogin prohibit-password',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'StrictModes yes',
        'UseDNS no',
        'PrintMotd no',
        'PrintLastLog no',
        'MaxSessions 64',
        'MaxStartups 64:30:128',
        'LogLevel ERROR',
        'Subsystem sftp internal-sftp',
        'SetEnv PATH=%s NETVAL_LAB_NODE=%s' % (SSH_PATH % host, host),
        '',
    ])
    with open(sshd_config_path(host), 'w', encoding='utf-8') as handle:
        handle.write(text)


def read_pid(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def pid_alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        if exc.errno != errno.EPERM:
            return False
    try:
        with open('/proc/%d/stat' % pid, encoding='utf-8') as handle:
            return handle.read().rsplit(')', 1)[-1].split()[0] not in ('Z', 'X')
    except OSError:
        return False


def sshd_alive(host):
    return pid_alive(read_pid(sshd_pidfile(host)))


def start_sshd(host):
    """sshd in the host's netns, a fresh UTS namespace whose hostname is the host name, and a mount namespace of its own:
    the host's home over /root (its own ~/.ssh) and the controller's key folder hidden, so no host holds a key another
    trusts.  Everything its sessions start (Ansible's modules, orted, the ranks) lives in that namespace."""
    if sshd_alive(host):
        return read_pid(sshd_pidfile(host))
    log = os.path.join(node_dir(host), 'log', 'sshd.log')
    script = ('hostname %s && mount --bind %s /root && mount -t tmpfs -o size=64k,mode=0700 netval-lab-hidden %s '
              '&& exec /usr/sbin/sshd -f %s -E %s' % (host, home_dir(host), SSH_DIR, sshd_config_path(host), log))
    nsexec(host, ['unshare', '--uts', '--mount', '--propagation', 'private', '--', 'sh', '-c', script], timeout=20)
    deadline = time.time() + 10
    while time.time() < deadline:
        pid = read_pid(sshd_pidfile(host))
        if pid_alive(pid):
            return pid
        time.sleep(0.05)
    raise LabError('%s: sshd did not start (see %s)' % (host, log))


def in_host_mounts(host, argv, check=True):
    """Run argv in the mount namespace of the host's sshd (what its sessions see), in its network namespace."""
    pid = read_pid(sshd_pidfile(host))
    if not pid_alive(pid):
        raise LabError('%s: sshd is not running: its mount namespace is gone' % host)
    return run(['nsenter', '--target', str(pid), '--mount', '--net', '--uts', '--'] + list(argv), check=check)


# Fault orted-missing: Open MPI is not installed on the peer at the prefix the node's mpirun names (a site whose peers lack
# the node's HPC-X, say).  An overlay over /usr/bin in the peer's own mount namespace, with orted removed from it.
HIDDEN_TOOL = 'orted'


def hide_tool(host, tool=HIDDEN_TOOL):
    """``tool`` is gone from /usr/bin for everything the host's sshd starts (the host's mount namespace only)."""
    base = os.path.join(node_dir(host), 'overlay')
    for name in ('upper', 'work'):
        os.makedirs(os.path.join(base, name), mode=0o700, exist_ok=True)
    mounted = in_host_mounts(host, ['findmnt', '-n', '-o', 'FSTYPE', '/usr/bin'], check=False).stdout.strip()
    if mounted != 'overlay':
        in_host_mounts(host, ['mount', '-t', 'overlay', 'netval-lab-overlay', '-o',
                              'lowerdir=/usr/bin,upperdir=%s,workdir=%s' % (os.path.join(base, 'upper'), os.path.join(base, 'work')),
                              '/usr/bin'])
    in_host_mounts(host, ['rm', '-f', '/usr/bin/' + tool])


def restore_tools(host):
    """Undo hide_tool (a no-op when nothing is hidden or the host's sshd is down)."""
    if not sshd_alive(host):
        return
    if in_host_mounts(host, ['findmnt', '-n', '-o', 'FSTYPE', '/usr/bin'], check=False).stdout.strip() == 'overlay':
        # Lazily: umount itself runs from that /usr/bin, as may a session's shell.
        in_host_mounts(host, ['umount', '--lazy', '/usr/bin'])


def stop_sshd(host):
    pid = read_pid(sshd_pidfile(host))
    if pid_alive(pid):
        kill_pids([pid])
    try:
        os.unlink(sshd_pidfile(host))
    except OSError:
        pass


def ssh_banner(address, timeout=1.0):
    try:
        with socket.create_connection((address, 22), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(64).decode('ascii', 'replace')
    except OSError:
        return ''


def ssh_argv(address, key):
    return ['ssh', '-i', key, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
            '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=5',
            'root@' + address]


def wait_for_sshd(hosts, timeout=30.0):
    """Wait until every host's sshd answers with an SSH banner; raise naming the hosts that do not."""
    pending = dict(hosts)  # host -> address
    deadline = time.time() + timeout
    while pending and time.time() < deadline:
        for host, address in list(pending.items()):
            if ssh_banner(address, timeout=0.5).startswith('SSH-2.0'):
                del pending[host]
        if pending:
            time.sleep(0.1)
    if pending:
        raise LabError('sshd did not answer within %.0f s on: %s' % (
            timeout, ', '.join('%s (%s)' % item for item in sorted(pending.items()))))


def check_ssh_login(hosts, key, timeout=30):
    """Log in to every host in parallel; each must answer with its own hostname.  Returns {host: problem}."""
    procs = {}
    for host, address in hosts.items():
        procs[host] = subprocess.Popen(ssh_argv(address, key) + ['hostname'], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, universal_newlines=True)
    problems = {}
    for host, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            problems[host] = 'ssh timed out'
            continue
        if proc.returncode != 0 or out.strip() != host:
            problems[host] = 'rc=%s hostname=%r %s' % (proc.returncode, out.strip(), err.strip())
    return problems


# --------------------------------------------------------------------------- processes

def _ns_inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open('/proc/%d/stat' % pid, encoding='utf-8') as handle:
                pid = int(handle.read().rsplit(')', 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def lab_processes():
    """PIDs of processes that belong to the lab: in a lab netns, or whose cmdline names the lab root."""
    inodes = set()
    for ns in lab_namespaces():
        inode = _ns_inode(os.path.join('/run/netns', ns))
        if inode:
            inodes.add(inode)
    skip = _ancestors()
    marker = LAB_ROOT.encode()
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) in skip:
            continue
        pid = int(name)
        try:
            if inodes and os.stat('/proc/%d/ns/net' % pid).st_ino in inodes:
                found.append(pid)
                continue
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                if marker in handle.read():
                    found.append(pid)
        except OSError:
            continue
    return [pid for pid in found if pid_alive(pid)]


def kill_pids(pids, grace=2.0):
    """SIGTERM, then SIGKILL what is left after ``grace`` seconds.  Returns the pids still alive."""
    pids = [pid for pid in pids if pid_alive(pid)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + wait
        while time.time() < deadline:
            pids = [pid for pid in pids if pid_alive(pid)]
            if not pids:
                return []
            time.sleep(0.05)
    return [pid for pid in pids if pid_alive(pid)]


def pidfiles():
    """Every *.pid file under the lab root (sshd, flap loops, busy-port listeners, emulated servers)."""
    found = []
    for dirpath, _dirs, files in os.walk(LAB_ROOT):
        for name in files:
            if name.endswith('.pid'):
                found.append(os.path.join(dirpath, name))
    return found


def spawn_detached(argv, pidfile, log_path, env=None):
    """Start argv in its own session, stdout/stderr to log_path, pid written to pidfile."""
    full_env = dict(os.environ)
    full_env['PYTHONPATH'] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if env:
        full_env.update(env)
    with open(log_path, 'ab') as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=full_env, close_fds=True, start_new_session=True)
    with open(pidfile, 'w', encoding='utf-8') as handle:
        handle.write('%d\n' % proc.pid)
    return proc.pid


def stop_pidfile(path):
    pid = read_pid(path)
    if pid and pid_alive(pid):
        kill_pids([pid])
    try:
        os.unlink(path)
    except OSError:
        pass


# --------------------------------------------------------------------------- teardown

def teardown():
    """Remove every process, namespace and link of the lab.  Safe on a half-built lab and on no lab.

    Returns a list of problems (empty when everything is gone).
    """
    problems = []
    # 1. Processes tracked by pid files (flap loops first so they stop touching links).
    files = sorted(pidfiles(), key=lambda p: (not p.endswith('flap.pid'), p))
    for path in files:
        stop_pidfile(path)
    # 2. Anything else in a lab namespace or naming the lab root (sessions, iperf3, emulated servers, ssh masters).
    for _attempt in range(3):
        pids = lab_processes()
        if not pids:
            break
        left = kill_pids(pids)
        if left:
            problems.append('processes still alive: %s' % left)
    # 3. Namespaces (deleting one removes the veth ends inside it, and so both ends of each veth).
    for ns in lab_namespaces():
        proc = run(['ip', 'netns', 'del', ns], check=False)
        if proc.returncode != 0:
            problems.append('ip netns del %s: %s' % (ns, proc.stderr.strip()))
    # 4. Root-namespace leftovers: bridge ports of an interrupted build, then the bridge.
    for name in root_links():
        proc = run(['ip', 'link', 'del', 'dev', name], check=False)
        if proc.returncode != 0 and link_exists(name):
            problems.append('ip link del dev %s: %s' % (name, proc.stderr.strip()))
    return problems


# --------------------------------------------------------------------------- real faults

def shape(host, ifname, rate):
    nsexec(host, ['tc', 'qdisc', 'replace', 'dev', ifname, 'root', 'tbf', 'rate', rate,
                  'burst', '256kb', 'latency', '50ms'])


def unshape(host, ifname):
    nsexec(host, ['tc', 'qdisc', 'del', 'dev', ifname, 'root'], check=False)


def shape_root(ifname, rate):
    """tbf on a root-namespace link: the switch port's egress, the other direction of a host's cable."""
    run(['tc', 'qdisc', 'replace', 'dev', ifname, 'root', 'tbf', 'rate', rate, 'burst', '256kb', 'latency', '50ms'])


def unshape_root(ifname):
    run(['tc', 'qdisc', 'del', 'dev', ifname, 'root'], check=False)


def set_mtu(host, ifname, mtu):
    ipn(host, 'link', 'set', 'dev', ifname, 'mtu', str(mtu))


def set_link(host, ifname, up):
    ipn(host, 'link', 'set', 'dev', ifname, 'up' if up else 'down')


def start_flap(link, nic, down_s=2.0, period_s=5.0):
    """Background loop: the node's fabric link goes down for ``down_s`` every ``period_s`` seconds."""
    ndir = node_dir(link['node'])
    pidfile = os.path.join(ndir, 'flap.pid')
    if pid_alive(read_pid(pidfile)):
        return read_pid(pidfile)
    events = os.path.join(ndir, 'log', 'kernel.log')
    argv = [sys.executable, '-m', 'netval_lab.netns', 'flap', link['node'], link['node_if'], events,
            nic.get('pci_address') or '0000:00:00.0', nic.get('netdev') or link['node_if'], str(down_s), str(period_s)]
    return spawn_detached(argv, pidfile, os.path.join(ndir, 'log', 'flap.log'))


def log_kernel_event(path, pci, netdev, message):
    """Append one kernel event: '<epoch seconds> mlx5_core <pci>[ <netdev>]: <message>' (module events name no netdev)."""
    device = '%s %s' % (pci, netdev) if netdev else pci
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write('%.6f mlx5_core %s: %s\n' % (time.time(), device, message))


class _Stop(Exception):
    """SIGTERM of the flap loop."""


def flap_loop(host, ifname, events, pci, netdev, down_s, period_s):
    def _stop(_signum, _frame):
        raise _Stop()
    signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            # What a bad cable or transceiver logs (the runbook's "Link flaps during validation").
            log_kernel_event(events, pci, None, 'Port module event[error]: module 0, Cable error, Bus stuck(I2C or data shorted)')
            log_kernel_event(events, pci, None, 'Port module event[unplugged]: module 0')
            set_link(host, ifname, False)
            log_kernel_event(events, pci, netdev, 'Link down')
            time.sleep(down_s)
            log_kernel_event(events, pci, None, 'Port module event[plugged_enabled]: module 0')
            set_link(host, ifname, True)
            log_kernel_event(events, pci, netdev, 'Link up')
            time.sleep(max(period_s - down_s, 0.5))
    except _Stop:
        pass
    finally:
        if not link_info(host, ifname) or not link_info(host, ifname)['admin_up']:
            set_link(host, ifname, True)
            log_kernel_event(events, pci, netdev, 'Link up')


def namespace_processes(host):
    """PIDs of the processes in one lab host's network namespace: its sshd and sessions, the servers they started."""
    inode = _ns_inode(os.path.join('/run/netns', netns_name(host)))
    if not inode:
        return []
    skip = _ancestors()
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            if os.stat('/proc/%s/ns/net' % name).st_ino == inode:
                found.append(int(name))
        except OSError:
            continue
    return found


def start_down_midrun(peer):
    """Background watcher: at the first RDMA session a node opens on ``peer`` after now, the peer's sshd and every process
    in its namespace (the servers) stop, as a peer that crashes mid-test; its links stay up."""
    ndir = node_dir(peer)
    pidfile = os.path.join(ndir, 'down-midrun.pid')
    if pid_alive(read_pid(pidfile)):
        return read_pid(pidfile)
    argv = [sys.executable, '-m', 'netval_lab.netns', 'down-midrun', peer, '%.6f' % time.time(), pidfile]
    return spawn_detached(argv, pidfile, os.path.join(ndir, 'log', 'down-midrun.log'))


def _session_opened_since(ledger_dir, since):
    try:
        names = os.listdir(ledger_dir)
    except OSError:
        return None
    for name in sorted(names):
        try:
            with open(os.path.join(ledger_dir, name), encoding='utf-8') as handle:
                book = json.load(handle)
        except (OSError, ValueError):
            continue
        sessions = book.get('sessions') if isinstance(book, dict) else book
        for entry in sessions or []:
            if entry.get('start', 0) >= since and entry.get('end') is None:
                return entry.get('label') or name
    return None


def down_midrun_loop(peer, since, pidfile):
    def _stop(_signum, _frame):
        raise _Stop()
    signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            label = _session_opened_since(os.path.join(node_dir(peer), 'ledger'), since)
            if label:
                break
            time.sleep(0.05)
        sys.stdout.write('%.6f %s goes down during: %s\n' % (time.time(), peer, label))
        sys.stdout.flush()
        stop_sshd(peer)
        kill_pids(namespace_processes(peer), grace=0.5)
    except _Stop:
        pass
    finally:
        try:
            os.unlink(pidfile)
        except OSError:
            pass


BUSY_LISTENER = r'''
import socket, sys, time
socks = []
for port in sys.argv[2:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(port)))
    s.listen(16)
    socks.append(s)
while True:
    time.sleep(3600)
'''


def start_busy_ports(host, ports):
    """A process in the host's netns listening on ``ports`` (what a stale perftest/iperf3 server does)."""
    ndir = node_dir(host)
    pidfile = os.path.join(ndir, 'busy-ports.pid')
    if pid_alive(read_pid(pidfile)):
        return read_pid(pidfile)
    argv = ['ip', 'netns', 'exec', netns_name(host), sys.executable, '-c', BUSY_LISTENER, pidfile] + [str(p) for p in ports]
    pid = spawn_detached(argv, pidfile, os.path.join(ndir, 'log', 'busy-ports.log'))
    deadline = time.time() + 5
    while time.time() < deadline:
        out = nsexec(host, ['ss', '-Htln'], check=False).stdout
        if all(':%d ' % port in out for port in ports):
            return pid
        time.sleep(0.05)
    raise LabError('%s: busy-port listener did not bind %s (see %s/log/busy-ports.log)' % (host, ports, ndir))


def main(argv):
    """Entry for the detached helpers: ``python -m netval_lab.netns flap ...``."""
    if argv and argv[0] == 'flap' and len(argv) == 8:
        flap_loop(argv[1], argv[2], argv[3], argv[4], argv[5], float(argv[6]), float(argv[7]))
        return 0
    if argv and argv[0] == 'down-midrun' and len(argv) == 4:
        down_midrun_loop(argv[1], float(argv[2]), argv[3])
        return 0
    sys.stderr.write('usage: python -m netval_lab.netns flap HOST IFNAME EVENTS PCI NETDEV DOWN_S PERIOD_S\n'
                     '       python -m netval_lab.netns down-midrun PEER SINCE PIDFILE\n')
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
