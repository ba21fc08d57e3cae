"""host_tuning parsers on real /proc outputs and on faulty or foreign input."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import host_tuning
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


@pytest.mark.parametrize('refcount', ['--1', '1-', '-', '\u0663', '1.0'])
def test_lsmod_refuses_a_refcount_that_is_no_integer(refcount):
    # synthetic: the hypothesis test once drew '--1', which the old check let through to int()
    with pytest.raises(ParseError):
        host_tuning.parse_lsmod('Module                  Size  Used by\nmlx5_core            1331200  %s mlx5_ib\n' % refcount)
    # /proc/modules keeps the module and leaves the refcount it cannot read out
    parsed = host_tuning.parse_proc_modules('mlx5_core 1331200 %s mlx5_ib, Live 0x0000000000000000\n' % refcount)
    assert parsed['modules']['mlx5_core']['refcount'] is None


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


DEBIAN_LIMITS = 'limits/limits_conf_debian12_libpam_modules_1.5.2_default.txt'
RDMA_DROPIN = 'limits/limits_d_99-rdma_conf_runbook_mixed_synthetic.txt'


def pam_files():
    return [('/etc/security/limits.conf', host_tuning.parse_pam_limits(fixtures.local(DEBIAN_LIMITS))),
            ('/etc/security/limits.d/99-rdma.conf', host_tuning.parse_pam_limits(fixtures.local(RDMA_DROPIN)))]


def test_debian_default_limits_conf_sets_nothing():
    assert host_tuning.parse_pam_limits(fixtures.local(DEBIAN_LIMITS)) == {'entries': [], 'ignored': []}


def test_runbook_dropin_entries_and_the_skipped_line():
    parsed = host_tuning.parse_pam_limits(fixtures.local(RDMA_DROPIN))
    assert parsed['entries'][0] == {'domain': '*', 'type': 'soft', 'item': 'memlock', 'value': 'unlimited',
                                    'line': '*    soft    memlock    unlimited'}
    assert [(e['domain'], e['type'], e['value']) for e in parsed['entries'] if e['item'] == 'memlock'] == [
        ('*', 'soft', 'unlimited'), ('*', 'hard', 'unlimited'), ('@rdma', 'soft', 65536), ('mpiuser', '-', 1048576)]
    assert parsed['ignored'] == ['*    soft    memlock']


@pytest.mark.parametrize('user,groups,soft,hard,soft_line', [
    ('tester', ['tester'], 'unlimited', 'unlimited', '*    soft    memlock    unlimited'),   # the wildcard
    ('tester', ['tester', 'rdma'], 65536, 'unlimited', '@rdma   soft   memlock   65536'),  # a group line beats the wildcard
    ('mpiuser', ['rdma'], 1048576, 1048576, 'mpiuser  -  memlock  1048576'),  # a user line beats both; '-' sets soft and hard
    ('root', ['root', 'rdma'], None, None, None),            # limits.conf(5): no group or wildcard limits for root
])
def test_pam_limits_precedence(user, groups, soft, hard, soft_line):
    result = host_tuning.resolve_pam_limit(pam_files(), 'memlock', user, groups)
    assert (result['soft'], result['hard']) == (soft, hard)
    assert result['soft_from'] == ('/etc/security/limits.d/99-rdma.conf: ' + soft_line if soft_line else None)


def test_a_later_file_overrides_an_equal_line_and_root_needs_its_own_name():
    later = host_tuning.parse_pam_limits('root soft memlock 8192\n* soft memlock 64\nroot hard memlock infinity\n')
    files = pam_files() + [('/etc/security/limits.d/zz.conf', later)]
    assert host_tuning.resolve_pam_limit(files, 'memlock', 'tester', ['tester'])['soft'] == 64
    root = host_tuning.resolve_pam_limit(files, 'memlock', 'root', ['root'])
    assert (root['soft'], root['hard'], root['hard_from']) == (8192, 'unlimited', '/etc/security/limits.d/zz.conf: root hard memlock infinity')


def test_read_pam_limits_files_in_pam_order(tmp_path):
    (tmp_path / 'limits.d').mkdir()
    (tmp_path / 'limits.conf').write_text('\n\n* soft memlock 64\n')
    (tmp_path / 'limits.d' / '99-rdma.conf').write_text('* soft memlock unlimited\n')
    (tmp_path / 'limits.d' / '10-base.conf').write_text('* soft memlock 128\n')
    (tmp_path / 'limits.d' / 'notes.txt').write_text('* soft memlock 1\n')
    files = host_tuning.read_pam_limits_files(str(tmp_path))
    assert [path.replace(str(tmp_path), '') for path, _text in files] == ['/limits.conf', '/limits.d/10-base.conf', '/limits.d/99-rdma.conf']
    assert host_tuning.parse_pam_limits(files[0][1])['entries'][0]['value'] == 64
    assert host_tuning.read_pam_limits_files(str(tmp_path / 'missing')) == []


@pytest.mark.parametrize('text,value', [('unlimited\n', 'unlimited'), ('8192\n', 8192), (' 65536 ', 65536)])
def test_ulimit_l(text, value):
    assert host_tuning.parse_ulimit_l(text) == {'memlock_kib': value}


@pytest.mark.parametrize('text', ['', 'su: Authentication failure', '-1'])
def test_ulimit_l_refuses_what_is_no_limit(text):
    with pytest.raises(ParseError):
        host_tuning.parse_ulimit_l(text)
