#!/usr/bin/env bash
# One GPU call for issue #19's tensor-core GEMV question: the hand kernels of bench/gemv_hand.cu
# (built here by `TC_ONLY=1 bench/gemv_hand.sh` into .carry/gemv) and what the shipped tinygemm table runs
# at each shape (bench/tinygemm_hand_builds.sh into .carry/cakegemv), timed against cuBLAS in one
# process by bench/gemv_hand.py at M = 1 … 32 over the five weights.
#   on the GPU host: OUT=... bash bench/tinygemm_hand_session.sh
set -uo pipefail
source bench/gpu_env.sh || exit 1
GEMV=.carry/gemv CAKE_GEMV=.carry/cakegemv GEMVS=${GEMVS:-0} MS=${MS:-1,2,4,8,16,32} SAMPLES=${SAMPLES:-50} \
    timeout 500 python3 bench/gemv_hand.py 2>&1 | tee "$OUT/table.txt"
