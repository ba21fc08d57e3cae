"""evidence_store: a fetched bundle is unpacked next to itself, verified against its manifest, never written over,
and an accepted node's baseline is kept with its link; a hostile or damaged bundle fails in the one failure shape.

The bundles are made by the same code the evidence_bundle module runs on the node (build_bundle, tar_folder).
"""
import base64
import errno
import io
import json
import os
import shutil
import tarfile
from unittest import mock

import pytest
from ansible.errors import AnsibleConnectionFailure, AnsibleError

from ansible_collections.gpufleet.netval.plugins.action import evidence_store
from ansible_collections.gpufleet.netval.plugins.module_utils import evidence
from ansible_collections.gpufleet.netval.plugins.modules import evidence_store as evidence_store_module
from tests.unit.plugins.modules.utils import run_module

STAMP = '20261203T120000Z'


def fetched_bundle(tmp_path, files=None):
    """(tarball, dest): a bundle built and tarred as on a node, copied where fetch puts it on the controller."""
    node_dir = tmp_path / 'node'
    node_dir.mkdir()
    evidence.build_bundle(str(node_dir / STAMP), files or {'results.json': '{"bucket": "A"}', 'tests/ib_write_bw.txt': '#bytes ...\n'})
    dest = tmp_path / 'controller' / 'node01' / STAMP
    dest.mkdir(parents=True)
    tarball = dest / ('node01-%s.tar.gz' % STAMP)
    evidence.tar_folder(str(node_dir / STAMP), str(tarball))
    return str(tarball), str(dest)


def run_action(task_args, check_mode=False, connection=None, slurp=None):
    """The action's result; ``connection``: the node's (a mock by default), ``slurp``: the slurp module's result."""
    task = mock.MagicMock(async_val=0, check_mode=check_mode, args=dict(task_args))
    loader = mock.MagicMock()
    loader.path_dwim.side_effect = lambda path: path if os.path.isabs(path) else os.path.join('/playbooks', path)
    action = evidence_store.ActionModule(task, connection or mock.MagicMock(), mock.MagicMock(), loader=loader, templar=None,
                                         shared_loader_obj=None)
    with mock.patch.object(action, '_execute_module', return_value=slurp) as execute:
        result = action.run(task_vars={})
    assert slurp is not None or not execute.called, 'slurp ran without become'
    if execute.called:
        _args, kwargs = execute.call_args
        assert kwargs['module_name'] == 'ansible.legacy.slurp' and kwargs['module_args'] == {'src': task_args['src']}
    return result


def node_bundle(tmp_path):
    """(src, sha256): a bundle made and tarred on the 'node' as evidence_bundle makes it, the sha256 it returns."""
    node_dir = tmp_path / 'node'
    node_dir.mkdir()
    evidence.build_bundle(str(node_dir / STAMP), {'results.json': '{"bucket": "A"}', 'tests/ib_write_bw.txt': '#bytes ...\n'})
    src = str(node_dir / ('node01-%s.tar.gz' % STAMP))
    return src, evidence.tar_folder(str(node_dir / STAMP), src)


def node_connection(become=False, transfer=None):
    """A connection whose fetch_file copies the file (or runs ``transfer``), as the ssh connection's does."""
    connection = mock.MagicMock(become=become)
    connection.fetch_file.side_effect = transfer or shutil.copyfile
    return connection


def test_a_bundle_is_unpacked_verified_and_an_accepted_nodes_baseline_kept_with_its_link(tmp_path):
    tarball, dest = fetched_bundle(tmp_path)
    link = os.path.join(os.path.dirname(dest), 'baseline')
    result = run_action({'tarball': tarball, 'dest': dest, 'baseline': {'node': 'node01', 'figures': [1]}, 'baseline_link': link})
    assert not result.get('failed') and result['changed'] and result['error_class'] is None
    assert sorted(result['files']) == ['results.json', 'tests/ib_write_bw.txt']
    with open(os.path.join(dest, 'tests', 'ib_write_bw.txt')) as handle:
        assert handle.read() == '#bytes ...\n'
    with open(os.path.join(dest, 'baseline.json')) as handle:
        assert json.load(handle) == {'node': 'node01', 'figures': [1]}
    assert result['baseline_written'] and os.readlink(link) == STAMP


