# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which known-good peer measures a node, whether a second peer re-tests it, and how the two peers' figures merge.

Pure functions: the filters peer_order, first_peers, qualify_peers, lost_peer, retest_peer, retest_tests and promotable
call them from validate.yml and its roles, and node_run's transitions (policy/node_run.py) the others (healthy peers, giving
up a place in the queue, the merge of a re-test, the suspect peer).  A known-good peer is qualified at the start of every
run (qualify_peers: the node's preflight reads graded for its tier) before it measures anyone.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.gpufleet.netval.plugins.module_utils.policy import catalogue
from ansible_collections.gpufleet.netval.plugins.module_utils.policy.preflight import preflight_findings


class PeerPolicyError(ValueError):
    """An input that names no node or peer the policy can use; the message says which."""


def peer_order(node, nodes, peers, explicit=None):
    """The peers to try for ``node``, best first.

    ``explicit`` (the node's netval_peer) comes first when set; otherwise nodes are spread round-robin over the
    sorted peers by their position among the sorted ``nodes``, so two nodes rarely start on one peer.  Every other
    peer follows, sorted, as a fallback.
    """
    peers = sorted(set(p for p in peers or [] if p))
    nodes = sorted(set(nodes or []))
    if explicit:
        first = explicit
    elif not peers:
        return []
    else:
        if node not in nodes:
            raise PeerPolicyError('node %r is not among the nodes of the run (%s)' % (node, ', '.join(nodes)))
        first = peers[nodes.index(node) % len(peers)]
    return [first] + [p for p in peers if p != first]


# What a known-good peer must show before it measures anyone, as preflight grades it for the node's tier: its rails Active at
# the tier's rate, its PCIe links, its firmware; its GPUs too where the tier runs NCCL (the peer's ranks use them).  A peer's
# GPUDirect mode is not needed: its end of every GPUDirect test is host memory.
PEER_CHECKS = ('tool', 'port_state', 'port_rate', 'nic_count', 'pcie_link', 'firmware_min_version', 'firmware_uniform', 'firmware_read')
PEER_GPU_CHECKS = ('gpu_count', 'gpu_xid', 'gpu_ecc', 'fabric_manager', 'persistence_mode')


def qualify_peer(result, profile, devices=None):
    """{qualified, reasons, notes, checked} of one peer from its delegated preflight_info result (a loop item's), graded as
    preflight grades a node of ``profile``'s tier, over the peer's own compute rails (``devices``: its inventory
    netval_rdma_devices, else the profile's nics.select chooses them).  A peer that could not be reached or read, or whose
    qualifying findings are marginal or reject, is not qualified; unknown findings are notes (a tool missing on the peer
    proves nothing against it).
    """
    if not isinstance(result, Mapping) or result.get('skipped'):
        return {'qualified': False, 'reasons': ['not checked'], 'notes': [], 'checked': []}
    if result.get('unreachable'):
        return {'qualified': False, 'reasons': ['cannot be reached: %s' % ' '.join(str(result.get('msg') or 'unreachable').split())],
                'notes': [], 'checked': []}
    reads = result.get('reads')
    if result.get('failed') or not isinstance(reads, Mapping):
        return {'qualified': False, 'reasons': ['its reads failed: %s' % ' '.join(str(result.get('msg') or 'no reads').split())],
                'notes': [], 'checked': []}
    checks = PEER_CHECKS + (PEER_GPU_CHECKS if ((profile.get('tests') or {}).get('nccl') or {}).get('enabled') else ())
    found = [f for f in preflight_findings(dict(reads), profile, devices or None) if f.get('check') in checks]
    reasons = ['%s: %s' % (f['check'], f.get('detail')) for f in found if f.get('status') in ('marginal', 'reject')]
    if not (reads.get('rdma') or {}).get('live_ports'):
        reasons.append('no live RDMA port')
    notes = ['%s: %s' % (f['check'], f.get('detail')) for f in found if f.get('status') == 'unknown']
    return {'qualified': not reasons, 'reasons': reasons, 'notes': notes, 'checked': sorted(set(f['check'] for f in found))}


def qualify_peers(results, profile, devices=None):
    """{peer: qualify_peer(...)} for the looped, delegated preflight_info results of the known-good peers; ``devices``
    maps a peer to its own rails (netval_rdma_devices), a peer not in it has its rails chosen by the profile."""
    devices = devices if isinstance(devices, Mapping) else {}
    qualified = {}
    for result in results or []:
        if isinstance(result, Mapping) and result.get('item'):
            peer = str(result['item'])
            qualified[peer] = qualify_peer(result, profile, devices.get(peer))
    return qualified


def healthy_peers(qualification, order=None):
    """The qualified peers (qualify_peers), in ``order`` (a node's peer_order; peers not in it are left out) or sorted."""
    qualification = qualification if isinstance(qualification, Mapping) else {}
    good = [peer for peer, entry in qualification.items() if isinstance(entry, Mapping) and entry.get('qualified')]
    if order is not None:
        return [peer for peer in order or [] if peer in good]
    return sorted(good)


def peer_findings(qualification, order):
    """[] when a peer of ``order`` is qualified; else the one finding that the node has none (unknown, blocking, ours: the node
    could not be measured), naming why each candidate was not."""
    if healthy_peers(qualification, order):
        return []
    qualification = qualification if isinstance(qualification, Mapping) else {}
    why = ['%s: %s' % (peer, ((qualification.get(peer) or {}).get('reasons') or ['not checked'])[0]) for peer in order or []]
    return [{'check': 'peer_health', 'subject': (list(order or []) or ['known_good_peers'])[0], 'status': 'unknown', 'blocking': True,
             'expected': 'a qualified known-good peer', 'actual': 'none qualified',
             'detail': 'no qualified known-good peer (%s): the node could not be measured (not the node\'s fault)'
                       % ('; '.join(why) or 'none in the inventory')}]


def merge_qualifications(views):
    """One qualification per peer from each node's (the nodes of a run may differ in tier): qualified only where every
    view qualified it, the reasons and notes of all of them, each once."""
    merged = {}
    for view in views or []:
        for peer, entry in sorted((view or {}).items() if isinstance(view, Mapping) else []):
            if not isinstance(entry, Mapping):
                continue
            into = merged.setdefault(peer, {'qualified': True, 'reasons': [], 'notes': [], 'checked': []})
            into['qualified'] = into['qualified'] and bool(entry.get('qualified'))
            for key in ('reasons', 'notes', 'checked'):
                into[key] += [item for item in entry.get(key) or [] if item not in into[key]]
    return merged


def first_peers(healthy, explicit=None):
    """The peers a node may take first: its explicit peer alone when that one is healthy (the operator chose it, say the
    box at the other end of its cable), else every healthy peer in order - the node takes whichever frees first."""
    healthy = list(healthy or [])
    if explicit and explicit in healthy:
        return [explicit]
    return healthy


def gives_up_peer(local_measurements):
    """Why a node that ran its peer-independent tests while waiting should not take a peer, or '' when it should.

    A GPU diagnostic that failed (dcgmi diag Fail) sends the node back whatever its network measures, so it leaves
    the queue to the nodes that can still be accepted.  A warning, or a diagnostic that could not run (our gap, such
    as dcgmi not installed), keeps its place: the network tests still decide.
    """
    failed = [m for m in local_measurements or [] if isinstance(m, dict) and m.get('metric') == 'dcgmi_diag'
              and m.get('preset_status') == 'reject']
    if not failed:
        return ''
    return ('dcgmi diag failed while the node waited for a peer (%s): the node goes back to the provider whatever its '
            'network measures, so it gave up its place in the queue' % '; '.join(m.get('as_printed') or str(m.get('subject')) for m in failed))


def lost_peer(peer, steps):
    """Whether the known-good peer went away during a step of a node's tests, judged from the step's registered results.

    ``steps`` is a list of [result, on_peer, step]: the result a task registered (a loop's too), whether that task ran on the
    peer, and what it did.  Returns {peer, step, detail} for the first result that could not reach the peer, else {}.  A
    task on the node that could not reach the node is not the peer's doing and is left to the run's own failure handling.
    """
    if not peer:
        raise PeerPolicyError('lost_peer needs the peer the node was tested on')
    for entry in steps or []:
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise PeerPolicyError('lost_peer steps are [result, on_peer, step], got %r' % (entry,))
        result, on_peer, step = entry
        if not on_peer or not isinstance(result, dict):
            continue
        items = [result] + [r for r in result.get('results') or [] if isinstance(r, dict)]
        unreachable = [r for r in items if r.get('unreachable')]
        if unreachable:
            # One line: the lease records it and modules refuse control characters.
            detail = ' '.join(str(unreachable[-1].get('msg') or 'unreachable').split())
            return {'peer': peer, 'step': str(step), 'detail': 'known-good peer %s went away during %s: %s' % (peer, step, detail)}
    return {}


def retest_peer(node_result, healthy, tried, enabled=True):
    """The peer that should re-test this node, or '' when none should.

    A re-test happens once, when it is enabled, the node is in bucket C, one of its rejects is a figure a second peer
    re-measures (catalogue ``retest``: every test that depends on the peer or the cable to it, not NCCL), and a
    healthy peer not yet tried exists.
    A reject a second peer cannot change (a GPU missing, a PCIe link) never sends the node to another peer.
    """
    if not enabled or not isinstance(node_result, dict) or node_result.get('bucket') != 'C':
        return ''
    if node_result.get('retested_against'):
        return ''
    retestable = set(catalogue.retest_metrics())
    if not any(t.get('status') == 'reject' and t.get('metric') in retestable for t in node_result.get('tests') or []):
        return ''
    for peer in healthy or []:
        if peer not in (tried or []):
            return peer
    return ''


def retest_tests(node_result):
    """The catalogue tests a second peer re-runs: the re-testable ones with a reject or a marginal figure (what was healthy
    needs no second look; a marginal figure against a peer that may be the cause proves as little as a reject)."""
    names = set()
    for test in (node_result or {}).get('tests') or []:
        metric = test.get('metric')
        if (test.get('status') in ('reject', 'marginal') and metric in catalogue.METRICS
                and catalogue.test(catalogue.test_of_metric(metric))['retest']):
            names.add(catalogue.test_of_metric(metric))
    return [entry['name'] for entry in catalogue.TESTS if entry['name'] in names]


def merge_retest(first, second):
    """The second peer's figures for every metric it re-measured, the first peer's for the rest (in the first's order)."""
    remeasured = set(m.get('metric') for m in second or [])
    return [m for m in first or [] if m.get('metric') not in remeasured] + list(second or [])


def first_peer_tests(first_tests, second_measurements):
    """The first peer's graded results of the metrics the second peer re-measured (the letter shows both)."""
    remeasured = set(m.get('metric') for m in second_measurements or [])
    return [t for t in first_tests or [] if t.get('metric') in remeasured]


def suspect_peer(first_peer_tests, final_tests, first_peer):
    """The first peer as a suspect, when a figure it rejected was healthy against the second peer.

    ``first_peer_tests``: the first peer's graded results of what was re-tested; ``final_tests``: the node's graded results
    after the re-test (the second peer's figures for what it re-measured).  Returns {peer, figures: [{metric, subject,
    first_peer, first_value, first_status, second_peer, second_value, second_status, unit}]} or {} when nothing clears.
    """
    final = dict(((t.get('metric'), t.get('subject')), t) for t in final_tests or [] if isinstance(t, dict))
    figures = []
    for first in first_peer_tests or []:
        if not isinstance(first, dict) or first.get('status') != 'reject':
            continue
        second = final.get((first.get('metric'), first.get('subject')))
        if second and second.get('status') == 'healthy' and second.get('peer') and second.get('peer') != first_peer:
            figures.append({'metric': first.get('metric'), 'subject': first.get('subject'), 'unit': first.get('unit'),
                            'peer_device': first.get('peer_device'),
                            'first_peer': first_peer, 'first_value': first.get('value'), 'first_status': first.get('status'),
                            'second_peer': second.get('peer'), 'second_value': second.get('value'), 'second_status': 'healthy'})
    return {'peer': first_peer, 'figures': figures} if figures and first_peer else {}


def promotable(result):
    """Whether a node's result lets it serve the run's later nodes as a peer (netval_promote_accepted): accepted (bucket
    A) with every test and finding healthy (an informational figure counts as healthy), measured without a re-test or
    a suspicion (a peer that went away before is no doubt: the figures came from the next one).  A marginal figure, or
    any doubt about the peer that measured it, keeps it out: a peer must be beyond question, or the nodes it measures
    inherit the question."""
    if not isinstance(result, Mapping) or result.get('bucket') != 'A':
        return False
    entries = list(result.get('tests') or []) + list(result.get('findings') or [])
    if not result.get('tests') or any(not isinstance(e, Mapping) or e.get('status') not in ('healthy', 'info') for e in entries):
        return False
    return not (result.get('retested_against') or result.get('suspect_peer'))
