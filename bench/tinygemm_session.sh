#!/usr/bin/env bash
# The small-M GEMM of issue #19 on the GPU: the contract's 40 bench shapes through `cake bench`
# (correctness on the check shapes, every distribution; CUPTI timing of the candidate and
# torch.matmul in one process), the held-out shapes checked after. Each distinct M is its own
# build ([specialize]).
#   bench/tinygemm_session.sh          # on the GPU host, from the repository root
# Expects dist/cake and dist/cake-*.whl (carry: dist).
set -u
OUT=${OUT:-out/tinygemm-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
timeout ${BENCH_TIMEOUT:-500} "$CAKE" bench kernels/tinygemm/tinygemm.contract.toml --build-dir /tmp/tinygemm \
    --record "$OUT/tinygemm-bench.json" 2>&1 | grep -E "^bench|correctness|verdict|fail|error"
timeout 300 "$CAKE" test kernels/tinygemm/tinygemm.contract.toml --shapes held_out \
    --build-dir /tmp/tinygemm --record "$OUT/tinygemm-held-out.json" 2>&1 | grep -E "verdict|fail|error"
python3 bench/summarize.py "$OUT/summary.json" "$OUT/tinygemm-bench.json"
