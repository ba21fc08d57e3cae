"""evidence_bundle: real stand-in commands (it runs them itself, under its own deadline), missing tools recorded, never overwritten."""
import json
import os
import subprocess
import sys
import tarfile
import time

import pytest

from ansible_collections.gpufleet.netval.plugins.modules import evidence_bundle
from tests.unit.plugins.modules.utils import run_module

STAMP = '20261130T014500Z'


def stand_in(bin_dir, name, body):
    path = bin_dir / name
    path.write_text('#!%s\nimport os, signal, subprocess, sys, time\n%s\n' % (sys.executable, body))
    path.chmod(0o755)
    return path


@pytest.fixture
def bin_dir(tmp_path):
    folder = tmp_path / 'bin'
    folder.mkdir()
    stand_in(folder, 'lspci', 'print("LnkSta: Speed 32GT/s, Width x16 " + " ".join(sys.argv[1:]))')
    stand_in(folder, 'ibstat', 'sys.stderr.write("ibpanic: no devices\\n"); sys.exit(1)')
    return folder


def args(tmp_path, **extra):
    base = {'dest': str(tmp_path / 'ev'), 'node': 'node01', 'timestamp': STAMP,
            'commands': [{'name': 'lspci-vvv.txt', 'argv': ['lspci', '-vvv']},
                         {'name': 'ibstat.txt', 'argv': ['ibstat']},
                         {'name': 'flint.txt', 'argv': ['flint', '-d', '0000:1b:00.0', 'q']}],
            'files': {'tests/iperf3.txt': 'receiver 361 Gbits/sec', 'results.json': {'bucket': 'A'}}}
    base.update(extra)
    return base


