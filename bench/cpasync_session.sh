#!/usr/bin/env bash
# GPU call 2 for bench/results/2026-12-06-regs-gemm/ (issue #19): the swapped schedule's weight
# copied by cp.async (CP_ASYNC = 1) against TMA, evict-first and plain, every route at the
# contract's shapes with M <= 64 (tinygemm_cpasync.family.toml).
#   OUT=... CACHE=... bench/cpasync_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part cpasync 420 bench/results/2026-12-06-regs-gemm/tinygemm_cpasync.family.toml --shard bench --every-route
python3 - "$OUT/cpasync/measurement.json" <<'PY' || true
import json, sys
m = json.load(open(sys.argv[1]))
print("gpu:", m["environment"].get("gpu"))
for s in m["shapes"]:
    sh = s["shape"]
    t = {r: v["cupti_ms"] * 1e3 for r, v in s["timed"].items() if v.get("cupti_ms") and v.get("correct")}
    bad = [r for r, v in s["timed"].items() if not v.get("correct")]
    if not s["timed"] or s["route"] == "fallback":
        continue
    base = next(iter(s["timed"].values()))["baseline_cupti_ms"] * 1e3
    print(f"{sh['N']:5} {sh['K']:5} M={sh['M']:3} cublas {base:6.2f} " + " ".join(f"{r} {u:6.2f}" for r, u in sorted(t.items())) + (f" WRONG {bad}" if bad else ""))
PY
true
