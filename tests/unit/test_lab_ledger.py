"""The lab's HCA ledger: a session whose processes are all gone (killed, as a real perftest's HCA is freed then) stops
sharing the HCA at once; one whose process lives keeps sharing it.  No root, no lab: a ledger in a temp dir."""
import subprocess
import sys

from lab.netval_lab import fabric


def test_a_killed_sessions_share_is_freed_and_a_live_ones_is_kept(tmp_path):
    ledger = fabric.Ledger(str(tmp_path), 'mlx5_0')
    # A session opened by a process that has exited since (a perftest killed mid-run): its owner is gone.
    child = subprocess.run([sys.executable, '-c', 'from lab.netval_lab import fabric; import sys; '
                            'fabric.Ledger(sys.argv[1], "mlx5_0").open("killed ib_send_bw")', str(tmp_path)],
                           check=True, cwd=fabric.__file__.rsplit('/lab/', 1)[0])
    assert child.returncode == 0
    ledger.open('this session')
    # Only this session overlaps itself: the dead one no longer halves the HCA.
    assert ledger.close() == 1
    live = fabric.Ledger(str(tmp_path), 'mlx5_0')
    live.open('a live session')
    ledger.open('another')
    assert ledger.close() == 2
    live.close()


def test_a_pid_alone_never_identifies_the_owner():
    import os
    me = fabric._process_identity(os.getpid())  # pylint: disable=protected-access
    assert me and me[0] == os.getpid()
    assert not fabric._owners_gone({'owners': [me]})  # pylint: disable=protected-access
    # The same pid with another start time is another process (pid_max is 32768: pids are reused).
    assert fabric._owners_gone({'owners': [[me[0], me[1] + 1]]})  # pylint: disable=protected-access
    assert not fabric._owners_gone({'owners': []})  # pylint: disable=protected-access