def test_without_a_baseline_nothing_but_the_bundle_is_written(tmp_path):
    tarball, dest = fetched_bundle(tmp_path)
    result = run_action({'tarball': tarball, 'dest': dest})
    assert not result.get('failed') and result['baseline'] is None
    assert sorted(os.listdir(dest)) == ['MANIFEST.sha256', os.path.basename(tarball), 'results.json', 'tests']


def test_a_second_unpack_into_the_same_folder_is_refused_and_changes_nothing(tmp_path):
    tarball, dest = fetched_bundle(tmp_path)
    assert not run_action({'tarball': tarball, 'dest': dest}).get('failed')
    with open(os.path.join(dest, 'results.json'), 'w') as handle:
        handle.write('kept')
    again = run_action({'tarball': tarball, 'dest': dest})
    assert again['failed'] and again['error_class'] == 'evidence_error' and 'never overwritten' in again['msg']
    with open(os.path.join(dest, 'results.json')) as handle:
        assert handle.read() == 'kept'


def test_a_file_that_does_not_match_its_manifest_is_named(tmp_path):
    dest = tmp_path / 'node01' / STAMP
    dest.mkdir(parents=True)
    tarball = dest / 'bundle.tar.gz'
    with tarfile.open(str(tarball), 'w:gz') as archive:
        for name, data in (('MANIFEST.sha256', b'%s  results.json\n' % (b'0' * 64)), ('results.json', b'{}')):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    result = run_action({'tarball': str(tarball), 'dest': str(dest)})
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'checksums do not match' in result['msg']
    assert 'results.json' in result['msg'] and result['msg'].count(str(tarball)) == 1


def test_links_devices_and_paths_that_leave_the_folder_are_refused_before_anything_is_written(tmp_path):
    dest = tmp_path / 'node01' / STAMP
    dest.mkdir(parents=True)
    hostile = (('../escape.txt', tarfile.REGTYPE), ('/etc/evil', tarfile.REGTYPE), ('link', tarfile.SYMTYPE), ('fifo', tarfile.FIFOTYPE))
    for number, (name, kind) in enumerate(hostile):
        tarball = dest / ('bundle%d.tar.gz' % number)
        with tarfile.open(str(tarball), 'w:gz') as archive:
            ok = tarfile.TarInfo('results.json')
            ok.size = 2
            archive.addfile(ok, io.BytesIO(b'{}'))
            bad = tarfile.TarInfo(name)
            bad.type = kind
            bad.linkname = '/etc/passwd' if kind == tarfile.SYMTYPE else ''
            archive.addfile(bad, io.BytesIO(b''))
        result = run_action({'tarball': str(tarball), 'dest': str(dest)})
        assert result['failed'] and result['error_class'] == 'evidence_error' and repr(name) in result['msg'], (name, result)
        assert sorted(os.listdir(str(dest))) == sorted('bundle%d.tar.gz' % n for n in range(number + 1))
    assert not os.path.exists(str(tmp_path / 'node01' / 'escape.txt'))


def test_a_damaged_tarball_and_a_bundle_without_manifest_fail_with_the_reason(tmp_path):
    dest = tmp_path / 'node01' / STAMP
    dest.mkdir(parents=True)
    (dest / 'cut.tar.gz').write_bytes(b'\x1f\x8b\x08\x00not really gzip')
    result = run_action({'tarball': str(dest / 'cut.tar.gz'), 'dest': str(dest)})
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'cut.tar.gz' in result['msg']
    with tarfile.open(str(dest / 'bare.tar.gz'), 'w:gz') as archive:
        info = tarfile.TarInfo('results.json')
        info.size = 2
        archive.addfile(info, io.BytesIO(b'{}'))
    result = run_action({'tarball': str(dest / 'bare.tar.gz'), 'dest': str(dest)})
    assert result['failed'] and 'has no MANIFEST.sha256' in result['msg']


