#!/usr/bin/env bash
# GPU call 7 for bench/results/2026-12-06-grid/ (issue #19): on an H200 only, the shipped tinygemm
# table against the candidate of call 6's every-route data
# (bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml), dispatch, alternated twice.
# On another GPU it records the card and stops (the candidate routes the H100 as the shipped
# table does).
#   OUT=... CACHE=... bench/h200_ab_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: nothing to compare"
    exit 0
fi
for i in 1 2; do
    part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
    part candidate-$i 90 bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml --shard bench
done
true
