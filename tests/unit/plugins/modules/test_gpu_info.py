"""gpu_info runs nvidia-smi -q -x, topo -m and journalctl -k (or dmesg); real outputs are the mocked command output."""
import socket

from ansible_collections.gpufleet.netval.plugins.modules import gpu_info
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module

TIMEOUT = ['/usr/bin/timeout', '--kill-after=5', '60']
SMI_XML = TIMEOUT + ['/usr/bin/nvidia-smi', '-q', '-x']
SMI_TOPO = TIMEOUT + ['/usr/bin/nvidia-smi', 'topo', '-m']
JOURNAL = TIMEOUT + ['/usr/bin/journalctl', '-k', '-o', 'short-iso', '--no-pager']
DMESG = TIMEOUT + ['/usr/bin/dmesg']

XML = fixtures.shared('nvidia-smi-xml/nvidia_smi_qx_515.105.01_A10G_remapped_rows_zero_telegraf.xml.txt')
TOPO = fixtures.local('nvidia/topo_m_8xh100_nv18_8nic_pix_sglang30401.txt')
XID_LOG = fixtures.local('kernel_log/dmesg_xid79_fallen_off_bus_and_nvswitch_sxid_gpud_readme.txt')
# The A10G sits at 00000000:00:1E.0; one Xid 79 line on that bus in journalctl short-iso form.
A10G_XID = '2024-05-01T10:00:00+0000 node kernel: NVRM: Xid (PCI:0000:00:1e): 79, pid=1234, name=python3, GPU has fallen off the bus.\n'


def test_inventory_topology_and_kernel_log():
    result, failed = run_module(gpu_info.main, {}, calls=[
        Call(SMI_XML, out=XML), Call(SMI_TOPO, out=TOPO), Call(JOURNAL, out=XID_LOG + A10G_XID)])
    assert not failed, result
    assert result['changed'] is False and result['nvidia_smi'] == 'present'
    assert (result['driver_version'], result['gpu_count'], result['gpu_count_mismatch']) == ('515.105.01', 1, False)
    assert result['gpus'][0]['bus_id'] == '0000:00:1e.0' and result['gpus'][0]['remapped_rows']['pending'] is False
    assert result['topology']['nic_legend']['NIC0'] == 'mlx5_0'
    assert result['gpu_nic_pairs'][0] == {'nic': 'mlx5_0', 'nic_column': 'NIC0', 'gpu': 0, 'gpu_name': 'GPU0', 'link': 'PIX',
                                          'numa_node': 0, 'numa_local': True}
    assert [(e['code'], e['bus_id']) for e in result['xid_events']] == [(79, '0000:91:00.0'), (79, '0000:00:1e.0')]
    assert [e['pid'] for e in result['gpus'][0]['xid']] == [1234]
    assert result['kernel_log']['source'] == 'journalctl' and len(result['kernel_log']['sxid']) == 8
    assert [e['bus_id'] for e in result['kernel_log']['fallen_off_bus']] == ['0000:91:00.0', '0000:00:1e.0']


def test_since_is_passed_as_one_argument_and_topology_can_be_skipped():
    result, failed = run_module(gpu_info.main, {'since': '-1h', 'topology': False}, calls=[
        Call(SMI_XML, out=XML), Call(JOURNAL + ['--since=-1h'], out='')])
    assert not failed, result
    assert result['topology'] is None and result['gpu_nic_pairs'] == [] and result['xid_events'] == []
    assert result['kernel_log']['since_applied'] is True


def test_gpus_false_reads_only_the_kernel_log_and_keeps_its_events():
    result, failed = run_module(gpu_info.main, {'gpus': False, 'topology': False, 'since': '2026-12-03 10:00:00'}, calls=[
        Call(JOURNAL + ['--since=2026-12-03 10:00:00'], out=XID_LOG + A10G_XID)])
    assert not failed, result
    assert [call[-1] for call in result['_ran']] == ['--since=2026-12-03 10:00:00']   # no nvidia-smi
    assert (result['nvidia_smi'], result['gpus'], result['gpu_count']) == ('skipped', [], 0)
    assert [(e['code'], e['bus_id']) for e in result['xid_events']] == [(79, '0000:91:00.0'), (79, '0000:00:1e.0')]
    assert len(result['kernel_log']['sxid']) == 8


def test_gpus_false_with_what_needs_nvidia_smi_is_refused_before_running_anything():
    for args in ({'gpus': False}, {'gpus': False, 'topology': False, 'kernel_log': False},
                 {'gpus': False, 'topology': False, 'required': True}):
        result, failed = run_module(gpu_info.main, args)
        assert failed and result['error_class'] == 'invalid_options' and 'gpus=false reads only the kernel log' in result['msg']
        assert result['_ran'] == []


def test_bad_since_is_rejected_before_running_anything():
    result, failed = run_module(gpu_info.main, {'since': '1h; reboot'})
    assert failed and 'since=' in result['msg'] and socket.gethostname() in result['msg']
    assert result['_ran'] == []


def test_no_nvidia_smi_is_a_node_without_gpus():
    result, failed = run_module(gpu_info.main, {}, calls=[Call(JOURNAL, out='')], missing=('nvidia-smi',))
    assert not failed, result
    assert (result['nvidia_smi'], result['gpus'], result['gpu_count'], result['topology']) == ('missing', [], 0, None)
    assert result['xid_events'] == []


def test_no_nvidia_smi_fails_when_required():
    result, failed = run_module(gpu_info.main, {'required': True}, missing=('nvidia-smi',))
    assert failed and 'nvidia-smi' in result['msg'] and 'nvidia-utils' in result['msg']
    assert socket.gethostname() in result['msg']


