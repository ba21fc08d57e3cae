"""Issue 31 in one lab run: only a real fault sends a node back.

Nine new nodes and two known-good peers; peer02's mlx5_3 came back at 200 Gb/s.  The nodes: healthy (peermem), healthy on the
open kernel modules (dma-buf), the distribution's perftest without CUDA, the DCGM host engine stopped, nvidia-fabricmanager
stopped, persistence mode off, ACS on the switch ports between mlx5_2 and its GPU, a UTC+8 node with the provider's burn-in
six hours before the run, and a NIC trained at PCIe Gen4 (the one hardware fact: returned with a letter).  Each gets its
bucket and its named cause; peer02 is disqualified at the start and every node is measured on peer01.
"""
import glob
import json
import os
import subprocess

import pytest

from tests.lab.conftest import BIN, ROOT, cli, lab_env
from tests.lab.test_validate import assert_every_enabled_test_has_its_figures, causes, node_result

pytestmark = pytest.mark.lab

PATTERNS = {'node01': 'healthy-400g', 'node02': 'gdr-dmabuf', 'node03': 'gdr-no-cuda-perftest', 'node04': 'dcgm-hostengine-stopped',
            'node05': 'fabric-manager-stopped', 'node06': 'persistence-off', 'node07': 'acs-on-gpu-path', 'node08': 'burnin-utc8',
            'node09': 'gen4-nic0'}
BUCKETS = {'node01': 'A', 'node02': 'A', 'node03': 'B', 'node04': 'B', 'node05': 'B', 'node06': 'B', 'node07': 'B', 'node08': 'A',
           'node09': 'C'}
CAUSES = {'node03': 'gdr_mode', 'node04': 'dcgm_hostengine', 'node05': 'fabric_manager', 'node06': 'persistence_mode',
          'node07': 'pcie_acs', 'node09': 'pcie_link'}
HCAS = ['mlx5_%d' % i for i in range(8)]
UP = ['up', '--profile', 'healthy-400g', '--nodes', str(len(PATTERNS)), '--peers', '2', '--node-profiles',
      ','.join(['%s=%s' % (node, profile) for node, profile in sorted(PATTERNS.items()) if profile != 'healthy-400g']
               + ['peer02=peer-rail-degraded'])]


@pytest.fixture(scope='module')
def run31(lab_session, tmp_path_factory):  # pylint: disable=unused-argument
    cli(*UP, check=True)
    work = tmp_path_factory.mktemp('issue31')
    reports, evidence = work / 'reports', work / 'evidence'
    proc = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '-i', 'inventories/lab', 'playbooks/validate.yml', '-l', 'new_nodes',
                           '-e', 'report_root=%s' % reports, '-e', 'evidence_controller_dir=%s' % evidence], cwd=ROOT, env=lab_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:]
    with open(str(reports / 'latest' / 'summary.json'), encoding='utf-8') as handle:
        return json.load(handle), reports, proc.stdout


def figures_of(result, metric):
    return [t for t in result['tests'] if t['metric'] == metric]


def test_each_pattern_gets_its_bucket_and_named_cause_and_only_the_hardware_fact_a_letter(run31):
    summary, reports, _out = run31
    assert dict((name, entry['bucket']) for name, entry in summary['nodes'].items()) == BUCKETS
    for node, cause in CAUSES.items():
        assert cause in causes(node_result(reports, node)), (node, causes(node_result(reports, node)))
    letters = sorted(os.path.basename(p) for p in glob.glob(str(reports / 'latest' / 'letters' / '*.txt')))
    assert letters == ['node09.txt']
    for node in ('node01', 'node02', 'node08'):
        assert_every_enabled_test_has_its_figures(node_result(reports, node), HCAS)


def test_a_degraded_peer_is_disqualified_and_every_node_is_measured_on_the_other(run31):
    summary, reports, out = run31
    qualification = summary['peer_qualification']
    assert qualification['peer01']['qualified'] is True and qualification['peer01']['reasons'] == []
    assert qualification['peer02'] == dict(qualification['peer02'], qualified=False,
                                           reasons=['port_rate: mlx5_3 port 1 runs at 200 Gb/s, expected 400'])
    assert set(entry['peer'] for entry in summary['nodes'].values()) == {'peer01'}
    assert 'peer peer02 not qualified, left the pool: port_rate: mlx5_3 port 1 runs at 200 Gb/s, expected 400' in out
    page = (reports / 'latest' / 'index.html').read_text()
    assert 'id="peer-qualification"' in page and 'left the pool' in page and 'mlx5_3 port 1 runs at 200 Gb/s' in page


