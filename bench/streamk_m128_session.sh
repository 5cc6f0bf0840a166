#!/usr/bin/env bash
# GPU call for bench/results/2026-12-07-clusters/ (issue #19, M = 128): the stream-K GEMM with the
# tokens as wgmma's A (bench/results/2026-12-07-clusters/streamk_m128.family.toml, every route at
# the contract's five M = 128 shapes) and the shipped tinygemm table through dispatch, with cuBLAS
# in each run.
#   OUT=... CACHE=... bench/streamk_m128_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part streamk 200 bench/results/2026-12-07-clusters/streamk_m128.family.toml --shard bench --every-route
part shipped 150 kernels/tinygemm/tinygemm.family.toml --shard bench
python3 - "$OUT/streamk/measurement.json" "$OUT/shipped/measurement.json" <<'PY' || true
import json, sys
rows = {}
for f in sys.argv[1:]:
    for s in json.load(open(f))["shapes"]:
        if s["shape"]["M"] != 128:
            continue
        key = (s["shape"]["N"], s["shape"]["K"])
        for r, v in s["timed"].items():
            name = r if "streamk" in f else f"table:{s['route']}"
            rows.setdefault(key, {})[name] = (v.get("cupti_ms"), v.get("baseline_cupti_ms"), v.get("speedup"), v.get("correct"))
for (n, k), t in sorted(rows.items()):
    print(f"M=128 N={n} K={k}: " + " · ".join(
        f"{r} {c * 1e3:.2f} us ({s:.3f}x{'' if ok else ' WRONG'})" if c and s else f"{r} {s}"
        for r, (c, b, s, ok) in t.items()))
PY
true
