"""What a node keeps in the controller's main process: preflight_for_tests (the part of the preflight reads the tests play
reads), to_packed_json / from_packed_json (the whole reads until the evidence) and plain_data (the tier profile without
the origin tags of its YAML).  The facts are the lab run's (tests/fixtures/drift, synthetic lab outputs)."""
import base64
import json
import os
import pickle
import re
import types
import zlib

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader

from ansible_collections.gpufleet.netval.plugins.filter import from_packed_json, plain_data, preflight_for_tests, to_packed_json
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import baseline, fleet, gpudirect
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import KEPT_FOR_TESTS
from tests.unit import fixtures
from tests.unit.plugins.module_utils import drift_samples

KEEP = preflight_for_tests.FilterModule().filters()['preflight_for_tests']
PACK = to_packed_json.FilterModule().filters()['to_packed_json']
UNPACK = from_packed_json.FilterModule().filters()['from_packed_json']
PLAIN = plain_data.FilterModule().filters()['plain_data']


def facts_with_gpudirect():
    """The lab node's reads with a GPUDirect read as gpu_info makes it (synthetic edit: the fixture predates gdr_support)."""
    facts = drift_samples.facts()
    facts['gpu']['gdr_support'] = {'driver': {'version': '580.65.06', 'open_kernel_module': True},
                                   'perftest': {'tool': 'ib_write_bw', 'cuda': True, 'cuda_dmabuf': True, 'cuda_bus_id': True}}
    return facts


def exactly(value, *types):
    """Whether the value's type is one of these (no subclass: Ansible's tagged values are subclasses)."""
    return type(value) in types


def json_size(value):
    return len(json.dumps(value, separators=(',', ':')))


def test_the_tests_read_the_same_from_the_kept_part_as_from_the_whole_reads():
    facts, profile = facts_with_gpudirect(), drift_samples.profile()
    kept = KEEP(facts)
    assert gpudirect.node_gpudirect(kept, profile) == gpudirect.node_gpudirect(facts, profile)
    # nvidia_peermem is loaded on the lab node (host.modules): the kept part must carry the modules as well as gdr_support.
    assert gpudirect.node_gpudirect(kept, profile)['mode'] == 'peermem'
    assert fleet.sku_from_facts(kept) == fleet.sku_from_facts(facts) and fleet.sku_from_facts(kept)
    assert kept['gpu']['gpu_nic_pairs'] == facts['gpu']['gpu_nic_pairs'] and kept['gpu']['gpu_nic_pairs']
    assert kept['rdma']['live_ports'] == facts['rdma']['live_ports'] and kept['rdma']['devices'] == facts['rdma']['devices']
    assert kept['host'] == {'modules': facts['host']['modules']}
    assert sorted(kept) == sorted(section for section, _keys in KEPT_FOR_TESTS)
    # The part is what it is for: a fraction of the reads (the lab node: PCIe, firmware, NIC settings and IRQs left out).
    assert json_size(kept) < json_size(facts) / 4, (json_size(kept), json_size(facts))


def test_the_kept_part_keeps_a_read_that_gave_nothing_and_leaves_out_what_was_never_read():
    assert KEEP({'gpu': None, 'rdma': {'devices': {}}, 'pcie': {'devices': []}}) == {'gpu': None, 'rdma': {'devices': {}}}
    assert KEEP({}) == {} and KEEP(None) == {}


def test_the_whole_reads_come_back_from_their_packed_text_as_the_bundle_writes_them():
    facts = drift_samples.facts()
    packed = PACK(facts)
    assert isinstance(packed, str) and UNPACK(packed) == facts
    # The bundle's preflight.json is the same text from the unpacked reads as from the reads themselves.
    plan_whole = evidence.evidence_plan(drift_samples.result(), drift_samples.profile(), facts)
    plan_unpacked = evidence.evidence_plan(drift_samples.result(), drift_samples.profile(), UNPACK(packed))
    assert plan_unpacked == plan_whole
    # The baseline is made of the whole reads: from the unpacked text it is the same; from the tests' part it would lack
    # the links and firmware of every NIC (why validate.yml gives the evidence role the packed reads).
    made = baseline.build_baseline(drift_samples.result(), UNPACK(packed), drift_samples.profile())
    assert made == baseline.build_baseline(drift_samples.result(), facts, drift_samples.profile())
    assert all(nic['pcie'] and nic['firmware']['version'] for nic in made['facts']['nics']) and made['facts']['nics']
    assert not baseline.build_baseline(drift_samples.result(), KEEP(facts), drift_samples.profile())['facts']['captured']['pcie']
    # An eighth of the compact JSON (the lab node: 8 GPUs and 12 HCAs read alike compress well), and the objects it
    # stands for take about three times the JSON.
    assert len(packed) < json_size(facts) / 8, (len(packed), json_size(facts))


@pytest.mark.parametrize('text, why', [
    (None, 'got NoneType'),
    ({'rdma': {}}, 'got dict'),
    ('not base64!', 'Only base64 data is allowed|Non-base64 digit found|Incorrect padding|invalid'),
    ('aGVsbG8=', 'Error -3 while decompressing'),               # base64 of text that is not zlib
    (base64.b64encode(zlib.compress(b'hello')).decode('ascii'), 'Expecting value'),  # zlib of text that is not JSON
])
def test_a_text_pack_json_did_not_make_is_refused_saying_what_was_expected(text, why):
    with pytest.raises(AnsibleFilterError, match='from_packed_json: expected the text pack_json made') as caught:
        UNPACK(text)
    assert re.search(why, str(caught.value)), str(caught.value)


def test_plain_data_drops_the_origin_tags_of_yaml_and_keeps_every_value():
    loader = DataLoader()
    tiers = loader.load_from_file(os.path.join(fixtures.ROOT, 'roles', 'tier_profile', 'vars', 'main.yml'))['tier_profile_tiers']
    tagged = tiers['400G']
    # What Ansible read from the YAML carries its origin: the profile's texts are not plain str.
    assert not exactly(tagged['description'], str)
    plain = PLAIN(tagged)
    assert plain == tagged

    def plain_all_the_way(value):
        if isinstance(value, dict):
            return exactly(value, dict) and all(exactly(k, str) and plain_all_the_way(v) for k, v in value.items())
        if isinstance(value, list):
            return exactly(value, list) and all(plain_all_the_way(v) for v in value)
        return exactly(value, str, int, float, bool, type(None))

    assert plain_all_the_way(plain) and not plain_all_the_way(tagged)
    # What a node's copy costs the controller: each host's profile comes back from its worker pickled.
    assert len(pickle.dumps(plain)) < len(pickle.dumps(tagged)) / 2, (len(pickle.dumps(plain)), len(pickle.dumps(tagged)))


def test_plain_data_keeps_json_types_as_json_keeps_them():
    assert PLAIN({'a': (1, 2.5, True, None), 3: {'x'}, 'b': b'\xff'}) == {'a': [1, 2.5, True, None], 3: ['x'], 'b': '\ufffd'}
    assert PLAIN(True) is True and PLAIN(0) == 0 and exactly(PLAIN(False), bool)
    # Any mapping becomes a dict (hostvars and Ansible's lazy containers are mappings); another object stays as it is.
    marker = object()
    assert exactly(PLAIN(types.MappingProxyType({'a': 1})), dict) and PLAIN([marker])[0] is marker
