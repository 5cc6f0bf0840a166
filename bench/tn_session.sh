#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-tn/ (session 40): the GEMM with `a` M-major
# (examples/gemm_tn_sm90.py, C = Aᵀ · B, A stored (K, M) and B (K, N)) checked against its
# contract's oracle and timed against cuBLAS, and the N-major-only GEMM it derives from
# (examples/gemm_nn_sm90.py) timed in the same call.
#
#   OUT=... bench/tn_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
record tn-test 120 test kernels/gemm/gemm_tn.contract.toml
record tn-bench 180 bench kernels/gemm/gemm_tn.contract.toml --shapes bench
record tn-held-out 100 bench kernels/gemm/gemm_tn.contract.toml --shapes held_out
record nn-bench 150 bench kernels/gemm/gemm_nn.contract.toml --shapes bench
true
