#!/usr/bin/env bash
# The whole test suite: formatting, lints, Rust tests (including the annotated schedule tests and
# the compile-every-example tests), and the CPU-only Python tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CUDA_HOME="${CUDA_HOME:-$(scripts/toolchain.sh)}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test --workspace -q
python3 -m pytest -q python/tests