def test_gpudirect_runs_in_the_mode_the_node_supports(run31):
    _summary, reports, _out = run31
    peermem = figures_of(node_result(reports, 'node01'), 'gdr_bw_gbs')
    dmabuf = figures_of(node_result(reports, 'node02'), 'gdr_bw_gbs')
    assert len(peermem) == len(dmabuf) == 8 and all(t['status'] == 'healthy' for t in peermem + dmabuf)
    # The node's end names its GPU by PCI address; dma-buf after it where that is the node's path, never on a peermem node.
    assert all('--use_cuda_bus_id=0000:' in t['server_cmd'] and '--use_cuda_dmabuf' not in t['server_cmd'] for t in peermem)
    assert all(t['server_cmd'].index('--use_cuda_bus_id=') < t['server_cmd'].index('--use_cuda_dmabuf') for t in dmabuf)
    no_cuda = node_result(reports, 'node03')
    blocked = figures_of(no_cuda, 'gdr_bw_gbs')
    assert len(blocked) == 8 and all(t['status'] == 'unknown' and t['error_class'] == 'gpu_prerequisite' for t in blocked)
    detail = [c['detail'] for c in no_cuda['causes'] if c['cause'] == 'gdr_mode'][0]
    assert 'built without CUDA' in detail and 'MLNX_OFED or DOCA-OFED' in detail and 'Not run because of it' in detail
    assert 'measurement_incomplete' not in causes(no_cuda)


def test_gpu_prerequisites_name_what_to_fix_and_keep_the_tests_they_break_from_running(run31):
    _summary, reports, _out = run31
    dcgm = node_result(reports, 'node04')
    assert [t['status'] for t in figures_of(dcgm, 'dcgmi_diag')] == ['unknown']
    assert 'nvidia-dcgm' in [c['detail'] for c in dcgm['causes'] if c['cause'] == 'dcgm_hostengine'][0]
    fabric = node_result(reports, 'node05')
    for metric in ('gdr_bw_gbs', 'nccl_busbw_gbs', 'dcgmi_diag'):
        assert figures_of(fabric, metric) and all(t['error_class'] == 'gpu_prerequisite' for t in figures_of(fabric, metric)), metric
    assert all(t['status'] == 'healthy' for t in figures_of(fabric, 'ib_send_bw_gbs'))
    persistence = node_result(reports, 'node06')
    assert causes(persistence) == ['persistence_mode'] and all(t['status'] == 'healthy' for t in figures_of(persistence, 'gdr_bw_gbs'))
    acs = node_result(reports, 'node07')
    slow = [t for t in figures_of(acs, 'gdr_bw_gbs') if t['status'] != 'healthy']
    assert [t['subject'] for t in slow] == ['mlx5_2'] and slow[0]['status'] == 'marginal'
    detail = [c['detail'] for c in acs['causes'] if c['cause'] == 'pcie_acs'][0]
    assert 'ReqRedir+CmpltRedir+UpstreamFwd' in detail and 'It explains mlx5_2' in detail and 'gdr' not in causes(acs)


def test_a_utc8_node_with_burn_in_hours_before_is_accepted(run31):
    _summary, reports, _out = run31
    result = node_result(reports, 'node08')
    assert result['bucket'] == 'A' and [f for f in result['findings'] if f['check'] == 'link_flap'] == []
    xids = sorted((f['actual'], f['status']) for f in result['findings'] if f['check'] == 'gpu_xid')
    assert xids == sorted([('Xid 13', 'info'), ('Xid 31', 'info'), ('Xid 43', 'info')] * 3)


def test_the_letter_carries_the_runbooks_closing_facts_and_nothing_for_ourselves(run31):
    _summary, reports, _out = run31
    letter = (reports / 'latest' / 'letters' / 'node09.txt').read_text()
    assert 'Cluster identifier netval-lab; support contract LAB-SUPPORT-0001 (attached).' in letter
    assert 'The same run shows: the other NICs (' in letter and 'LnkSta 32GT/s x16' in letter
    assert 'every NIC runs at least the contracted minimum firmware (\\>= 28.39.1002)' in letter
    assert 'Our reading of the pattern: a PCIe link below the contracted speed or width (mlx5_0)' in letter
    for ours in ('on our side', 'check its PCIe link', 'switch port', 'fix'):
        assert ours not in letter, ours
