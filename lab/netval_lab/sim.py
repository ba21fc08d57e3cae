"""The simulated fleet: the collection's real playbooks and controller code against hosts that answer from a recording.

A simulated host runs nothing.  Its connection (lab/ansible_plugins/connection/netval_sim.py) hands every module call
here; the answer is the result the same module gave in a real lab run (the recording, lab/sim/<profile>.json, made by
``python -m lab.netval_lab sim record``), with every value the call's arguments changed carried into it (ports, device
names, addresses, paths, host names), after the time the call's plan gives it (its sessions' durations, or the
typical time of a test the plan gives no duration, plus a module call's cost: the prediction's costs), multiplied by
the scale (NETVAL_SIM_SCALE, 0.01 by default).  So ansible-playbook, its workers, the strategy, the filters, the leases
and the reports do all their real work for as many hosts as wanted, and only the hosts are cheap.

What a simulated run writes under NETVAL_SIM_DIR: hosts.json (roles and fabric addresses, from write_inventory),
ledger.jsonl (one line per measuring call of a node's tests: the node, the host it was measured against, from when to
when, for the peer overlap), files/<host>/... (what was put on or fetched from a host: the evidence bundles), plays.json
(each play's role entries at the end, from the netval_sim callback).

Recording (the netval_record connection, a wrapper of ssh): every module call's module, arguments, result and seconds,
and every file fetched, one JSON line each in NETVAL_SIM_RECORD.  ``compile_recording`` turns those lines into the
recording.  Standard library only at import (the connection plugin imports this in ansible's workers); preflight_info's
packing is the collection's own, imported where an answer needs it.
"""
import ast
import base64
import hashlib
import json
import os
import re
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDINGS = os.path.join(REPO_ROOT, 'lab', 'sim')
DEFAULT_SCALE = 0.01
# What a simulated module call costs beside its sessions, before the scale: playbooks/vars/prediction.yml's hardware
# guesses (the run's prediction is given the same, scaled, so predicted and simulated times agree).
COSTS = {'call_s': 1.0, 'session_s': 0.5, 'untimed_s': {'perftest': 3, 'jumbo_ping': 5, 'nccl_tests': 60,
                                                        'dcgmi_diag': {1: 60, 2: 240, 3: 1800, 4: 7200}}}
# The modules whose calls are a node's test sessions against another host (the ledger's).
SESSION_MODULES = ('gpufleet.netval.perftest', 'gpufleet.netval.iperf3', 'gpufleet.netval.nccl_tests', 'gpufleet.netval.jumbo_ping')

_MODULE = re.compile(r"^module_fqn=(?P<value>'[^'\n]*'),$", re.M)
_PARAMS = re.compile(r"^params=(?P<value>'.*'),$", re.M)
_STATE = {}


class SimError(Exception):
    """The simulation cannot answer; the message says why (it becomes the module's failure)."""


# --------------------------------------------------------------------------- the wire

def parse_ansiballz(in_data):
    """(module, its arguments) of an AnsiballZ wrapper as ansible-core 2.19+ pipes it to the interpreter, or (None, None)
    for anything else (a shell command).  The module as its FQCN: gpufleet.netval.perftest, ansible.builtin.slurp."""
    if not in_data or b'_ansiballz_main(' not in in_data:
        return None, None
    text = in_data.decode('utf-8', 'replace')
    module, params = _MODULE.search(text), _PARAMS.search(text)
    if not module or not params:
        return None, None
    fqn = ast.literal_eval(module.group('value'))
    args = json.loads(ast.literal_eval(params.group('value'))).get('ANSIBLE_MODULE_ARGS', {})
    name = fqn.rsplit('.', 1)[-1]
    if fqn.startswith('ansible_collections.') and '.plugins.modules.' in fqn:
        collection = fqn[len('ansible_collections.'):].split('.plugins.modules.')[0]
    else:
        collection = 'ansible.builtin'
    return '%s.%s' % (collection, name), dict((k, v) for k, v in args.items() if not k.startswith('_ansible'))


# --------------------------------------------------------------------------- recording

def _append(entry):
    path = os.environ.get('NETVAL_SIM_RECORD')
    if not path:
        return
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write(json.dumps(entry, sort_keys=True) + '\n')


def record_call(address, in_data, rc, out, seconds):
    module, params = parse_ansiballz(in_data)
    if module is None:
        _append({'address': address, 'command': True, 'rc': rc, 'seconds': seconds, 'at': time.time()})
        return
    try:
        result = json.loads(out.decode('utf-8', 'replace'))
    except ValueError:
        result = {'unparsed': out.decode('utf-8', 'replace')[-2000:]}
    _append({'address': address, 'module': module, 'params': params, 'rc': rc, 'result': result, 'seconds': seconds, 'at': time.time()})


