#!/usr/bin/env bash
# The whole test suite: formatting, lints, Rust tests (including the annotated schedule tests and
# the compile-every-example tests), and the CPU-only Python tests against the compiled extension.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# The pinned Python test tools (pytest, numpy, maturin); quick when they are already there.
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -r .ci/requirements.txt
export CUDA_HOME="${CUDA_HOME:-$(scripts/toolchain.sh)}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test --workspace -q

# The Python package: build the extension as a (debug) abi3 wheel with maturin, install it alone
# into a scratch directory on PYTHONPATH, and run the tests against it (test_package.py also
# checks the wheel's tags and contents). Tests that put python/ first on sys.path still get the
# installed extension: cake/_native_loader.py finds it.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 -m maturin build --quiet --out "$scratch/wheels" >&2
wheel="$(ls "$scratch"/wheels/cake-*.whl)"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile \
  --target "$scratch/site" "$wheel"
PYTHONPATH="$scratch/site" CAKE_TEST_WHEEL="$wheel" python3 -m pytest -q python/tests
