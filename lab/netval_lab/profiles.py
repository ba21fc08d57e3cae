"""Lab hardware profiles: load, validate, resolve.

A profile (``lab/profiles/<name>.yml``) describes the hardware of the lab's
new nodes (and, optionally, overrides for its known-good peers).  Profiles
stay short: per-tier defaults fill every field a profile leaves out, and
``extends: <other profile>`` inherits everything from another profile,
merging ``nics`` entries by ``name``.

The schema is the python dict ``SCHEMA`` below.  Every key of every file is
checked against it before merging, so a typo is reported with the file and
the dotted field (``lab/profiles/x.yml: nics[2].rate_gpbs: unknown field
(did you mean rate_gbps?)``).
"""

import copy
import difflib
import os
import re

import yaml

PROFILE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'profiles')
REPO_ROOT = os.path.dirname(os.path.dirname(PROFILE_DIR))


class ProfileError(ValueError):
    """A profile file is missing, unreadable or does not match the schema."""


class Enum(object):
    def __init__(self, *choices):
        self.choices = choices


class MapOf(object):
    """A mapping with free-form string keys and values of one spec."""

    def __init__(self, spec):
        self.spec = spec


NUMBER = (int, float)
TIER_NAMES = ('100G', '200G', '400G', '800G', 'roce-pair-2x100g')
RESULTS = Enum('Pass', 'Fail', 'Warn', 'Skip')

PCIE_SPEC = {
    'lnkcap_gts': NUMBER, 'lnkcap_width': int, 'lnksta_gts': NUMBER, 'lnksta_width': int,
    'upstream_max_gts': NUMBER, 'upstream_width': int,
}

NIC_SPEC = {
    'name': str, 'netdev': str, 'pci_address': str, 'numa_node': int,
    'link_layer': Enum('InfiniBand', 'Ethernet'), 'state': Enum('ACTIVE', 'DOWN', 'INIT', 'ARMED'),
    'phys_state': Enum('LinkUp', 'Polling', 'Disabled'),
    'rate_gbps': int, 'pcie': PCIE_SPEC, 'fw_version': str, 'psid': str, 'board_id': str,
    'part_number': str, 'hca_type': str, 'description': str,
    'cqe_compression': Enum('BALANCED', 'AGGRESSIVE'), 'rx_ring': int, 'channels': int,
    'bw_gbytes_s': NUMBER, 'gdr_bw_gbytes_s': NUMBER, 'lat_us': NUMBER, 'gid_index': int,
    'pause_rate_per_s': NUMBER, 'mtu': int,
    # The netdev's MTU on a real site (site.py): IPoIB 4092 by default, 2044 where the site runs the smaller one.
    'netdev_mtu': int,
    # A bad cable on InfiniBand: the port's symbol_error counter grows by this much with every RDMA session it carries.
    'symbol_errors_per_session': int,
    # ACS request/completion redirection on the switch ports between this NIC and its GPUDirect GPU (lspci ACSCtl).
    'acs_on_gpu_path': bool,
}
# mlx5's pre-set RX/TX ring maximum (the kernel's 1 << MLX5E_PARAMS_MAXIMUM_LOG_RQ_SIZE): no mlx5 netdev runs a larger ring.
RING_MAX = 8192

GPU_SPEC = {
    'count_expected': int, 'count_present': int, 'model': str, 'pci_device_id': str,
    'numa_nodes': [int], 'xid_lines': [str], 'driver_version': str, 'cuda_version': str,
    'pcie_gen': int, 'pcie_width': int, 'nvlink': str,
    'ecc': {'volatile_dram_uncorrectable': int, 'volatile_dram_correctable': int,
            'aggregate_dram_uncorrectable': int, 'aggregate_dram_correctable': int},
    # How GPUDirect RDMA runs here: peermem (proprietary driver, nvidia_peermem loaded, a CUDA perftest), dmabuf (the open
    # kernel modules, no nvidia_peermem, a perftest with --use_cuda_dmabuf) or none (the distribution's perftest, built without CUDA).
    'gdr_mode': Enum('peermem', 'dmabuf', 'none'),
    # nvidia-fabricmanager on an NVSwitch system (running, stopped), or no NVSwitch at all (absent).
    'fabric_manager': Enum('running', 'stopped', 'absent'),
    'persistence_mode': bool,
}

