#!/usr/bin/env bash
# The whole test suite: formatting, lints, Rust tests (including the annotated schedule tests and
# the compile-every-example tests), and the CPU-only Python tests against the compiled extension.
# No test is skipped for a reason this script can satisfy: those are failures here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# The pinned Python test tools (pytest, numpy, maturin) in the project's .venv/, never the active
# interpreter; quick when they are already there.
py="$(scripts/venv.sh)"
# What the tests need from outside the repository, installed here so that none of them is
# skipped: the pinned CUDA toolchain (compile-only) and the official SARIF schema. With
# CAKE_REQUIRE_ALL=1 a test that still lacks something fails instead of reporting a skip
# (crates/cake-testkit; python/tests/conftest.py for pytest).
export CUDA_HOME="${CUDA_HOME:-$(scripts/toolchain.sh)}"
export CAKE_SARIF_SCHEMA="${CAKE_SARIF_SCHEMA:-$(scripts/sarif-schema.sh)}"
export CAKE_REQUIRE_ALL=1
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test --workspace -q

# The Python package: build the extension as a (debug) abi3 wheel with maturin, install it alone
# into a scratch directory on PYTHONPATH, and run the tests against it (test_package.py also
# checks the wheel's tags and contents). Tests that put python/ first on sys.path still get the
# installed extension: cake/_native_loader.py finds it.
# An extension built into the source tree (maturin develop) would shadow the wheel under test
# for the tests that put python/ first on sys.path, and a stale one fails them confusingly.
if ls python/cake/_native*.so >/dev/null 2>&1; then
    echo "scripts/test.sh: python/cake/_native*.so (an in-tree build) would shadow the wheel under test; remove it" >&2
    exit 1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$py" -m maturin build --quiet --out "$scratch/wheels" >&2
wheel="$(ls "$scratch"/wheels/cake-*.whl)"
"$py" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
  --target "$scratch/site" "$wheel"
# -rfEs: failures, errors and every skip's reason (only those CI cannot satisfy are allowed,
# python/tests/conftest.py) in the summary.
PYTHONPATH="$scratch/site" CAKE_TEST_WHEEL="$wheel" "$py" -m pytest -q -rfEs python/tests
