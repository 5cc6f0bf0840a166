#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-cards/ (issue #19, session 42): the shipped tinygemm table,
# whose H100 routes name `cards`, against the table chosen from H100 runs
# (2026-12-05-judge/tinygemm_table_c2.family.toml), through dispatch on the worker's GPU,
# alternated twice. On an H100 the two route every contract shape alike; on any other GPU the
# shipped table takes its shared routes.
#
#   OUT=... CACHE=... bench/cards_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
C2=bench/results/2026-12-05-judge/tinygemm_table_c2.family.toml
# PAIRS=1: one pair only (a call with little device time left).
for i in $(seq 1 "${PAIRS:-2}"); do
    part shipped-$i 60 kernels/tinygemm/tinygemm.family.toml --shard bench
    part c2-$i 60 $C2 --shard bench
done
for r in shipped-1 c2-1 shipped-2 c2-2; do
    [ -f "$OUT/$r/report.txt" ] && { echo "## $r"; sed -n 2p "$OUT/$r/report.txt"; }
done
# Which route dispatch gave each shape on this GPU.
python3 - "$OUT/shipped-1/measurement.json" <<'PY' || true
import collections, json, sys
m = json.load(open(sys.argv[1]))
print("gpu:", m["environment"].get("gpu"))
print(dict(collections.Counter(s["route"] for s in m["shapes"])))
PY
true