def test_nvidia_smi_failure_names_host_command_rc_and_message():
    message = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
               "Make sure that the latest NVIDIA driver is installed and running.\n")
    result, failed = run_module(gpu_info.main, {}, calls=[Call(SMI_XML, rc=9, out=message)])
    assert failed
    assert socket.gethostname() in result['msg'] and '/usr/bin/nvidia-smi -q -x' in result['msg']
    assert 'rc=9' in result['msg'] and "couldn't communicate with the NVIDIA driver" in result['msg']


def test_garbage_output_fails_cleanly():
    result, failed = run_module(gpu_info.main, {}, calls=[Call(SMI_XML, out='<nvidia_smi_log><gpu>')])
    assert failed and 'could not be parsed' in result['msg'] and 'nvidia-smi -q -x' in result['msg']


def test_garbage_topology_fails_cleanly():
    result, failed = run_module(gpu_info.main, {}, calls=[Call(SMI_XML, out=XML), Call(SMI_TOPO, out='Topology not supported\n')])
    assert failed and 'could not be parsed' in result['msg'] and 'topo -m' in result['msg']


def test_empty_journal_falls_back_to_dmesg():
    result, failed = run_module(gpu_info.main, {'topology': False}, calls=[
        Call(SMI_XML, out=XML),
        Call(JOURNAL, out='-- No entries --\n', err='No journal files were found.\n'),
        Call(DMESG, out=A10G_XID.split(' kernel: ')[1])])
    assert not failed, result
    assert result['kernel_log']['source'] == 'dmesg' and result['xid_events'][0]['code'] == 79


def test_unreadable_kernel_log_is_unknown_not_empty():
    result, failed = run_module(gpu_info.main, {'topology': False}, calls=[
        Call(SMI_XML, out=XML), Call(DMESG, rc=1, err='dmesg: read kernel buffer failed: Operation not permitted\n')],
        missing=('journalctl',))
    assert not failed, result
    assert result['xid_events'] is None and result['thermal_events'] is None
    assert 'Operation not permitted' in result['kernel_log']['error'] and socket.gethostname() in result['kernel_log']['error']


def test_check_mode_still_reads():
    result, failed = run_module(gpu_info.main, {'kernel_log': False}, check_mode=True, calls=[
        Call(SMI_XML, out=XML), Call(SMI_TOPO, out=TOPO)])
    assert not failed and result['changed'] is False and result['kernel_log'] is None
    assert len(result['_ran']) == 2


HELP = TIMEOUT + ['/usr/bin/ib_send_bw', '--help']
DISCOVERY = TIMEOUT + ['/usr/bin/dcgmi', 'discovery', '-l']


def procfs(tmp_path, version_fixture):
    folder = tmp_path / 'driver' / 'nvidia'
    folder.mkdir(parents=True)
    (folder / 'version').write_text(fixtures.local(version_fixture))
    return str(tmp_path)


def test_gdr_reads_the_driver_flavour_and_perftests_cuda_options(tmp_path):
    root = procfs(tmp_path, 'nvidia/proc_driver_nvidia_version_555.42.02_open_kernel_module_public.txt')
    # Debian's perftest prints its usage and exits 1: the text says what it can do, not the status.
    result, failed = run_module(gpu_info.main, {'topology': False, 'kernel_log': False, 'gdr': True, 'procfs_root': root}, calls=[
        Call(SMI_XML, out=XML), Call(HELP, rc=1, out=fixtures.local('perftest/ib_send_bw_help_debian12_perftest606_no_cuda.txt'))])
    assert not failed, result
    support = result['gdr_support']
    assert support['driver'] == dict(support['driver'], version='555.42.02', open_kernel_module=True, error=None)
    assert support['perftest'] == dict(support['perftest'], tool='ib_send_bw', cuda=False, cuda_bus_id=False, cuda_dmabuf=False, error=None)


def test_gdr_without_perftest_or_the_nvidia_module_says_so(tmp_path):
    result, failed = run_module(gpu_info.main, {'topology': False, 'kernel_log': False, 'gdr': True, 'procfs_root': str(tmp_path)},
                                calls=[Call(SMI_XML, out=XML)], missing=('ib_send_bw',))
    assert not failed, result
    assert 'is not installed (install package perftest' in result['gdr_support']['perftest']['error']
    assert 'the NVIDIA kernel module is not loaded' in result['gdr_support']['driver']['error']


def test_dcgm_says_whether_the_host_engine_answers():
    down = fixtures.local('dcgmi/dcgmi_discovery_l_no_hostengine_dcgm_exporter_pod_blog.txt')
    result, failed = run_module(gpu_info.main, {'topology': False, 'kernel_log': False, 'dcgm': True}, calls=[
        Call(SMI_XML, out=XML), Call(DISCOVERY, rc=255, out=down)])
    assert not failed, result
    assert result['dcgm']['hostengine'] == 'unreachable' and 'Unable to connect to host engine' in result['dcgm']['error']
    up = fixtures.local('dcgmi/dcgmi_discovery_l_8x_h800_0_nvswitches_public_notes.txt')
    result, failed = run_module(gpu_info.main, {'topology': False, 'kernel_log': False, 'dcgm': True}, calls=[
        Call(SMI_XML, out=XML), Call(DISCOVERY, out=up)])
    assert result['dcgm'] == dict(result['dcgm'], hostengine='reachable', gpu_count=8, error=None)


def test_since_an_epoch_read_on_the_node_is_passed_as_journalctl_takes_it():
    result, failed = run_module(gpu_info.main, {'since': '@1764582300', 'gpus': False, 'topology': False}, calls=[
        Call(JOURNAL + ['--since=@1764582300'], out='')])
    assert not failed, result
    assert result['kernel_log']['since_applied'] is True
