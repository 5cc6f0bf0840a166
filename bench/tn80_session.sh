#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-tn/ (session 40): the weight-gradient GEMM on the
# mma.sync path (examples/gemm_tn_sm80.py: both operands MN-major, read with ldmatrix.trans),
# built for sm_80 and sm_89 with its PTX embedded and run through the driver's JIT on this GPU,
# checked against the contract's oracle and timed against cuBLAS; the K-major sm_80 GEMM
# (examples/gemm_sm80.py) timed the same way for comparison.
#
#   OUT=... bench/tn80_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
C=kernels/gemm/gemm_tn.contract.toml
record tn80-test 120 test $C --kernel examples/gemm_tn_sm80.py --target sm_80 --embed-ptx
record tn89-test 120 test $C --kernel examples/gemm_tn_sm80.py --target sm_89 --embed-ptx
record tn80-bench 150 bench $C --kernel examples/gemm_tn_sm80.py --target sm_80 --embed-ptx --shapes bench
record nt80-bench 150 bench kernels/gemm/gemm.contract.toml --kernel examples/gemm_sm80.py --target sm_80 --embed-ptx --shapes bench
true
