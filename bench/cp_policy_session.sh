#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-grid/ call 3 (issue #19): the L2 policy descriptors read
# back (bench/policy_probe.py, built on the build machine into $POLICY), then the tinygemm's weight
# by evict-first cp.async (the descriptor as a constant) against TMA boxes, every route.
#   OUT=... POLICY=.carry/pol CACHE=... bench/cp_policy_session.sh    # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
python3 bench/sass_policy.py "${POLICY:-.carry/pol}"/tg_createpolicy.cubin "${POLICY:-.carry/pol}"/tg_const.cubin 2>&1 | tee "$OUT/sass.log"
timeout 60 python3 bench/policy_probe.py run "${POLICY:-.carry/pol}" 2>&1 | tee "$OUT/policy.log" | tail -6
part cpasync 300 bench/results/2026-12-06-grid/cp_policy.family.toml --shard bench --every-route
python3 - "$OUT/cpasync/measurement.json" <<'PY' || true
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    t = {r: (f"{v['cupti_ms'] * 1e3:.2f}" if v.get("correct") else (v.get("problem") or "WRONG")[:40])
         for r, v in s["timed"].items() if v.get("cupti_ms") or v.get("problem")}
    if t and s["route"] != "fallback":
        print(s["shape"]["M"], s["shape"]["N"], s["shape"]["K"], " ".join(f"{r} {u}" for r, u in sorted(t.items())))
PY
true