def record_file(address, in_path, out_path):
    with open(out_path, 'rb') as handle:
        data = handle.read()
    _append({'address': address, 'file': in_path, 'content': base64.b64encode(data).decode('ascii'), 'at': time.time()})


def compile_recording(lines, lab, profile):
    """The recording from the recorder's JSON lines of one lab run and that lab's lab.json: every module call with the
    role of the host that answered it (new or peer), and every file fetched."""
    roles = {}
    for host, info in (lab.get('hosts') or {}).items():
        roles[info.get('mgmt_ip')] = (host, info.get('role'))
    calls, files = [], {}
    for entry in lines:
        host, role = roles.get(entry.get('address'), (entry.get('address'), 'new'))
        if entry.get('module'):
            calls.append({'host': host, 'role': role, 'module': entry['module'], 'params': entry['params'], 'result': entry['result'],
                          'seconds': round(entry['seconds'], 3)})
        elif entry.get('file'):
            files['%s:%s' % (host, entry['file'])] = entry['content']
    links = lab.get('links') or []
    hosts = dict((host, {'role': info.get('role'),
                         'fabric': [link.get('node_ip') if host == link.get('node') else link.get('peer_ip')
                                    for link in links if host in (link.get('node'), link.get('peer'))]})
                 for host, info in (lab.get('hosts') or {}).items())
    return {'format': 'netval-lab-sim/1', 'profile': profile, 'tier': lab.get('tier'), 'recorded': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
            'hosts': hosts, 'calls': calls, 'files': files}


# --------------------------------------------------------------------------- the simulated run

def sim_dir():
    folder = os.environ.get('NETVAL_SIM_DIR')
    if not folder:
        raise SimError('NETVAL_SIM_DIR is not set: the simulated hosts need the folder of their run (hosts.json)')
    return folder


def load(path=None):
    """Read the run's hosts and the recording once (the netval_sim callback does it in ansible-playbook's main process)."""
    folder = sim_dir()
    with open(os.path.join(folder, 'hosts.json'), encoding='utf-8') as handle:
        hosts = json.load(handle)
    path = path or hosts.get('recording')
    with open(path, encoding='utf-8') as handle:
        recording = json.load(handle)
    by_module = {}
    for call in recording['calls']:
        by_module.setdefault(call['module'], []).append(call)
    addresses = dict((info['fabric_ip'], host) for host, info in hosts['hosts'].items())
    recorded_names = dict((host, info['role']) for host, info in recording['hosts'].items())
    recorded_addresses = dict((ip, host) for host, info in recording['hosts'].items() for ip in info.get('fabric') or [])
    _STATE.update(hosts=hosts, recording=recording, by_module=by_module, addresses=addresses, recorded_names=recorded_names,
                  recorded_addresses=recorded_addresses, folder=folder, scale=float(hosts.get('scale', DEFAULT_SCALE)))
    return _STATE


def _state():
    return _STATE if _STATE else load()


def host_path(host, path):
    """Where a simulated host's file ``path`` lives on the controller."""
    return os.path.join(_state()['folder'], 'files', host, path.lstrip('/'))


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    else:
        yield path, value


def _similarity(recorded, wanted):
    """How alike two calls' arguments are: leaves equal at the same path, less leaves only one of them has."""
    old, new = dict(_leaves(recorded)), dict(_leaves(wanted))
    same = sum(1 for path, value in new.items() if path in old and old[path] == value)
    return same - len(set(old) ^ set(new))


def _changes(recorded, wanted, names):
    """[(old, new)] to carry into a recorded result: the leaves the arguments changed (strings, and numbers of 1000 or
    more: ports, sizes), then the host names."""
    old = dict(_leaves(recorded))
    pairs = {}
    for path, value in _leaves(wanted):
        before = old.get(path)
        if before is None or before == value or isinstance(value, bool) or isinstance(before, bool):
            continue
        if isinstance(value, str) and isinstance(before, str) and before:
            pairs[before] = value
        elif isinstance(value, int) and isinstance(before, int) and before >= 1000:
            pairs[before] = value
    for before, value in names.items():
        pairs.setdefault(before, value)
    return pairs


