#!/usr/bin/env bash
# Cake's main job on a shipped example: build the compiler, check the Hopper GEMM schedule,
# lower it to CUDA and compile it to a cubin for sm_90a (no GPU needed).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CUDA_HOME="$(scripts/toolchain.sh)"
cargo build --release -q -p cake-cli
cake="${CARGO_TARGET_DIR:-target}/release/cake"
echo "== cake check examples/gemm_sm90.py"
$cake check examples/gemm_sm90.py && echo "clean"
echo "== cake build examples/gemm_sm90.py --target sm_90a -o out/gemm"
$cake build examples/gemm_sm90.py --target sm_90a -o out/gemm
ls out/gemm
