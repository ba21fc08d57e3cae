"""Start the emulated nccl-tests ranks as Open MPI's orted starts them, without mpirun: one process per rank with Open MPI's
rank variables, each on its own host's folder (NETVAL_LAB_NODE_DIR).  The real launcher is exercised on the lab itself
(tests/lab/test_nccl_launcher.py); this drives the per-rank emulation on tmp_path node folders, no root needed."""
import os
import subprocess
import uuid


def run_ranks(rank_dirs, binary, args, env=None, timeout=120):
    """``rank_dirs``: the host folder of each rank, in rank order (ranks on one host numbered by local rank).

    Returns [(rc, stdout, stderr)] per rank."""
    job = str(uuid.uuid4().int % 10 ** 9)
    local = {}
    procs = []
    for rank, folder in enumerate(rank_dirs):
        folder = str(folder)
        local_rank = local.get(folder, 0)
        local[folder] = local_rank + 1
        ranks_env = dict(os.environ, NETVAL_LAB_NODE_DIR=folder, OMPI_COMM_WORLD_RANK=str(rank),
                         OMPI_COMM_WORLD_SIZE=str(len(rank_dirs)), OMPI_COMM_WORLD_LOCAL_RANK=str(local_rank),
                         OMPI_MCA_ess_base_jobid=job, OMPI_MCA_orte_hnp_uri='%s.0;tcp://127.0.0.1:1' % job)
        ranks_env.update(env or {})
        procs.append(subprocess.Popen([os.path.join(folder, 'bin', binary)] + list(args), env=ranks_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True))
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        done.append((proc.returncode, out, err))
    return done