def _carry(value, pairs, texts):
    if isinstance(value, dict):
        return dict((key, _carry(item, pairs, texts)) for key, item in value.items())
    if isinstance(value, list):
        return [_carry(item, pairs, texts) for item in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return pairs.get(value, value)
    if isinstance(value, str):
        for before, after in texts:
            if before in value:
                value = value.replace(before, after)
        for before, after in pairs.items():
            if str(before) in value:
                value = re.sub(r'(?<![0-9])%d(?![0-9])' % before, str(after), value)
        return value
    return value


def _names(call, host, params):
    """{recorded host name: this call's}: the host that answered the recorded call and the one that answers now, and the
    other ends their arguments name by address (the server a client measured)."""
    names = {call['host']: host}
    recorded = dict(_state()['recorded_addresses'])
    before = next((recorded[value] for _path, value in _leaves(call['params'])
                   if isinstance(value, str) and recorded.get(value) not in (None, call['host'])), None)
    now = peer_of(host, params)
    if before and now:
        names.setdefault(before, now)
    return names


def peer_of(host, params):
    """The other host a call's arguments name by its fabric address (the server a client measures), or None."""
    addresses = _state()['addresses']
    for _path, value in _leaves(params):
        if isinstance(value, str) and value in addresses and addresses[value] != host:
            return addresses[value]
    return None


def best_call(module, role, params):
    """The recorded call of ``module`` whose arguments are most like ``params``, preferring the same role."""
    calls = _state()['by_module'].get(module) or []
    if not calls:
        raise SimError('the recording has no call of %s' % module)
    return max(calls, key=lambda call: (_similarity(call['params'], params), call['role'] == role))


def _untimed(module, params):
    typical = COSTS['untimed_s'].get(module.rsplit('.', 1)[-1], 0.0)
    if isinstance(typical, dict):
        return typical.get(int(params.get('level') or 1), max(typical.values()))
    return typical


def planned_seconds(module, params):
    """What the call takes on hardware by its plan, before the scale: a module call, plus each session it runs (its
    duration, or the typical time of an untimed one) and the session's set-up."""
    seconds = COSTS['call_s']
    sessions = [item for item in params.get('sessions') or [] if isinstance(item, dict)] if isinstance(params.get('sessions'), list) else []
    short = module.rsplit('.', 1)[-1]
    if short == 'perftest':
        clients = [item for item in sessions if item.get('role', params.get('role')) == 'client'] if sessions else \
            ([params] if params.get('role') == 'client' else [])
        for client in clients:
            duration = client.get('duration') or params.get('duration')
            seconds += (float(duration) if duration else _untimed(module, client)) + COSTS['session_s']
    elif short == 'iperf3' and params.get('role') == 'client':
        seconds += float(params.get('duration') or 10) + COSTS['session_s']
    elif short in ('jumbo_ping', 'nccl_tests', 'dcgmi_diag'):
        seconds += _untimed(module, params) + COSTS['session_s']
    return seconds


def answer(host, module, params):
    """(result, seconds) of ``module`` called on simulated ``host`` with ``params``."""
    state = _state()
    role = state['hosts']['hosts'].get(host, {}).get('role', 'new')
    call = best_call(module, role, params)
    names = _names(call, host, params)
    pairs = _changes(call['params'], params, names)
    # The recorded hosts' fabric addresses (rdma_info's port addresses, a route's source) become the simulated hosts'.
    for recorded_ip, recorded_host in sorted(state['recorded_addresses'].items()):
        now = state['hosts']['hosts'].get(names.get(recorded_host))
        if now and now.get('fabric_ip'):
            pairs.setdefault(recorded_ip, now['fabric_ip'])
    texts = sorted(((str(k), str(v)) for k, v in pairs.items() if isinstance(k, str)), key=lambda kv: -len(kv[0]))
    result = _restamp(_carry(call['result'], dict((k, v) for k, v in pairs.items() if isinstance(k, int)), texts), time.time())
    if module == 'gpufleet.netval.preflight_info':
        # The simulated host's clock at this answer (the test window opens on it); a recording made before preflight_info
        # read the node's clock has none.
        result['node_time_epoch'] = int(time.time())
        _pack_reads(result, bool(params.get('packed')))
    if module == 'gpufleet.netval.evidence_bundle':
        _place_bundle(host, call, result)
    return result, planned_seconds(module, params) * state['scale']


def _pack_reads(result, packed):
    """preflight_info's reads as the call asked for them (its ``packed``; a failed call's reads stay as they are),
    whichever way the recorded call had them: the module's own packing (module_utils/packed_json.py, importable in the
    workers that answer)."""
    from ansible_collections.gpufleet.netval.plugins.module_utils import packed_json  # pylint: disable=import-outside-toplevel
    if packed and 'reads' in result and not result.get('failed'):
        result['reads_packed'] = packed_json.pack_json(result.pop('reads'))
    elif not packed and 'reads_packed' in result:
        result['reads'] = packed_json.unpack_json(result.pop('reads_packed'))


STAMPS = ('timestamp', 'counters_at')


def _restamp(value, now):
    """The recorded result with every epoch ``timestamp`` (nic_info's counter snapshots) and ``counters_at`` (rdma_info's)
    the time of this answer: a real host's second snapshot is later than its first; two answers from one recorded call
    would be the same instant."""
    if isinstance(value, dict):
        return dict((key, now if key in STAMPS and isinstance(item, (int, float)) and not isinstance(item, bool)
                     else _restamp(item, now)) for key, item in value.items())
    if isinstance(value, list):
        return [_restamp(item, now) for item in value]
    return value


def _place_bundle(host, call, result):
    """The recorded bundle, where the answer says the simulated host wrote it (fetched later by evidence_store)."""
    content = _state()['recording']['files'].get('%s:%s' % (call['host'], call['result'].get('tarball')))
    if content is None:
        raise SimError('the recording has no bundle for %s' % call['result'].get('tarball'))
    data = base64.b64decode(content)
    target = host_path(host, result['tarball'])
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, 'wb') as handle:
        handle.write(data)
    result['tarball_sha256'] = hashlib.sha256(data).hexdigest()


