#!/usr/bin/env bash
# One GPU call for the cost model (docs/cost-model.md): calibrate on this GPU, then compare the
# model's predictions with measured times for ≥ 30 schedule variants. Everything lands in $OUT.
#
#   bench/cost_session.sh        # on the GPU host, from the repository root; carry: dist
#
# Expects dist/cake and dist/cake-*.whl (scripts/wheel.sh). About 2 minutes (75 s on 2026-11-29,
# before the per-N wgmma, stream-table and named-barrier probes).
set -u
OUT=${OUT:-out/cost-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
DATE=$(date -u +%F)

echo "== calibrate"
timeout 240 dist/cake calibrate --target sm_90a -o "$OUT/sm_90a.toml" --keep "$OUT/calibrate-raw.json"
echo "exit $?"
# The new tables and what the model derives from them, for the record.
[ -s "$OUT/sm_90a.toml" ] && grep -A12 -E '^\[(mma_tflops_16bit_by_n|tma_stream_gbps)\]' "$OUT/sm_90a.toml"
grep -E '^named_barrier_us' "$OUT/sm_90a.toml" 2>/dev/null
CAL=()
[ -s "$OUT/sm_90a.toml" ] && CAL=(--calibration "$OUT/sm_90a.toml")

echo "== accuracy"
timeout 300 python3 bench/cost_accuracy.py --cake dist/cake "${CAL[@]}" \
    --out "$OUT/cost-accuracy-$DATE.json" --timeout 40
echo "exit $?"
# The same measurements against the committed (seed) table, for comparison: predictions only.
for f in examples/gemm_sm90.py; do
    dist/cake cost $f --target sm_90a --shape M=4096,N=7168,K=4096 "${CAL[@]}" | head -3
done
