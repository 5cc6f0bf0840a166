#!/usr/bin/env bash
# The whole test suite: formatting, lints, Rust tests (including the annotated schedule tests and
# the compile-every-example tests), and the CPU-only Python tests against the compiled extension.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# The pinned Python test tools (pytest, numpy, maturin) in the project's .venv/, never the active
# interpreter; quick when they are already there.
py="$(scripts/venv.sh)"
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
"$py" -m maturin build --quiet --out "$scratch/wheels" >&2
wheel="$(ls "$scratch"/wheels/cake-*.whl)"
"$py" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
  --target "$scratch/site" "$wheel"
PYTHONPATH="$scratch/site" CAKE_TEST_WHEEL="$wheel" "$py" -m pytest -q python/tests
