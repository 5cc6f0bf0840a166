#!/usr/bin/env bash
# The row-kernel families of issue #20 on the GPU: each contract of kernels/rows/ through
# `cake bench` (correctness on the check shapes, every distribution; then CUPTI timing of the
# candidate, the torch op and a copy of the same rows, in one process per contract), with the
# held-out shapes checked after. Each distinct H is its own build ([specialize]).
#
#   bench/rows_session.sh          # on the GPU host, from the repository root
#
# Expects dist/cake and dist/cake-*.whl (carry: dist). Writes one evidence record per contract
# and shape set under $OUT, and a summary table (bench/summarize.py).
set -u
OUT=${OUT:-out/rows-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
for family in ${FAMILIES:-rmsnorm layernorm softmax add_rmsnorm quant_fp8}; do
    echo "== $family"
    timeout 900 "$CAKE" bench "kernels/rows/$family.contract.toml" --build-dir "/tmp/rows-$family" \
        --record "$OUT/$family-bench.json" 2>&1 | grep -E "^bench|correctness|verdict|fail|error|×"
    timeout 600 "$CAKE" test "kernels/rows/$family.contract.toml" --shapes held_out \
        --build-dir "/tmp/rows-$family" --record "$OUT/$family-held-out.json" 2>&1 | grep -E "verdict|fail|error"
done
echo "== summary"
python3 bench/summarize.py "$OUT/summary.json" $(ls "$OUT"/*-bench.json | sort)
tar -czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
