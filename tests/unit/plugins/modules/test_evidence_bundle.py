"""evidence_bundle: exact argv per evidence command, missing tools recorded, never overwritten."""
import json
import subprocess
import tarfile

from ansible_collections.gpufleet.netval.plugins.modules import evidence_bundle
from tests.unit.plugins.modules.utils import Call, run_module

STAMP = '20261130T014500Z'


def args(tmp_path, **extra):
    base = {'dest': str(tmp_path / 'ev'), 'node': 'node01', 'timestamp': STAMP,
            'commands': [{'name': 'lspci-vvv.txt', 'argv': ['lspci', '-vvv']},
                         {'name': 'ibstat.txt', 'argv': ['ibstat']},
                         {'name': 'flint.txt', 'argv': ['flint', '-d', '0000:1b:00.0', 'q']}],
            'files': {'tests/iperf3.txt': 'receiver 361 Gbits/sec', 'results.json': {'bucket': 'A'}}}
    base.update(extra)
    return base


def test_bundle_records_rc_missing_tools_and_verifies(tmp_path):
    cmdline = tmp_path / 'cmdline'
    cmdline.write_text('ro iommu=pt\n')
    calls = [Call(['/usr/bin/timeout', '--kill-after=5', '120', '/usr/bin/lspci', '-vvv'], 0, 'LnkSta: Speed 32GT/s, Width x16\n'),
             Call(['/usr/bin/timeout', '--kill-after=5', '120', '/usr/bin/ibstat'], 1, '', 'ibpanic: no devices\n')]
    result, failed = run_module(evidence_bundle.main, args(tmp_path, paths=[str(cmdline), '/nonexistent/file']), calls,
                                missing=('flint',))
    assert not failed, result
    bundle = tmp_path / 'ev' / 'node01' / STAMP
    records = json.loads((bundle / 'commands.json').read_text())
    by_name = dict((r['name'], r) for r in records)
    assert by_name['ibstat.txt']['rc'] == 1 and 'ibpanic' in by_name['ibstat.txt']['stderr']
    assert by_name['flint.txt']['missing'] is True and by_name['flint.txt']['rc'] is None
    assert by_name['files/nonexistent_file']['missing'] is True
    assert (bundle / 'commands' / 'lspci-vvv.txt').read_text().startswith('LnkSta')
    assert json.loads((bundle / 'results.json').read_text()) == {'bucket': 'A'}
    assert (bundle / 'files' / cmdline.as_posix().strip('/').replace('/', '_')).read_text() == 'ro iommu=pt\n'
    check = subprocess.run(['sha256sum', '-c', 'MANIFEST.sha256'], cwd=str(bundle), capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout
    with tarfile.open(result['tarball']) as archive:
        assert 'MANIFEST.sha256' in archive.getnames()
    second, failed = run_module(evidence_bundle.main, args(tmp_path), calls=[])
    assert failed and 'never overwritten' in second['msg']


def test_check_mode_runs_and_writes_nothing(tmp_path):
    result, failed = run_module(evidence_bundle.main, args(tmp_path), calls=[], check_mode=True)
    assert not failed and result['changed'] is False
    assert [c['cmd'] for c in result['commands']][0] == 'lspci -vvv'
    assert not (tmp_path / 'ev').exists()


def test_bad_node_name_and_timestamp_are_refused(tmp_path):
    result, failed = run_module(evidence_bundle.main, args(tmp_path, node='../etc'))
    assert failed and 'node name' in result['msg']
    result, failed = run_module(evidence_bundle.main, args(tmp_path, timestamp='yesterday'))
    assert failed and 'timestamp' in result['msg']
