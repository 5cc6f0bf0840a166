#!/usr/bin/env bash
# Install the pinned compile-only CUDA toolchain into .toolchain/ (once) and print the
# CUDA_HOME to use. Nothing is installed system-wide. `cake` finds it there without CUDA_HOME
# (crates/cake-toolchain: CUDA_HOME, PATH, this checkout's .toolchain/, then the pip package).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.toolchain"
if [ ! -x "$dest/nvidia/cu13/bin/nvcc" ]; then
  python3 -m pip install -q --disable-pip-version-check --no-warn-script-location \
    --target "$dest" -r "$root/.ci/cuda-requirements.txt" >&2
fi
echo "$dest/nvidia/cu13"
