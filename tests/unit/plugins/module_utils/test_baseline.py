"""The baseline of a node from its validation run (a real lab run: synthetic lab outputs) and the current state from a
drift capture, including real-hardware captures read in place from ../shared/fixtures."""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import nvidia, rdma
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline
from tests.unit import fixtures
from tests.unit.plugins.module_utils import drift_samples as samples

NICS = ['mlx5_%d' % n for n in range(8)]
GPU_BUSES = ['0000:1b:00.0', '0000:3c:00.0', '0000:4d:00.0', '0000:5e:00.0', '0000:9c:00.0', '0000:bc:00.0', '0000:cc:00.0', '0000:dc:00.0']
SYSFS_H100 = 'sysfs/sys-class-infiniband_h100_8xCX7_NDR_plus_bond_gpud'
SMI_8XH100 = 'nvidia-smi/nvidia_smi_q_535.161.08_8xH100_sxm_healthy_gpud.txt'
PROFILE = samples.profile()


def by(entries, key, value):
    found = [e for e in entries if e.get(key) == value]
    assert len(found) == 1, (key, value, [e.get(key) for e in entries])
    return found[0]


def test_baseline_of_the_lab_run_carries_the_runs_identity_and_its_profile():
    doc = samples.lab_baseline()
    assert (doc['schema'], doc['schema_version'], doc['kind']) == ('gpufleet.netval/baseline', 1, 'baseline')
    assert (doc['node'], doc['timestamp'], doc['tier'], doc['bucket'], doc['peer']) == ('node01', samples.RUN, '400G', 'A', 'peer01')
    assert doc['timestamp_seconds'] == baseline.stamp_seconds('2026-12-01T10:05:56Z')
    assert doc['profile']['version'] is None  # the shipped profiles carry no version: the digest identifies them
    assert doc['profile']['digest'].startswith('sha256:') and len(doc['profile']['digest']) == 7 + 64
    assert baseline.check_document(doc) is doc
    json.dumps(doc)  # plain JSON, ready for to_nice_json


def test_every_nic_with_its_ports_pcie_path_firmware_mlxconfig_and_rings():
    nics = samples.lab_baseline()['facts']['nics']
    assert [n['name'] for n in nics] == NICS and all(n['present'] for n in nics)
    nic = by(nics, 'name', 'mlx5_0')
    assert nic['id'] == nic['pci_address'] == '0000:1a:00.0'
    assert nic['ports'] == [{'port': '1', 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate_gbps': 400, 'link_layer': 'InfiniBand',
                             'width': '4X', 'speed': 'NDR', 'active': True}]
    pcie = nic['pcie']
    assert (pcie['lnksta_speed_gts'], pcie['lnksta_width'], pcie['lnkcap_speed_gts'], pcie['lnkcap_width'], pcie['status']) == (32.0, 16, 32.0, 16, 'ok')
    assert [hop['bdf'] for hop in pcie['upstream']] == ['0000:19:03.0', '0000:18:02.0', '0000:17:01.0']
    assert all((hop['lnksta_speed_gts'], hop['lnksta_width']) == (32.0, 16) for hop in pcie['upstream'])
    assert nic['firmware'] == {'version': '28.39.2048', 'psid': 'MT_0000000838', 'part_number': None}
    assert nic['mlxconfig']['CQE_COMPRESSION'] == 'BALANCED(0)' and nic['mlxconfig']['SRIOV_EN'] == 'False(0)'
    assert nic['link']['fec'] == 'Standard_RS-FEC - (544,514)' and nic['link']['cable_part_number'] == 'MCP4Y10-N001'
    assert nic['interfaces'] == [{'netdev': 'fab-peer01', 'mtu': None, 'ring_rx': 16384, 'ring_tx': 16384, 'channels_combined': 64,
                                  'speed_mbps': 10000, 'link_detected': True}]