HOST_SPEC = {
    'cmdline': [str], 'hugepages_total': int, 'hugepagesz': Enum('2M', '1G'), 'governor': str,
    'no_turbo': bool, 'memlock': (int, str), 'modules': [str], 'cpus': int, 'numa_nodes': int,
    'mem_total_kb': int, 'kernel_lines': [str], 'kernel_version': str, 'iommu': str,
    # Emulated tools this box does not have installed (e.g. dcgmi): their wrappers are left out of bin/.
    'tools_missing': [str],
    # The node's local time zone (an IANA name): journalctl prints and reads times in it, as systemd does.
    'timezone': str,
    # The provider's burn-in, this many hours before the run: link events on every NIC and application Xids in the kernel log.
    'burnin_hours_ago': NUMBER,
}

# busbw_gbs: what each rail NCCL uses carries over NET/IB (the runbook's per-NIC figure): a two-host job's bus bandwidth is
# that times the rails every host uses.  socket_busbw_gbs: the job's figure over NET/Socket.  hcas_used: NCCL opens at most
# this many of the HCAs NCCL_IB_HCA selects on this box (the others fail to open), so a job can ride fewer rails than the
# node has; unset, every selected HCA.  transport Socket: NCCL finds no usable IB device here (no plugin, IB disabled).
NCCL_SPEC = {
    'transport': Enum('IB', 'Socket'), 'busbw_gbs': NUMBER, 'socket_busbw_gbs': NUMBER, 'hcas_used': int, 'gdr': bool,
    'version': str, 'nccl_tests_version': str,
}

# seconds_by_level: how long an emulated `dcgmi diag -r N` takes, by level (the runbook's level 3 takes 10-20 minutes;
# a lab profile sets a few seconds so that running it while the node waits for a peer shows in a run).
# hostengine: nv-hostengine (nvidia-dcgm.service) running or stopped: dcgmi then cannot connect to it.
DCGMI_SPEC = {'version': str, 'results': MapOf(RESULTS), 'seconds_by_level': MapOf(NUMBER), 'hostengine': Enum('running', 'stopped')}

HARDWARE_SPEC = {
    'nic_count': int, 'nic_defaults': dict(NIC_SPEC), 'nics': [NIC_SPEC],
    'gpus': GPU_SPEC, 'host': HOST_SPEC, 'nccl': NCCL_SPEC, 'dcgmi': DCGMI_SPEC,
}

SCHEMA = dict(HARDWARE_SPEC)
SCHEMA.update({
    'name': str, 'tier': Enum(*TIER_NAMES), 'description': str, 'extends': str,
    'peer': HARDWARE_SPEC,
})

# Per tier: what a healthy machine of that tier looks like.
_CX7 = {'hca_type': 'MT4129', 'part_number': 'MCX75310AAS-NEAT', 'psid': 'MT_0000000838',
        'board_id': 'MT_0000000838', 'fw_version': '28.39.2048',
        'description': 'NVIDIA ConnectX-7 HHHL Adapter Card; 400Gb/s (NDR); single-port OSFP; PCIe 5.0 x16'}
