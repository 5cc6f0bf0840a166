#!/usr/bin/env bash
# One GPU call for bench/results/2026-12-05-mcast/ (issues #19, #20), most important first, each
# part under its own time limit so that what ran comes back even if a later part is cut:
#   1. the swapped schedule with its tokens multicast across a cluster (MCAST 2 and 4), against
#      the shipped swapped schedule, its persistent form and the 4096-row split, every route at
#      the 40 contract shapes;
#   2. the shipped tinygemm table and the one that routes the persistent schedule at 14336 rows,
#      through dispatch, alternated twice (the H200 measurement session 36 could not get);
#   3. RMSNorm `rows` against `rows-store-last` at the bench shapes.
#
#   OUT=... CACHE=... bench/mcast_session.sh      # on the GPU host, from the repository root
#
# Expects dist/cake, dist/cake-*.whl and, in CACHE (default: gpu_env.sh's CAKE_CACHE_DIR), the
# build cache prebuilt on the build machine (each part's `--prebuild --target sm_90a`), so that
# the GPU host compiles nothing.
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-mcast
P=bench/results/2026-12-05-persistent
part mcast 200 $D/tinygemm_mcast.family.toml --shard bench --every-route
grep -E "route |swapped|split" "$OUT/mcast/report.txt" 2>/dev/null | head -8
grep -E "M=(16|32|64|128) " "$OUT/mcast/report.txt" 2>/dev/null | head -20
part table-1 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part persistent-table-1 40 $P/tinygemm_table_persistent.family.toml --shard bench
part table-2 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part persistent-table-2 40 $P/tinygemm_table_persistent.family.toml --shard bench
part rms 60 kernels/rows/rmsnorm.candidates.family.toml --shard bench --every-route \
    --route rows --route rows-store-last
grep "R=" "$OUT/rms/report.txt" 2>/dev/null
