#!/usr/bin/env bash
# Attention forward (issue #17) on the GPU: the variant probe (bench/attention_variants.py on
# the folders bench/attention_variants.sh built), then both contracts through `cake bench`
# (correctness on the check shapes, every distribution; CUPTI timing of the candidate and torch
# SDPA — default backend, cuDNN and FlashAttention-2 — in one process), the held-out shapes
# checked after.
#   bench/attention_session.sh [variants|contracts|all]   # on the GPU host, repository root
# Expects dist/cake, dist/cake-*.whl and the variant folders (carry: dist, .carry).
set -u
OUT=${OUT:-out/attention-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
what=${1:-all}
if [ "$what" = variants ] || [ "$what" = all ]; then
    timeout ${PROBE_TIMEOUT:-400} python3 bench/attention_variants.py 2>&1 | tail -45
fi
if [ "$what" = contracts ] || [ "$what" = all ]; then
    for c in attention attention_causal; do
        timeout ${BENCH_TIMEOUT:-250} "$CAKE" bench kernels/attention/$c.contract.toml --build-dir /tmp/$c \
            --record "$OUT/$c-bench.json" 2>&1 | grep -E "^bench|correctness|verdict|fail|error"
        timeout 150 "$CAKE" test kernels/attention/$c.contract.toml --shapes held_out \
            --build-dir /tmp/$c --record "$OUT/$c-held-out.json" 2>&1 | grep -E "verdict|fail|error"
    done
    python3 bench/summarize.py "$OUT/summary.json" "$OUT"/attention*-bench.json
fi