TIER_DEFAULTS = {
    '100G': {
        'nic_count': 2,
        'nic': {'hca_type': 'MT4123', 'part_number': 'MCX653105A-ECAT', 'psid': 'MT_0000000222',
                'board_id': 'MT_0000000222', 'fw_version': '20.39.1002', 'link_layer': 'InfiniBand',
                'description': 'ConnectX-6 VPI adapter card; 100Gb/s (HDR100, EDR IB and 100GbE); single-port QSFP56',
                'rate_gbps': 100, 'pcie': {'lnkcap_gts': 16, 'lnkcap_width': 16, 'lnksta_gts': 16, 'lnksta_width': 16,
                                           'upstream_max_gts': 16, 'upstream_width': 16},
                'bw_gbytes_s': 12.1, 'gdr_bw_gbytes_s': 11.9, 'lat_us': 1.05},
        'gpus': {'count_expected': 8, 'model': 'NVIDIA A100 80GB PCIe', 'pci_device_id': '0x20b5',
                 'pcie_gen': 4, 'pcie_width': 16, 'nvlink': 'NV12', 'fabric_manager': 'absent'},
        'nccl': {'busbw_gbs': 11.2},
        'host': {'cpus': 32, 'numa_nodes': 2},
    },
    '200G': {
        'nic_count': 8,
        'nic': {'hca_type': 'MT4123', 'part_number': 'MCX653105A-HDAT', 'psid': 'MT_0000000223',
                'board_id': 'MT_0000000223', 'fw_version': '20.39.1002', 'link_layer': 'InfiniBand',
                'description': 'ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; single-port QSFP56',
                'rate_gbps': 200, 'pcie': {'lnkcap_gts': 16, 'lnkcap_width': 16, 'lnksta_gts': 16, 'lnksta_width': 16,
                                           'upstream_max_gts': 16, 'upstream_width': 16},
                'bw_gbytes_s': 23.5, 'gdr_bw_gbytes_s': 23.0, 'lat_us': 1.08},
        'gpus': {'count_expected': 8, 'model': 'NVIDIA A100-SXM4-80GB', 'pci_device_id': '0x20b2',
                 'pcie_gen': 4, 'pcie_width': 16, 'nvlink': 'NV12'},
        'nccl': {'busbw_gbs': 22.5},
        'host': {'cpus': 64, 'numa_nodes': 2},
    },
    '400G': {
        'nic_count': 8,
        'nic': dict(_CX7, link_layer='InfiniBand', rate_gbps=400,
                    pcie={'lnkcap_gts': 32, 'lnkcap_width': 16, 'lnksta_gts': 32, 'lnksta_width': 16,
                          'upstream_max_gts': 32, 'upstream_width': 16},
                    bw_gbytes_s=47.0, gdr_bw_gbytes_s=46.5, lat_us=1.1),
        'gpus': {'count_expected': 8, 'model': 'NVIDIA H100 80GB HBM3', 'pci_device_id': '0x2330',
                 'pcie_gen': 5, 'pcie_width': 16, 'nvlink': 'NV18'},
        'nccl': {'busbw_gbs': 46.0},
        'host': {'cpus': 64, 'numa_nodes': 2},
    },
    '800G': {
        'nic_count': 8,
        'nic': {'hca_type': 'MT4131', 'part_number': 'C8180', 'psid': 'MT_0000001093',
                'board_id': 'MT_0000001093', 'fw_version': '40.44.1036', 'link_layer': 'InfiniBand',
                'description': 'NVIDIA ConnectX-8 SuperNIC; 800Gb/s (XDR); single-port OSFP; PCIe 6.0 x16',
                'rate_gbps': 800, 'pcie': {'lnkcap_gts': 64, 'lnkcap_width': 16, 'lnksta_gts': 64, 'lnksta_width': 16,
                                           'upstream_max_gts': 64, 'upstream_width': 16},
                'bw_gbytes_s': 92.0, 'gdr_bw_gbytes_s': 91.0, 'lat_us': 1.05},
        'gpus': {'count_expected': 8, 'model': 'NVIDIA B200', 'pci_device_id': '0x2901',
                 'pcie_gen': 6, 'pcie_width': 16, 'nvlink': 'NV18'},
        'nccl': {'busbw_gbs': 90.0},
        'host': {'cpus': 112, 'numa_nodes': 2, 'hugepages_total': 256,
                 'cmdline': ['BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic', 'root=UUID=0d6e2f8a-3c1b-4e7d-8f2a-9b5c4d3e2f1a', 'ro',
                             'quiet', 'iommu=pt', 'intel_iommu=on', 'default_hugepagesz=1G', 'hugepagesz=1G', 'hugepages=256']},
    },
    'roce-pair-2x100g': {
        'nic_count': 4,
        'nic': dict(_CX7, link_layer='Ethernet', rate_gbps=100, part_number='MCX713106AS-VEAT',
                    description='NVIDIA ConnectX-7 Ethernet adapter; dual-port QSFP112; PCIe 5.0 x4 (multi-host)',
                    fw_version='28.45.1200', psid='NVD0000000061', board_id='NVD0000000061',
                    pcie={'lnkcap_gts': 32, 'lnkcap_width': 4, 'lnksta_gts': 32, 'lnksta_width': 4,
                          'upstream_max_gts': 32, 'upstream_width': 4},
                    bw_gbytes_s=11.6, gdr_bw_gbytes_s=11.4, lat_us=1.9, gid_index=3),
        'gpus': {'count_expected': 1, 'model': 'NVIDIA GB10', 'pci_device_id': '0x2e12',
                 'pcie_gen': 5, 'pcie_width': 16, 'nvlink': 'NV18', 'fabric_manager': 'absent'},
        'nccl': {'busbw_gbs': 11.0},
        'host': {'cpus': 20, 'numa_nodes': 1},
    },
}

