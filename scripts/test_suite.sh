#!/usr/bin/env bash
# The whole suite, as `make test` runs it on a fresh machine (CI: 2 cores):
#   1. the unit tests and quality gates on the main venv (.venv, the newest ansible-core), two workers;
#   2. the ansible-core matrix (scripts/ansible_matrix.py: sanity, units, ansible-lint on every other version CI tests),
#      niced, beside
#   3. the lab and end-to-end tests (root, network namespaces), one at a time: they share one lab, and much of their
#      time is the lab's own waiting, which the matrix fills.
# The matrix's table is printed after the lab's summary; the suite fails when any step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
venv=${VENV:-.venv}
export PATH="$PWD/$venv/bin:$PATH"
mkdir -p tests/output

"$venv/bin/python" -m pytest -ra -n 2 --durations=5 tests/unit tests/quality || exit 1

matrix_log=tests/output/ansible-matrix.txt
nice -n 10 "$venv/bin/python" scripts/ansible_matrix.py "$@" > "$matrix_log" 2>&1 &
matrix_pid=$!

"$venv/bin/python" -m pytest -ra --durations=10 tests/lab tests/e2e
lab_rc=$?

wait "$matrix_pid"
matrix_rc=$?
echo
cat "$matrix_log"
if [ "$lab_rc" -ne 0 ] || [ "$matrix_rc" -ne 0 ]; then
  echo "the suite failed: lab and e2e tests rc=$lab_rc, ansible-core matrix rc=$matrix_rc" >&2
  exit 1
fi