def test_every_gpu_with_bus_id_ecc_and_remapped_rows_and_the_host_settings():
    doc = samples.lab_baseline()
    gpus = doc['facts']['gpus']
    assert [g['bus_id'] for g in gpus] == GPU_BUSES and all(g['present'] for g in gpus)
    gpu = by(gpus, 'bus_id', '0000:1b:00.0')
    assert (gpu['index'], gpu['serial'], gpu['ecc_mode']) == (0, '1650677847263', 'Enabled')
    assert gpu['ecc'] == {'volatile_correctable': 0, 'volatile_uncorrectable': 0, 'aggregate_correctable': 0, 'aggregate_uncorrectable': 0}
    assert gpu['remapped_rows'] == {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False}
    host = doc['facts']['host']
    assert 'iommu=pt' in host['cmdline_tokens'] and 'hugepages=128' in host['cmdline_tokens']
    assert 'nvidia_peermem' in host['modules'] and host['modules'] == sorted(host['modules'])
    assert host['hugepages'] == {'total': 128, 'page_size_kib': 1048576, 'pools_kib': {'2048': 0, '1048576': 128}}
    assert host['governor'] == {'uniform': 'performance', 'counts': {'performance': 64}}
    assert host['memlock'] == {'login_soft_kib': 'unlimited', 'soft': 'unlimited', 'hard': 'unlimited'}
    assert (host['gpu_driver'], host['cuda_version']) == ('550.127.08', '12.4')
    assert doc['facts']['expected'] == {'gpus': 8, 'nics': 8}
    assert doc['facts']['captured'] == dict((section, True) for section in baseline.SECTIONS)


def test_counters_with_their_timestamp_from_mlxlink_ethtool_and_the_kernel_log():
    doc = samples.lab_baseline()
    counters = doc['facts']['counters']
    stamp = doc['timestamp_seconds']
    assert all(c['timestamp'] == stamp for c in counters)
    sources = set((c['source'], c['class']) for c in counters)
    assert ('mlxlink', 'link_downed') in sources and ('mlxlink', 'symbol_error') in sources
    assert ('ethtool', 'rx_discards_phy') in sources and ('ethtool', 'pause_frames') in sources
    assert ('kernel_log', 'xid') in sources and ('nvidia_smi', 'ecc_uncorrectable') in sources
    flap = [c for c in counters if c['source'] == 'mlxlink' and c['counter'] == 'link_down_counter']
    assert sorted(c['subject'] for c in flap) == NICS and all(c['value'] == 0 for c in flap)
    # ethtool -S of a netdev is named by its NIC: fab-peer01 is mlx5_0's
    discards = [c for c in counters if c['source'] == 'ethtool' and c['counter'] == 'rx_discards_phy']
    assert sorted(c['subject'] for c in discards) == NICS
    pause = set(c['counter'] for c in counters if c['class'] == 'pause_frames')
    assert pause == {'rx_pause_ctrl_phy', 'tx_pause_ctrl_phy', 'rx_prio3_pause', 'tx_prio3_pause'}  # not *_pause_duration
    xids = [c for c in counters if c['class'] == 'xid']
    assert sorted(c['subject'] for c in xids) == GPU_BUSES and all(c['value'] == 0 and c['times'] == [] for c in xids)


def test_figures_per_hca_and_test_with_the_peer_that_produced_them():
    figures = samples.lab_baseline()['figures']
    send = [f for f in figures if f['metric'] == 'ib_send_bw_gbs']
    assert [f['subject'] for f in send] == NICS
    first = send[0]
    assert (first['test'], first['family'], first['peer'], first['peer_device'], first['unit'], first['status']) == \
        ('ib_send_bw', 'rdma_bw', 'peer01', 'mlx5_0', 'GB/s', 'healthy')
    assert first['better'] == 'higher' and first['size'] == 65536 and first['bytes'] is None
    assert abs(first['value'] - 46.99999698944) < 1e-9 and first['samples'] == [first['value']]
    assert by(figures, 'metric', 'jumbo_ping_rtt_ms')['better'] == 'lower'
    # dcgmi grades itself (no figure) and the NCCL transport is a word: neither is a figure
    assert not [f for f in figures if f['metric'] in ('dcgmi_diag', 'nccl_transport')]
    assert len(figures) == 31


def test_profile_digest_is_canonical_and_a_version_is_kept():
    profile = samples.profile()
    shuffled = json.loads(json.dumps(dict(reversed(list(profile.items())))))
    assert baseline.profile_ref(profile)['digest'] == baseline.profile_ref(shuffled)['digest']
    changed = samples.profile()
    changed['thresholds']['ib_send_bw_gbs']['reject_below'] = 41
    assert baseline.profile_ref(changed)['digest'] != baseline.profile_ref(profile)['digest']
    versioned = dict(profile, version='2026.11')
    assert baseline.profile_ref(versioned)['version'] == '2026.11'
    with pytest.raises(baseline.BaselineError, match='profile must be the resolved tier profile'):
        baseline.profile_ref(['400G'])