COMMON_NIC = {
    'state': 'ACTIVE', 'phys_state': 'LinkUp', 'cqe_compression': 'BALANCED', 'rx_ring': RING_MAX, 'channels': 64,
    'gid_index': 0, 'pause_rate_per_s': 0, 'mtu': 4096, 'acs_on_gpu_path': False,
}
COMMON_GPUS = {'xid_lines': [], 'driver_version': '550.127.08', 'cuda_version': '12.4',
               'gdr_mode': 'peermem', 'fabric_manager': 'running', 'persistence_mode': True,
               'ecc': {'volatile_dram_uncorrectable': 0, 'volatile_dram_correctable': 0,
                       'aggregate_dram_uncorrectable': 0, 'aggregate_dram_correctable': 0}}
COMMON_HOST = {
    'cmdline': ['BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64', 'root=UUID=5b3c1c2e-7d5e-4c2b-9a63-6f0e0c1d2a11', 'ro',
                'quiet', 'iommu=pt', 'intel_iommu=on', 'default_hugepagesz=1G', 'hugepagesz=1G', 'hugepages=128'],
    'hugepages_total': 128, 'hugepagesz': '1G', 'governor': 'performance', 'no_turbo': False, 'memlock': 'unlimited',
    'modules': ['mlx5_ib', 'mlx5_core', 'ib_uverbs', 'ib_core', 'ib_umad', 'rdma_cm', 'rdma_ucm', 'nvidia_peermem', 'nvidia'],
    'mem_total_kb': 2113531904, 'kernel_lines': [], 'kernel_version': '6.1.0-28-amd64', 'iommu': 'pt',
    'timezone': 'UTC', 'burnin_hours_ago': 0,
}
COMMON_NCCL = {'transport': 'IB', 'gdr': True, 'version': '2.23.4', 'nccl_tests_version': '2.17.6', 'socket_busbw_gbs': 2.0}
COMMON_DCGMI = {'version': '3.3.6', 'results': {}, 'seconds_by_level': {}, 'hostengine': 'running'}

DCGMI_TESTS = {
    'Deployment': ['Denylist', 'NVML Library', 'CUDA Main Library', 'Permissions and OS Blocks', 'Persistence Mode',
                   'Environment Variables', 'Page Retirement/Row Remap', 'Graphics Processes', 'Inforom'],
    'Integration': ['PCIe'],
    'Hardware': ['GPU Memory'],
    'Stress': ['Targeted Stress', 'Targeted Power', 'Memory Bandwidth'],
}

# Which profile a peer of each tier is built from (peers are healthy machines), by the rails' link layer.
TIER_PEER_PROFILE = {'100G': 'healthy-100g', '400G': 'healthy-400g', '800G': 'healthy-800g'}
ROCE_PEER_PROFILE = {'400G': 'healthy-400g-roce'}

# The first NICs' PCI layout: (host bridge bus, NUMA node) per slot; NIC at bus+3, GPU at bus+4.
SLOT_BASES = [0x17, 0x38, 0x49, 0x5a, 0x98, 0xb8, 0xc8, 0xd8, 0x07, 0x27, 0x67, 0x77, 0x87, 0xa7, 0xe7, 0xf0]


def list_profiles():
    """Names of the profiles under lab/profiles/ (sorted)."""
    try:
        names = os.listdir(PROFILE_DIR)
    except OSError:
        return []
    return sorted(name[:-4] for name in names if name.endswith('.yml'))


def _display(path):
    try:
        rel = os.path.relpath(path, REPO_ROOT)
    except ValueError:
        return path
    return path if rel.startswith('..') else rel