def test_bundle_records_rc_missing_tools_and_verifies(tmp_path, bin_dir):
    cmdline = tmp_path / 'cmdline'
    cmdline.write_text('ro iommu=pt\n')
    result, failed = run_module(evidence_bundle.main, args(tmp_path, paths=[str(cmdline), '/nonexistent/file']),
                                missing=('flint',), bin_dir=str(bin_dir))
    assert not failed, result
    bundle = tmp_path / 'ev' / 'node01' / STAMP
    records = json.loads((bundle / 'commands.json').read_text())
    by_name = dict((r['name'], r) for r in records)
    assert by_name['ibstat.txt']['rc'] == 1 and 'ibpanic' in by_name['ibstat.txt']['stderr']
    assert by_name['ibstat.txt']['timed_out'] is False and by_name['ibstat.txt']['timeout'] == 120
    assert by_name['flint.txt']['missing'] is True and by_name['flint.txt']['rc'] is None
    assert by_name['files/nonexistent_file']['missing'] is True
    assert (bundle / 'commands' / 'lspci-vvv.txt').read_text() == 'LnkSta: Speed 32GT/s, Width x16 -vvv\n'
    assert json.loads((bundle / 'results.json').read_text()) == {'bucket': 'A'}
    assert (bundle / 'files' / cmdline.as_posix().strip('/').replace('/', '_')).read_text() == 'ro iommu=pt\n'
    check = subprocess.run(['sha256sum', '-c', 'MANIFEST.sha256'], cwd=str(bundle), capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout
    with tarfile.open(result['tarball']) as archive:
        assert 'MANIFEST.sha256' in archive.getnames()
    second, failed = run_module(evidence_bundle.main, args(tmp_path), bin_dir=str(bin_dir))
    assert failed and 'never overwritten' in second['msg'] and second['_ran'] == []


def test_a_command_past_its_timeout_is_stopped_with_its_children_and_recorded(tmp_path, bin_dir):
    pidfile = tmp_path / 'child.pid'
    stand_in(bin_dir, 'stubborn', 'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
             'child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
             'time.sleep(300)"])\n'
             'open(%r, "w").write(str(child.pid))\nprint("partial", flush=True)\ntime.sleep(300)' % str(pidfile))
    begin = time.time()
    result, failed = run_module(evidence_bundle.main, args(tmp_path, files={}, commands=[
        {'name': 'stubborn.txt', 'argv': ['stubborn'], 'timeout': 1}]), bin_dir=str(bin_dir))
    assert not failed, result
    assert time.time() - begin < 15
    record = result['commands'][0]
    assert record['timed_out'] is True and record['rc'] == -9
    assert (tmp_path / 'ev' / 'node01' / STAMP / 'commands' / 'stubborn.txt').read_text() == 'partial\n'
    child = int(pidfile.read_text())
    assert not os.path.exists('/proc/%d' % child) or open('/proc/%d/stat' % child).read().rsplit(')', 1)[1].split()[0] == 'Z'


def test_check_mode_runs_and_writes_nothing(tmp_path):
    result, failed = run_module(evidence_bundle.main, args(tmp_path), check_mode=True)
    assert not failed and result['changed'] is False
    assert [c['cmd'] for c in result['commands']][0] == 'lspci -vvv'
    assert not (tmp_path / 'ev').exists()


def test_bad_node_name_and_timestamp_are_refused(tmp_path):
    result, failed = run_module(evidence_bundle.main, args(tmp_path, node='../etc'))
    assert failed and 'node must be one file name' in result['msg']
    result, failed = run_module(evidence_bundle.main, args(tmp_path, timestamp='yesterday'))
    assert failed and 'timestamp' in result['msg']


def test_commands_on_one_device_share_a_lane_in_their_order():
    commands = [{'argv': ['dmidecode']}, {'argv': ['flint', '-d', '0000:1b:00.0', 'q']}, {'argv': ['lspci', '-vvv']},
                {'argv': ['mlxconfig', '-d', '0000:1b:00.0', 'q']}, {'argv': ['flint', '-d', '0000:2a:00.0', 'q']},
                {'argv': ['mlxlink', '-d', '0000:1b:00.0', '-m']}, {'argv': ['odd', '-d']},
                {'argv': ['flint', '-d', '0000:1B:00.1', 'q']}]
    # The second port of the 1b adapter (function 1) takes the adapter's lock too.
    assert evidence_bundle.command_lanes(commands) == [[0], [1, 3, 5, 7], [2], [4], [6]]


def test_commands_run_side_by_side_one_device_at_a_time_and_are_recorded_in_order(tmp_path, bin_dir):
    # Each stand-in notes when it began and ended; one device's commands must never overlap, the rest may.
    spans = tmp_path / 'spans'
    stand_in(bin_dir, 'slow', 'begin = time.time(); time.sleep(0.6)\n'
             'fd = os.open(%r, os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n'
             'os.write(fd, ("%%s %%f %%f\\n" %% ("/".join(sys.argv[1:]), begin, time.time())).encode()); os.close(fd)\n'
             'print(" ".join(sys.argv[1:]))' % str(spans))
    commands = [{'name': 'a.txt', 'argv': ['slow', 'a']}, {'name': 'd1.txt', 'argv': ['slow', '-d', 'dev0', 'first']},
                {'name': 'b.txt', 'argv': ['slow', 'b']}, {'name': 'd2.txt', 'argv': ['slow', '-d', 'dev0', 'second']},
                {'name': 'c.txt', 'argv': ['slow', 'c']}]
    begin = time.time()
    result, failed = run_module(evidence_bundle.main, args(tmp_path, files={}, commands=commands, workers=4), bin_dir=str(bin_dir))
    elapsed = time.time() - begin
    assert not failed, result
    assert [record['name'] for record in result['commands']] == [spec['name'] for spec in commands]
    assert all(record['rc'] == 0 for record in result['commands'])
    assert (tmp_path / 'ev' / 'node01' / STAMP / 'commands' / 'd2.txt').read_text() == '-d dev0 second\n'
    # Five 0.6-s commands one after another take 3 s; in lanes, the device's two in turn bound it at about 1.2 s.
    assert elapsed < 2.6, elapsed
    ran = dict((line.split()[0], (float(line.split()[1]), float(line.split()[2]))) for line in spans.read_text().splitlines())
    assert ran['-d/dev0/first'][1] <= ran['-d/dev0/second'][0]


@pytest.mark.parametrize('workers', [0, 33, None])
def test_workers_out_of_range_are_refused_before_anything_runs(tmp_path, bin_dir, workers):
    result, failed = run_module(evidence_bundle.main, args(tmp_path, workers=workers), bin_dir=str(bin_dir))
    # An explicit null is ansible's own type check (it cannot be an int); a number out of range is ours.
    expected = 'workers' if workers is None else 'workers must be from 1 to 32, got %r' % workers
    assert failed and expected in result['msg'] and result['_ran'] == [] and 'Traceback' not in result['msg']
