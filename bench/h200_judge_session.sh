#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-judge/ (issue #19, session 40): only on an H200 (the card
# the issue's targets name), the shipped tinygemm table against session 38's through dispatch,
# alternated twice, the table at 40 off-contract shapes, and the bare TMA stream of each weight.
# On any other card it records the card and stops: those parts ran on the H100 in call 1.
#
#   OUT=... CACHE=... bench/h200_judge_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
grep -q H200 "$OUT/gpu.txt" || { echo "not an H200: nothing run"; exit 0; }
D=bench/results/2026-12-05-judge
part table-1 50 kernels/tinygemm/tinygemm.family.toml --shard bench
part s38-1 50 bench/results/2026-12-05-bk/tinygemm_table_s38.family.toml --shard bench
part table-2 50 kernels/tinygemm/tinygemm.family.toml --shard bench
part s38-2 50 bench/results/2026-12-05-bk/tinygemm_table_s38.family.toml --shard bench
part offm 60 $D/tinygemm_table_offm.family.toml --shard bench
timeout 180 python3 bench/stream_probe.py --cake "$CAKE" --out "$OUT/stream_probe.json" \
    > "$OUT/stream_probe.log" 2>&1
echo "== stream_probe: exit $? at $(( $(date +%s) - SESSION_START )) s"
for r in table-1 s38-1 table-2 s38-2 offm; do
    [ -f "$OUT/$r/report.txt" ] && { echo "## $r"; head -3 "$OUT/$r/report.txt"; }
done
true
