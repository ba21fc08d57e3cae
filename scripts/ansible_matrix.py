"""The ansible-core matrix of `make test`: ansible-test sanity, the unit tests and ansible-lint (production profile) on
each ansible-core given, each in its own venv (made by `make matrix`), the versions side by side.

    scripts/ansible_matrix.py .venvs/ansible-2.19.14:3.11 .venvs/ansible-2.20.10:3.12

Each check's output goes to tests/output/matrix/<version>-<check>.log; the table at the end says, per version, what
passed and how long it took, and the tail of every failed check's log follows it.  Exit status 1 when anything failed.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(ROOT, 'tests', 'output', 'matrix')


def checks(venv, python):
    """(name, argv) of the three checks of one venv."""
    bin_dir = os.path.join(venv, 'bin')
    return [
        ('sanity', [os.path.join(ROOT, 'scripts', 'ansible_test.sh'), 'sanity', '--venv', '--python', python]),
        ('units', [os.path.join(bin_dir, 'python'), '-m', 'pytest', '-q', '-rf', '-p', 'no:cacheprovider', 'tests/unit']),
        ('lint', [os.path.join(bin_dir, 'ansible-lint'), '--profile', 'production', '--offline']),
    ]


def check_env(version, name):
    """What one check adds to the environment: ansible-lint gets an Ansible home of its own, since it also resolves
    modules from ~/.ansible/collections, where any other checkout (or an old molecule prerun) may have left a stale copy
    of this collection that hides newer modules."""
    if name != 'lint':
        return {}
    return {'ANSIBLE_HOME': os.path.join(ROOT, '.cache', 'ansible-home', version)}


def core_version(venv):
    out = subprocess.run([os.path.join(venv, 'bin', 'python'), '-c', 'import ansible; print(ansible.__version__)'],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True)
    return out.stdout.strip()


def run_version(venv, python):
    """[(check, ok, seconds, log path, last line)] of one venv's checks, one after another."""
    version = core_version(venv)
    env = dict(os.environ, VENV=venv, PATH=os.path.join(venv, 'bin') + os.pathsep + os.environ.get('PATH', ''),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.cache', 'collections'), ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    rows = []
    for name, argv in checks(venv, python):
        log = os.path.join(LOGS, 'ansible-%s-%s.log' % (version, name))
        started = time.time()
        with open(log, 'w', encoding='utf-8') as handle:
            rc = subprocess.run(argv, cwd=ROOT, env=dict(env, **check_env(version, name)), stdout=handle, stderr=subprocess.STDOUT, check=False).returncode
        with open(log, encoding='utf-8', errors='replace') as handle:
            lines = [line.rstrip() for line in handle if line.strip()]
        # A sanity test ansible-test skipped for a missing program (shellcheck) is not a pass.
        skipped = [line for line in lines if 'Required program' in line]
        rows.append((name, rc == 0 and not skipped, time.time() - started, log, (skipped or lines or [''])[-1]))
    return version, python, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('venvs', nargs='+', metavar='VENV:PYTHON', help='a venv of the matrix and its Python version')
    args = parser.parse_args(argv)
    os.makedirs(LOGS, exist_ok=True)
    pairs = [(os.path.abspath(venv), python) for venv, python in (entry.rsplit(':', 1) for entry in args.venvs)]
    print('ansible-core matrix: sanity, unit tests and ansible-lint on %s' % ', '.join(os.path.relpath(venv, ROOT) for venv, _python in pairs),
          flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(pairs)) as pool:
        results = list(pool.map(lambda pair: run_version(*pair), pairs))
    failed = []
    for version, python, rows in results:
        cells = ['%s %s (%.0f s)' % (name, 'ok' if ok else 'FAILED', seconds) for name, ok, seconds, _log, _last in rows]
        print('ansible-core %-8s Python %-5s %s' % (version, python, '  '.join(cells)))
        for name, ok, _seconds, log, last in rows:
            print('    %s: %s' % (name, last[:150]))
            if not ok:
                failed.append(log)
    for log in failed:
        with open(log, encoding='utf-8', errors='replace') as handle:
            tail = handle.readlines()[-60:]
        print('\n==> %s (last lines)\n%s' % (os.path.relpath(log, ROOT), ''.join(tail)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