# tier_tests' defaults: a node's perftest ports are [18515 + 32 x slot, ...), its iperf3 port 5201 + slot, its slot its
# place among the run's sorted nodes.
PERFTEST_PORT_BASE, PORTS_PER_NODE, IPERF3_PORT_BASE = 18515, 32, 5201


def _node_of_port(short, params):
    """The node whose tests a perftest or iperf3 call is, by the port block of its slot."""
    ports = [item.get('port') for item in params.get('sessions') or [] if isinstance(item, dict)] + [params.get('port')]
    ports = [port for port in ports if isinstance(port, int)]
    if not ports:
        return None
    slot = (ports[0] - PERFTEST_PORT_BASE) // PORTS_PER_NODE if short == 'perftest' else ports[0] - IPERF3_PORT_BASE
    nodes = sorted(host for host, info in _state()['hosts']['hosts'].items() if info['role'] == 'new')
    return nodes[slot] if 0 <= slot < len(nodes) else None


def session_of(host, module, params):
    """(node under test, the host it is measured against) of a call that measures (a perftest or iperf3 client, a ping,
    nccl-tests), else None.  A perftest or iperf3 client runs on either end (the node receives): its port names the node."""
    short = module.rsplit('.', 1)[-1]
    if module not in SESSION_MODULES or (short in ('perftest', 'iperf3') and params.get('role') != 'client'):
        return None
    other = peer_of(host, params)
    if other is None:
        return None
    node = _node_of_port(short, params) if short in ('perftest', 'iperf3') else host
    if node not in (host, other):
        return None
    return node, other if node == host else host


def _ledger(host, module, params, start, end):
    found = session_of(host, module, params)
    if found is None:
        return
    line = json.dumps({'node': found[0], 'on': found[1], 'module': module, 'start': start, 'end': end}) + '\n'
    with open(os.path.join(_state()['folder'], 'ledger.jsonl'), 'a', encoding='utf-8') as handle:
        handle.write(line)


def _command(host, cmd):
    """A shell command (what an action runs when it cannot pipeline): a temporary folder, the home folder, or nothing."""
    text = cmd if isinstance(cmd, str) else cmd.decode('utf-8', 'replace')
    # `mkdir -p "` echo BASE `"&& mkdir "` echo BASE/ansible-tmp-X `"` (ansible-core 2.19+) or mkdir -p "BASE/ansible-tmp-X"
    made = re.search(r'mkdir (?:-p )?"?(?:` ?echo )?(?P<base>[^" `)]*?)/?(?P<name>ansible-tmp-[^" `)/]+)', text)
    if made:
        path = '%s/%s' % (made.group('base').replace('~', '/root'), made.group('name'))
        os.makedirs(host_path(host, path), exist_ok=True)
        return 0, ('%s=%s\n' % (made.group('name'), path)).encode(), b''
    if 'echo ~' in text:
        return 0, b'/root\n', b''
    return 0, b'', b''


def execute(host, cmd, in_data):
    """(rc, stdout, stderr) of what a simulated host was asked to run."""
    module, params = parse_ansiballz(in_data)
    if module is None:
        return _command(host, cmd)
    started = time.time()
    try:
        result, seconds = answer(host, module, params)
    except SimError as exc:
        result, seconds = {'failed': True, 'msg': 'netval sim: %s' % exc}, 0.0
    left = seconds - (time.time() - started)
    if left > 0:
        time.sleep(left)
    _ledger(host, module, params, started, time.time())
    return 0, json.dumps(result).encode('utf-8'), b''


