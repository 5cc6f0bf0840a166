#!/usr/bin/env bash
# Second GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): wider ring stages
# with the stage count from the shared-memory budget, a 512-wide stage, and the wider stages on
# the split, 128-row-tile and two-CTAs-per-SM schedules (every route, 40 shapes); then the
# candidate table chosen from call 1 against the shipped one through dispatch, alternated twice.
#
#   OUT=... CACHE=... bench/bk2_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-bk
part table-bk-1 45 $D/tinygemm_table_bk.family.toml --shard bench
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part bk2 200 $D/tinygemm_bk2.family.toml --shard bench --every-route
part table-bk-2 45 $D/tinygemm_table_bk.family.toml --shard bench
part table-2 45 kernels/tinygemm/tinygemm.family.toml --shard bench
grep -E "^  (route|swapped|split|rows|bk)" "$OUT/bk2/report.txt" 2>/dev/null | head -20
