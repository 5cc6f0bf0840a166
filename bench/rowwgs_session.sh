#!/usr/bin/env bash
# Third GPU call for bench/results/2026-12-05-mcast/ (issue #19), most important first:
#   1. tiles of 64 x ROW_WGS weight rows (2, 3, 4) at every contract weight, every route, against
#      the routes the shipped table runs there;
#   2. the shipped tinygemm table and session 37's candidate (128-row tiles at 14336 x 4096, the
#      4096-row split at 4096 x 4096, M = 128) through dispatch, alternated twice.
#
#   OUT=... CACHE=... bench/rowwgs_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-mcast
part rowwgs 200 $D/tinygemm_rowwgs.family.toml --shard bench --every-route
sed -n '4,14p' "$OUT/rowwgs/report.txt" 2>/dev/null
grep -E "^  M=" "$OUT/rowwgs/report.txt" 2>/dev/null | head -40
part table-1 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 40 $D/tinygemm_table_tall.family.toml --shard bench
# 3. whether the flush after a call measures the writeback it deferred (bench/writeback_probe.py)
[ -n "${VARIANTS:-}" ] && timeout 120 python3 bench/writeback_probe.py > "$OUT/writeback.log" 2>&1
echo "== writeback: exit $? at $(( $(date +%s) - SESSION_START )) s"
tail -32 "$OUT/writeback.log"
# 4. RMSNorm with its output stored evict-last through the harness that charges deferred writeback
timeout 60 "$CAKE" family measure kernels/rows/rmsnorm.candidates.family.toml --shard bench --every-route \
    --route rows --route rows-store-last --out "$OUT/rms" > "$OUT/rms.log" 2>&1
echo "== rms: exit $? at $(( $(date +%s) - SESSION_START )) s"
python3 - "$OUT/rms/measurement.json" <<'PY' 2>/dev/null
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    print(s["shape"], {k: (round(v["cupti_ms"] * 1e3, 1), round(v["baseline_cupti_ms"] * 1e3, 1), round(v["speedup"], 3),
                           v.get("deferred_ms"), v.get("baseline_deferred_ms")) for k, v in s["timed"].items()})
PY
part table-2 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-2 40 $D/tinygemm_table_tall.family.toml --shard bench
