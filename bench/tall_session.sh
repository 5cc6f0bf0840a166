#!/usr/bin/env bash
# Second GPU call for bench/results/2026-12-05-mcast/ (issues #19, #20), most important first:
#   1. tall tiles (TALL = 1 at e6b9f8b, ROW_WGS = 2 since) at the weights of 7168 and 14336
#      rows against the swapped schedule and its persistent form; the 4096-row split at M <= 16;
#   2. bench/rows_steady.py: whether RMSNorm's output stored evict-last saves time or moves the
#      writeback past the timed kernel (VARIANTS: bench/rows_steady.sh's builds).
#
#   OUT=... CACHE=... VARIANTS=... bench/tall_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-mcast
timeout 150 "$CAKE" family measure $D/tinygemm_tall.family.toml --shard bench --every-route \
    --out "$OUT/tall" > "$OUT/tall.log" 2>&1
echo "== tall: exit $? at $(( $(date +%s) - SESSION_START )) s"
sed -n '1,12p' "$OUT/tall/report.txt" 2>/dev/null
grep -E "N=(14336|7168|4096) " "$OUT/tall/report.txt" 2>/dev/null | head -30
timeout 150 python3 bench/rows_steady.py > "$OUT/steady.log" 2>&1
echo "== steady: exit $? at $(( $(date +%s) - SESSION_START )) s"
tail -15 "$OUT/steady.log"