def _drop_gpu(facts, bus, from_pcie=False):
    facts['gpu']['gpus'] = [g for g in facts['gpu']['gpus'] if g['bus_id'] != bus]
    facts['gpu']['gpu_count'] = len(facts['gpu']['gpus'])
    if from_pcie:
        facts['pcie']['devices'] = [d for d in facts['pcie']['devices'] if d['bdf'] != bus]


def test_seven_of_eight_gpus_the_missing_one_is_kept_with_its_bus_id():
    """Synthetic edit: nvidia-smi lost GPU 3 (0000:5e:00.0); the PCIe bus still has it."""
    facts = samples.facts()
    _drop_gpu(facts, '0000:5e:00.0')
    gpus = baseline.build_baseline(samples.result(), facts, samples.profile())['facts']['gpus']
    assert [g['bus_id'] for g in gpus] == GPU_BUSES
    missing = by(gpus, 'bus_id', '0000:5e:00.0')
    assert missing['present'] is False and missing['reason'] == 'on the PCIe bus but not visible to nvidia-smi'
    assert len([g for g in gpus if g['present']]) == 7


def test_a_gpu_gone_from_the_bus_too_is_a_placeholder_from_the_profile_count():
    """Synthetic edit: GPU 0000:dc:00.0 is gone from nvidia-smi and from the PCIe bus."""
    facts = samples.facts()
    _drop_gpu(facts, '0000:dc:00.0', from_pcie=True)
    gpus = baseline.build_baseline(samples.result(), facts, samples.profile())['facts']['gpus']
    assert len(gpus) == 8
    placeholder = gpus[-1]
    assert placeholder == dict(placeholder, id='missing-gpu-8', bus_id=None, present=False,
                               reason='the profile expects 8 GPUs, 7 visible')
    # without a profile nothing says how many there should be
    assert len(baseline.build_baseline(samples.result(), facts)['facts']['gpus']) == 7


def test_a_gpu_the_kernel_log_says_fell_off_the_bus():
    facts = samples.facts()
    _drop_gpu(facts, '0000:9c:00.0', from_pcie=True)
    facts['gpu']['kernel_log']['fallen_off_bus'] = [{'bus_id': '0000:9c:00.0', 'time': '2026-12-01T09:59:00+0000', 'line': '...'}]
    gpu = by(baseline.current_state(facts, 'node01', samples.DAY_LATER, samples.profile())['facts']['gpus'], 'bus_id', '0000:9c:00.0')
    assert gpu['present'] is False and 'fell off the bus' in gpu['reason']


def test_a_nic_without_its_rdma_device_is_kept_by_pci_address():
    """Synthetic edit: rdma_info no longer lists mlx5_3 (0000:5d:00.0); pcie_info still sees the function."""
    facts = samples.facts()
    del facts['rdma']['devices']['mlx5_3']
    nics = baseline.current_state(facts, 'node01', samples.DAY_LATER, samples.profile())['facts']['nics']
    assert len(nics) == 8
    gone = by(nics, 'id', '0000:5d:00.0')
    assert gone['present'] is False and gone['name'] == '0000:5d:00.0' and gone['pcie']['lnksta_width'] == 16
    assert gone['firmware']['version'] == '28.39.2048'


def test_a_failed_module_is_not_captured_and_its_devices_are_unknown_not_missing():
    facts = samples.facts()
    facts['gpu'] = {'failed': True, 'msg': 'nvidia-smi not found (package nvidia-utils)'}
    doc = baseline.current_state(facts, 'node01', samples.DAY_LATER, samples.profile())
    assert doc['facts']['captured']['gpu'] is False
    assert [g['present'] for g in doc['facts']['gpus']] == [None] * 8
    assert not [c for c in doc['facts']['counters'] if c['source'] in ('kernel_log', 'nvidia_smi')]
    assert doc['facts']['host']['gpu_driver'] is None and doc['facts']['host']['cmdline_tokens']