def test_a_baseline_link_that_is_not_ours_is_refused(tmp_path):
    tarball, dest = fetched_bundle(tmp_path)
    link = os.path.join(os.path.dirname(dest), 'baseline')
    os.symlink('/etc', link)
    result = run_action({'tarball': tarball, 'dest': dest, 'baseline': {'node': 'node01'}, 'baseline_link': link})
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'not to a run folder of ours' in result['msg']
    assert os.readlink(link) == '/etc'


def test_bad_options_fail_in_the_one_shape_and_check_mode_writes_nothing(tmp_path):
    tarball, dest = fetched_bundle(tmp_path)
    result = run_action({'tarball': tarball, 'dest': dest, 'colour': 'blue'})
    assert result['failed'] and result['error_class'] == 'invalid_options' and 'colour' in result['msg']
    result = run_action({'tarball': '/elsewhere/x.tar.gz', 'dest': dest, 'baseline_link': dest + '/b'})
    assert result['failed'] and 'tarball must be a file in dest' in result['msg'] and 'baseline_link needs baseline' in result['msg']
    result = run_action({'tarball': tarball, 'dest': dest, 'baseline': {}}, check_mode=True)
    assert not result.get('failed') and not result['changed'] and os.listdir(dest) == [os.path.basename(tarball)]


def test_relative_paths_are_the_playbook_folders_as_for_fetch(tmp_path):
    result = run_action({'tarball': 'evidence/node01/x/b.tar.gz', 'dest': 'evidence/node01/x'})
    assert result['failed'] and '/playbooks/evidence/node01/x/b.tar.gz' in result['msg']


def test_run_as_a_module_it_keeps_the_bundle_the_same_way(tmp_path):
    tarball, dest = fetched_bundle(tmp_path)
    link = os.path.join(os.path.dirname(dest), 'baseline')
    task_args = {'tarball': tarball, 'dest': dest, 'baseline': {'node': 'node01'}, 'baseline_link': link}
    result, failed = run_module(evidence_store_module.main, task_args)
    assert not failed and result['baseline_written'] and sorted(result['files']) == ['results.json', 'tests/ib_write_bw.txt']
    assert os.readlink(link) == STAMP
    again, failed = run_module(evidence_store_module.main, {'tarball': tarball, 'dest': dest})
    assert failed and again['error_class'] == 'evidence_error'


def test_a_name_twice_in_the_bundle_is_refused_not_written_over(tmp_path):
    dest = tmp_path / 'node01' / STAMP
    dest.mkdir(parents=True)
    tarball = dest / 'twice.tar.gz'
    with tarfile.open(str(tarball), 'w:gz') as archive:
        for data in (b'first', b'second'):
            info = tarfile.TarInfo('results.json')
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    result = run_action({'tarball': str(tarball), 'dest': str(dest)})
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'results.json twice' in result['msg']
    assert 'never overwritten' in result['msg'] and os.listdir(str(dest)) == ['twice.tar.gz']


