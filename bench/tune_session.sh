#!/usr/bin/env bash
# One GPU call for the agent loop (issue #8, docs/agents.md): `cake tune` on the k-means assign
# contract from a deliberately simple seed for a fixed GPU budget, then the merged compiler's
# regression checks (GEMM contract test, k-means bench). Everything it keeps lands in $OUT.
#
#   GPU_BUDGET=150s bench/tune_session.sh    # on the GPU host, from the repository root
#
# Expects dist/cake, dist/cake-*.whl and .whl/flash_kmeans-0.3.1-*.whl (carry: dist, .whl).
set -u
OUT=${OUT:-out/tune-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
RUN=/tmp/tune-run

echo "== cake tune (gpu=${GPU_BUDGET:-150s})"
rm -rf "$RUN"
timeout 420 "$CAKE" tune kernels/kmeans/assign.contract.toml \
    --seed kernels/kmeans/variants/kmeans_assign_seed_sm90.py \
    --budget "gpu=${GPU_BUDGET:-150s},wall=6m" --top-k 2 --per-generation 8 --run "$RUN" \
    2> "$OUT/tune-progress.txt"
echo "exit $?"
tail -5 "$OUT/tune-progress.txt"
"$CAKE" report "$RUN" > "$OUT/tune-report.txt"
cp "$RUN/report.svg" "$RUN/report.json" "$OUT/" 2>/dev/null
head -25 "$OUT/tune-report.txt"

echo "== regression: GEMM contract (sm_90a) and k-means bench"
timeout 120 "$CAKE" test kernels/gemm/gemm.contract.toml | tail -2
timeout 120 "$CAKE" bench kernels/kmeans/assign.contract.toml --record "$OUT/kmeans-bench.json" \
    | grep -E "^bench|correctness|verdict"