def test_current_state_from_a_real_h100_sysfs_tree_with_counters(tmp_path):
    """Real hardware (gpud's H100 /sys/class/infiniband, read in place): rdma_info counters=true as a drift capture."""
    (tmp_path / 'class').mkdir()
    os.symlink(fixtures.shared_path(SYSFS_H100), str(tmp_path / 'class' / 'infiniband'))
    devices = rdma.read_infiniband_sysfs(str(tmp_path), counters=True)['devices']
    doc = baseline.current_state({'rdma': {'devices': devices, 'live_ports': []}}, 'gpu-h100-01', 1764583556)
    assert doc['kind'] == 'current' and doc['figures'] == [] and doc['timestamp'] == '20251201T100556Z'
    nics = doc['facts']['nics']
    assert [n['name'] for n in nics] == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9', 'mlx5_bond_0']
    assert nics[0]['id'] == 'mlx5_0' and nics[0]['pci_address'] is None  # the tree has no device/ links
    assert by(nics, 'name', 'mlx5_bond_0')['ports'][0]['rate_gbps'] == 200
    flaps = dict((c['subject'], c['value']) for c in doc['facts']['counters'] if c['counter'] == 'link_downed')
    assert flaps['mlx5_1/1'] == 255 and flaps['mlx5_0/1'] == 0
    errors = [c for c in doc['facts']['counters'] if c['counter'] == 'port_rcv_errors']
    assert errors and all(c['source'] == 'rdma_sysfs' and c['class'] == 'port_rcv_errors' for c in errors)
    assert doc['facts']['captured'] == {'rdma': True, 'pcie': False, 'nic': False, 'firmware': False, 'gpu': False, 'host': False}


def test_current_state_gpus_from_a_real_8xh100_nvidia_smi_query():
    """Real hardware (gpud's 8x H100 nvidia-smi -q): the gpu section as gpu_info returns it."""
    parsed = nvidia.parse_nvidia_smi_q(fixtures.shared(SMI_8XH100))
    doc = baseline.current_state({'gpu': dict(parsed, xid_events=[], kernel_log=None)}, 'h100', samples.RUN, {'gpus': {'count': 8}})
    gpus = doc['facts']['gpus']
    assert [g['bus_id'] for g in gpus] == ['0000:19:00.0', '0000:3b:00.0', '0000:4c:00.0', '0000:5d:00.0', '0000:9b:00.0',
                                           '0000:bb:00.0', '0000:cb:00.0', '0000:db:00.0']
    assert all(g['present'] and g['ecc']['aggregate_uncorrectable'] == 0 for g in gpus)
    assert gpus[0]['serial'] == '1650124031592'
    assert doc['facts']['host']['gpu_driver'] == parsed['driver_version']


def test_ethtool_stats_in_every_accepted_form():
    text = samples.ethtool_stats()['ibp93s0']
    from ansible_collections.gpufleet.netval.plugins.module_utils.parsers.ethtool import parse_ethtool_stats
    parsed = parse_ethtool_stats(text)
    for form in (text, parsed, parsed['counters']):
        doc = baseline.current_state(samples.facts(), 'node01', samples.RUN, None, {'ibp93s0': form})
        mine = [c for c in doc['facts']['counters'] if c['source'] == 'ethtool']
        assert by(mine, 'counter', 'rx_discards_phy')['subject'] == 'mlx5_3'
    with pytest.raises(baseline.BaselineError, match='ethtool_stats: ethtool -S'):
        baseline.current_state(samples.facts(), 'node01', samples.RUN, None, {'ibp93s0': 'not counters at all'})
    with pytest.raises(baseline.BaselineError, match='ethtool_stats must be a dict of netdev'):
        baseline.current_state(samples.facts(), 'node01', samples.RUN, None, ['ibp93s0'])


@pytest.mark.parametrize('value, seconds', [
    ('20261201T100556Z', 1796119556.0), ('2026-12-01T10:05:56Z', 1796119556.0), ('2026-12-01T11:05:56+0100', 1796119556.0),
    ('2026-12-01 10:05:56', 1796119556.0), ('2026-12-01T10:05:56.250+00:00', 1796119556.0), (1796119556, 1796119556.0),
    (None, None), ('yesterday', None), (True, None), (float('nan'), None), ('20261399T000000Z', None)])
def test_stamp_seconds(value, seconds):
    assert baseline.stamp_seconds(value) == seconds


@pytest.mark.parametrize('doc, message', [
    ('a baseline', 'baseline must be a dict (a gpufleet.netval/baseline document, schema_version 1), got str'),
    ([], 'baseline must be a dict'),
    ({'schema': 'other'}, "baseline.schema must be 'gpufleet.netval/baseline', got 'other'"),
    ({'schema': 'gpufleet.netval/baseline', 'schema_version': 2}, 'baseline.schema_version must be 1 (this collection reads version 1 only), got 2'),
    ({'schema': 'gpufleet.netval/baseline', 'schema_version': True}, 'schema_version must be 1'),
    ({'schema': 'gpufleet.netval/baseline', 'schema_version': 1, 'kind': 'x'}, 'baseline.kind must be one of baseline, current'),
])
def test_a_malformed_document_names_what_was_expected(doc, message):
    with pytest.raises(baseline.BaselineError) as caught:
        baseline.check_document(doc)
    assert message in str(caught.value)