def test_a_bundle_on_the_node_is_fetched_checked_against_the_captures_sha256_and_unpacked(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = str(tmp_path / 'controller' / 'node01' / STAMP)
    connection = node_connection()
    result = run_action({'src': src, 'src_sha256': digest, 'dest': dest}, connection=connection)
    assert not result.get('failed') and result['changed'], result
    assert result['tarball'] == os.path.join(dest, os.path.basename(src)) and result['location'] == dest
    assert sorted(result['files']) == ['results.json', 'tests/ib_write_bw.txt']
    assert sorted(os.listdir(dest)) == ['MANIFEST.sha256', os.path.basename(src), 'results.json', 'tests']
    (called_src, _local), _kwargs = connection.fetch_file.call_args
    assert called_src == src and connection.fetch_file.call_count == 1


def test_a_copy_that_differs_from_the_captures_sha256_never_takes_the_bundles_name(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = tmp_path / 'controller' / 'node01' / STAMP

    def cut_short(remote, local):
        with open(remote, 'rb') as whole, open(local, 'wb') as copy:
            copy.write(whole.read()[:100])
    result = run_action({'src': src, 'src_sha256': digest, 'dest': str(dest)}, connection=node_connection(transfer=cut_short))
    assert result['failed'] and result['error_class'] == 'evidence_error' and result['error_side'] == 'unknown'
    assert digest in result['msg'] and src in result['msg']
    assert os.listdir(str(dest)) == []


def test_a_failed_transfer_leaves_nothing_and_an_unreachable_node_stays_unreachable(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = tmp_path / 'controller' / 'node01' / STAMP

    def broken(remote, local):
        with open(local, 'wb') as partial:
            partial.write(b'half')
        raise AnsibleError('failed to transfer file to %s' % local)
    result = run_action({'src': src, 'src_sha256': digest, 'dest': str(dest)}, connection=node_connection(transfer=broken))
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'the transfer failed' in result['msg']
    assert os.listdir(str(dest)) == []

    def gone(remote, local):
        raise AnsibleConnectionFailure('ssh: connect to host node01 port 22: No route to host')
    with pytest.raises(AnsibleConnectionFailure):
        run_action({'src': src, 'src_sha256': digest, 'dest': str(dest)}, connection=node_connection(transfer=gone))


def test_a_fetched_bundle_is_never_written_over(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = tmp_path / 'controller' / 'node01' / STAMP
    dest.mkdir(parents=True)
    (dest / os.path.basename(src)).write_bytes(b'an earlier bundle')
    connection = node_connection()
    result = run_action({'src': src, 'src_sha256': digest, 'dest': str(dest)}, connection=connection)
    assert result['failed'] and 'never overwritten' in result['msg'] and not connection.fetch_file.called
    assert (dest / os.path.basename(src)).read_bytes() == b'an earlier bundle'


def test_under_become_the_bundle_is_read_with_slurp_as_fetch_does(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = str(tmp_path / 'controller' / 'node01' / STAMP)
    with open(src, 'rb') as handle:
        slurped = {'content': base64.b64encode(handle.read()).decode('ascii'), 'encoding': 'base64'}
    connection = node_connection(become=True)
    result = run_action({'src': src, 'src_sha256': digest, 'dest': dest}, connection=connection, slurp=slurped)
    assert not result.get('failed') and 'results.json' in result['files'] and not connection.fetch_file.called
    refused = run_action({'src': src, 'src_sha256': digest, 'dest': dest + '-2'}, connection=node_connection(become=True),
                         slurp={'failed': True, 'msg': 'file not found: %s' % src})
    assert refused['failed'] and 'slurp could not read it: file not found' in refused['msg']
    for reply, reason in (({'content': 'not base64!', 'encoding': 'base64'}, 'not base64'),
                          ({'content': 'eA==', 'encoding': 'utf-8'}, "'utf-8', not base64"),
                          ({'content': base64.b64encode(b'another file').decode('ascii'), 'encoding': 'base64'}, 'not the %s' % digest)):
        bad_dest = tmp_path / 'bad' / reason.replace(' ', '_').replace("'", '').replace(',', '')
        bad = run_action({'src': src, 'src_sha256': digest, 'dest': str(bad_dest)}, connection=node_connection(become=True), slurp=reply)
        assert bad['failed'] and bad['error_class'] == 'evidence_error' and reason in bad['msg'], (reason, bad)
        assert os.listdir(str(bad_dest)) == []


def test_src_options_are_checked_and_check_mode_fetches_nothing(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = str(tmp_path / 'controller' / 'node01' / STAMP)
    both = run_action({'src': src, 'src_sha256': digest, 'tarball': dest + '/b.tar.gz', 'dest': dest})
    assert both['failed'] and both['error_class'] == 'invalid_options' and 'not both' in both['msg']
    neither = run_action({'dest': dest})
    assert neither['failed'] and 'not neither' in neither['msg']
    unchecked = run_action({'src': 'bundle.tar.gz', 'src_sha256': 'ABC', 'dest': dest})
    assert 'src must be the absolute path' in unchecked['msg'] and "src needs src_sha256" in unchecked['msg']
    # The node names the file the controller writes: only a plain .tar.gz name, never the folder's own files.
    for hostile in ('/var/tmp/x/..', '/var/tmp/baseline.json', '/var/tmp/MANIFEST.sha256', '/var/tmp/.hidden.tar.gz', '/var/tmp/'):
        refused = run_action({'src': hostile, 'src_sha256': digest, 'dest': dest})
        assert refused['error_class'] == 'invalid_options' and 'a .tar.gz bundle' in refused['msg'], hostile
    assert 'src_sha256 needs src' in run_action({'tarball': dest + '/b.tar.gz', 'src_sha256': digest, 'dest': dest})['msg']
    connection = node_connection()
    planned = run_action({'src': src, 'src_sha256': digest, 'dest': dest}, check_mode=True, connection=connection)
    assert not planned.get('failed') and not planned['changed'] and planned['tarball'] == os.path.join(dest, os.path.basename(src))
    assert not connection.fetch_file.called and not os.path.exists(dest)
    result, failed = run_module(evidence_store_module.main, {'src': src, 'src_sha256': digest, 'dest': dest})
    assert failed and result['error_class'] == 'invalid_options' and 'as a module, give tarball' in result['msg']


def test_a_dest_that_is_a_symlink_is_refused_before_anything_is_fetched(tmp_path):
    src, digest = node_bundle(tmp_path)
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (tmp_path / 'controller').mkdir()
    dest = tmp_path / 'controller' / STAMP
    os.symlink(str(elsewhere), str(dest))
    connection = node_connection()
    result = run_action({'src': src, 'src_sha256': digest, 'dest': str(dest)}, connection=connection)
    assert result['failed'] and 'is a symlink' in result['msg'] and not connection.fetch_file.called
    assert os.listdir(str(elsewhere)) == []


def test_where_hard_links_are_refused_the_copy_takes_its_name_by_an_exclusive_create_and_rename(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = str(tmp_path / 'controller' / 'node01' / STAMP)
    with mock.patch('os.link', side_effect=OSError(errno.EPERM, 'Operation not permitted')):
        result = run_action({'src': src, 'src_sha256': digest, 'dest': dest}, connection=node_connection())
    assert not result.get('failed') and 'results.json' in result['files'], result
    assert sorted(os.listdir(dest)) == ['MANIFEST.sha256', os.path.basename(src), 'results.json', 'tests']


def test_a_name_taken_between_the_check_and_the_link_is_never_written_over(tmp_path):
    src, digest = node_bundle(tmp_path)
    dest = tmp_path / 'controller' / 'node01' / STAMP
    final = dest / os.path.basename(src)

    def meanwhile(remote, local):
        shutil.copyfile(remote, local)
        final.write_bytes(b'written meanwhile')
    result = run_action({'src': src, 'src_sha256': digest, 'dest': str(dest)}, connection=node_connection(transfer=meanwhile))
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'File exists' in result['msg']
    assert final.read_bytes() == b'written meanwhile' and os.listdir(str(dest)) == [final.name]


def test_a_bundle_with_a_baseline_of_its_own_never_becomes_the_nodes_baseline(tmp_path):
    tarball, dest = fetched_bundle(tmp_path, {'results.json': '{}', 'baseline.json': '{"forged": true}'})
    link = os.path.join(os.path.dirname(dest), 'baseline')
    result = run_action({'tarball': tarball, 'dest': dest, 'baseline': {'node': 'node01'}, 'baseline_link': link})
    assert result['failed'] and result['error_class'] == 'evidence_error' and 'baseline.json of its own' in result['msg']
    assert not os.path.lexists(link)
