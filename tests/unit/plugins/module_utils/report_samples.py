"""Node results for the report tests: real lab node results (tests/fixtures/reports/) and variants derived from them.

The variants are synthetic edits of the real bucket A node, each saying what it changed: a bucket C node with one
slow HCA and its PCIe cause, a node re-tested against a second peer, a node whose tests did not run, and baseline
history and sweep rows for the charts that read them.
"""
import copy
import json

from tests.unit.fixtures import local

HEALTHY_FIXTURE = 'reports/lab_400g_node01_bucket_a.txt'
ALL_SLOW_FIXTURE = 'reports/lab_400g_node01_bucket_c_all_rdma_slow.txt'


def lab_node(fixture, name):
    node = json.loads(local(fixture))
    node['node'] = name
    node['evidence'] = '/var/lib/netval/evidence/%s/%s' % (name, node['timestamp'])
    return node


def _recount(node):
    statuses = [e.get('status') for e in node['findings'] + node['tests']]
    node['counts'] = dict((s, statuses.count(s)) for s in ('healthy', 'info', 'marginal', 'reject', 'unknown'))
    return node


def _test(node, ident):
    return [t for t in node['tests'] if t['id'] == ident][0]


def _set(test, value, status):
    test['value'] = value
    test['status'] = status
    test['as_printed'] = '%s %s (synthetic edit of a real lab figure)' % (value, test['unit'])


def healthy_node(name='node01', history=False):
    """The real bucket A node; with ``history``, two earlier baseline runs of its per-HCA figures (synthetic)."""
    node = lab_node(HEALTHY_FIXTURE, name)
    if history:
        figures = dict((t['id'], t['value']) for t in node['tests'] if t['metric'] in ('ib_send_bw_gbs', 'gdr_bw_gbs'))
        older = dict((key, value * (0.97 if key.endswith('mlx5_3') else 1.0)) for key, value in figures.items())
        node['history'] = [{'timestamp': '20261015T080000Z', 'figures': figures},
                           {'timestamp': '20261115T080000Z', 'figures': older}]
    return node


def slow_hca_node(name='node02'):
    """Bucket C: mlx5_3 trained at PCIe Gen4 and runs at half rate, the aggregate is marginal (synthetic edit)."""
    node = lab_node(HEALTHY_FIXTURE, name)
    _set(_test(node, 'ib_send_bw_gbs:mlx5_3'), 23.4, 'reject')
    _set(_test(node, 'gdr_bw_gbs:mlx5_3'), 23.1, 'reject')
    _set(_test(node, 'all_nics_gbs:all NICs'), 352.9, 'marginal')
    pcie = [f for f in node['findings'] if f['check'] == 'pcie_link' and f['subject'] == 'mlx5_3'][0]
    pcie.update(status='reject', actual='16GT/s x16', detail='mlx5_3 LnkSta 16GT/s x16, LnkCap 32GT/s x16')
    node['bucket'] = 'C'
    node['causes'] = [
        {'cause': 'pcie_link', 'detail': 'PCIe link of mlx5_3: mlx5_3 LnkSta 16GT/s x16, LnkCap 32GT/s x16', 'subjects': ['mlx5_3']},
        {'cause': 'single_nic_slow', 'detail': 'mlx5_3 is below the healthy range (23.4 GB/s, healthy >= 46 GB/s) while the other '
                                               'HCAs are healthy; its PCIe link trained at 16GT/s', 'subjects': ['mlx5_3']},
    ]
    return _recount(node)


def retested_node(name='node03'):
    """Bucket A after a re-test: peer01 gave low per-HCA figures, peer02 healthy ones; ib_send_bw carries sweep rows (synthetic)."""
    node = lab_node(HEALTHY_FIXTURE, name)
    first = []
    for test in node['tests']:
        if test['metric'] in ('ib_send_bw_gbs', 'gdr_bw_gbs'):
            earlier = copy.deepcopy(test)
            _set(earlier, 30.5, 'reject')
            first.append(earlier)
            test['peer'] = 'peer02'
    node['first_peer_tests'] = first
    node['first_peer'] = 'peer01'
    node['retested_against'] = 'peer02'
    node['peer'] = 'peer02'
    for subject in ('mlx5_0', 'mlx5_1'):
        test = _test(node, 'ib_send_bw_gbs:%s' % subject)
        test['sweep'] = [{'bytes': 2 ** power, 'value': round(47.0 * min(1.0, (2 ** power) / 16384.0) ** 0.6, 3)} for power in range(1, 24)]
    return _recount(node)


def not_run_node(name='node04'):
    """Bucket B: the peer lease timed out, so no tier test ran; every figure is unknown (synthetic edit)."""
    node = lab_node(HEALTHY_FIXTURE, name)
    for test in node['tests']:
        test.update(value=None, status='unknown', as_printed=None, verbatim=[],
                    error='skipped: no known-good peer free within the lease deadline', error_side='ours')
    node['bucket'] = 'B'
    node['causes'] = [{'cause': 'measurement_incomplete', 'detail': 'no tier test ran: no known-good peer was free within the lease '
                                                                    'deadline; re-run when one is', 'subjects': []}]
    return _recount(node)


def mixed_run():
    """A run with one node of each kind above."""
    nodes = [healthy_node('node01', history=True), slow_hca_node('node02'), retested_node('node03'), not_run_node('node04')]
    return dict((node['node'], node) for node in nodes)
