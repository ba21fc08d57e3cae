"""host_tuning_info reads /proc and /sys; the tests point it at trees."""
import shutil

from ansible_collections.gpufleet.netval.plugins.modules import host_tuning_info
from tests.unit import fixtures
from tests.unit.plugins.modules.utils import Call, run_module


def make_tree(tmp_path, cmdline='BOOT_IMAGE=/vmlinuz iommu=pt hugepages=128\n', with_modules=True):
    proc = tmp_path / 'proc'
    (proc / 'self').mkdir(parents=True)
    (proc / 'cmdline').write_text(cmdline)
    (proc / 'meminfo').write_text(fixtures.local('proc/meminfo_firecracker_vm_dev_no_hugepages.txt'))
    (proc / 'self' / 'limits').write_text(fixtures.local('proc/limits_firecracker_vm_dev_memlock_8M.txt'))
    if with_modules:
        (proc / 'modules').write_text('mlx5_core 2101248 1 mlx5_ib, Live 0x0000000000000000\n')
    sys_root = tmp_path / 'sys'
    (sys_root / 'devices/system/cpu/cpu0/cpufreq').mkdir(parents=True)
    (sys_root / 'devices/system/cpu/cpu0/cpufreq/scaling_governor').write_text('powersave\n')
    return str(proc), str(sys_root)


def test_reads_a_tree(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root})
    assert not failed, result
    assert result['changed'] is False
    assert 'iommu=pt' in result['cmdline']['tokens']
    assert result['modules']['mlx5_core']['used_by'] == ['mlx5_ib']
    assert result['cpu_governor'] == {'counts': {'powersave': 1}, 'uniform': 'powersave'}
    assert result['memlock'] == {'soft': 8388608, 'hard': 8388608}
    assert result['hugepages']['total'] == 0
    assert result['_ran'] == []


def test_kernel_without_modules_gives_empty_modules(tmp_path):
    proc, sys_root = make_tree(tmp_path, with_modules=False)
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root}, check_mode=True)
    assert not failed and result['modules'] == {}


def test_garbage_meminfo_fails_with_host_and_path(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    (tmp_path / 'proc' / 'meminfo').write_text('this is not meminfo\n')
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root})
    assert failed
    assert 'meminfo output' in result['msg'] and str(tmp_path) in result['msg']


def test_missing_cmdline_fails_clearly(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    (tmp_path / 'proc' / 'cmdline').unlink()
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root})
    assert failed and 'cannot read' in result['msg'] and 'cmdline' in result['msg']
    shutil.rmtree(str(tmp_path / 'proc'))


def test_irq_placement_against_the_nic_numa_node(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    (tmp_path / 'proc' / 'interrupts').write_text(
        '           CPU0       CPU1       CPU2       CPU3\n'
        '  85:       1200          0          0          0  IR-PCI-MSIX-0000:1b:00.0    1-edge      mlx5_comp0@pci:0000:1b:00.0\n'
        '  86:          0          0        900          0  IR-PCI-MSIX-0000:1b:00.0    2-edge      mlx5_comp1@pci:0000:1b:00.0\n'
        '  90:          5          0          0          0  IR-PCI-MSIX-0000:9a:00.0    1-edge      mlx5_comp0@pci:0000:9a:00.0\n')
    for number, cpus in (('85', '0-1'), ('86', '2'), ('90', '3')):
        (tmp_path / 'proc' / 'irq' / number).mkdir(parents=True)
        (tmp_path / 'proc' / 'irq' / number / 'smp_affinity_list').write_text(cpus + '\n')
    dev = tmp_path / 'sys' / 'bus' / 'pci' / 'devices' / '0000:1b:00.0'
    dev.mkdir(parents=True)
    (dev / 'numa_node').write_text('0\n')
    (dev / 'local_cpulist').write_text('0-1\n')
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root, 'irq_devices': ['0000:1b:00.0']})
    assert not failed, result
    placement = result['irq_placement']['0000:1b:00.0']
    assert placement['count'] == 2 and placement['off_node'] == ['86'] and placement['fraction_local'] == 0.5
    assert placement['numa_node'] == 0
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root, 'irq_devices': ['mlx5_0']})
    assert failed and 'not a PCI address' in result['msg']


