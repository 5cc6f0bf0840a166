#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-judge/ (issue #19, session 40). On any card: the shipped
# tinygemm table at 40 shapes off the contract's M, and 2048 x 7168 unsplit against the split at
# those M, every route. On an H200 (the card issue #19's targets name), first: the shipped table
# against session 38's through dispatch, alternated twice, and the bare TMA stream of each weight
# (the ceiling under the harness's flush).
#
#   OUT=... CACHE=... bench/judge_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-judge
if grep -q H200 "$OUT/gpu.txt"; then
    part table-1 50 kernels/tinygemm/tinygemm.family.toml --shard bench
    part s38-1 50 bench/results/2026-12-05-bk/tinygemm_table_s38.family.toml --shard bench
    part table-2 50 kernels/tinygemm/tinygemm.family.toml --shard bench
    part s38-2 50 bench/results/2026-12-05-bk/tinygemm_table_s38.family.toml --shard bench
    timeout 180 python3 bench/stream_probe.py --cake "$CAKE" --out "$OUT/stream_probe.json" \
        > "$OUT/stream_probe.log" 2>&1
    echo "== stream_probe: exit $? at $(( $(date +%s) - SESSION_START )) s"
fi
part offm 60 $D/tinygemm_table_offm.family.toml --shard bench
part unsplit-offm 60 $D/unsplit_offm.family.toml --shard bench --every-route
for r in table-1 s38-1 table-2 s38-2 offm unsplit-offm; do
    [ -f "$OUT/$r/report.txt" ] && { echo "## $r"; head -4 "$OUT/$r/report.txt"; }
done
true
