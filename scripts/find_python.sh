#!/usr/bin/env bash
# Print the path of a working Python X.Y interpreter (first argument, e.g. 3.13): python3.13 on PATH when it runs (a
# pyenv shim of a version not enabled does not), else pyenv's newest 3.13.*; exit 1 naming what is missing.
set -u
want=$1
if command -v "python$want" >/dev/null 2>&1 && "python$want" -c 'import sys' >/dev/null 2>&1; then
  "python$want" -c 'import sys; print(sys.executable)'
  exit 0
fi
root=${PYENV_ROOT:-$HOME/.pyenv}
newest=$(find "$root/versions" -mindepth 1 -maxdepth 1 -name "$want.*" 2>/dev/null | sort -V -r | while read -r candidate; do
  if [ -x "$candidate/bin/python$want" ]; then echo "$candidate/bin/python$want"; break; fi
done)
if [ -n "$newest" ]; then
  echo "$newest"
  exit 0
fi
echo "no Python $want found (python$want on PATH or $root/versions/$want.*): install it to run this ansible-core" >&2
exit 1