def fetch(host, in_path, out_path):
    source = host_path(host, in_path)
    if not os.path.exists(source):
        raise SimError('%s has no file %s' % (host, in_path))
    with open(source, 'rb') as src, open(out_path, 'wb') as dst:
        dst.write(src.read())


# --------------------------------------------------------------------------- the simulated inventory

def host_names(nodes, peers):
    width = max(2, len(str(nodes)))
    return ['node%0*d' % (width, i) for i in range(1, nodes + 1)], ['peer%02d' % i for i in range(1, peers + 1)]


def fabric_ip(index):
    """A unique fabric address per simulated host (a switched fabric: every host reaches every other one)."""
    return '10.200.%d.%d' % (index // 250, index % 250 + 1)


def sim_costs(scale, forks):
    """The prediction's costs for a simulated run: the simulation's own, scaled; the controller's share (node_fixed_s,
    run_fixed_s) as the lab measured them, since the controller's work is not simulated."""
    untimed = dict((module, dict((level, seconds * scale) for level, seconds in value.items()) if isinstance(value, dict) else value * scale)
                   for module, value in COSTS['untimed_s'].items())
    return {'call_s': COSTS['call_s'] * scale, 'session_s': COSTS['session_s'] * scale, 'node_fixed_s': 10, 'run_fixed_s': 4,
            'parallel_nodes': forks, 'untimed_s': untimed}


def write_inventory(folder, nodes, peers, recording, scale=DEFAULT_SCALE, forks=20, contract=None):
    """The simulated fleet's inventory (``folder``/hosts.yml) and hosts.json (``folder``, NETVAL_SIM_DIR): ``nodes`` new
    nodes and ``peers`` known-good peers on a switched fabric (every host reaches every other one, so an accepted node can
    serve as a peer), none pinned; the tier and profile of the recording."""
    with open(recording, encoding='utf-8') as handle:
        recorded = json.load(handle)
    node_names, peer_names = host_names(nodes, peers)
    hosts = {}
    for index, name in enumerate(node_names + peer_names):
        hosts[name] = {'role': 'new' if index < nodes else 'peer', 'fabric_ip': fabric_ip(index)}

    def host_vars(name):
        return {'ansible_host': name, 'netval_fabric_ip': hosts[name]['fabric_ip'],
                'netval_sysfs_root': '/sim/%s/sys' % name, 'netval_procfs_root': '/sim/%s/proc' % name}

    inventory = {'all': {'children': {'sim': {
        'vars': dict({'ansible_connection': 'netval_sim', 'ansible_python_interpreter': '/usr/bin/python3',
                      'netval_tier': recorded['tier'], 'netval_fabric_subnet': '10.200.0.0/16',
                      'netval_prediction_costs': sim_costs(scale, forks)},
                     **({'netval_contract': contract} if contract else {})),
        'children': {'new_nodes': {'hosts': dict((name, host_vars(name)) for name in node_names)},
                     'known_good_peers': {'hosts': dict((name, host_vars(name)) for name in peer_names)}}}}}}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'hosts.yml'), 'w', encoding='utf-8') as handle:
        handle.write('---\n# The netval lab\'s simulated fleet (lab/netval_lab/sim.py): %d node(s), %d peer(s), scale %g.\n'
                     % (nodes, peers, scale))
        json.dump(inventory, handle, indent=1, sort_keys=True)   # JSON is YAML
        handle.write('\n')
    with open(os.path.join(folder, 'hosts.json'), 'w', encoding='utf-8') as handle:
        json.dump({'recording': os.path.abspath(recording), 'scale': scale, 'hosts': hosts}, handle, indent=1, sort_keys=True)
    return os.path.join(folder, 'hosts.yml')


def ledger_intervals(folder, window=None):
    """The ledger's sessions as task_timeline.peer_overlap_s takes them: each session on both hosts that carried it (the
    one measured and the one measuring), labelled with the node whose tests it is: [(host, 'hca', node, start, end)]."""
    intervals = []
    try:
        with open(os.path.join(folder, 'ledger.jsonl'), encoding='utf-8') as handle:
            lines = handle.read().splitlines()
    except OSError:
        return intervals
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        start, end = float(entry['start']), float(entry['end'])
        if window is not None and not window[0] <= start <= window[1]:
            continue
        intervals.append((entry['on'], 'hca', entry['node'], start, end))
        intervals.append((entry['node'], 'hca', entry['node'], start, end))
    return intervals
