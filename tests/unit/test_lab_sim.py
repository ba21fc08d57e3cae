"""The simulated fleet's pure parts (lab/netval_lab/sim.py): reading a module call off the wire, picking the recorded
call most like it, carrying the call's own values into the recorded answer, the planned time, the inventory and the
ledger.  The recordings here are synthetic (a few fields of the shape the recorder writes); tests/e2e's simulated run
answers a real validate.yml from the real recording."""
import json

import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import packed_json
from lab.netval_lab import sim

# synthetic: the trailer ansible-core 2.19+ writes after the AnsiballZ wrapper's code (executor/module_common.py)
WRAPPER = b'''import sys
def _ansiballz_main(**kwargs): pass


if __name__ == "__main__":
    _ansiballz_main(
zip_data='UEsDBBQ=',
ansible_module='perftest',
module_fqn='ansible_collections.gpufleet.netval.plugins.modules.perftest',
profile='legacy',
date_time=datetime.datetime(2026, 12, 5, 0, 0),
rlimit_nofile=0,
params='{"ANSIBLE_MODULE_ARGS": {"test": "ib_write_bw", "role": "client", "server": "10.200.0.2", "port": 18515, "_ansible_check_mode": false}}',
extensions={},
)
'''

RECORDED = {  # synthetic: a recording of two calls of one module on a lab of node01 and peer01
    'tier': '400G', 'files': {},
    'hosts': {'node01': {'role': 'new', 'fabric': ['10.252.0.1']}, 'peer01': {'role': 'peer', 'fabric': ['10.252.0.2']}},
    'calls': [
        {'host': 'node01', 'role': 'new', 'module': 'gpufleet.netval.perftest', 'seconds': 1.2,
         'params': {'test': 'ib_write_bw', 'role': 'client', 'server': '10.252.0.2', 'port': 18515, 'device': 'mlx5_0'},
         'result': {'port': 18515, 'cmd': ['ib_write_bw', '-d', 'mlx5_0', '-p', '18515', '10.252.0.2'], 'bw_gbps': 391.2,
                    'msg': 'node01 measured against peer01', 'iterations': 5000}},
        {'host': 'node01', 'role': 'new', 'module': 'gpufleet.netval.perftest', 'seconds': 0.3,
         'params': {'test': 'ib_write_bw', 'role': 'server', 'port': 18515, 'device': 'mlx5_0'},
         'result': {'port': 18515, 'pid': 4242}},
    ]}


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    recording = tmp_path / 'recording.json'
    recording.write_text(json.dumps(RECORDED))
    folder = tmp_path / 'sim'
    sim.write_inventory(str(folder), 3, 1, str(recording), scale=0.5, forks=8)
    monkeypatch.setenv('NETVAL_SIM_DIR', str(folder))
    sim._STATE.clear()
    yield folder
    sim._STATE.clear()


def test_a_module_call_is_read_off_the_wrapper_and_anything_else_is_a_command():
    module, params = sim.parse_ansiballz(WRAPPER)
    assert module == 'gpufleet.netval.perftest'
    assert params == {'test': 'ib_write_bw', 'role': 'client', 'server': '10.200.0.2', 'port': 18515}  # _ansible_* left out
    assert sim.parse_ansiballz(b'/bin/sh -c "echo ~ && sleep 0"') == (None, None)


def test_the_inventory_names_every_host_once_on_one_fabric_and_none_is_pinned(fleet):
    inventory = json.loads((fleet / 'hosts.yml').read_text().split('\n', 2)[2])
    group = inventory['all']['children']['sim']
    nodes, peers = group['children']['new_nodes']['hosts'], group['children']['known_good_peers']['hosts']
    assert sorted(nodes) == ['node01', 'node02', 'node03'] and sorted(peers) == ['peer01']
    addresses = [host['netval_fabric_ip'] for host in list(nodes.values()) + list(peers.values())]
    assert len(set(addresses)) == 4 and all(a.startswith('10.200.') for a in addresses)
    assert not any('netval_peer' in host for host in nodes.values())
    assert group['vars']['ansible_connection'] == 'netval_sim' and group['vars']['netval_tier'] == '400G'
    assert group['vars']['netval_prediction_costs']['call_s'] == 0.5 and group['vars']['netval_prediction_costs']['parallel_nodes'] == 8
    assert sim.host_names(1024, 2) == (['node%04d' % i for i in range(1, 1025)], ['peer01', 'peer02'])


def test_the_answer_is_the_most_alike_recorded_call_with_this_calls_ports_addresses_devices_and_hosts(fleet):
    peer = json.loads((fleet / 'hosts.json').read_text())['hosts']['peer01']['fabric_ip']
    result, seconds = sim.answer('node02', 'gpufleet.netval.perftest',
                                 {'test': 'ib_write_bw', 'role': 'client', 'server': peer, 'port': 18547, 'device': 'mlx5_3', 'duration': 30})
    assert result['port'] == 18547 and result['cmd'] == ['ib_write_bw', '-d', 'mlx5_3', '-p', '18547', peer]
    assert result['msg'] == 'node02 measured against peer01' and result['bw_gbps'] == 391.2
    assert result['iterations'] == 5000  # a number the arguments did not change stays
    assert seconds == pytest.approx((1.0 + 30 + 0.5) * 0.5)  # a call, the session's duration and set-up, at scale 0.5
    server, seconds = sim.answer('peer01', 'gpufleet.netval.perftest',
                                 {'test': 'ib_write_bw', 'role': 'server', 'port': 18547, 'device': 'mlx5_3'})
    assert server == {'port': 18547, 'pid': 4242} and seconds == pytest.approx(0.5)


