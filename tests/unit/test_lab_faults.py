"""The lab's faults in one table (lab/netval_lab/faults.py and hardware.EMULATED), and lab/README.md's table of them."""
import os
import re

from lab.netval_lab import faults, hardware
from tests.unit.fixtures import ROOT


def readme_faults():
    with open(os.path.join(ROOT, 'lab', 'README.md'), encoding='utf-8') as handle:
        text = handle.read()
    section = text[text.index('## Faults'):]
    return dict((name, kind) for name, kind in re.findall(r'^\| `([a-z0-9-]+)` \| (real|emulated) \|', section, re.MULTILINE))


def test_every_fault_is_in_the_readme_with_its_kind_and_nothing_else_is():
    table = faults.table()
    assert len(table) >= 14
    assert readme_faults() == dict((name, fault.kind) for name, fault in table.items())


def test_each_fault_says_what_it_does_and_an_emulated_one_acts_on_the_node_or_its_peer():
    for fault in faults.table().values():
        assert fault.does and callable(fault.apply), fault.name
    assert set(emulated.target for emulated in hardware.EMULATED.values()) == {'node', 'peer'}
    assert hardware.FAULTS == tuple(hardware.EMULATED)


def test_an_emulated_fault_changes_the_state_it_is_given_and_an_unknown_one_is_refused():
    state = {'nics': [{'pcie': {'lnksta_gts': 32}, 'bw_gbytes_s': 47.0, 'gdr_bw_gbytes_s': 46.0}], 'host_hw': {'cmdline': ['ro']}}
    hardware.EMULATED['nic0-gen4'].change(state)
    assert state['nics'][0]['pcie']['lnksta_gts'] == 16 and state['nics'][0]['bw_gbytes_s'] == 38.0
    try:
        hardware._apply_one(state, 'nic9-missing')  # pylint: disable=protected-access
    except ValueError as exc:
        assert 'unknown emulated fault' in str(exc)
    else:
        raise AssertionError('an unknown emulated fault was accepted')
