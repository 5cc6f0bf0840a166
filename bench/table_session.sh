#!/usr/bin/env bash
# Fourth GPU call for bench/results/2026-12-05-mcast/ (issue #19): the shipped tinygemm table
# (with the persistent route at 14336 x 4096) and session 37's candidate (128-row tiles there,
# the 4096-row split at 4096 x 4096, M = 128) through dispatch, alternated twice, on the H200.
#
#   OUT=... CACHE=... bench/table_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-mcast
part table-1 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 40 $D/tinygemm_table_tall.family.toml --shard bench
part table-2 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-2 40 $D/tinygemm_table_tall.family.toml --shard bench
