"""NIC IRQ placement: /proc/interrupts from this machine and a documented mlx5 layout."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils.parsers import irq
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError
from tests.unit import fixtures

# /proc/interrupts rows as the kernel prints mlx5 completion vectors (name "mlx5_compN@pci:<bdf>"), 4 CPUs.
MLX5 = ('           CPU0       CPU1       CPU2       CPU3       \n'
        ' 120:          0          0          0          0  IR-PCI-MSIX-0000:1b:00.0    0-edge      mlx5_async0@pci:0000:1b:00.0\n'
        ' 121:       9000          0          0          0  IR-PCI-MSIX-0000:1b:00.0    1-edge      mlx5_comp0@pci:0000:1b:00.0\n'
        ' 122:          0       8000          0          0  IR-PCI-MSIX-0000:1b:00.0    2-edge      mlx5_comp1@pci:0000:1b:00.0\n'
        ' 123:          0          0       7000          0  IR-PCI-MSIX-0000:1b:00.0    3-edge      mlx5_comp2@pci:0000:1b:00.0\n'
        ' 124:          0          0          0       6000  IR-PCI-MSIX-0000:1b:00.0    4-edge      mlx5_comp3@pci:0000:1b:00.0\n'
        ' 130:          5          0          0          0  IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0\n'
        'NMI:          1          2          3          4   Non-maskable interrupts\n')


def test_this_vm_proc_interrupts():
    result = irq.parse_proc_interrupts(fixtures.local('irq/proc_interrupts_firecracker_vm_dev_2cpu_virtio.txt'))
    assert result['cpus'] == 2
    row = result['irqs']['36']
    assert (row['chip'], row['hwirq'], row['name'], row['counts']) == ('PCI-MSIX-0000:00:02.0', '1-edge', 'virtio1-req.0', [0, 39243])
    assert result['irqs']['24']['name'] == 'ACPI:Ged' and result['irqs']['24']['chip'] == 'IO-APIC'
    assert result['irqs']['LOC']['numeric'] is False and result['irqs']['LOC']['name'] == 'Local timer interrupts'
    assert result['irqs']['ERR']['counts'] == [0] and result['irqs']['ERR']['complete'] is True


def test_placement_finds_off_node_vectors():
    interrupts = irq.parse_proc_interrupts(MLX5)
    placement = irq.irq_placement(interrupts, {'121': '0', '122': '1', '123': '2-3', 124: [3]}, '0-1', r'mlx5_comp\d+@pci:0000:1b:00\.0')
    assert [e['irq'] for e in placement['irqs']] == ['121', '122', '123', '124']
    assert placement['off_node'] == ['123', '124'] and placement['fraction_local'] == 0.5
    assert placement['irqs'][0]['total'] == 9000


def test_placement_unknown_numa_or_affinity_is_not_local():
    interrupts = irq.parse_proc_interrupts(MLX5)
    placement = irq.irq_placement(interrupts, {}, None, '0000:1b:00.0')
    assert placement['count'] == 5 and placement['fraction_local'] is None and placement['off_node'] == []
    assert len(placement['unknown']) == 5


def test_readers_on_a_tree(tmp_path):
    (tmp_path / 'irq' / '121').mkdir(parents=True)
    (tmp_path / 'irq' / '121' / 'smp_affinity_list').write_text('0-3\n')
    assert irq.read_irq_affinity(['121', '122'], str(tmp_path)) == {'121': '0-3', '122': None}
    dev = tmp_path / 'bus' / 'pci' / 'devices' / '0000:1b:00.0'
    dev.mkdir(parents=True)
    (dev / 'numa_node').write_text('-1\n')
    (dev / 'local_cpulist').write_text('0-31\n')
    assert irq.read_pci_numa('0000:1b:00.0', str(tmp_path)) == {'numa_node': None, 'local_cpulist': '0-31'}


@pytest.mark.parametrize('value,cpus', [('0-3,8', [0, 1, 2, 3, 8]), ([3, 1], [1, 3]), ('x', None), (None, None), ('', [])])
def test_cpus_of(value, cpus):
    assert irq.cpus_of(value) == cpus


@pytest.mark.parametrize('text', ['', 'hello\n', '  0:  1  IO-APIC 2-edge timer\n'])
def test_proc_interrupts_rejects_garbage(text):
    with pytest.raises(ParseError):
        irq.parse_proc_interrupts(text)
