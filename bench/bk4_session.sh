#!/usr/bin/env bash
# Fourth GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): the shipped tinygemm
# table (wider ring stages) against session 38's, through dispatch, alternated twice, at the
# contract's shapes and at the off-contract ones.
#
#   OUT=... CACHE=... bench/bk4_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-bk
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part s38-1 45 $D/tinygemm_table_s38.family.toml --shard bench
part offm 45 $D/tinygemm_table_offm.family.toml --shard bench
part s38-offm 45 bench/results/2026-12-05-offm/tinygemm_table_offm.family.toml --shard bench
part table-2 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part s38-2 45 $D/tinygemm_table_s38.family.toml --shard bench
for p in offm s38-offm; do echo "== $p"; grep -E "^  M=" "$OUT/$p/report.txt" | awk '{print $1, $2, $3, $4, $NF}' | head -40; done