@pytest.mark.parametrize('module, params, seconds', [
    ('gpufleet.netval.rdma_info', {}, 1.0),
    ('gpufleet.netval.iperf3', {'role': 'client', 'duration': 20}, 21.5),
    ('gpufleet.netval.iperf3', {'role': 'server'}, 1.0),
    ('gpufleet.netval.dcgmi_diag', {'level': 3}, 1801.5),
    ('gpufleet.netval.nccl_tests', {'iters': 20}, 61.5),
    ('gpufleet.netval.perftest', {'role': 'client', 'iterations': 5000}, 4.5),
])
def test_the_planned_time_is_a_call_plus_each_session_it_runs(module, params, seconds):
    assert sim.planned_seconds(module, params) == pytest.approx(seconds)


def test_a_module_the_recording_never_saw_fails_the_call_with_a_reason_not_a_traceback(fleet):
    rc, out, _err = sim.execute('node01', 'python3', WRAPPER.replace(b'plugins.modules.perftest', b'plugins.modules.nccl_tests'))
    result = json.loads(out)
    assert rc == 0 and result['failed'] and result['msg'] == 'netval sim: the recording has no call of gpufleet.netval.nccl_tests'


def test_the_ledger_holds_a_nodes_measuring_calls_on_the_host_it_measured_and_on_itself(fleet):
    hosts = json.loads((fleet / 'hosts.json').read_text())['hosts']
    peer, node02 = hosts['peer01']['fabric_ip'], hosts['node02']['fabric_ip']
    wrapper = WRAPPER.replace(b'10.200.0.2', peer.encode())   # node01 (slot 0, port 18515) measures peer01
    sim.execute('node01', 'python3', wrapper)
    # peer01's client to node02's server: node02 receives, its slot's port (18515 + 32) names it
    sim.execute('peer01', 'python3', WRAPPER.replace(b'10.200.0.2', node02.encode()).replace(b'18515', b'18547'))
    sim.execute('peer01', 'python3', wrapper.replace(b'"role": "client", "server": "%s", ' % peer.encode(), b'"role": "server", '))  # no session
    intervals = sim.ledger_intervals(str(fleet))
    assert [(host, node) for host, _hca, node, _start, _end in intervals] == [
        ('peer01', 'node01'), ('node01', 'node01'), ('peer01', 'node02'), ('node02', 'node02')]
    assert all(end >= start for _host, _hca, _node, start, end in intervals)
    assert sim.session_of('node01', 'gpufleet.netval.jumbo_ping', {'dest': peer}) == ('node01', 'peer01')
    assert sim.session_of('node01', 'gpufleet.netval.rdma_info', {'dest': peer}) is None


def test_a_recorded_time_stamp_becomes_the_time_of_the_answer_so_two_snapshots_are_in_order():
    recorded = {'nics': {'ibp59s0': {'timestamp': 1796516860.71, 'counters': {'rx_pause': 0}}}, 'count': 3, 'timestamp': 'text'}
    first = sim._restamp(recorded, 2000000000.0)  # pylint: disable=protected-access
    second = sim._restamp(recorded, 2000000002.5)  # pylint: disable=protected-access
    assert first['nics']['ibp59s0'] == {'timestamp': 2000000000.0, 'counters': {'rx_pause': 0}}
    assert second['nics']['ibp59s0']['timestamp'] - first['nics']['ibp59s0']['timestamp'] == pytest.approx(2.5)
    assert first['count'] == 3 and first['timestamp'] == 'text' and recorded['nics']['ibp59s0']['timestamp'] == 1796516860.71
    # rdma_info's port counters carry their own read time: PortXmitWait per second needs two different ones.
    rdma = {'devices': {'mlx5_0': {}}, 'counters_at': 1796516860.5, 'flag': True}
    assert sim._restamp(rdma, 2000000002.5) == {'devices': {'mlx5_0': {}}, 'counters_at': 2000000002.5, 'flag': True}  # pylint: disable=protected-access


def test_preflight_info_answers_packed_when_the_call_asks_whichever_way_the_recording_had_the_reads():
    reads = {'rdma': {'live_ports': [{'netdev': 'ibp59s0'}]}, 'gpu': {'gpu_count': 8}}  # synthetic
    asked_packed = {'reads': dict(reads), 'failed_reads': []}
    sim._pack_reads(asked_packed, True)  # pylint: disable=protected-access
    assert 'reads' not in asked_packed and packed_json.unpack_json(asked_packed['reads_packed']) == reads
    asked_whole = dict(asked_packed)
    sim._pack_reads(asked_whole, False)  # pylint: disable=protected-access
    assert asked_whole == {'reads': reads, 'failed_reads': []}
    failed = {'failed': True, 'msg': 'the rdma read failed', 'reads': dict(reads), 'failed_reads': ['rdma']}
    sim._pack_reads(failed, True)  # pylint: disable=protected-access
    assert failed['reads'] == reads and 'reads_packed' not in failed  # as the module: a failed task's reads as they are
