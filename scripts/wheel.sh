#!/usr/bin/env bash
# Build what ships to a GPU machine into dist/ (ignored by git):
#   dist/cake-<version>-cp39-abi3-manylinux_<glibc>_x86_64.whl   the Python package, release build
#   dist/cake                                                     the release `cake` binary
# Install the wheel there with `python3 -m pip install --no-deps dist/cake-*.whl` (any CPython
# >= 3.9 on x86-64 Linux with a glibc at least as new as the tag says). See docs/python.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mkdir -p dist
rm -f dist/cake-*.whl
# The pinned maturin from the project's .venv/ (scripts/venv.sh), not the active interpreter.
"$(scripts/venv.sh)" -m maturin build --release --out dist
cargo build --release -p cake-cli
cp "${CARGO_TARGET_DIR:-target}/release/cake" dist/cake
ls -l dist
