#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-offm/ (issue #19), most important first:
#   1. every route of the shipped tinygemm table (and session 37's two candidates) at M the
#      contract does not list: does the persistent route's guard (M 3-64 at 14336 x 4096) hold?
#   2. the shipped table and session 37's candidate (128-row tiles at 14336 x 4096, the 4096-row
#      split at 4096 x 4096, M = 128) through dispatch, alternated twice, on the H200;
#   3. 128-row tiles (ROW_WGS = 2) against the routes the table runs, at every contract weight.
#
#   OUT=... CACHE=... bench/offm_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-offm
T=bench/results/2026-12-05-mcast
part offm 150 $D/tinygemm_offm.family.toml --shard bench --every-route
part table-1 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 40 $T/tinygemm_table_tall.family.toml --shard bench
part table-2 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-2 40 $T/tinygemm_table_tall.family.toml --shard bench
part rowwgs 170 $T/tinygemm_rowwgs.family.toml --shard bench --every-route \
    --route swapped --route swapped-persistent --route swapped-2sm --route rows-2
