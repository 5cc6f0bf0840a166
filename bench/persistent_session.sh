#!/usr/bin/env bash
# One GPU call for bench/results/2026-12-05-persistent/ (issues #19, #20), most important first,
# each part under its own time limit so that what ran comes back even if a later part is cut:
#   1. the GEMV's one-exchange rows (gemv-2, gemv-4) against the swapped schedule: the shipped
#      gemv-2 route through the contract's oracle, and the exchange's effect;
#   2. RMSNorm through the ring against `rows` at the bench shapes;
#   3. narrow weight tiles (examples/tinygemm_narrow_sm90.py) against the swapped schedule at the
#      weights of 2048 and 4096 rows, M <= 64;
#   4. the persistent swapped schedule against one CTA per tile (every route, 40 shapes);
#   5. the RMSNorm table that would route the ring (R >= 16384) through dispatch, both RMSNorm
#      routes at 30 held-out shapes, and the tinygemm table that would route the persistent
#      schedule at N = 14336 through dispatch.
#
#   OUT=... CACHE=... bench/persistent_session.sh      # on the GPU host, from the repository root
#
# Expects dist/cake, dist/cake-*.whl and, in CACHE (default: gpu_env.sh's CAKE_CACHE_DIR), the
# build cache prebuilt on the build machine (every part's `--prebuild --target sm_90a`,
# bench/results/2026-12-05-persistent/README.md), so that the GPU host compiles nothing.
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-persistent
part gemv_fused 80 bench/results/2026-12-05-gemv-fused/gemv_fused.family.toml --shard bench \
    --every-route --route gemv-2 --route gemv-4 --route swapped
part rms 60 kernels/rows/rmsnorm.candidates.family.toml --shard bench --every-route --route rows --route ring
grep "R=" "$OUT/rms/report.txt" 2>/dev/null
part narrow 90 $D/tinygemm_narrow.family.toml --shard bench --every-route
grep "M=" "$OUT/narrow/report.txt" 2>/dev/null
part persistent 150 $D/tinygemm_persistent.family.toml --shard bench --every-route
grep "14336 K=4096" "$OUT/persistent/report.txt" 2>/dev/null
part rms_table 40 $D/rmsnorm_ring_table.family.toml --shard bench
part rms_held 70 kernels/rows/rmsnorm.candidates.family.toml --shard held_out --n 30 \
    --every-route --route rows --route ring
part tinygemm_table 35 $D/tinygemm_table_persistent.family.toml --shard bench
