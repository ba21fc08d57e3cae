"""Progress: each node's stage from task events, and the time left from the prediction played forward again."""
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import progress
from ansible_collections.gpufleet.netval.plugins.module_utils.policy import prediction

COSTS = {'call_s': 1, 'session_s': 0, 'node_fixed_s': 0, 'run_fixed_s': 0, 'untimed_s': {}}
LEASE = 'gpufleet.netval.peer_lease'


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_stages_follow_what_surely_happened_not_tasks_that_may_be_skipped():
    tracker = progress.Tracker(Clock())
    assert tracker.start('node01', 'gpufleet.netval.preflight', 'gpufleet.netval.rdma_info') == progress.PREFLIGHT
    # The waiting lease task starts for every node, also one that holds a peer (it is skipped): no stage from that.
    assert tracker.start('node01', None, LEASE) is None
    assert tracker.result('node01', LEASE, {'wait': 0}, {'peer': None, 'error_class': 'peer_busy'}) == progress.WAITING
    assert tracker.start('node01', 'gpufleet.netval.tier_tests', 'ansible.builtin.set_fact') is None
    assert tracker.start('node01', 'gpufleet.netval.tier_tests', 'gpufleet.netval.dcgmi_diag') == progress.LOCAL
    assert tracker.result('node01', 'gpufleet.netval.dcgmi_diag', {}, {'rc': 0}) == progress.WAITING
    assert tracker.result('node01', LEASE, {}, {'skipped': True}) is None
    assert tracker.result('node01', LEASE, {'wait': '{{ w }}'}, {'peer': 'peer02', 'waited_s': 30.0}) == progress.PEER
    assert tracker.peers['node01'] == 'peer02'
    assert tracker.start('node01', 'gpufleet.netval.tier_tests', 'gpufleet.netval.perftest') is None  # still on its peer
    assert tracker.result('node01', LEASE, {'state': 'released'}, {'released': True}) is None
    assert tracker.start('node01', 'gpufleet.netval.verdict', 'ansible.builtin.set_fact') == progress.VERDICT


def test_the_report_written_once_for_the_run_puts_every_node_in_it_a_task_per_node_only_its_own():
    tracker = progress.Tracker(Clock())
    for node in ('node01', 'node02', 'node03'):
        tracker.start(node, 'gpufleet.netval.preflight', 'gpufleet.netval.rdma_info')
    tracker.start('node02', 'gpufleet.netval.verdict', 'ansible.builtin.set_fact')
    # A task of the report role per node moves only its node; the run_once one (validate.yml includes the role once for
    # the play) writes every node's report, the nodes blocked in preflight too.
    assert tracker.start('node03', 'gpufleet.netval.report', 'ansible.builtin.validate_argument_spec') == progress.REPORT
    assert tracker.stages == {'node01': progress.PREFLIGHT, 'node02': progress.VERDICT, 'node03': progress.REPORT}
    assert tracker.start('node01', 'gpufleet.netval.report', 'gpufleet.netval.validation_report', run_once=True) == progress.REPORT
    assert tracker.stages == {'node01': progress.REPORT, 'node02': progress.REPORT, 'node03': progress.REPORT}
    # run_once outside the report role moves no other node.
    tracker.start('node04', 'gpufleet.netval.preflight', 'gpufleet.netval.rdma_info', run_once=True)
    assert tracker.stages['node04'] == progress.PREFLIGHT and tracker.stages['node01'] == progress.REPORT


def test_a_node_with_a_peer_at_once_runs_its_local_tests_after_and_does_not_wait_again():
    tracker = progress.Tracker(Clock())
    assert tracker.result('node02', LEASE, {'wait': 0}, {'peer': 'peer01', 'waited_s': 0.0}) == progress.PEER
    tracker.result('node02', LEASE, {'state': 'released'}, {'released': True})
    assert tracker.start('node02', 'tier_tests', 'gpufleet.netval.dcgmi_diag') == progress.LOCAL
    assert tracker.result('node02', 'gpufleet.netval.dcgmi_diag', {}, {'rc': 0}) is None


def test_time_left_plays_the_queue_forward_from_where_the_nodes_are():
    clock = Clock()
    run = prediction.predict_run([{'node': 'node01', 'peer_s': 50, 'local_s': 0}, {'node': 'node02', 'peer_s': 50, 'local_s': 0}],
                                 ['peer01'], COSTS)
    tracker = progress.Tracker(clock)
    # node02 took the peer first, against the prediction's order: node01 now has node02's rest and its own 50 s to go.
    tracker.result('node02', LEASE, {'wait': 0}, {'peer': 'peer01'})
    tracker.result('node01', LEASE, {'wait': 0}, {'peer': None})
    clock.now += 20
    node_left, run_left = progress.seconds_left(run, tracker, 'node01', clock.now)
    assert (node_left, run_left) == (80.0, 80.0)
    assert progress.seconds_left(run, tracker, 'node02', clock.now)[0] == 30.0
    assert progress.seconds_left({}, tracker, 'node01', clock.now) == (None, None)
    text = progress.line('node01', progress.WAITING, None, 95, node_left, run_left, 0, 2)
    assert text == 'netval progress +95 s node01: waiting for a free known-good peer | ~80 s left for it, ~80 s for the run\'s tests | 0 of 2 nodes measured'
    assert '~2m10s for the run' in progress.line('node02', progress.PEER, 'peer01', 5, 30, 130, 0, 2)
