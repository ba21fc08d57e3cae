# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's accepted state as parsed facts: the baseline, and the same shape from a drift capture.

``build_baseline(node_result, facts, profile, ethtool_stats)`` reads what a validation run has:

* ``node_result``: the node's result as the report role writes it (``reports/<stamp>/nodes/<node>.json``,
  the evidence bundle's ``results.json``): ``node``, ``timestamp``, ``tier``, ``bucket``, ``peer``,
  ``retested_against``, ``evidence`` and ``tests`` (each with ``id``, ``test``, ``metric``, ``subject``,
  ``peer``, ``peer_device``, ``value``, ``unit``, ``status``, ``threshold`` and, where present, ``sweep``
  ([{bytes, value}]) and ``samples`` ([value, ...]));
* ``facts``: the preflight facts the evidence role saves (``preflight_facts``, the bundle's
  ``preflight.json``): ``rdma``, ``pcie``, ``nic``, ``firmware``, ``gpu``, ``host``, each the info module's
  result (a failed module's result, without its data key, counts as not captured);
* ``profile``: the resolved tier profile the node was judged against (``tier_profile_resolved``, the
  bundle's ``thresholds.json``): its ``gpus.count`` and ``nics.count`` say how many devices should exist,
  ``tests.<test>.size`` / ``at_bytes`` the message size of a figure, and its canonical JSON the digest;
* ``ethtool_stats`` (optional): ``{netdev: ethtool -S text | parse_ethtool_stats result | {counter: int}}``,
  for example the bundle's ``commands/ethtool.<netdev>.counters.txt`` (preflight itself reads no ``ethtool -S``).

``current_state(facts, node, timestamp, profile, ethtool_stats)`` builds the same document from a drift
capture (the same six info modules, ideally ``rdma_info counters=true`` and ``nic_info counters=true``), with
no figures.  A device that should exist but does not is an entry with ``present: false`` (a GPU on the PCIe
bus that nvidia-smi does not show, one the kernel log says fell off the bus, or a placeholder when fewer
devices than the profile's count were found), never dropped; ``present: null`` means its tool was not read.

The document (schema ``gpufleet.netval/baseline``, ``schema_version`` 1)::

    {schema, schema_version, kind: baseline|current, node, timestamp, timestamp_seconds, tier,
     profile: {tier, version, digest}, bucket, peer, retested_against, evidence,
     facts: {captured: {rdma, pcie, nic, firmware, gpu, host: bool}, expected: {gpus, nics},
             nics: [{id, name, present, reason, pci_address, netdevs, numa_node, hca_type, board_id, node_guid,
                     ports: [{port, state, phys_state, rate_gbps, link_layer, width, speed}],
                     pcie: {lnksta_speed_gts, lnksta_width, lnkcap_speed_gts, lnkcap_width, status,
                            upstream: [{bdf, lnksta_speed_gts, lnksta_width, lnkcap_speed_gts, lnkcap_width}]},
                     firmware: {version, psid, part_number}, mlxconfig: {PARAM: value} | null,
                     link: {state, speed, width, fec, cable_part_number, cable_serial_number} | null,
                     interfaces: [{netdev, mtu, ring_rx, ring_tx, channels_combined, speed_mbps, link_detected}]}],
             gpus: [{id, index, bus_id, present, reason, name, serial, uuid, ecc_mode,
                     ecc: {volatile_correctable, volatile_uncorrectable, aggregate_correctable, aggregate_uncorrectable},
                     remapped_rows: {correctable, uncorrectable, pending, failure}, retired_pages: {single_bit, double_bit, pending},
                     pcie: {gen_current, gen_max, width_current, width_max}}],
             host: {cmdline_tokens, modules, hugepages: {total, page_size_kib, pools_kib}, governor: {uniform, counts},
                    memlock: {login_soft_kib, soft, hard}, no_turbo, gpu_driver, cuda_version},
             counters: [{subject, device, counter, class, source, value, timestamp, times}]},
     figures: [{id, test, metric, family, subject, peer, peer_device, value, unit, status, better, bytes, size, samples}]}

Every list is sorted and every entry a flat-as-possible dict, so ``json_query`` works on it.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import hashlib
import math
import re
import time

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.packed_json import canonical_json
from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_stats

SCHEMA = 'gpufleet.netval/baseline'
SCHEMA_VERSION = 1
KIND_BASELINE = 'baseline'
KIND_CURRENT = 'current'
KINDS = (KIND_BASELINE, KIND_CURRENT)
SECTIONS = ('rdma', 'pcie', 'nic', 'firmware', 'gpu', 'host')
# The key each info module's result must carry to be usable (as preflight.DATA_KEYS).
_DATA_KEYS = {'rdma': 'devices', 'pcie': 'devices', 'nic': 'nics', 'firmware': 'devices', 'gpu': 'gpu_count', 'host': 'cmdline'}

# Xid codes that mean the GPU or its link is broken (as preflight.FATAL_XIDS); the others are counted apart.
FATAL_XIDS = (48, 63, 64, 74, 79, 92, 94, 95)

# Which raw counters of which source belong to which counter class; the limits per class are data
# (drift_rules.counter_limits_per_hour).  Sources: rdma_sysfs (rdma_info counters=true, per port),
# ethtool (ethtool -S: nic_info counters=true or ethtool_stats), mlxlink (mlx_fw_info link counters),
# kernel_log (gpu_info kernel_log Xid events), nvidia_smi (gpu_info ECC counters).
COUNTER_CLASSES = {
    'link_downed': {'rdma_sysfs': ('link_downed',), 'mlxlink': ('link_down_counter',), 'ethtool': ('link_down_events_phy',)},
    'symbol_error': {'rdma_sysfs': ('symbol_error',), 'mlxlink': ('symbol_errors', 'effective_physical_errors'),
                     'ethtool': ('rx_symbol_err_phy',)},
    'port_rcv_errors': {'rdma_sysfs': ('port_rcv_errors',), 'ethtool': ('rx_crc_errors_phy',)},
    'pause_frames': {'ethtool': ('rx_pause_ctrl_phy', 'tx_pause_ctrl_phy')},
    'rx_discards_phy': {'ethtool': ('rx_discards_phy',)},
    'xid': {'kernel_log': ('xid',)},
    'xid_other': {'kernel_log': ('xid_other',)},
    'ecc_uncorrectable': {'nvidia_smi': ('aggregate_uncorrectable',)},
}
# Per-priority PFC pause frames (mlx5 rx_prio3_pause), not their *_duration or *_transition companions.
_PFC_PAUSE = re.compile(r'^(rx|tx)_prio\d+_pause$')

_STAMP = re.compile(r'^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$')
_ISO = re.compile(r'^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?\s*(Z|[+-]\d{2}:?\d{2}|UTC)?$')


class BaselineError(ValueError):
    """A baseline or current-state document (or its input) is malformed; the message names the field and what was expected."""


def _type_name(value):
    return 'null' if value is None else type(value).__name__


# ---------------------------------------------------------------------------------------------------------------
# Timestamps and the profile digest


def stamp_seconds(value):
    """Seconds since the epoch of a run stamp (``20261201T100556Z``), an ISO time (``2026-12-01T10:05:56+0000``,
    naive means UTC) or a number; None when ``value`` is None or not a time."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    text = str(value).strip()
    match = _STAMP.match(text)
    offset = 0
    if not match:
        match = _ISO.match(text)
        if not match:
            return None
        zone = match.group(7)
        if zone and zone not in ('Z', 'UTC'):
            digits = zone.replace(':', '')
            offset = (int(digits[1:3]) * 3600 + int(digits[3:5]) * 60) * (1 if digits[0] == '+' else -1)
    try:
        fields = [int(part) for part in match.groups()[:6]]
        return float(calendar.timegm(time.struct_time(tuple(fields) + (0, 0, 0))) - offset)
    except (ValueError, OverflowError):
        return None


def profile_ref(profile):
    """{tier, version, digest} of a resolved tier profile: ``version`` is the profile's own (None when it has none),
    ``digest`` always the sha256 of its canonical JSON, so two profiles with the same content share it."""
    if profile is None:
        return {'tier': None, 'version': None, 'digest': None}
    if not isinstance(profile, dict):
        raise BaselineError('profile must be the resolved tier profile (a dict), got %s' % _type_name(profile))
    digest = hashlib.sha256(canonical_json(profile).encode('utf-8')).hexdigest()
    version = profile.get('version')
    return {'tier': profile.get('tier'), 'version': None if version is None else str(version), 'digest': 'sha256:%s' % digest}


# ---------------------------------------------------------------------------------------------------------------
# Reading the info modules' results


def _usable(facts):
    """{section: module result or None}: a result without its data key (a failed module) is None."""
    if facts is None:
        facts = {}
    if not isinstance(facts, dict):
        raise BaselineError('facts must be the preflight facts, a dict of %s to the info modules\' results, got %s'
                            % ('/'.join(SECTIONS), _type_name(facts)))
    usable = {}
    for section in SECTIONS:
        result = facts.get(section)
        if result is not None and not isinstance(result, dict):
            raise BaselineError('facts.%s must be the %s module\'s result (a dict), got %s' % (section, section, _type_name(result)))
        usable[section] = result if isinstance(result, dict) and _DATA_KEYS[section] in result else None
    return usable


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _text(value):
    """``value`` when it is non-empty text, else None: junk in a module result is unknown, never carried along."""
    return value if isinstance(value, str) and value else None


def _flag(value):
    return value if isinstance(value, bool) else None


def _lower(value):
    text = _text(value)
    return text.lower() if text else None


def _limit(value):
    """A memlock limit: KiB or 'unlimited'."""
    return value if _text(value) or _number(value) is not None else None


def _state_active(pinfo):
    return pinfo.get('state_code') == 4 or str(_text(pinfo.get('state')) or '').upper().endswith('ACTIVE')


def _port_entry(port, pinfo):
    return {'port': str(port), 'state': _text(pinfo.get('state')), 'phys_state': _text(pinfo.get('phys_state')),
            'rate_gbps': _number(pinfo.get('rate_gbps')), 'link_layer': _text(pinfo.get('link_layer')),
            'width': _text(pinfo.get('width')), 'speed': _text(pinfo.get('speed')), 'active': _state_active(pinfo)}


def _hop(link):
    link = _dict(link)
    return {'bdf': _lower(link.get('bdf')), 'lnksta_speed_gts': _number(link.get('current_speed_gts')),
            'lnksta_width': _number(link.get('current_width')), 'lnkcap_speed_gts': _number(link.get('max_speed_gts')),
            'lnkcap_width': _number(link.get('max_width'))}


def _pcie_entry(device):
    """LnkSta/LnkCap of a pcie_info device (sysfs first, lspci where sysfs has nothing) and every upstream hop."""
    link = _hop(device.get('link'))
    lspci = _dict(device.get('lspci'))
    for key in ('lnksta_speed_gts', 'lnksta_width', 'lnkcap_speed_gts', 'lnkcap_width'):
        if link[key] is None:
            link[key] = _number(lspci.get(key))
    link.pop('bdf')
    link['status'] = _text(_dict(device.get('assessment')).get('status'))
    link['upstream'] = [_hop(hop) for hop in _list(device.get('upstream'))]
    return link


def _firmware_entry(fw_device, rdma_device):
    fw = _dict(_dict(fw_device).get('firmware'))
    rdma_device = _dict(rdma_device)
    # A newly burnt image is not active until the NIC resets: the running one is what the node uses.
    version = _text(fw.get('fw_version_running')) or _text(fw.get('fw_version')) or _text(rdma_device.get('fw_ver'))
    if not version and not fw:
        return None
    return {'version': version, 'psid': _text(fw.get('psid')) or _text(rdma_device.get('board_id')), 'part_number': _text(fw.get('part_number'))}


def _mlxconfig_entry(fw_device):
    parameters = _dict(_dict(fw_device).get('config')).get('parameters')
    if not isinstance(parameters, dict):
        return None
    return dict((str(key), None if value is None else str(value)) for key, value in sorted(parameters.items(), key=lambda kv: str(kv[0])))


def _link_entry(fw_device):
    link = _dict(fw_device).get('link')
    if not isinstance(link, dict) or link.get('error'):
        return None
    operational = _dict(link.get('operational'))
    module = _dict(link.get('module'))
    return {'state': _text(operational.get('state')), 'speed': _text(operational.get('speed')), 'width': _text(operational.get('width')),
            'fec': _text(operational.get('fec')), 'cable_part_number': _text(module.get('vendor_part_number')),
            'cable_serial_number': _text(module.get('vendor_serial_number'))}


def _interface_entry(netdev, info):
    info = _dict(info)
    ring = _dict(_dict(info.get('ring')).get('current'))
    channels = _dict(_dict(info.get('channels')).get('current'))
    link = _dict(info.get('link'))
    return {'netdev': netdev, 'mtu': _number(info.get('mtu')), 'ring_rx': _number(ring.get('rx')), 'ring_tx': _number(ring.get('tx')),
            'channels_combined': _number(channels.get('combined')), 'speed_mbps': _number(link.get('speed_mbps')),
            'link_detected': _flag(link.get('link_detected'))}


def _empty_nic(name, key, present, reason):
    return {'id': key, 'name': name, 'present': present, 'reason': reason, 'pci_address': None, 'netdevs': [],
            'numa_node': None, 'hca_type': None, 'board_id': None, 'node_guid': None, 'ports': [], 'pcie': None,
            'firmware': None, 'mlxconfig': None, 'link': None, 'interfaces': []}


def _port_order(port):
    return (len(str(port)), str(port))


def _nics(usable, expected):
    rdma, pcie, nic, firmware = usable['rdma'], usable['pcie'], usable['nic'], usable['firmware']
    pcie_by_bdf = dict((_lower(d.get('bdf')), d) for d in _list(_dict(pcie).get('devices')) if isinstance(d, dict) and _lower(d.get('bdf')))
    fw_by_bdf = dict((_lower(k), v) for k, v in _dict(_dict(firmware).get('devices')).items() if _lower(k))
    interfaces = dict((str(k), v) for k, v in _dict(_dict(nic).get('nics')).items())
    entries = []
    seen_pci = set()
    for name, info in sorted(_dict(_dict(rdma).get('devices')).items(), key=lambda kv: str(kv[0])):
        name = str(name)
        info = _dict(info)
        pci = _lower(info.get('pci_address'))
        entry = _empty_nic(name, pci or name, True, None)
        netdevs = sorted(set([n for n in _list(info.get('netdevs')) if _text(n)] +
                             [n for n, i in interfaces.items() if _dict(i).get('rdma_device') == name]))
        ports = _dict(info.get('ports'))
        entry.update({
            'pci_address': pci, 'netdevs': netdevs, 'numa_node': _number(info.get('numa_node')), 'hca_type': _text(info.get('hca_type')),
            'board_id': _text(info.get('board_id')), 'node_guid': _text(info.get('node_guid')),
            'ports': [_port_entry(port, _dict(ports[port])) for port in sorted(ports, key=_port_order)],
            'pcie': _pcie_entry(pcie_by_bdf[pci]) if pci in pcie_by_bdf else None,
            'firmware': _firmware_entry(fw_by_bdf.get(pci), info),
            'mlxconfig': _mlxconfig_entry(fw_by_bdf.get(pci)),
            'link': _link_entry(fw_by_bdf.get(pci)),
            'interfaces': [_interface_entry(n, interfaces[n]) for n in netdevs if n in interfaces],
        })
        if pci:
            seen_pci.add(pci)
        entries.append(entry)
    if rdma is not None:
        # A NIC on the PCIe bus without an RDMA device: its driver did not bind, or the device went away.
        for bdf, device in sorted(pcie_by_bdf.items()):
            if device.get('kind') != 'nic' or bdf in seen_pci or _dict(device.get('assessment')).get('status') == 'virtual_function':
                # An SR-IOV VF is a function of a NIC already listed, not a NIC of its own.
                continue
            entry = _empty_nic(bdf, bdf, False, 'on the PCIe bus without an RDMA device')
            entry.update({'pci_address': bdf, 'pcie': _pcie_entry(device), 'firmware': _firmware_entry(fw_by_bdf.get(bdf), None),
                          'mlxconfig': _mlxconfig_entry(fw_by_bdf.get(bdf)), 'link': _link_entry(fw_by_bdf.get(bdf))})
            entries.append(entry)
        for number in range(len(entries), expected or 0):
            entries.append(_empty_nic(None, 'missing-nic-%d' % (number + 1), False,
                                      'the profile expects %d NICs, %d found' % (expected, len([e for e in entries if e['present']]))))
    return entries


def _gpu_ecc(gpu):
    ecc = _dict(gpu.get('ecc_errors'))
    out = {}
    for scope in ('volatile', 'aggregate'):
        counts = _dict(ecc.get(scope))
        out['%s_correctable' % scope] = _number(counts.get('correctable_total'))
        out['%s_uncorrectable' % scope] = _number(counts.get('uncorrectable_total'))
    return out


def _empty_gpu(key, bus_id, present, reason):
    return {'id': key, 'index': None, 'bus_id': bus_id, 'present': present, 'reason': reason, 'name': None, 'serial': None,
            'uuid': None, 'ecc_mode': None, 'ecc': None, 'remapped_rows': None, 'retired_pages': None, 'pcie': None}


def _gpus(usable, expected):
    gpu, pcie = usable['gpu'], usable['pcie']
    entries = []
    seen = set()
    for record in _list(_dict(gpu).get('gpus')):
        if not isinstance(record, dict):
            continue
        bus = _lower(record.get('bus_id'))
        key = bus or 'index-%s' % _number(record.get('index'))
        if key in seen:
            continue
        entry = _empty_gpu(key, bus, True, None)
        remap = _dict(record.get('remapped_rows'))
        retired = _dict(record.get('retired_pages'))
        link = _dict(record.get('pcie'))
        entry.update({
            'index': _number(record.get('index')), 'name': _text(record.get('name')), 'serial': _text(record.get('serial')),
            'uuid': _text(record.get('uuid')), 'ecc_mode': _text(record.get('ecc_mode_current')), 'ecc': _gpu_ecc(record),
            'remapped_rows': {'correctable': _number(remap.get('correctable')), 'uncorrectable': _number(remap.get('uncorrectable')),
                              'pending': _flag(remap.get('pending')), 'failure': _flag(remap.get('failure'))},
            'retired_pages': {'single_bit': _number(retired.get('single_bit')), 'double_bit': _number(retired.get('double_bit')),
                              'pending': _flag(retired.get('pending'))},
            'pcie': {'gen_current': _number(link.get('gen_current')), 'gen_max': _number(link.get('gen_max')),
                     'width_current': _number(link.get('width_current')), 'width_max': _number(link.get('width_max'))},
        })
        seen.add(key)
        entries.append(entry)
    on_bus = [_lower(_dict(d).get('bdf')) for d in _list(_dict(pcie).get('devices')) if _dict(d).get('kind') == 'gpu']
    if gpu is None:
        # nvidia-smi gave nothing: the GPUs on the bus are unknown, not missing.
        for bdf in sorted(set(b for b in on_bus if b)):
            entries.append(_empty_gpu(bdf, bdf, None, 'nvidia-smi was not read'))
        return entries
    fallen = set(_lower(e.get('bus_id')) for e in _list(_dict(gpu.get('kernel_log')).get('fallen_off_bus')) if isinstance(e, dict))
    for bdf in on_bus:
        if bdf and bdf not in seen:
            entries.append(_empty_gpu(bdf, bdf, False, 'on the PCIe bus but not visible to nvidia-smi'))
            seen.add(bdf)
    for bdf in sorted(b for b in fallen if b and b not in seen):
        entries.append(_empty_gpu(bdf, bdf, False, 'the kernel log says it fell off the bus'))
        seen.add(bdf)
    entries.sort(key=lambda e: str(e['id']))
    visible = len([e for e in entries if e['present']])
    for number in range(len(entries), expected or 0):
        entries.append(_empty_gpu('missing-gpu-%d' % (number + 1), None, False,
                                  'the profile expects %d GPUs, %d visible' % (expected, visible)))
    return entries


def _pool_order(size):
    return int(size) if str(size).isdigit() else 0


def _host(usable):
    host, gpu = usable['host'], usable['gpu']
    if host is None and gpu is None:
        return None
    host = _dict(host)
    hugepages = _dict(host.get('hugepages'))
    governor = _dict(host.get('cpu_governor'))
    memlock = _dict(host.get('memlock'))
    pools = _dict(hugepages.get('pools_kib'))
    read = usable['host'] is not None
    return {
        'cmdline_tokens': [t for t in _list(_dict(host.get('cmdline')).get('tokens')) if _text(t)] if read else None,
        'modules': sorted(str(m) for m in _dict(host.get('modules'))) if read else None,
        'hugepages': {'total': _number(hugepages.get('total')),
                      'page_size_kib': (_number(hugepages.get('page_size_bytes')) or 0) // 1024 or None,
                      'pools_kib': dict((str(size), _number(pools[size])) for size in sorted(pools, key=_pool_order))},
        'governor': {'uniform': _text(governor.get('uniform')),
                     'counts': dict((str(k), _number(v)) for k, v in sorted(_dict(governor.get('counts')).items(), key=lambda kv: str(kv[0])))},
        'memlock': {'login_soft_kib': _limit(_dict(host.get('memlock_login')).get('soft_kib')), 'soft': _limit(memlock.get('soft')),
                    'hard': _limit(memlock.get('hard'))},
        'no_turbo': _flag(host.get('no_turbo')),
        'gpu_driver': _text(_dict(gpu).get('driver_version')),
        'cuda_version': _text(_dict(gpu).get('cuda_version')),
    }


# ---------------------------------------------------------------------------------------------------------------
# Counters


def counter_class(source, name):
    """The counter class (a key of COUNTER_CLASSES) of raw counter ``name`` from ``source``, or None."""
    if source == 'ethtool' and _PFC_PAUSE.match(name):
        return 'pause_frames'
    for klass, sources in COUNTER_CLASSES.items():
        if name in sources.get(source, ()):
            return klass
    return None


def _ethtool_counters(value):
    """{counter: int} from ethtool -S text, a parse_ethtool_stats result, a nic_info entry's counters or a plain dict."""
    if isinstance(value, str):
        try:
            value = parse_ethtool_stats(value)
        except ParseError as exc:
            raise BaselineError('ethtool_stats: %s' % exc)
    value = _dict(value)
    if isinstance(value.get('counters'), dict):
        value = value['counters']
    return dict((str(k), v) for k, v in value.items() if _number(v) is not None)


def _counter(subject, device, name, klass, source, value, stamp, times=None):
    return {'subject': subject, 'device': device, 'counter': name, 'class': klass, 'source': source, 'value': value,
            'timestamp': stamp, 'times': times}


def _counters(usable, nics, gpus, stamp, ethtool_stats):
    out = []
    names_by_pci = dict((n['pci_address'], n['name']) for n in nics if n['pci_address'] and n['name'])
    nic_of_netdev = {}
    for entry in nics:
        for netdev in entry['netdevs']:
            nic_of_netdev.setdefault(netdev, entry['name'])
    for name, info in sorted(_dict(_dict(usable['rdma']).get('devices')).items(), key=lambda kv: str(kv[0])):
        for port, pinfo in sorted(_dict(_dict(info).get('ports')).items(), key=lambda kv: _port_order(kv[0])):
            for counter, value in sorted(_dict(_dict(pinfo).get('counters')).items(), key=lambda kv: str(kv[0])):
                klass = counter_class('rdma_sysfs', str(counter))
                if klass and _number(value) is not None:
                    out.append(_counter('%s/%s' % (name, port), str(name), str(counter), klass, 'rdma_sysfs', value, stamp))
    sampled = {}
    for netdev, info in sorted(_dict(_dict(usable['nic']).get('nics')).items(), key=lambda kv: str(kv[0])):
        info = _dict(info)
        if info.get('counters') is not None:
            sampled[str(netdev)] = (_ethtool_counters(info['counters']), _number(info.get('timestamp')) or stamp)
    for netdev, value in sorted(_dict(ethtool_stats).items(), key=lambda kv: str(kv[0])):
        sampled[str(netdev)] = (_ethtool_counters(value), stamp)
    for netdev, (counters, when) in sorted(sampled.items()):
        device = nic_of_netdev.get(netdev)
        for counter, value in sorted(counters.items()):
            klass = counter_class('ethtool', counter)
            if klass:
                out.append(_counter(device or netdev, device, counter, klass, 'ethtool', value, when))
    for bdf, info in sorted(_dict(_dict(usable['firmware']).get('devices')).items(), key=lambda kv: str(kv[0])):
        link = _dict(_dict(info).get('link'))
        if link.get('error') or not _lower(bdf):
            continue
        device = names_by_pci.get(_lower(bdf))
        for counter, value in sorted(_dict(link.get('counters')).items(), key=lambda kv: str(kv[0])):
            klass = counter_class('mlxlink', str(counter))
            if klass and _number(value) is not None:
                out.append(_counter(device or _lower(bdf), device, str(counter), klass, 'mlxlink', value, stamp))
    gpu = usable['gpu']
    if gpu is not None and isinstance(gpu.get('xid_events'), list):
        by_bus = {}
        for event in gpu['xid_events']:
            if isinstance(event, dict):
                klass = 'xid' if event.get('code') in FATAL_XIDS else 'xid_other'
                by_bus.setdefault((_lower(event.get('bus_id')) or 'gpu', klass), []).append(_text(event.get('time')))
        buses = sorted(set([g['bus_id'] for g in gpus if g['bus_id'] and g['present'] is not None] + [b for b, _k in by_bus]))
        for bus in buses:
            for klass in ('xid', 'xid_other'):
                times = by_bus.get((bus, klass), [])
                out.append(_counter(bus, bus, klass, klass, 'kernel_log', len(times), stamp, times))
    for entry in gpus:
        value = _dict(entry.get('ecc')).get('aggregate_uncorrectable')
        if entry['present'] and value is not None:
            out.append(_counter(entry['bus_id'] or entry['id'], entry['bus_id'], 'aggregate_uncorrectable', 'ecc_uncorrectable',
                                'nvidia_smi', value, stamp))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Figures


def _better(test, metric):
    direction = catalogue.threshold_direction(test.get('threshold'))
    if direction:
        return direction
    unit = _text(test.get('unit')) or (catalogue.unit(metric) if metric in catalogue.METRICS else None)
    return 'lower' if unit in ('us', 'ms', '%', '/s', 'errors') else 'higher'


def _size(profile, test_name):
    settings = _dict(_dict(_dict(profile).get('tests')).get(test_name))
    for key in ('size', 'at_bytes'):
        if _number(settings.get(key)) is not None:
            return settings[key]
    return None


def _subject(value):
    return None if value is None else str(value)


def figures_from_result(node_result, profile=None):
    """The numeric figures of a node result: one entry per test entry with a finite value, one per sweep row.

    Reads ``tests[]``: ``id``, ``test``, ``metric``, ``subject``, ``peer``, ``peer_device``, ``value``, ``unit``,
    ``status``, ``threshold`` (for ``better``), ``samples`` and ``sweep`` ([{bytes, value}]).
    """
    if not isinstance(node_result, dict):
        raise BaselineError('node result must be a dict (the report role\'s nodes/<node>.json), got %s' % _type_name(node_result))
    tests = node_result.get('tests') or []
    if not isinstance(tests, list):
        raise BaselineError('node result tests must be a list, got %s' % _type_name(tests))
    figures = []
    for index, test in enumerate(tests):
        if not isinstance(test, dict):
            raise BaselineError('node result tests[%d] must be a dict, got %s' % (index, _type_name(test)))
        metric = _text(test.get('metric'))
        name = _text(test.get('test')) or (catalogue.test_of_metric(metric) if metric in catalogue.METRICS else None)
        base = {'id': _subject(test.get('id')), 'test': name, 'metric': metric, 'family': catalogue.family(metric),
                'subject': _subject(test.get('subject')), 'peer': _subject(test.get('peer')), 'peer_device': _subject(test.get('peer_device')),
                'unit': _text(test.get('unit')), 'status': _text(test.get('status')), 'better': _better(test, metric)}
        samples = [s for s in _list(test.get('samples')) if _number(s) is not None]
        if metric and _number(test.get('value')) is not None:
            figures.append(dict(base, value=test['value'], bytes=None, size=_size(profile, name), samples=samples or [test['value']]))
        for row in _list(test.get('sweep')) if metric else []:
            row = _dict(row)
            if _number(row.get('value')) is not None and _number(row.get('bytes')) is not None:
                figures.append(dict(base, id='%s@%s' % (base['id'], row['bytes']), value=row['value'], bytes=row['bytes'],
                                    size=row['bytes'], status=_text(row.get('status')), samples=[row['value']]))
    figures.sort(key=lambda f: (str(f['metric']), str(f['subject']), f['bytes'] or 0, str(f['id'])))
    return figures


# ---------------------------------------------------------------------------------------------------------------
# The documents


def _expected(profile, key):
    count = _dict(_dict(profile).get(key)).get('count')
    return int(count) if _number(count) is not None and count > 0 else None


def _facts(facts, profile, stamp, ethtool_stats):
    if ethtool_stats is not None and not isinstance(ethtool_stats, dict):
        raise BaselineError('ethtool_stats must be a dict of netdev to ethtool -S output, got %s' % _type_name(ethtool_stats))
    usable = _usable(facts)
    expected = {'gpus': _expected(profile, 'gpus'), 'nics': _expected(profile, 'nics')}
    nics = _nics(usable, expected['nics'])
    gpus = _gpus(usable, expected['gpus'])
    return {
        'captured': dict((section, usable[section] is not None) for section in SECTIONS),
        'expected': expected,
        'nics': nics,
        'gpus': gpus,
        'host': _host(usable),
        'counters': _counters(usable, nics, gpus, stamp, ethtool_stats),
    }


def _document(kind, node, stamp, profile, facts, ethtool_stats):
    if not isinstance(node, str) or not node:
        raise BaselineError('node (the node name) must be non-empty text, got %r' % (node,))
    seconds = stamp_seconds(stamp)
    if seconds is None:
        raise BaselineError('timestamp must be a run stamp such as 20261201T100556Z, an ISO time or seconds since the epoch, got %r'
                            % (stamp,))
    ref = profile_ref(profile)
    return {
        'schema': SCHEMA, 'schema_version': SCHEMA_VERSION, 'kind': kind, 'node': node,
        'timestamp': str(stamp) if not isinstance(stamp, (int, float)) else time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(seconds)),
        'timestamp_seconds': seconds, 'tier': ref['tier'], 'profile': ref,
        'bucket': None, 'peer': None, 'retested_against': None, 'evidence': None,
        'facts': _facts(facts, profile, seconds, ethtool_stats),
        'figures': [],
    }


def build_baseline(node_result, facts, profile=None, ethtool_stats=None):
    """The baseline of one node from its validation run (see the module docstring for what it reads)."""
    if not isinstance(node_result, dict):
        raise BaselineError('node result must be a dict (the report role\'s nodes/<node>.json), got %s' % _type_name(node_result))
    doc = _document(KIND_BASELINE, node_result.get('node'), node_result.get('timestamp'), profile, facts, ethtool_stats)
    doc['tier'] = node_result.get('tier') or doc['tier']
    for key in ('bucket', 'peer', 'retested_against', 'evidence'):
        doc[key] = node_result.get(key) or None
    doc['figures'] = figures_from_result(node_result, profile)
    return doc


def current_state(facts, node, timestamp, profile=None, ethtool_stats=None):
    """The same document from a drift capture: facts only, no figures."""
    return _document(KIND_CURRENT, node, timestamp, profile, facts, ethtool_stats)


_REQUIRED = {'node': str, 'facts': dict, 'figures': list}
_FACT_KEYS = {'captured': dict, 'expected': dict, 'nics': list, 'gpus': list, 'counters': list}
_TEXT = (str,)
_TEXT_OR_NONE = (str, type(None))
_DICT_OR_NONE = (dict, type(None))
_LIST_OR_NONE = (list, type(None))
_NUMBER_OR_NONE = (int, float, type(None))
_BOOL_OR_NONE = (bool, type(None))
# The nested fields the comparison reads, with the types it can read them as (documents of this schema version).
_ENTRY_FIELDS = {
    'nics': {'id': _TEXT, 'name': _TEXT_OR_NONE, 'present': _BOOL_OR_NONE, 'pci_address': _TEXT_OR_NONE, 'node_guid': _TEXT_OR_NONE,
             'ports': (list,), 'pcie': _DICT_OR_NONE, 'firmware': _DICT_OR_NONE, 'mlxconfig': _DICT_OR_NONE, 'link': _DICT_OR_NONE,
             'interfaces': (list,), 'netdevs': (list,)},
    'gpus': {'id': _TEXT, 'bus_id': _TEXT_OR_NONE, 'present': _BOOL_OR_NONE, 'serial': _TEXT_OR_NONE, 'uuid': _TEXT_OR_NONE,
             'ecc_mode': _TEXT_OR_NONE, 'ecc': _DICT_OR_NONE, 'remapped_rows': _DICT_OR_NONE, 'retired_pages': _DICT_OR_NONE,
             'pcie': _DICT_OR_NONE},
    'counters': {'subject': _TEXT, 'counter': _TEXT, 'source': _TEXT, 'class': _TEXT_OR_NONE, 'value': _NUMBER_OR_NONE,
                 'timestamp': _NUMBER_OR_NONE, 'times': _LIST_OR_NONE},
}
_NESTED_LISTS = {('nics', 'ports'): {'port': _TEXT, 'state': _TEXT_OR_NONE, 'rate_gbps': _NUMBER_OR_NONE, 'active': _BOOL_OR_NONE,
                                     'link_layer': _TEXT_OR_NONE},
                 ('nics', 'interfaces'): {'netdev': _TEXT}}
_HOST_FIELDS = {'cmdline_tokens': _LIST_OR_NONE, 'modules': _LIST_OR_NONE, 'hugepages': _DICT_OR_NONE, 'governor': _DICT_OR_NONE,
                'memlock': _DICT_OR_NONE}
FIGURE_FIELDS = {'metric': _TEXT_OR_NONE, 'value': _NUMBER_OR_NONE, 'bytes': _NUMBER_OR_NONE, 'samples': _LIST_OR_NONE,
                 'better': _TEXT_OR_NONE}


def _kind_names(types):
    names = {'str': 'text', 'NoneType': 'null', 'int': 'a number', 'float': 'a number', 'bool': 'true/false', 'dict': 'a dict', 'list': 'a list'}
    return ' or '.join(sorted(set(names.get(t.__name__, t.__name__) for t in types)))


def field_problems(where, entry, fields):
    problems = []
    for key, types in sorted(fields.items()):
        value = entry.get(key)
        if isinstance(value, bool) and bool not in types:
            value = object()
        if not isinstance(value, types) or (isinstance(value, float) and not math.isfinite(value)):
            problems.append('%s.%s must be %s, got %r' % (where, key, _kind_names(types), entry.get(key)))
    return problems


_TOP_FIELDS = {'tier': _TEXT_OR_NONE, 'profile': _DICT_OR_NONE, 'timestamp': _TEXT_OR_NONE}
_PROFILE_FIELDS = {'digest': _TEXT_OR_NONE, 'version': _TEXT_OR_NONE}


def _nested_problems(what, doc):
    facts = _dict(doc.get('facts'))
    problems = field_problems(what, doc, _TOP_FIELDS)
    if isinstance(doc.get('profile'), dict):
        problems.extend(field_problems('%s.profile' % what, doc['profile'], _PROFILE_FIELDS))
    for section, fields in sorted(_ENTRY_FIELDS.items()):
        for index, entry in enumerate(_list(facts.get(section))):
            if not isinstance(entry, dict):
                continue
            where = '%s.facts.%s[%d]' % (what, section, index)
            problems.extend(field_problems(where, entry, fields))
            for (parent, key), sub in sorted(_NESTED_LISTS.items()):
                if parent != section:
                    continue
                for number, item in enumerate(_list(entry.get(key))):
                    if not isinstance(item, dict):
                        problems.append('%s.%s[%d] must be a dict, got %s' % (where, key, number, _type_name(item)))
                    else:
                        problems.extend(field_problems('%s.%s[%d]' % (where, key, number), item, sub))
            pcie = entry.get('pcie') if section == 'nics' else None
            if isinstance(pcie, dict):
                upstream = pcie.get('upstream')
                if not isinstance(upstream, list) or not all(isinstance(hop, dict) and isinstance(hop.get('bdf'), _TEXT_OR_NONE) for hop in upstream):
                    problems.append('%s.pcie.upstream must be a list of hops (dicts with a bdf), got %r' % (where, upstream))
    host = facts.get('host')
    if not isinstance(host, _DICT_OR_NONE):
        problems.append('%s.facts.host must be a dict or null, got %s' % (what, _type_name(host)))
    elif host is not None:
        problems.extend(field_problems('%s.facts.host' % what, host, _HOST_FIELDS))
        for key in ('cmdline_tokens', 'modules'):
            if isinstance(host.get(key), list) and not all(isinstance(item, str) for item in host[key]):
                problems.append('%s.facts.host.%s must be a list of text, got %r' % (what, key, host[key]))
        for key, sub in (('hugepages', 'pools_kib'), ('governor', 'counts')):
            if isinstance(host.get(key), dict) and not isinstance(host[key].get(sub), _DICT_OR_NONE):
                problems.append('%s.facts.host.%s.%s must be a dict or null, got %r' % (what, key, sub, host[key].get(sub)))
    for index, entry in enumerate(_list(doc.get('figures'))):
        if isinstance(entry, dict):
            problems.extend(field_problems('%s.figures[%d]' % (what, index), entry, FIGURE_FIELDS))
    return problems


def check_document(doc, what='baseline'):
    """Raise BaselineError naming what is wrong when ``doc`` is not a document of this schema and version; return it."""
    if not isinstance(doc, dict):
        raise BaselineError('%s must be a dict (a %s document, schema_version %d), got %s' % (what, SCHEMA, SCHEMA_VERSION, _type_name(doc)))
    if doc.get('schema') != SCHEMA:
        raise BaselineError('%s.schema must be %r, got %r' % (what, SCHEMA, doc.get('schema')))
    version = doc.get('schema_version')
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise BaselineError('%s.schema_version must be %d (this collection reads version %d only), got %r'
                            % (what, SCHEMA_VERSION, SCHEMA_VERSION, version))
    if doc.get('kind') not in KINDS:
        raise BaselineError('%s.kind must be one of %s, got %r' % (what, ', '.join(KINDS), doc.get('kind')))
    problems = []
    for key, kind in sorted(_REQUIRED.items()):
        if not isinstance(doc.get(key), kind):
            problems.append('%s.%s must be a %s, got %s' % (what, key, kind.__name__, _type_name(doc.get(key))))
    for key, kind in sorted(_FACT_KEYS.items()):
        value = _dict(doc.get('facts')).get(key)
        if isinstance(doc.get('facts'), dict) and not isinstance(value, kind):
            problems.append('%s.facts.%s must be a %s, got %s' % (what, key, kind.__name__, _type_name(value)))
    if stamp_seconds(doc.get('timestamp_seconds')) is None:
        problems.append('%s.timestamp_seconds must be seconds since the epoch, got %r' % (what, doc.get('timestamp_seconds')))
    for section in ('nics', 'gpus', 'counters'):
        for index, entry in enumerate(_list(_dict(doc.get('facts')).get(section))):
            if not isinstance(entry, dict):
                problems.append('%s.facts.%s[%d] must be a dict, got %s' % (what, section, index, _type_name(entry)))
    for index, entry in enumerate(_list(doc.get('figures'))):
        if not isinstance(entry, dict):
            problems.append('%s.figures[%d] must be a dict, got %s' % (what, index, _type_name(entry)))
    if not problems:
        problems = _nested_problems(what, doc)
    if problems:
        if len(problems) > 10:
            problems = problems[:10] + ['and %d more' % (len(problems) - 10)]
        raise BaselineError('; '.join(problems))
    return doc