def test_irq_rdma_devices_reads_the_rdma_devices_pci_addresses_from_sysfs(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    (tmp_path / 'proc' / 'interrupts').write_text(
        '           CPU0       CPU1\n'
        '  85:       1200          0  IR-PCI-MSIX-0000:1b:00.0    1-edge      mlx5_comp0@pci:0000:1b:00.0\n')
    (tmp_path / 'proc' / 'irq' / '85').mkdir(parents=True)
    (tmp_path / 'proc' / 'irq' / '85' / 'smp_affinity_list').write_text('1\n')
    dev = tmp_path / 'sys' / 'bus' / 'pci' / 'devices' / '0000:1b:00.0'
    dev.mkdir(parents=True)
    (dev / 'numa_node').write_text('0\n')
    (dev / 'local_cpulist').write_text('0\n')
    # The kernel's layout: class/infiniband/<dev>/device links to the PCI function.
    ib = tmp_path / 'sys' / 'class' / 'infiniband' / 'mlx5_0'
    ib.mkdir(parents=True)
    (ib / 'device').symlink_to(dev)
    args = {'procfs_root': proc, 'sysfs_root': sys_root}
    result, failed = run_module(host_tuning_info.main, args)
    assert not failed and result['irq_placement'] == {}
    result, failed = run_module(host_tuning_info.main, dict(args, irq_rdma_devices=True))
    assert not failed, result
    assert list(result['irq_placement']) == ['0000:1b:00.0']
    assert result['irq_placement']['0000:1b:00.0']['off_node'] == ['85']
    # Named both ways, it is read once.
    both, failed = run_module(host_tuning_info.main, dict(args, irq_rdma_devices=True, irq_devices=['0000:1b:00.0']))
    assert not failed and both['irq_placement'] == result['irq_placement']


def limits_tree(tmp_path, dropin):
    security = tmp_path / 'security'
    (security / 'limits.d').mkdir(parents=True)
    (security / 'limits.conf').write_text(fixtures.local('limits/limits_conf_debian12_libpam_modules_1.5.2_default.txt'))
    (security / 'limits.d' / '99-rdma.conf').write_text(dropin)
    return str(security)


RUNUSER = ['/usr/bin/timeout', '--kill-after=5', '20', '/usr/bin/runuser', '-l', 'root', '-c', 'ulimit -l']
SU = ['/usr/bin/timeout', '--kill-after=5', '20', '/usr/bin/su', '-', 'root', '-c', 'ulimit -l']


def test_memlock_of_a_tree_is_the_pam_files_then_the_tree_not_a_shell_here(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    security = limits_tree(tmp_path, fixtures.local('limits/limits_d_99-rdma_conf_runbook_mixed_synthetic.txt'))
    nobody, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root, 'limits_dir': security,
                                                        'memlock_user': 'nobody'})
    assert not failed and nobody['_ran'] == []
    login = nobody['memlock_login']
    assert (login['soft_kib'], login['source'], login['login_shell']) == ('unlimited', 'pam_limits', None)
    assert login['pam_limits']['soft_from'] == security + '/limits.d/99-rdma.conf: *    soft    memlock    unlimited'
    # root: the wildcard lines do not apply, so the tree's own limits (8 MiB) stand for the session
    root, _failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root, 'limits_dir': security})
    assert (root['memlock_login']['soft_kib'], root['memlock_login']['source']) == (8192, 'procfs_root')
    assert root['memlock_login']['pam_limits']['soft'] is None


def test_login_shell_wins_over_the_files(tmp_path):
    security = limits_tree(tmp_path, '*  soft  memlock  64\n')
    result, failed = run_module(host_tuning_info.main, {'limits_dir': security, 'memlock_user': 'nobody'},
                                calls=[Call(RUNUSER[:5] + ['nobody'] + RUNUSER[6:], out='Welcome\nunlimited\n')])
    assert not failed, result
    login = result['memlock_login']
    assert (login['soft_kib'], login['source'], login['errors']) == ('unlimited', 'login_shell', [])
    assert login['login_shell']['cmd'] == "runuser -l nobody -c 'ulimit -l'" and login['pam_limits']['soft'] == 64


def test_su_when_runuser_is_missing_and_a_failed_shell_is_recorded_not_fatal(tmp_path):
    security = limits_tree(tmp_path, 'root  soft  memlock  unlimited\n')
    result, failed = run_module(host_tuning_info.main, {'limits_dir': security}, missing=('runuser',),
                                calls=[Call(SU, rc=124)])
    assert not failed, result
    login = result['memlock_login']
    assert (login['soft_kib'], login['source']) == ('unlimited', 'pam_limits')
    assert login['errors'] == ["su - root -c 'ulimit -l' timed out: no message"]
    nothing, failed = run_module(host_tuning_info.main, {'limits_dir': str(tmp_path / 'none')}, missing=('runuser', 'su'))
    assert not failed and nothing['memlock_login']['soft_kib'] is None and nothing['memlock_login']['source'] is None
    assert 'neither runuser nor su' in nothing['memlock_login']['errors'][0]


def test_a_user_name_that_is_not_one_is_refused(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root, 'memlock_user': '-root'})
    assert failed and 'memlock_user' in result['msg']


def test_no_proc_interrupts_is_unknown_placement_not_a_failed_module(tmp_path):
    proc, sys_root = make_tree(tmp_path)
    result, failed = run_module(host_tuning_info.main, {'procfs_root': proc, 'sysfs_root': sys_root, 'irq_devices': ['0000:1b:00.0']})
    assert not failed, result
    placement = result['irq_placement']['0000:1b:00.0']
    assert placement['fraction_local'] is None and placement['error'] == 'cannot read %s/interrupts' % proc
    assert result['cmdline']['tokens'][1] == 'iommu=pt'
