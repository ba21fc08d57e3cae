#!/usr/bin/env bash
# Run ansible-test (sanity or units) on a copy of this checkout laid out as
# ansible_collections/gpufleet/netval, as ansible-test requires.
# Usage: scripts/ansible_test.sh sanity [ansible-test args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
work=$(mktemp -d /tmp/netval-ansible-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
dest=$work/ansible_collections/gpufleet/netval
mkdir -p "$dest"
# Tracked files plus new files git does not ignore: exactly what would be committed.
(cd "$root" && git ls-files -co --exclude-standard -z | rsync -a --from0 --ignore-missing-args --files-from=- ./ "$dest/")
"$venv/bin/python" "$root/scripts/prepare_ansible_test.py"
cd "$dest"
git init -q . && git add -A >/dev/null   # ansible-test lists a collection's files through git
PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" "$@"
