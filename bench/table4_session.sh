#!/usr/bin/env bash
# Fourth GPU call for bench/results/2026-12-05-offm/ (issue #19, session 38): the shipped
# tinygemm table (128-row tiles at 14336 x 4096, guards narrowed where M = 100 lost) against
# session 37's (tinygemm_table_s37.family.toml) through dispatch, alternated, then the shipped
# table at the off-contract shapes through dispatch.
#
#   OUT=... CACHE=... bench/table4_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-offm
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part s37-table-1 45 $D/tinygemm_table_s37.family.toml --shard bench
part table-offm 45 $D/tinygemm_table_offm.family.toml --shard bench
part table-2 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part s37-table-2 45 $D/tinygemm_table_s37.family.toml --shard bench
