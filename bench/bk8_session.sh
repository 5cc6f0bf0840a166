#!/usr/bin/env bash
# Eighth GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): more CTAs at the two
# weights of fewest tiles with the wider stages (every route); on an H200 (the card issue #19's
# targets name), the shipped table against session 38's, alternated, and off the contract.
#
#   OUT=... CACHE=... bench/bk8_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-bk
if grep -q H200 "$OUT/gpu.txt"; then
    part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
    part s38-1 45 $D/tinygemm_table_s38.family.toml --shard bench
    part offm 45 $D/tinygemm_table_offm.family.toml --shard bench
    part table-2 45 kernels/tinygemm/tinygemm.family.toml --shard bench
    part s38-2 45 $D/tinygemm_table_s38.family.toml --shard bench
fi
part split 120 $D/tinygemm_split.family.toml --shard bench --every-route
grep -E "^  (route|swapped|split)" "$OUT/split/report.txt" 2>/dev/null | head -10
