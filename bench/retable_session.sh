#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-judge/ (issue #19, session 40): the tinygemm table
# re-chosen from call 2-4's H200 every-route runs (no unsplit route; 128-row tiles with BK = 64 at
# 14336 x 4096, M 33-128) against the table call 2 judged, through dispatch, alternated twice.
#
#   OUT=... CACHE=... bench/retable_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
# ONLY_H200=1: record the card and stop unless it is an H200 (the H100's run is call 5).
if [ "${ONLY_H200:-0}" = 1 ] && ! grep -q H200 "$OUT/gpu.txt"; then echo "not an H200: nothing run"; exit 0; fi
D=bench/results/2026-12-05-judge
part new-1 50 kernels/tinygemm/tinygemm.family.toml --shard bench
part c2-1 50 $D/tinygemm_table_c2.family.toml --shard bench
part new-2 50 kernels/tinygemm/tinygemm.family.toml --shard bench
part c2-2 50 $D/tinygemm_table_c2.family.toml --shard bench
for r in new-1 c2-1 new-2 c2-2; do
    [ -f "$OUT/$r/report.txt" ] && { echo "## $r"; sed -n 2p "$OUT/$r/report.txt"; }
done
true