def _locate(name_or_path):
    if os.sep in name_or_path or name_or_path.endswith(('.yml', '.yaml')):
        return os.path.abspath(name_or_path)
    if not re.match(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$', name_or_path):
        raise ProfileError('bad profile name %r' % (name_or_path,))
    return os.path.join(PROFILE_DIR, name_or_path + '.yml')


def _type_name(spec):
    if spec is NUMBER:
        return 'number'
    if isinstance(spec, tuple):
        return ' or '.join(_type_name(entry) for entry in spec)
    if isinstance(spec, type):
        return {'str': 'string', 'int': 'integer', 'bool': 'boolean', 'float': 'number'}.get(spec.__name__, spec.__name__)
    return 'value'


def _check(value, spec, field, where):
    """Validate value against spec; raise ProfileError naming where and the dotted field."""
    def fail(reason):
        raise ProfileError('%s: %s: %s' % (where, field or '<top>', reason))

    if isinstance(spec, dict):
        if not isinstance(value, dict):
            fail('expected a mapping, got %s' % type(value).__name__)
        for key, item in value.items():
            sub = '%s.%s' % (field, key) if field else str(key)
            if key not in spec:
                close = difflib.get_close_matches(str(key), [str(k) for k in spec], n=1)
                raise ProfileError('%s: %s: unknown field%s' % (where, sub, ' (did you mean %s?)' % close[0] if close else ''))
            _check(item, spec[key], sub, where)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            fail('expected a list, got %s' % type(value).__name__)
        for index, item in enumerate(value):
            _check(item, spec[0], '%s[%d]' % (field, index), where)
    elif isinstance(spec, Enum):
        if value not in spec.choices:
            fail('%r is not one of %s' % (value, ', '.join(spec.choices)))
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            fail('expected a mapping, got %s' % type(value).__name__)
        for key, item in value.items():
            _check(item, spec.spec, '%s.%s' % (field, key), where)
    else:
        types = spec if isinstance(spec, tuple) else (spec,)
        if isinstance(value, bool) and bool not in types:
            fail('expected %s, got boolean' % _type_name(spec))
        if not isinstance(value, types):
            fail('expected %s, got %s %r' % (_type_name(spec), type(value).__name__, value))


def _read_file(path):
    shown = _display(path)
    try:
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise ProfileError('%s: cannot read profile: %s (known profiles: %s)'
                           % (shown, exc.strerror, ', '.join(list_profiles())))
    except yaml.YAMLError as exc:
        raise ProfileError('%s: not valid YAML: %s' % (shown, exc))
    if not isinstance(data, dict):
        raise ProfileError('%s: expected a mapping at the top level' % shown)
    _check(data, SCHEMA, '', shown)
    return data


def deep_merge(base, override):
    """Merge override into a copy of base; lists of dicts with 'name' merge by name, other lists replace."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        elif (isinstance(value, list) and isinstance(result.get(key), list) and value
              and all(isinstance(item, dict) and 'name' in item for item in value)
              and all(isinstance(item, dict) and 'name' in item for item in result[key])):
            merged = copy.deepcopy(result[key])
            index = {item['name']: pos for pos, item in enumerate(merged)}
            for item in value:
                if item['name'] in index:
                    merged[index[item['name']]] = deep_merge(merged[index[item['name']]], item)
                else:
                    merged.append(copy.deepcopy(item))
            result[key] = merged
        else:
            result[key] = copy.deepcopy(value)
    return result


def _load_raw(path, seen):
    if path in seen:
        raise ProfileError('%s: extends loop (%s)' % (_display(path), ' -> '.join(_display(p) for p in seen + [path])))
    data = _read_file(path)
    parent = data.pop('extends', None)
    if parent is None:
        return data
    base = _load_raw(_locate(parent), seen + [path])
    base.pop('name', None)
    base.pop('description', None)
    return deep_merge(base, data)


def _default_nic_name(tier, index):
    if tier == 'roce-pair-2x100g':
        return ['rocep1s0f0', 'rocep1s0f1', 'roceP2p1s0f0', 'roceP2p1s0f1'][index % 4]
    return 'mlx5_%d' % index


def _default_pci(tier, index):
    if tier == 'roce-pair-2x100g':
        return ['0000:01:00.0', '0000:01:00.1', '0002:01:00.0', '0002:01:00.1'][index % 4]
    return '0000:%02x:00.0' % (SLOT_BASES[index % len(SLOT_BASES)] + 3)


def _default_netdev(tier, name, pci, link_layer):
    match = re.match(r'^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.(\d)$', pci)
    if not match:
        return None
    domain, bus, dev, func = int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16), match.group(4)
    prefix = 'P%d' % domain if domain else ''
    if link_layer == 'InfiniBand':
        return 'ib%sp%ds%d' % (prefix, bus, dev) if tier != '100G' else 'ibs%d' % (bus,)
    del name
    return 'en%sp%ds%df%snp%s' % (prefix, bus, dev, func, func)


def complete_hardware(hw, tier, where):
    """Fill a (merged) hardware section with the tier defaults and derived fields."""
    tier_defaults = TIER_DEFAULTS[tier]
    hw = copy.deepcopy(hw)
    nic_defaults = deep_merge(deep_merge(COMMON_NIC, tier_defaults['nic']), hw.pop('nic_defaults', {}))
    count = hw.pop('nic_count', None)
    given = hw.get('nics', [])
    if count is None:
        count = max(tier_defaults['nic_count'], len(given))
    named = {}
    for item in given:
        if 'name' not in item:
            raise ProfileError('%s: nics: every entry needs a name' % where)
        named[item['name']] = item
    nics = []
    default_names = [_default_nic_name(tier, index) for index in range(count)]
    order = default_names + [item['name'] for item in given if item['name'] not in default_names]
    for index, name in enumerate(order):
        nic = deep_merge(nic_defaults, named.get(name, {}))
        nic['name'] = name
        nic.setdefault('pci_address', _default_pci(tier, index))
        nic.setdefault('numa_node', 0 if index < max(1, count // 2) else 1)
        if tier_defaults['host']['numa_nodes'] == 1:
            nic['numa_node'] = 0
        nic.setdefault('netdev', _default_netdev(tier, name, nic['pci_address'], nic['link_layer']) or 'eth%d' % index)
        if nic['state'] != 'ACTIVE' and 'phys_state' not in named.get(name, {}):
            nic['phys_state'] = 'Disabled'
        nic['gdr_bw_gbytes_s'] = min(nic['gdr_bw_gbytes_s'], nic['bw_gbytes_s'])
        if not 0 < nic['rx_ring'] <= RING_MAX:
            raise ProfileError('%s: nics[%d].rx_ring: %d is not a ring an mlx5 netdev can run (1-%d)' % (where, index, nic['rx_ring'], RING_MAX))
        if not re.match(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$', nic['pci_address']):
            raise ProfileError('%s: nics[%d].pci_address: %r is not a PCI address like 0000:1a:00.0'
                               % (where, index, nic['pci_address']))
        nics.append(nic)
    hw['nics'] = nics
    hw['gpus'] = deep_merge(deep_merge(COMMON_GPUS, tier_defaults['gpus']), hw.get('gpus', {}))
    hw['gpus'].setdefault('count_present', hw['gpus']['count_expected'])
    explicit_modules = 'modules' in (hw.get('host') or {})
    hw['host'] = deep_merge(deep_merge(COMMON_HOST, tier_defaults['host']), hw.get('host', {}))
    if hw['gpus']['gdr_mode'] == 'dmabuf' and not explicit_modules:
        # The open kernel modules reach the NIC through dma-buf: nvidia_peermem is not built for them.
        hw['host']['modules'] = [name for name in hw['host']['modules'] if name != 'nvidia_peermem']
    hw['nccl'] = deep_merge(deep_merge(COMMON_NCCL, tier_defaults['nccl']), hw.get('nccl', {}))
    hw['dcgmi'] = deep_merge(COMMON_DCGMI, hw.get('dcgmi', {}))
    results = {}
    for tests in DCGMI_TESTS.values():
        for test in tests:
            results[test] = 'Pass'
    results.update(hw['dcgmi']['results'])
    hw['dcgmi']['results'] = results
    return hw


def load_profile(name_or_path):
    """Load, validate and complete a profile; returns a dict (see module docstring)."""
    path = _locate(name_or_path)
    data = _load_raw(path, [])
    shown = _display(path)
    for key in ('name', 'tier'):
        if key not in data:
            raise ProfileError('%s: %s: required field is missing' % (shown, key))
    peer = data.pop('peer', {})
    hw = {key: data.pop(key) for key in list(HARDWARE_SPEC) if key in data}
    profile = dict(data)
    profile['path'] = path
    profile['hardware'] = complete_hardware(hw, data['tier'], shown)
    profile['peer_overrides'] = peer
    profile['raw_hardware'] = hw
    return profile


def resolve_role(profile, role):
    """The hardware (nics/gpus/host/nccl/dcgmi) of a 'new' node or a 'peer' of this profile."""
    if role == 'new':
        return copy.deepcopy(profile['hardware'])
    if role != 'peer':
        raise ProfileError('role must be new or peer, not %r' % (role,))
    roce = (profile['hardware']['nics'] or [{}])[0].get('link_layer') == 'Ethernet'
    base_name = (ROCE_PEER_PROFILE if roce else TIER_PEER_PROFILE).get(profile['tier'])
    if base_name and base_name in list_profiles():
        raw = load_profile(base_name)['raw_hardware']
    else:
        raw = profile['raw_hardware']
    merged = deep_merge(raw, profile.get('peer_overrides') or {})
    return complete_hardware(merged, profile['tier'], _display(profile['path']) + ': peer')
