# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe inventory, topology-aware: ``lspci -vvv`` text and the sysfs PCI tree.

* ``parse_lspci(text)`` reads ``lspci -vvv`` (also ``-s BDF``, ``-D``, ``-nn``)
  or the bare LnkCap/LnkSta lines people paste from a grep.
* ``read_pci_link``, ``walk_upstream`` and ``read_pci_devices`` read
  ``<sysfs>/bus/pci/devices/<bdf>/`` (or the real ``<sysfs>/devices/pci*/...``
  directories when the bus symlinks are absent).
* ``assess_link`` compares a device's link with its own capability and with
  every upstream bridge, so a Gen5 NIC in a Gen4 slot is ``slot_limited``
  (not a faulty NIC) and an idle GPU at 2.5GT/s is ``idle_downtrained``.

Speeds are GT/s as floats, widths are lane counts as ints; anything that
cannot be read is None (unknown), never assumed healthy.  An SR-IOV virtual
function has no link of its own (lspci prints "Speed unknown (downgraded),
Width x0 (downgraded)" for it, sysfs "Unknown" and 0): it is recognised
(``virtual_function``) and never judged as a link.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from ansible_collections.gpufleet.netval.plugins.module_utils.tool_output import tool_parser
from ansible_collections.gpufleet.netval.plugins.module_utils.sysfs import read_value as _read

# The PCIe generations' transfer rates, GT/s.
PCIE_SPEEDS_GTS = (2.5, 5.0, 8.0, 16.0, 32.0, 64.0)
_GENERATION = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

# Class code prefixes (sysfs ``class`` is 0xCCSSPP: class, subclass, prog-if).
CLASS_ETHERNET = '0x0200'
CLASS_INFINIBAND = '0x0207'
CLASS_NETWORK = '0x02'
CLASS_VGA = '0x0300'
CLASS_3D = '0x0302'
NIC_CLASSES = (CLASS_ETHERNET, CLASS_INFINIBAND)
GPU_CLASSES = (CLASS_VGA, CLASS_3D)
VENDOR_MELLANOX = '0x15b3'
VENDOR_NVIDIA = '0x10de'

_BDF = r'(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
BDF_RE = re.compile(r'^%s$' % _BDF)
_FULL_BDF_RE = re.compile(r'^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')
# Device header: "b3:00.0 Ethernet controller: ...", "0000:1b:00.0 ...", or -P/-PP paths "0000:00:01.0/01:00.0 ...".
_HEADER_RE = re.compile(r'^(%s)((?:/[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])*)(?:\s+(.*))?$' % _BDF)
_ANNOTATION = r'(?:\s*\((ok|downgraded|strange)\))?'
_SPEED_RE = re.compile(r'Speed\s+(unknown|[0-9]+(?:\.[0-9]+)?\s*GT/s)' + _ANNOTATION, re.IGNORECASE)
_WIDTH_RE = re.compile(r'Width\s+x([0-9]+)' + _ANNOTATION)
_LNKCAP_RE = re.compile(r'^\s*LnkCap:\s*(.*)$')
_LNKSTA_RE = re.compile(r'^\s*LnkSta:\s*(.*)$')
_LNKCAP2_RE = re.compile(r'^\s*LnkCap2:\s*Supported Link Speeds:\s*([^,]*)')
_SRIOV_COUNTS_RE = re.compile(r'Initial VFs:\s*(\d+),\s*Total VFs:\s*(\d+),\s*Number of VFs:\s*(\d+)')
_VIRTUAL_FUNCTION_RE = re.compile(r'Virtual Function|\bVF\b')
# Device IDs of SR-IOV virtual functions, for lspci -n output and trees without a physfn link (vendor:device).
VF_DEVICE_IDS = frozenset((
    # Mellanox/NVIDIA: ConnectX-2, ConnectX-3 (Pro), Connect-IB, ConnectX-4, -4 Lx, -5, -5 Ex, -6, mlx5Gen (ConnectX-6 Dx and later)
    '15b3:1002', '15b3:1004', '15b3:1012', '15b3:1014', '15b3:1016', '15b3:1018', '15b3:101a', '15b3:101c', '15b3:101e',
    # Intel: 82576, 82599, X540, X550, XL710, XL710 (Hyper-V), X722, Ethernet Adaptive Virtual Function (iavf)
    '8086:10ca', '8086:10ed', '8086:1515', '8086:1565', '8086:154c', '8086:1571', '8086:37cd', '8086:1889',
    # Broadcom: BCM57810 (bnx2x), NetXtreme-E Ethernet and RDMA, BCM5750X Ethernet and RDMA
    '14e4:16af', '14e4:16dc', '14e4:16c1', '14e4:1806', '14e4:1807',
))
# "ACSCap:\tSrcValid+ TransBlk+ ReqRedir+ ..." and "ACSCtl:..." (a line lspci may wrap in a mail or a paste).
_ACS_RE = re.compile(r'^\s*ACS(Cap|Ctl):\s*(.*)$')
_ACS_FLAG_RE = re.compile(r'\b(SrcValid|TransBlk|ReqRedir|CmpltRedir|UpstreamFwd|EgressCtrl|DirectTrans)([+-])')
# ACS controls that send peer-to-peer requests or completions up to the root complex instead of across the switch:
# GPUDirect RDMA between a NIC and a GPU below one switch then crosses the host bridge (NVIDIA: disable ACS on the
# switch ports of a GPUDirect path).  SrcValid, TransBlk and DirectTrans do not reroute traffic.
ACS_REDIRECTS = ('ReqRedir', 'CmpltRedir', 'UpstreamFwd', 'EgressCtrl')
_EXPRESS_RE = re.compile(r'^\s*Capabilities:\s*\[[0-9a-fA-F]+\]\s*Express\s*(?:\(v\d+\)\s*)?([^,(\s](?:[^,(]{0,62}[^,(\s])?)\s*(?:\(|,|$)')


def speed_gts(value):
    """A link speed string -> GT/s as float, or None when unknown.

    Accepts sysfs ``current_link_speed``/``max_link_speed`` values ('32.0 GT/s PCIe',
    '16 GT/s', '2.5 GT/s', 'Unknown') and lspci's ('16GT/s', 'unknown').
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode('utf-8', 'replace')
    match = re.match(r'^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s', str(value))
    if not match:
        return None
    speed = float(match.group(1))
    return speed if speed > 0 else None


def link_width(value):
    """A link width ('16', 'x16', 16) -> int lanes, or None for unknown or 0 (link down)."""
    if value is None:
        return None
    match = re.match(r'^\s*x?([0-9]+)\s*$', str(value))
    if not match:
        return None
    width = int(match.group(1))
    return width if width > 0 else None


def generation(speed):
    """GT/s -> PCIe generation number (16.0 -> 4), None when unknown."""
    return _GENERATION.get(speed) if speed is not None else None


def normalize_bdf(bdf):
    """'1b:00.0' -> '0000:1b:00.0' (lower case, with PCI domain); None when it is not a BDF."""
    if not isinstance(bdf, str) or not BDF_RE.match(bdf.strip()):
        return None
    bdf = bdf.strip().lower()
    if not _FULL_BDF_RE.match(bdf):
        bdf = '0000:' + bdf
    return bdf


def _supported_speeds(text):
    """LnkCap2 'Supported Link Speeds: 2.5-32GT/s' -> [2.5, 5.0, 8.0, 16.0, 32.0]."""
    match = re.match(r'^\s*([0-9.]+)(?:\s*-\s*([0-9.]+))?\s*GT/s', text)
    if not match:
        return None
    try:
        low = float(match.group(1))
        high = float(match.group(2)) if match.group(2) else low
    except ValueError:
        return None
    return [speed for speed in PCIE_SPEEDS_GTS if low <= speed <= high]


def _compare(annotation, status_value, cap_value):
    """downgraded? from lspci's own annotation, else by comparing status with capability.

    An unknown status ("Speed unknown", "Width x0": a function with no trained link of its own, such as an SR-IOV VF,
    or a link that is down) is None whatever lspci annotates it with: nothing was measured below the capability.
    """
    if status_value is None:
        return None
    if annotation == 'downgraded':
        return True
    if annotation in ('ok', 'strange'):
        return False
    if status_value is None or cap_value is None:
        return None
    return status_value < cap_value


def _new_device(bdf, rest):
    device = {
        'bdf': bdf, 'description': None, 'class': None, 'class_code': None, 'vendor_device': None,
        'port_type': None, 'capabilities_readable': True,
        'lnkcap_speed_gts': None, 'lnkcap_width': None, 'lnksta_speed_gts': None, 'lnksta_width': None,
        'downgraded': None, 'speed_downgraded': None, 'width_downgraded': None,
        'lnkcap2_speeds': None, 'numa_node': None, 'kernel_driver': None,
        'virtual_function': None, 'sriov': None, 'acs_cap': None, 'acs_ctl': None, 'acs_line': None,
        '_speed_note': None, '_width_note': None, '_has_lnk': False, '_virtual_regions': 0, '_regions': 0,
    }
    if rest:
        rest = rest.strip()
        cls, sep, description = rest.partition(': ')
        if not sep:
            cls, description = None, rest
        if cls is not None:
            code = re.search(r'\[([0-9a-fA-F]{4})\]$', cls)
            if code:
                device['class_code'] = code.group(1).lower()
                cls = cls[:code.start()]
            device['class'] = cls.strip() or None
        description = re.sub(r'\s{0,16}\((?:rev [0-9a-fA-F]{1,4}|prog-if [^)]{0,64})\)', '', description).strip()
        ids = re.search(r'\[([0-9a-fA-F]{4}:[0-9a-fA-F]{4})\]$', description)
        if ids:
            device['vendor_device'] = ids.group(1).lower()
            description = description[:ids.start()].strip()
        device['description'] = description or None
    return device


def _feed(device, line):
    """Read one body line of a device block into ``device``."""
    match = _LNKCAP_RE.match(line)
    if match:
        device['_has_lnk'] = True
        if device['lnkcap_speed_gts'] is None and device['lnkcap_width'] is None:
            speed = _SPEED_RE.search(match.group(1))
            width = _WIDTH_RE.search(match.group(1))
            device['lnkcap_speed_gts'] = speed_gts(speed.group(1)) if speed else None
            device['lnkcap_width'] = link_width(width.group(1)) if width else None
        return
    match = _LNKSTA_RE.match(line)
    if match:
        device['_has_lnk'] = True
        if device['lnksta_speed_gts'] is None and device['lnksta_width'] is None:
            speed = _SPEED_RE.search(match.group(1))
            width = _WIDTH_RE.search(match.group(1))
            if speed:
                device['lnksta_speed_gts'] = speed_gts(speed.group(1))
                device['_speed_note'] = speed.group(2)
            if width:
                device['lnksta_width'] = link_width(width.group(1))
                device['_width_note'] = width.group(2)
        return
    match = _LNKCAP2_RE.match(line)
    if match:
        device['lnkcap2_speeds'] = _supported_speeds(match.group(1))
        return
    match = _ACS_RE.match(line)
    if match:
        flags = dict((name, sign == '+') for name, sign in _ACS_FLAG_RE.findall(match.group(2)))
        device['acs_cap' if match.group(1) == 'Cap' else 'acs_ctl'] = flags or None
        if match.group(1) == 'Ctl':
            device['acs_line'] = line.strip()
        return
    match = _EXPRESS_RE.match(line)
    if match and device['port_type'] is None:
        device['port_type'] = match.group(1).strip()
        return
    stripped = line.strip()
    if stripped.startswith('NUMA node:'):
        value = stripped[len('NUMA node:'):].strip()
        if re.match(r'^-?[0-9]+$', value):
            device['numa_node'] = int(value)
    elif stripped.startswith('Kernel driver in use:'):
        device['kernel_driver'] = stripped[len('Kernel driver in use:'):].strip() or None
    elif stripped.startswith('Capabilities:') and '<access denied>' in stripped:
        device['capabilities_readable'] = False
    elif stripped.startswith('Region ') and ' at ' in stripped:
        device['_regions'] += 1
        if '[virtual]' in stripped:
            device['_virtual_regions'] += 1
    elif 'Single Root I/O Virtualization' in stripped:
        device['sriov'] = {'initial_vfs': None, 'total_vfs': None, 'num_vfs': None}
    elif device['sriov'] is not None and stripped.startswith('Initial VFs:'):
        counts = _SRIOV_COUNTS_RE.search(stripped)
        if counts:
            device['sriov'] = {'initial_vfs': int(counts.group(1)), 'total_vfs': int(counts.group(2)), 'num_vfs': int(counts.group(3))}


def _is_virtual_function(device, regions, virtual_regions):
    """True for an SR-IOV VF (its name, its device ID, or only lspci's "[virtual]" BARs on an endpoint), False for a
    device whose header was read and shows none of that, None for a fragment without a header."""
    if device['bdf'] is None and device['description'] is None:
        return None
    if device['description'] and _VIRTUAL_FUNCTION_RE.search(device['description']):
        return True
    if device['vendor_device'] in VF_DEVICE_IDS:
        return True
    # A VF's BARs live in its PF's SR-IOV capability, so lspci marks every one of them "[virtual]".
    if regions and virtual_regions == regions and device['sriov'] is None and (device['port_type'] or '').startswith('Endpoint'):
        return True
    return False


def _finish(device):
    speed_down = _compare(device.pop('_speed_note'), device['lnksta_speed_gts'], device['lnkcap_speed_gts'])
    width_down = _compare(device.pop('_width_note'), device['lnksta_width'], device['lnkcap_width'])
    device.pop('_has_lnk')
    device['virtual_function'] = _is_virtual_function(device, device.pop('_regions'), device.pop('_virtual_regions'))
    if device['virtual_function']:
        # A VF has no link of its own: whatever its LnkSta reads (zeros, or a copy of its PF's), it is not graded.
        speed_down = width_down = None
    device['speed_downgraded'] = speed_down
    device['width_downgraded'] = width_down
    if speed_down or width_down:
        device['downgraded'] = True
    elif speed_down is False and width_down is False:
        device['downgraded'] = False
    else:
        device['downgraded'] = None
    return device


def acs_redirects(acs_ctl):
    """The ACS controls of an ``acs_ctl`` mapping (parse_lspci) that reroute peer-to-peer traffic upstream, enabled ones only;
    None when the controls were not read."""
    if acs_ctl is None:
        return None
    return [name for name in ACS_REDIRECTS if acs_ctl.get(name)]


@tool_parser('lspci')
def parse_lspci(text):
    """``lspci -vvv`` [-s BDF] [-D] [-nn] output -> {devices: [{bdf, description, lnkcap_*, lnksta_*, downgraded, ...}]}.

    Speeds are GT/s floats, widths ints (x16 -> 16); ``Speed unknown`` and
    ``Width x0`` are None.  ``downgraded`` comes from lspci's own
    ``(downgraded)``/``(ok)`` annotations when printed, else from comparing
    LnkSta with LnkCap; it is None when either side is unknown (whatever the
    annotation says), for devices without a PCI Express capability and for
    SR-IOV virtual functions.  ``virtual_function`` is True for a VF ("Virtual
    Function" in its name, a known VF device ID, or only "[virtual]" BARs on
    an endpoint), False for another device, None for a fragment without a
    header; ``sriov`` is a PF's {initial_vfs, total_vfs, num_vfs}, else None.  Text without a device header
    line (LnkCap/LnkSta lines from a grep) is one device with ``bdf: None``.
    Empty text (``lspci -s`` of an absent device) gives no devices.
    """
    if '\x00' in text:
        raise ParseError('lspci', 'contains NUL bytes; expected lspci -vvv text')
    devices = []
    current = None
    loose = None
    for line in text.splitlines():
        if not line.strip():
            continue
        header = _HEADER_RE.match(line)
        if header and not line[0].isspace():
            bdf = header.group(1).lower()
            if header.group(2):
                bdf = header.group(2).split('/')[-1].lower()
                domain = header.group(1).lower().split(':')
                if len(domain) == 3:
                    bdf = '%s:%s' % (domain[0], bdf)
            current = _new_device(bdf, header.group(3))
            devices.append(current)
            continue
        if current is None:
            # Lines before any device header: a pasted fragment, or stderr noise.
            if loose is None:
                loose = _new_device(None, None)
            _feed(loose, line)
            continue
        _feed(current, line)
    if loose is not None and loose['_has_lnk']:
        devices.insert(0, loose)
    elif not devices and text.strip():
        raise ParseError('lspci', 'no device header line ("BB:DD.F class: name") and no LnkCap/LnkSta lines',
                         text.strip().splitlines()[0])
    return {'devices': [_finish(device) for device in devices]}


# ---------------------------------------------------------------- sysfs


def _int(value):
    if value is None or not re.match(r'^-?[0-9]+$', value):
        return None
    return int(value)


def _hex(value):
    if value is None or not re.match(r'^0x[0-9a-fA-F]+$', value):
        return None
    return value.lower()


def find_device_dir(sysfs_root, bdf):
    """Directory of PCI device ``bdf`` under ``sysfs_root``, or None.

    Tries ``bus/pci/devices/<bdf>`` first (a symlink on a real system), then
    searches ``devices/pci*/`` for a directory with that name (trees copied
    without their symlinks).
    """
    bdf = normalize_bdf(bdf)
    if bdf is None:
        return None
    direct = os.path.join(sysfs_root, 'bus', 'pci', 'devices', bdf)
    if os.path.isdir(direct):
        return direct
    for path in _walk_pci_dirs(sysfs_root):
        if os.path.basename(path) == bdf:
            return path
    return None


def _walk_pci_dirs(sysfs_root):
    """Every BDF-named directory under <root>/devices/pci*/ (depth-first, no symlinks followed)."""
    base = os.path.join(sysfs_root, 'devices')
    try:
        roots = sorted(name for name in os.listdir(base) if re.match(r'^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$', name))
    except OSError:
        return []
    found = []
    for name in roots:
        for dirpath, dirnames, _files in os.walk(os.path.join(base, name)):
            keep = []
            for entry in sorted(dirnames):
                if _FULL_BDF_RE.match(entry):
                    found.append(os.path.join(dirpath, entry))
                    keep.append(entry)
            dirnames[:] = keep
    return found


def _driver(path):
    link = os.path.join(path, 'driver')
    if os.path.islink(link):
        try:
            return os.path.basename(os.readlink(link))
        except OSError:
            pass
    uevent = _read(os.path.join(path, 'uevent'))
    if uevent:
        for line in uevent.splitlines():
            if line.startswith('DRIVER='):
                return line[len('DRIVER='):].strip() or None
    return None


def _physfn(path):
    """The PCI address of the physical function of an SR-IOV VF (its ``physfn`` link), else None."""
    link = os.path.join(path, 'physfn')
    if os.path.islink(link):
        try:
            return normalize_bdf(os.path.basename(os.readlink(link)))
        except OSError:
            return None
    return None


def read_link_at(path, bdf=None):
    """Link facts of the PCI device whose sysfs directory is ``path``.

    ``physfn`` is the PF of an SR-IOV virtual function (its sysfs ``physfn`` link) and ``virtual_function`` True for
    a VF (that link, or a known VF device ID), False otherwise; ``sriov_numvfs`` is a PF's enabled VF count.
    """
    physfn = _physfn(path)
    vendor = _hex(_read(os.path.join(path, 'vendor')))
    device = _hex(_read(os.path.join(path, 'device')))
    ids = '%s:%s' % (vendor[2:], device[2:]) if vendor and device else None
    return {
        'bdf': bdf or os.path.basename(os.path.normpath(path)),
        'current_speed_gts': speed_gts(_read(os.path.join(path, 'current_link_speed'))),
        'max_speed_gts': speed_gts(_read(os.path.join(path, 'max_link_speed'))),
        'current_width': link_width(_read(os.path.join(path, 'current_link_width'))),
        'max_width': link_width(_read(os.path.join(path, 'max_link_width'))),
        'numa_node': _int(_read(os.path.join(path, 'numa_node'))),
        'class': _hex(_read(os.path.join(path, 'class'))),
        'vendor': vendor,
        'device': device,
        'driver': _driver(path),
        'physfn': physfn,
        'virtual_function': bool(physfn) or ids in VF_DEVICE_IDS,
        'sriov_numvfs': _int(_read(os.path.join(path, 'sriov_numvfs'))),
    }


def read_pci_link(sysfs_root, bdf):
    """{bdf, current_speed_gts, max_speed_gts, current_width, max_width, numa_node, class, vendor, device, driver}.

    Read from ``<sysfs_root>/bus/pci/devices/<bdf>/`` (or the real directory
    under ``devices/``).  Missing files are None; ``numa_node`` is -1 where
    the platform reports no NUMA affinity.  None when the device is absent.
    """
    path = find_device_dir(sysfs_root, bdf)
    if path is None:
        return None
    return read_link_at(path, normalize_bdf(bdf))


def walk_upstream(sysfs_root, bdf):
    """Upstream bridges/ports of ``bdf``, nearest (its slot) first, up to the root port.

    The hops are the BDF-named parents in the resolved sysfs path, such as
    ``devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:03.0/0000:1b:00.0``.
    Each hop carries its link facts (read_link_at).  Empty for a device on
    the root bus (a VM's virtio devices) or one not found.
    """
    path = find_device_dir(sysfs_root, bdf)
    if path is None:
        return []
    real_root = os.path.realpath(sysfs_root)
    current = os.path.dirname(os.path.realpath(path))
    hops = []
    while current.startswith(real_root + os.sep) and _FULL_BDF_RE.match(os.path.basename(current)):
        hops.append(read_link_at(current, os.path.basename(current).lower()))
        current = os.path.dirname(current)
    return hops


def classify_kind(pci_class):
    """sysfs class '0x020000' -> 'nic', '0x030200' -> 'gpu', else 'other'."""
    pci_class = (pci_class or '').lower()
    if pci_class.startswith(CLASS_NETWORK):
        return 'nic'
    if pci_class.startswith(GPU_CLASSES):
        return 'gpu'
    return 'other'


def read_pci_devices(sysfs_root, classes, vendors=None):
    """PCI devices whose class starts with one of ``classes`` ('0x0200', '0x0207', '0x0302', ...).

    ``vendors`` (optional) maps a class prefix to the vendor IDs kept for it,
    for example {'0x0302': ['0x10de']}.  Returns [{bdf, class, vendor, device, kind, virtual_function}] sorted by BDF.
    """
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    paths = []
    try:
        paths = [os.path.join(base, name) for name in sorted(os.listdir(base)) if _FULL_BDF_RE.match(name)]
    except OSError:
        paths = _walk_pci_dirs(sysfs_root)
    prefixes = tuple(prefix.lower() for prefix in classes)
    vendors = dict((key.lower(), [v.lower() for v in value]) for key, value in (vendors or {}).items())
    found = {}
    for path in paths:
        bdf = os.path.basename(path).lower()
        pci_class = _hex(_read(os.path.join(path, 'class')))
        vendor = _hex(_read(os.path.join(path, 'vendor')))
        if pci_class is None or not pci_class.startswith(prefixes):
            continue
        allowed = [value for key, value in vendors.items() if pci_class.startswith(key)]
        if allowed and not any(vendor in value for value in allowed):
            continue
        device = _hex(_read(os.path.join(path, 'device')))
        ids = '%s:%s' % (vendor[2:], device[2:]) if vendor and device else None
        found[bdf] = {'bdf': bdf, 'class': pci_class, 'vendor': vendor, 'device': device, 'kind': classify_kind(pci_class),
                      'virtual_function': bool(_physfn(path)) or ids in VF_DEVICE_IDS}
    return [found[bdf] for bdf in sorted(found)]


# ---------------------------------------------------------------- assessment


def _fmt(speed, width):
    speed_text = 'unknown speed' if speed is None else '%s GT/s' % speed
    if generation(speed):
        speed_text += ' (Gen%d)' % generation(speed)
    return '%s x%s' % (speed_text, width if width is not None else '?')


def _limiter(device_link, hops, key):
    """(value, who) of the smallest known capability along the path; 'device' wins ties, then the nearest hop."""
    best = device_link.get(key)
    who = 'device' if best is not None else None
    for index, hop in enumerate(hops):
        value = hop.get(key)
        if value is not None and (best is None or value < best):
            best = value
            who = 'slot' if index == 0 else 'upstream:%s' % hop.get('bdf')
    return best, who


def assess_link(device_link, upstream_hops, is_gpu=False):
    """Judge a device's PCIe link against its own and its path's capability.

    ``device_link`` is read_pci_link's dict, ``upstream_hops`` walk_upstream's list.
    The expected speed/width is the minimum over the device's own maximum and
    every upstream hop's maximum.  Returns {expected_speed_gts, expected_width,
    bottleneck, status, reason}; status is one of

    * ``ok``: running at what the device and its path can do;
    * ``slot_limited``: the device can do more but its slot or an upstream
      bridge cannot (a Gen5 NIC in a Gen4 slot): a placement issue, not a fault;
    * ``degraded``: running below what both it and its path can do; the
      bottleneck is ``device`` (its own link) or ``upstream:<bdf>`` (a hop whose
      link runs below what the path needs);
    * ``idle_downtrained``: a GPU below its speed at full width; GPUs drop to
      2.5GT/s at idle by design, so re-check under load before calling it a fault;
    * ``virtual_function``: an SR-IOV VF; it has no link of its own (its PF
      carries it), so it is not judged at all;
    * ``unknown``: a fact needed to judge is missing.
    """
    device_link = device_link or {}
    if device_link.get('virtual_function'):
        return {'expected_speed_gts': None, 'expected_width': None, 'bottleneck': None, 'status': 'virtual_function',
                'reason': 'SR-IOV virtual function%s: it has no PCIe link of its own (its physical function carries it), '
                          'so it is not judged as a link' % (' of %s' % device_link['physfn'] if device_link.get('physfn') else '')}
    hops = list(upstream_hops or [])
    cur_speed = device_link.get('current_speed_gts')
    cur_width = device_link.get('current_width')
    dev_speed = device_link.get('max_speed_gts')
    dev_width = device_link.get('max_width')
    exp_speed, speed_by = _limiter(device_link, hops, 'max_speed_gts')
    exp_width, width_by = _limiter(device_link, hops, 'max_width')
    result = {'expected_speed_gts': exp_speed, 'expected_width': exp_width, 'bottleneck': None,
              'status': 'unknown', 'reason': None}
    if dev_speed is None and dev_width is None and cur_speed is None and cur_width is None:
        result['reason'] = 'no PCIe link attributes in sysfs (not a PCI Express device, or a virtual one)'
        return result
    missing = [name for name, value in (('current link speed', cur_speed), ('current link width', cur_width),
                                        ('maximum link speed', dev_speed), ('maximum link width', dev_width))
               if value is None]
    if missing:
        result['reason'] = 'cannot judge the link: %s unknown' % ', '.join(missing)
        return result
    blind = [hop.get('bdf') for hop in hops if hop.get('max_speed_gts') is None or hop.get('max_width') is None]
    now = _fmt(cur_speed, cur_width)
    expected = _fmt(exp_speed, exp_width)

    if cur_speed < exp_speed or cur_width < exp_width:
        if is_gpu and cur_width >= exp_width:
            result['status'] = 'idle_downtrained'
            result['reason'] = ('GPU link at %s, below the expected %s at full width; GPUs train down to save power '
                                'when idle, so re-check under load before calling it a fault' % (now, expected))
            return result
        if blind and (cur_speed < dev_speed or cur_width < dev_width):
            result['reason'] = ('link at %s is below the device maximum %s and upstream hop(s) %s have no link '
                                'capability in sysfs: cannot tell a slot limit from a fault'
                                % (now, _fmt(dev_speed, dev_width), ', '.join(blind)))
            return result
        slot = hops[0].get('bdf') if hops else None
        result['status'] = 'degraded'
        result['bottleneck'] = 'device'
        result['reason'] = ('link trained at %s but the device and its path support %s: the link between %s and %s '
                            'is degraded (reseat, check the riser/slot, BIOS bifurcation and AER errors)'
                            % (now, expected, device_link.get('bdf') or 'the device', slot or 'its root port'))
        return result

    for index, hop in enumerate(hops):
        if index == 0:
            continue  # the slot's current link is the device's own link, judged above
        hop_speed = hop.get('current_speed_gts')
        hop_width = hop.get('current_width')
        if (hop_speed is not None and hop_speed < exp_speed) or (hop_width is not None and hop_width < exp_width):
            result['status'] = 'degraded'
            result['bottleneck'] = 'upstream:%s' % hop.get('bdf')
            result['reason'] = ('device link is fine at %s but upstream hop %s runs at %s, below the %s the path '
                                'needs' % (now, hop.get('bdf'), _fmt(hop_speed, hop_width), expected))
            return result

    if exp_speed < dev_speed or exp_width < dev_width:
        who = speed_by if exp_speed < dev_speed else width_by
        where = 'its slot %s' % hops[0].get('bdf') if who == 'slot' else 'upstream bridge %s' % who.split(':', 1)[-1]
        result['status'] = 'slot_limited'
        result['bottleneck'] = who
        result['reason'] = ('device can do %s but %s only %s: running at that limit is a placement/platform '
                            'limit, not a device fault' % (_fmt(dev_speed, dev_width), where, expected))
        return result
    result['status'] = 'ok'
    result['reason'] = 'link at %s, the most the device and its path support' % now
    if blind:
        result['reason'] += ' (hops without link facts: %s)' % ', '.join(blind)
    return result
