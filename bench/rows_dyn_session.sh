#!/usr/bin/env bash
# GPU call for bench/results/2026-12-09-rows-dynamic/ (issue #20): the hand-written persistent row
# kernels with a dynamic piece counter (bench/rows_hand.cu, `*_dyn*`) against their static forms,
# the shipped RMSNorm schedule, the fine copy, torch's rms_norm and torch's copy, in one process.
# Carried: .carry/hand (bench/rows_hand.sh with ONLY=...) and .carry/rms_shipped
# (`cake build examples/rmsnorm_sm90.py --target sm_90a`).
#   OUT=... bench/rows_dyn_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
cp .carry/hand/ptxas.txt "$OUT/" 2>/dev/null
for run in 1 2; do
    mkdir -p "$OUT/run$run"
    OUT=$OUT/run$run HAND=.carry/hand SHIPPED=.carry/rms_shipped timeout 240 python3 bench/rows_hand.py \
        > "$OUT/run$run/rows_hand.log" 2>&1
    echo "== run $run: exit $?"
done
tail -48 "$OUT/run2/rows_hand.log"
