"""host_tuning parsers on real /proc outputs and on faulty or foreign input."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import host_tuning
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures


def test_cmdline_real_vm_separates_init_args():
    result = host_tuning.parse_cmdline(fixtures.local('proc/cmdline_firecracker_vm_dev.txt'))
    assert result['params']['console'] == 'ttyS0'
    assert result['params']['nomodule'] is True
    assert 'iommu=pt' not in result['tokens']
    assert '--firecracker-init' in result['init_args'] and '--firecracker-init' not in result['params']


def test_cmdline_repeated_keys_keep_every_value():
    result = host_tuning.parse_cmdline('BOOT_IMAGE=/vmlinuz ro hugepagesz=2M hugepagesz=1G hugepages=128 iommu=pt\n')
    assert result['params']['hugepagesz'] == '1G'
    assert result['params_all']['hugepagesz'] == ['2M', '1G']
    assert 'iommu=pt' in result['tokens']


@pytest.mark.parametrize('text', ['', '   \n', 'a=1\nb=2\n', 'x\x00y'])
def test_cmdline_rejects_empty_or_multiline(text):
    with pytest.raises(ParseError):
        host_tuning.parse_cmdline(text)


def test_meminfo_real_vm_without_hugepages():
    result = host_tuning.parse_meminfo(fixtures.local('proc/meminfo_firecracker_vm_dev_no_hugepages.txt'))
    assert result['hugepages']['total'] == 0
    assert result['hugepages']['page_size_bytes'] == 2048 * 1024
    assert result['fields']['MemTotal'] > 1024 ** 3


def test_meminfo_rejects_foreign_text():
    with pytest.raises(ParseError):
        host_tuning.parse_meminfo('hca_id: mlx5_0\n\ttransport: InfiniBand (0)\n')


def test_limits_real_vm_memlock():
    result = host_tuning.parse_limits(fixtures.local('proc/limits_firecracker_vm_dev_memlock_8M.txt'))
    assert result['memlock_bytes'] == {'soft': 8388608, 'hard': 8388608}
    assert result['limits']['Max open files']['units'] == 'files'


def test_limits_unlimited():
    text = ('Limit                     Soft Limit           Hard Limit           Units     \n'
            'Max locked memory         unlimited            unlimited            bytes     \n')
    assert host_tuning.parse_limits(text)['memlock_bytes'] == {'soft': 'unlimited', 'hard': 'unlimited'}


def test_proc_modules_and_lsmod_agree():
    proc = ('mlx5_ib 495616 0 - Live 0x0000000000000000\n'
            'mlx5_core 2101248 1 mlx5_ib, Live 0x0000000000000000\n')
    lsmod = ('Module                  Size  Used by\n'
             'mlx5_ib               495616  0\n'
             'mlx5_core            2101248  1 mlx5_ib\n')
    from_proc = host_tuning.parse_proc_modules(proc)['modules']
    from_lsmod = host_tuning.parse_lsmod(lsmod)['modules']
    assert from_proc['mlx5_core']['used_by'] == ['mlx5_ib'] == from_lsmod['mlx5_core']['used_by']
    assert from_proc['mlx5_ib']['size'] == from_lsmod['mlx5_ib']['size'] == 495616


def test_lsmod_without_header_is_an_error():
    with pytest.raises(ParseError):
        host_tuning.parse_lsmod('mlx5_core 2101248 1 mlx5_ib\n')


@pytest.mark.parametrize('text,cpus', [('0-3,8,10-11\n', [0, 1, 2, 3, 8, 10, 11]), ('5', [5]), ('', [])])
def test_cpulist(text, cpus):
    assert host_tuning.parse_cpulist(text)['cpus'] == cpus


@pytest.mark.parametrize('text', ['3-1', 'a-b', '0-3;4'])
def test_cpulist_rejects_garbage(text):
    with pytest.raises(ParseError):
        host_tuning.parse_cpulist(text)


def test_sysfs_readers_on_a_tree(tmp_path):
    for cpu, gov in (('cpu0', 'performance'), ('cpu1', 'powersave')):
        (tmp_path / 'devices/system/cpu' / cpu / 'cpufreq').mkdir(parents=True)
        (tmp_path / 'devices/system/cpu' / cpu / 'cpufreq' / 'scaling_governor').write_text(gov + '\n')
    (tmp_path / 'devices/system/cpu/intel_pstate').mkdir(parents=True)
    (tmp_path / 'devices/system/cpu/intel_pstate/no_turbo').write_text('1\n')
    (tmp_path / 'kernel/mm/hugepages/hugepages-1048576kB').mkdir(parents=True)
    (tmp_path / 'kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages').write_text('128\n')
    governors = host_tuning.read_cpu_governors(str(tmp_path))
    assert host_tuning.summarize_governors(governors) == {'counts': {'performance': 1, 'powersave': 1}, 'uniform': None}
    assert host_tuning.read_no_turbo(str(tmp_path)) is True
    assert host_tuning.read_hugepage_pools(str(tmp_path)) == {1048576: 128}


def test_sysfs_readers_on_a_vm_without_cpufreq(tmp_path):
    assert host_tuning.read_cpu_governors(str(tmp_path)) == {}
    assert host_tuning.read_no_turbo(str(tmp_path)) is None
    assert host_tuning.read_hugepage_pools(str(tmp_path)) == {}
