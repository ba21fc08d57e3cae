"""Benchmark the lab: up/down time and peak memory for 3 and 16 nodes, and Ansible's per-task overhead.

    .venv/bin/python lab/bench.py [--sizes 3 16] [--tasks 10] [--json out.json]

Run as root from the repo root with no lab up (it brings its own up and down).  Memory is the RSS
of every lab process (sshd per host, helpers) plus what /run/netval-lab holds, sampled every 50 ms.
The Ansible overhead is (time of a play with N ``ansible.builtin.command: true`` tasks - time of the
same play with none) / N, with SSH pipelining and ControlPersist on (ansible.cfg + lab inventory).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'lab'))

from netval_lab import LAB_ROOT, netns  # noqa: E402  pylint: disable=wrong-import-position

BIN = os.path.dirname(sys.executable)


def env():
    full = dict(os.environ)
    full['PATH'] = BIN + os.pathsep + full.get('PATH', '')
    full['ANSIBLE_CONFIG'] = os.path.join(ROOT, 'ansible.cfg')
    full['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, '.cache', 'collections')
    return full


def lab(*args):
    proc = subprocess.run([sys.executable, '-m', 'lab.netval_lab'] + list(args), cwd=ROOT, env=env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise SystemExit('lab %s failed:\n%s' % (' '.join(args), proc.stdout))
    return proc.stdout


def rss_bytes(pids):
    total = 0
    for pid in pids:
        try:
            with open('/proc/%d/status' % pid, encoding='utf-8') as handle:
                for line in handle:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def run_bytes():
    total = 0
    for dirpath, _dirs, files in os.walk(LAB_ROOT):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


class Sampler(threading.Thread):
    """Peak RSS of lab processes and peak bytes under /run/netval-lab while running."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peak_rss = self.peak_run = 0

    def run(self):
        while not self.stop.is_set():
            self.peak_rss = max(self.peak_rss, rss_bytes(netns.lab_processes()))
            self.peak_run = max(self.peak_run, run_bytes())
            self.stop.wait(0.05)


def timed(func, *args):
    sampler = Sampler()
    sampler.start()
    started = time.time()
    func(*args)
    elapsed = time.time() - started
    sampler.stop.set()
    sampler.join()
    return elapsed, sampler.peak_rss, sampler.peak_run


def playbook(tasks, limit, workdir):
    path = os.path.join(workdir, 'bench_%d.yml' % tasks)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write('---\n- name: bench\n  hosts: new_nodes\n  gather_facts: false\n  tasks:\n')
        handle.write('    - name: warm the connection\n      ansible.builtin.command: "true"\n      changed_when: false\n')
        for index in range(tasks):
            handle.write('    - name: task %d\n      ansible.builtin.command: "true"\n      changed_when: false\n' % index)
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', 'inventories/lab', path, '-l', limit]
    started = time.time()
    proc = subprocess.run(argv, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    elapsed = time.time() - started
    if proc.returncode != 0:
        raise SystemExit('ansible-playbook failed:\n%s' % proc.stdout[-4000:])
    return elapsed


def task_overhead(tasks, limit):
    with tempfile.TemporaryDirectory() as workdir:
        playbook(0, limit, workdir)  # ControlPersist masters up, caches warm
        base = min(playbook(0, limit, workdir) for _attempt in range(2))
        full = min(playbook(tasks, limit, workdir) for _attempt in range(2))
    return base, full, (full - base) / tasks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', type=int, nargs='+', default=[3, 16])
    parser.add_argument('--tasks', type=int, default=10)
    parser.add_argument('--profile', default='healthy-400g')
    parser.add_argument('--json', help='also write the results here')
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit('bench: run as root')
    results = {'sizes': {}, 'ansible': {}}
    lab('down')
    for size in args.sizes:
        up_s, up_rss, up_run = timed(lab, 'up', '--profile', args.profile, '--nodes', str(size), '--peers', '1')
        steady_rss, steady_run = rss_bytes(netns.lab_processes()), run_bytes()
        again_s = timed(lab, 'up', '--profile', args.profile, '--nodes', str(size), '--peers', '1')[0]
        entry = {'up_s': round(up_s, 2), 'second_up_s': round(again_s, 2), 'peak_rss_mib': round(up_rss / 2 ** 20, 1),
                 'steady_rss_mib': round(steady_rss / 2 ** 20, 1), 'run_mib': round(max(up_run, steady_run) / 2 ** 20, 2)}
        if size == max(args.sizes):
            for limit, label in (('node01', '1 node'), ('new_nodes', '%d nodes' % size)):
                base, full, per_task = task_overhead(args.tasks, limit)
                results['ansible'][label] = {'play_0_tasks_s': round(base, 2), 'play_%d_tasks_s' % args.tasks: round(full, 2),
                                             'per_task_s': round(per_task, 3)}
        down_s, down_rss, _run = timed(lab, 'down')
        entry.update({'down_s': round(down_s, 2), 'down_peak_rss_mib': round(down_rss / 2 ** 20, 1)})
        entry['hosts'] = size + 1
        results['sizes']['%d nodes + 1 peer' % size] = entry
        print('%2d nodes: %s' % (size, json.dumps(entry)), flush=True)
    for label, entry in results['ansible'].items():
        print('ansible %s: %s' % (label, json.dumps(entry)), flush=True)
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
