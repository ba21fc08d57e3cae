"""preflight_info: the six reads in one module run on the node, side by side, each failing on its own."""
import json
import time

from ansible_collections.gpufleet.netval.plugins.module_utils import packed_json
from ansible_collections.gpufleet.netval.plugins.modules import gpu_info, preflight_info
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

TIMEOUT = ['/usr/bin/timeout', '--kill-after=5', '60']
SMI_XML = TIMEOUT + ['/usr/bin/nvidia-smi', '-q', '-x']
JOURNAL = TIMEOUT + ['/usr/bin/journalctl', '-k', '-o', 'short-iso', '--no-pager']
ETHTOOL = ['/usr/bin/timeout', '--kill-after=5', '15', '/usr/bin/ethtool']
STATS = Call(ETHTOOL + ['-S', 'eth0'], out='NIC statistics:\n     rx_packets: 12\n     rx_pause_ctrl_phy: 0\n')
XML = fixtures.shared('nvidia-smi-xml/nvidia_smi_qx_515.105.01_A10G_remapped_rows_zero_telegraf.xml.txt')
DRIVER = 'driver: mlx5_core\nversion: 24.10-1.1.4\nfirmware-version: 28.39.1002 (MT_0000000838)\nbus-info: 0000:1b:00.0\n'
GPU = {'topology': False, 'kernel_log': False}
NIC = {'netdevs': ['eth0'], 'settings': False, 'counters': True}


def test_each_read_gives_what_its_own_module_gives():
    together, failed = run_module(preflight_info.main, {'gpu': GPU}, calls=[Call(SMI_XML, out=XML)])
    alone, alone_failed = run_module(gpu_info.main, GPU, calls=[Call(SMI_XML, out=XML)])
    assert not failed and not alone_failed, together
    assert together['reads']['gpu'] == dict((k, v) for k, v in alone.items() if k not in ('changed', '_ran'))
    assert together['failed_reads'] == [] and together['error_class'] is None
    assert set(together['reads']) == {'gpu'}   # a read that is not asked for is not made


def test_the_reads_run_side_by_side_in_one_process():
    started = time.time()
    result, failed = run_module(preflight_info.main, {'gpu': dict(GPU, kernel_log=True, gpus=False), 'nic': NIC},
                                calls=[Call(JOURNAL, out='', seconds=0.6), Call(STATS.argv, out=STATS.out, seconds=0.6)], any_order=True)
    took = time.time() - started
    assert not failed, result
    spans = dict((tuple(argv), (start, end)) for argv, start, end in result['_spans'])
    journal, stats = spans[tuple(JOURNAL)], spans[tuple(STATS.argv)]
    assert min(journal[1], stats[1]) > max(journal[0], stats[0]), 'the two reads did not overlap'
    assert took < 1.1, took
    assert result['reads']['nic']['nics']['eth0']['counters']['counters']['rx_packets'] == 12


def test_a_read_that_fails_is_its_own_finding_unless_it_is_required():
    args = {'gpu': GPU, 'nic': NIC}
    result, failed = run_module(preflight_info.main, dict(args, gpu=dict(GPU, required=True)), calls=[STATS], missing=('nvidia-smi',))
    assert not failed, result
    assert result['failed_reads'] == ['gpu'] and "'nvidia-smi' was not found" in result['reads']['gpu']['msg']
    assert result['reads']['gpu']['error_class'] == 'tool_missing' and 'failed' not in result['reads']['gpu']
    required, failed = run_module(preflight_info.main, dict(args, gpu=dict(GPU, required=True), required=['gpu']), calls=[STATS],
                                  missing=('nvidia-smi',))
    assert failed and required['msg'].endswith("the gpu read (gpu_info) failed: %s" % result['reads']['gpu']['msg'])
    assert (required['error_class'], required['error_side']) == ('tool_missing', 'ours') and required['failed_reads'] == ['gpu']


def test_a_bad_option_of_any_read_fails_the_task_before_anything_is_read():
    result, failed = run_module(preflight_info.main, {'gpu': GPU, 'nic': dict(NIC, netdevs=['eth0\n']), 'host': {'memlock_user': 'no body'}})
    assert failed and result['error_class'] == 'invalid_options' and result['_ran'] == []
    assert 'nic: ' in result['msg'] and 'host: memlock_user' in result['msg']
    typo, failed = run_module(preflight_info.main, {'gpu': dict(GPU, topolgy=True)})
    assert failed and 'gpu: ' in typo['msg'] and 'topolgy' in typo['msg'] and typo['_ran'] == []
    unread, failed = run_module(preflight_info.main, {'gpu': GPU, 'required': ['rdma']})
    assert failed and 'required names rdma, which is not read' in unread['msg']


def test_a_read_that_crashes_does_not_end_the_others(monkeypatch):
    from ansible_collections.gpufleet.netval.plugins.module_utils.reads import nic_info

    def broken(module):
        raise KeyError('a bug of ours')
    monkeypatch.setattr(nic_info, 'read', broken)
    result, failed = run_module(preflight_info.main, {'gpu': GPU, 'nic': NIC}, calls=[Call(SMI_XML, out=XML)])
    assert not failed and result['failed_reads'] == ['nic']
    assert 'KeyError' in result['reads']['nic']['msg'] and result['reads']['gpu']['gpu_count'] == 1


def test_the_result_carries_the_nodes_own_clock():
    before = int(time.time())
    result, failed = run_module(preflight_info.main, {'gpu': GPU}, calls=[Call(SMI_XML, out=XML)])
    assert not failed and before <= result['node_time_epoch'] <= int(time.time())


def test_packed_the_reads_come_back_as_one_text_that_unpacks_to_the_same_reads():
    whole, failed = run_module(preflight_info.main, {'gpu': GPU}, calls=[Call(SMI_XML, out=XML)])
    packed, packed_failed = run_module(preflight_info.main, {'gpu': GPU, 'packed': True}, calls=[Call(SMI_XML, out=XML)])
    assert not failed and not packed_failed, packed
    assert 'reads' not in packed and isinstance(packed['reads_packed'], str)
    assert packed_json.unpack_json(packed['reads_packed']) == whole['reads']
    assert len(packed['reads_packed']) < len(json.dumps(whole['reads']))
    assert packed['failed_reads'] == [] and packed['error_class'] is None and 'node_time_epoch' in packed


def test_packed_a_failed_task_still_returns_its_reads_as_they_are():
    args = {'gpu': dict(GPU, required=True), 'nic': NIC, 'required': ['gpu'], 'packed': True}
    result, failed = run_module(preflight_info.main, args, calls=[STATS], missing=('nvidia-smi',))
    assert failed and 'reads_packed' not in result
    assert result['reads']['gpu']['error_class'] == 'tool_missing' and result['reads']['nic']['nics']['eth0']
