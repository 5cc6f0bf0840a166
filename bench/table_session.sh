#!/usr/bin/env bash
# GPU call 5 for bench/results/2026-12-06-timeline/ (issue #19): the shipped tinygemm table through
# dispatch twice, then, every route, the H100's unsplit route at 2048 x 7168 against the split.
#   OUT=... CACHE=... bench/table_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
for i in 1 2; do
    part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
done
part split2048 90 bench/results/2026-12-06-timeline/split2048.family.toml --shard bench --every-route
python3 - "$OUT/split2048/measurement.json" <<'PY' || true
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    t = {r: v["cupti_ms"] * 1e3 for r, v in s["timed"].items() if v.get("cupti_ms") and v.get("correct")}
    if t and s["route"] != "fallback":
        print(s["shape"], " ".join(f"{r} {u:.2f}" for r, u in sorted(t.items())))
PY
true
