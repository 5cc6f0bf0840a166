#!/usr/bin/env bash
# GPU call 3 for bench/results/2026-12-06-timeline/ (issue #19): the stamped schedules again, with
# the weight's tensor map at other L2 promotions (bench/timeline_probe.py), then the shipped
# tinygemm table through dispatch, twice.
#   OUT=... CACHE=... PROBE=... bench/promotion_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
export PROBE=${PROBE:-.carry/probe}
timeout 300 python3 bench/timeline_probe.py run 2>&1 | tee "$OUT/timeline.log" | tail -17
for i in 1 2; do
    part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
done
true
