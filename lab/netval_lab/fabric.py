"""The lab's fabric model: what an RDMA session between two lab hosts can carry.

On hardware a perftest figure depends on both ends and the wire: the slower
HCA, the cable or switch port between them, and every other session sharing
either HCA at the same time.  The emulated tools get the same dependence from
here:

* each end's HCA capacity comes from its own host's state (host memory or,
  with --use_cuda, GPUDirect);
* the rail is the real veth the session's TCP connection runs on: a ``tc``
  rate on it (the ``slow-link`` fault) caps RDMA as it caps TCP;
* a ledger per HCA, kept by the host that owns the device, records every
  session's start and end, so two sessions that overlap in time on one HCA
  each get their share.

Standard library only: this runs under the system python3 on the lab nodes.
"""

import fcntl
import json
import os
import re
import time

# How long finished sessions stay in a ledger (they still count against sessions that overlapped them),
# and when a session that never closed (its process was killed) stops counting: no lab session runs that long.
LEDGER_KEEP_S = 120.0
LEDGER_STALE_S = 600.0
_RATE = re.compile(r'^(?P<value>[0-9.]+)(?P<unit>[KMGT]?)(?P<bits>bit|bps)?$', re.I)
_RATE_FACTORS = {'': 1.0, 'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}


def hca_capacity_bytes(nic, cuda):
    """Bytes per second one HCA moves: GPUDirect when the buffer is on a GPU, host memory otherwise."""
    return float(nic['gdr_bw_gbytes_s'] if cuda else nic['bw_gbytes_s']) * 1e9


def _interface_of(address):
    import subprocess  # only the calls that read ip/tc pay for it: every emulated ethtool imports this module
    try:
        text = subprocess.run(['ip', '-j', '-4', 'addr', 'show'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=5, check=False).stdout
        links = json.loads(text or '[]')
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    for link in links:
        for info in link.get('addr_info') or []:
            if info.get('local') == address:
                return link.get('ifname')
    return None


def parse_tc_rate(text):
    """Bytes per second of a tc rate as ``tc -j qdisc`` prints it ('1Gbit', '125Mbps', '8000000bit'), or None."""
    match = _RATE.match(str(text or '').strip())
    if not match:
        return None
    value = float(match.group('value')) * _RATE_FACTORS[match.group('unit').upper()]
    if (match.group('bits') or 'bit').lower() == 'bit':
        value /= 8.0
    return value


def rail_of(local_address):
    """The interface (the lab's rail) that carries a session from ``local_address``."""
    return _interface_of(local_address)


def rail_rate_bytes(ifname):
    """Bytes per second a rail is shaped to (its tc root qdisc), None when unshaped or unknown."""
    import subprocess  # only the calls that read ip/tc pay for it: every emulated ethtool imports this module
    if not ifname:
        return None
    try:
        text = subprocess.run(['tc', '-j', 'qdisc', 'show', 'dev', ifname], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=5, check=False).stdout
        qdiscs = json.loads(text or '[]')
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    rates = []
    for qdisc in qdiscs:
        options = qdisc.get('options') or {}
        rate = options.get('rate')
        if isinstance(rate, (int, float)):
            rates.append(float(rate))  # tc -j prints bytes per second as a number on newer iproute2
        elif rate is not None:
            parsed = parse_tc_rate(rate)
            if parsed:
                rates.append(parsed)
    return min(rates) if rates else None


def _process_identity(pid):
    """(pid, start time in clock ticks) of a live process, or None: a pid alone is reused (pid_max is 32768 here)."""
    try:
        with open('/proc/%d/stat' % int(pid), encoding='utf-8') as handle:
            return [int(pid), int(handle.read().rsplit(')', 1)[1].split()[19])]
    except (OSError, ValueError, IndexError):
        return None


def _owners_gone(entry):
    """Whether every process that opened this open session has exited (killed, as a real perftest's HCA is freed then)."""
    owners = entry.get('owners')
    return bool(owners) and all(_process_identity(pid) != [pid, start] for pid, start in owners)


class Ledger(object):
    """The sessions one HCA carries, in a JSON file under its host's node dir, updated under an exclusive lock."""

    def __init__(self, node_dir, device):
        folder = os.path.join(node_dir, 'ledger')
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, '%s.json' % device)
        self.session = None

    def _update(self, change):
        with open(self.path, 'a+', encoding='utf-8') as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.seek(0)
            try:
                book = json.loads(handle.read() or '{}')
            except ValueError:
                book = {}
            if isinstance(book, list):  # a ledger written before counters were kept
                book = {'sessions': book}
            sessions = book.get('sessions') or []
            now = time.time()
            keep = []
            retired = float(book.get('retired_bytes') or 0)
            for entry in sessions:
                if entry.get('end') is None and _owners_gone(entry):
                    entry['end'] = now
                done = now - entry['end'] >= LEDGER_KEEP_S if entry.get('end') is not None else now - entry['start'] >= LEDGER_STALE_S
                if done:
                    retired += _carried(entry, now)
                else:
                    keep.append(entry)
            result = change(keep, now)
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({'sessions': keep, 'retired_bytes': retired}))
            return result

    def open(self, label, session=None, capacity=None):
        """Enter a session; both ends of one session pass the same id, so a loop back on one HCA counts once.

        ``capacity`` (bytes per second) is what the session moves at most: the NIC counters grow by it.
        """
        self.session = session or os.urandom(16).hex()

        owner = _process_identity(os.getpid())

        def add(sessions, now):
            if not any(entry['id'] == self.session for entry in sessions):
                sessions.append({'id': self.session, 'label': label, 'start': now, 'end': None, 'ends': 0, 'capacity': capacity,
                                 'owners': []})
            for entry in sessions:
                if entry['id'] == self.session:
                    entry['ends'] = entry.get('ends', 0) + 1
                    if owner:
                        entry.setdefault('owners', []).append(owner)
            return now
        return self._update(add)

    def close(self):
        """End this session; returns how many sessions (this one included) overlapped it in time on this HCA."""
        mine, self.session = self.session, None
        if mine is None:
            return 1

        def finish(sessions, now):
            start = now
            for entry in sessions:
                if entry['id'] == mine:
                    entry['ends'] = entry.get('ends', 1) - 1
                    if entry['ends'] <= 0:
                        entry['end'] = now
                    start = entry['start']
            # A session that ended as this one began (a killed one found gone at this one's start) never shared it.
            return sum(1 for s in sessions
                       if s['id'] == mine or (s['start'] <= now and (s['end'] if s['end'] is not None else now) > start))
        return max(1, self._update(finish))


def _carried(entry, now):
    """Bytes a session has moved so far (its capacity over its time; shared sessions split the HCA, which this ignores)."""
    end = entry['end'] if entry.get('end') is not None else now
    return float(entry.get('capacity') or 0) * max(0.0, end - entry['start'])


def carried_bytes(node_dir, device):
    """Bytes the sessions of ``device`` have moved, ever: what its NIC byte counters add to their idle growth."""
    path = os.path.join(node_dir, 'ledger', '%s.json' % device)
    try:
        with open(path, encoding='utf-8') as handle:
            book = json.load(handle)
    except (OSError, ValueError):
        return 0.0
    now = time.time()
    if isinstance(book, list):
        book = {'sessions': book}
    return float(book.get('retired_bytes') or 0) + sum(_carried(entry, now) for entry in book.get('sessions') or [])


def session_bytes(shares):
    """What one session measures: the tightest of its resources, each (capacity, sessions that overlapped on it).

    The resources are both HCAs and both ends' rails; an unshaped rail has capacity None and never limits.
    """
    limits = [float(capacity) / max(1, int(overlaps)) for capacity, overlaps in shares if capacity is not None]
    return min(limits)
