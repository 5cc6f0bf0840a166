#!/usr/bin/env bash
# GPU call for bench/results/2026-12-09-rows-dynamic/ (issue #20, #19): persistent kernels whose
# CTAs take their next piece from a counter (a dynamic split) against their static forms.
# 1. bench/rows_hand.py: the hand-written `*_dyn*` kernels of bench/rows_hand.cu, their static
#    forms, the compiler's rmsnorm_ring static and with `DYNAMIC = 1`, the shipped RMSNorm, the
#    fine copy, torch's rms_norm and torch's copy, in one process (RUNS="1 2": twice).
# 2. The tinygemm at 14336 x 4096 (M <= 32): one CTA per tile, persistent static, persistent
#    dynamic (tinygemm_dynamic.family.toml, every route).
# 3. Causal attention at D = 128, the same three forms (attention_causal_dynamic.family.toml).
# Carried: .carry/hand (bench/rows_hand.sh with ONLY=...), .carry/rms_shipped, .carry/rms_ring,
# .carry/rms_ring_dyn (`cake build`), dist/cake and the build cache.
#   OUT=... CACHE=... bench/rows_dyn_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
cp .carry/hand/ptxas.txt "$OUT/" 2>/dev/null
for run in ${RUNS:-1}; do
    mkdir -p "$OUT/run$run"
    OUT=$OUT/run$run HAND=.carry/hand SHIPPED=.carry/rms_shipped \
        CAKE_BUILDS=cake_ring=.carry/rms_ring,cake_ring_dyn=.carry/rms_ring_dyn \
        timeout 150 python3 bench/rows_hand.py > "$OUT/run$run/rows_hand.log" 2>&1
    echo "== rows run $run: exit $?"
done
part tinygemm 120 bench/results/2026-12-09-rows-dynamic/tinygemm_dynamic.family.toml --shard bench --every-route
part attention 200 bench/results/2026-12-09-rows-dynamic/attention_causal_dynamic.family.toml --shard bench --every-route
grep -A12 "^  shape" "$OUT/attention/report.txt"
grep -A30 "^  shape" "$OUT/tinygemm/report.txt" | grep "N=14336 K=4096"
tail -54 "$OUT/run1/rows_hand.log"
