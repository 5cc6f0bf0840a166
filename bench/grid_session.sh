#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-grid/ (issue #19): the bare-stream grid probe
# (bench/grid_probe.py, built on the build machine into $PROBE), then the shipped tinygemm table
# through dispatch, and with SPLIT_TABLE every route of that table.
#   OUT=... PROBE=.carry/gp CACHE=... [SPLIT_TABLE=F] [H200_ONLY=1] bench/grid_session.sh   # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
# H200_ONLY=1: on another GPU, only the shipped table (the rest was measured on it already).
if [ -n "${H200_ONLY:-}" ] && ! grep -q H200 "$OUT/gpu.txt"; then
    part shipped 120 kernels/tinygemm/tinygemm.family.toml --shard bench
    exit 0
fi
timeout 300 python3 bench/grid_probe.py run --dir "${PROBE:-.carry/gp}" --out "$OUT/grid_probe.json" \
    > "$OUT/grid_probe.log" 2>&1
echo "== grid probe: exit $? at $(( $(date +%s) - SESSION_START )) s"
cat "$OUT/grid_probe.log" | grep -v "^ *$" | tail -65
[ "${TABLE:-1}" = 1 ] && part shipped 120 kernels/tinygemm/tinygemm.family.toml --shard bench
if [ -n "${SPLIT_TABLE:-}" ]; then
    part split 240 "$SPLIT_TABLE" --shard bench --every-route
    python3 - "$OUT/split/measurement.json" <<'PY' || true
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    t = {r: v["cupti_ms"] * 1e3 for r, v in s["timed"].items() if v.get("cupti_ms") and v.get("correct")}
    if t and s["route"] != "fallback":
        print(s["shape"]["M"], s["shape"]["N"], s["shape"]["K"], " ".join(f"{r} {u:.2f}" for r, u in sorted(t.items())))
PY
fi
true
