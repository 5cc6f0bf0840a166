#!/usr/bin/env bash
# Tenth GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): the shipped table
# (with the unsplit route at 2048 x 7168) against session 38's, through dispatch, alternated
# twice; on an H200, also at the off-contract shapes.
#
#   OUT=... CACHE=... bench/bk10_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-bk
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part s38-1 45 $D/tinygemm_table_s38.family.toml --shard bench
part table-2 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part s38-2 45 $D/tinygemm_table_s38.family.toml --shard bench
grep -q H200 "$OUT/gpu.txt" && part offm 45 $D/tinygemm_table_offm.family.toml --shard bench
true
