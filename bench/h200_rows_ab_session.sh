#!/usr/bin/env bash
# GPU call 1 for bench/results/2026-12-10-h200-rows-ab/ (issues #20, #19), on an H200 only:
# 1. bench/rows_hand.py twice (RUNS="1 2"): the dynamic hand kernels of bench/rows_hand.cu, their
#    static forms, the compiler's rmsnorm_ring static and with DYNAMIC = 1, the shipped RMSNorm,
#    the fine copy, torch's rms_norm and torch's copy, in one process per run.
# 2. The tinygemm A/B of bench/h200_ab_session.sh: the shipped table against
#    bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml, alternated twice.
# Carried: .carry/hand, .carry/rms_shipped, .carry/rms_ring, .carry/rms_ring_dyn, dist/cake and
# the build cache of both tinygemm tables. On another GPU it records the card and stops.
#   OUT=... CACHE=... bench/h200_rows_ab_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: nothing to measure"
    exit 0
fi
cp .carry/hand/ptxas.txt "$OUT/" 2>/dev/null
for run in 1 2; do
    mkdir -p "$OUT/run$run"
    OUT=$OUT/run$run HAND=.carry/hand SHIPPED=.carry/rms_shipped \
        CAKE_BUILDS=cake_ring=.carry/rms_ring,cake_ring_dyn=.carry/rms_ring_dyn \
        timeout 150 python3 bench/rows_hand.py > "$OUT/run$run/rows_hand.log" 2>&1
    echo "== rows run $run: exit $? at $(( $(date +%s) - SESSION_START )) s"
done
for i in 1 2; do
    part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
    part candidate-$i 90 bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml --shard bench
done
tail -40 "$OUT/run2/rows_hand.log"
