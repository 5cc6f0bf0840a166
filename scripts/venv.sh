#!/usr/bin/env bash
# The project's Python environment: .venv/ in the repository (ignored by git) with the pinned
# tools of .ci/requirements.txt (pytest, numpy, maturin). Nothing is installed into the active
# interpreter. Prints the venv's python; quick when it is already up to date.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
req="$root/.ci/requirements.txt"
# A venv whose interpreter no longer runs (moved checkout, removed Python) is rebuilt.
if ! "$venv/bin/python" -c '' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || {
    echo "error: 'python3 -m venv' failed; install Python's venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
  }
fi
# The copy of the requirements last installed says whether pip needs to run at all.
if ! cmp -s "$req" "$venv/.cake-requirements.txt"; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
  cp "$req" "$venv/.cake-requirements.txt"
fi
echo "$venv/bin/python"