def test_a_document_with_broken_parts_names_each():
    doc = samples.lab_baseline()
    doc['facts']['nics'] = 'mlx5_0'
    doc['figures'] = [1]
    doc['timestamp_seconds'] = 'soon'
    with pytest.raises(baseline.BaselineError) as caught:
        baseline.check_document(doc)
    assert str(caught.value) == ('baseline.facts.nics must be a list, got str; baseline.timestamp_seconds must be seconds since the '
                                 "epoch, got 'soon'; baseline.figures[0] must be a dict, got int")


@pytest.mark.parametrize('node_result, facts, message', [
    (['node01'], {}, "node result must be a dict (the report role's nodes/<node>.json), got list"),
    ({'node': 'node01', 'timestamp': samples.RUN}, ['rdma'], 'facts must be the preflight facts, a dict of rdma/pcie/nic/firmware/gpu/host'),
    ({'node': 'node01', 'timestamp': samples.RUN}, {'rdma': ['mlx5_0']}, "facts.rdma must be the rdma module's result (a dict), got list"),
    ({'node': '', 'timestamp': samples.RUN}, {}, 'node (the node name) must be non-empty text'),
    ({'node': 'node01', 'timestamp': 'last tuesday'}, {}, 'timestamp must be a run stamp such as 20261201T100556Z'),
    ({'node': 'node01', 'timestamp': samples.RUN, 'tests': 'ib_send_bw'}, {}, 'node result tests must be a list, got str'),
    ({'node': 'node01', 'timestamp': samples.RUN, 'tests': [None]}, {}, 'node result tests[0] must be a dict, got null'),
])
def test_hostile_input_to_the_builder_is_a_clear_error(node_result, facts, message):
    with pytest.raises(baseline.BaselineError) as caught:
        baseline.build_baseline(node_result, facts)
    assert message in str(caught.value)


def test_a_node_result_without_facts_still_gives_a_baseline_of_its_figures():
    doc = baseline.build_baseline(samples.result(), None)
    assert doc['facts']['captured'] == dict((s, False) for s in baseline.SECTIONS)
    assert doc['facts']['nics'] == [] and doc['facts']['host'] is None and len(doc['figures']) == 31
    assert copy.deepcopy(doc) == doc


JUNK = ('x', -3, None, True, [], {'a': [1]})


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _paths(value[key], path + (key,))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], path + (0,))


def _slim_facts():
    facts = samples.facts()
    keep = ('mlx5_0', 'mlx5_1')
    facts['rdma']['devices'] = dict((k, v) for k, v in facts['rdma']['devices'].items() if k in keep)
    pcis = [facts['rdma']['devices'][k]['pci_address'] for k in keep]
    facts['pcie']['devices'] = facts['pcie']['devices'][:4]
    facts['firmware']['devices'] = dict((k, v) for k, v in facts['firmware']['devices'].items() if k in pcis)
    facts['nic']['nics'] = dict((k, v) for k, v in facts['nic']['nics'].items() if v.get('rdma_device') in keep)
    facts['gpu']['gpus'] = facts['gpu']['gpus'][:2]
    facts['gpu']['xid_events'] = [{'code': 79, 'bus_id': '0000:1b:00.0', 'time': '2026-12-01T09:00:00+0000'}]
    facts['gpu'].pop('topology', None)
    facts['host'].pop('irq_placement', None)
    return facts


def test_junk_anywhere_in_the_facts_builds_a_valid_document_or_says_what_is_wrong():
    """Every field of the (slimmed) preflight facts replaced by junk of every type: the builder either gives a document
    that passes check_document or raises BaselineError; never another exception, and it never changes its input."""
    facts = _slim_facts()
    before = json.dumps(facts, sort_keys=True)
    stats = {'fab-peer01': samples.ethtool_stats()['fab-peer01']}
    result = samples.result()
    result['tests'] = result['tests'][:4]
    tried = 0
    for path in list(_paths(facts))[1:]:
        target = facts
        for key in path[:-1]:
            target = target[key]
        original = target[path[-1]]
        for junk in JUNK:
            target[path[-1]] = junk
            try:
                doc = baseline.build_baseline(result, facts, PROFILE, stats)
            except baseline.BaselineError:
                continue
            baseline.check_document(doc)
            tried += 1
        target[path[-1]] = original
    assert json.dumps(facts, sort_keys=True) == before
    assert tried > 1000
