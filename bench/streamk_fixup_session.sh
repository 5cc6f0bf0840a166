#!/usr/bin/env bash
# GPU call for bench/results/2026-12-08-streamk-fixup/: the stream-K fix-up's prefetch (a run that
# ends a tile adds the partials already published before its own steps). The stream-K small-M
# GEMM at three stage widths and the shipped swapped routes (the control), every route, with the
# compiler before ($OLD_CAKE, default dist/cake-old) and after (dist/cake); then the stream-K schedules' timelines
# (the fix-up's phases) and the data-parallel GEMM beside the stream-K GEMM. On an H200, the
# tinygemm table A/B of bench/h200_ab_session.sh first.
#   OUT=... CACHE=... bench/streamk_fixup_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
R=bench/results/2026-12-08-streamk-fixup
NEW=$CAKE
if grep -q H200 "$OUT/gpu.txt"; then
    for i in 1 2; do
        part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
        part candidate-$i 90 bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml --shard bench
    done
fi
CAKE=${OLD_CAKE:-$PWD/dist/cake-old}
part old 170 $R/tinygemm_streamk.family.toml --shard bench --every-route
CAKE=$NEW
part new 170 $R/tinygemm_streamk.family.toml --shard bench --every-route
record tl-tinygemm 150 bench $R/tinygemm_streamk.contract.toml --timeline
record tl-gemm-streamk 100 bench kernels/gemm/gemm.contract.toml --kernel examples/gemm_streamk_sm90.py --timeline
record gemm-sm90 60 bench kernels/gemm/gemm.contract.toml --kernel examples/gemm_sm90.py
python3 - "$OUT/old/measurement.json" "$OUT/new/measurement.json" <<'PY' || true
import json, sys
rows = {}
for tag, f in zip(("old", "new"), sys.argv[1:]):
    try:
        shapes = json.load(open(f))["shapes"]
    except Exception as e:
        print(f"{tag}: {e}")
        continue
    for s in shapes:
        key = (s["shape"]["M"], s["shape"]["N"], s["shape"]["K"])
        for r, v in s["timed"].items():
            rows.setdefault(key, {})[(r, tag)] = (v.get("cupti_ms"), v.get("speedup"), v.get("correct"))
print("shape: route old -> new us (x cuBLAS new)")
for key, t in sorted(rows.items()):
    out = []
    for r in sorted({r for r, _ in t}):
        o, n = t.get((r, "old")), t.get((r, "new"))
        fmt = lambda v: f"{v[0] * 1e3:.2f}{'' if v[2] else ' WRONG'}" if v and v[0] else "-"
        out.append(f"{r} {fmt(o)} -> {fmt(n)} ({n[1]:.3f}x)" if n and n[1] else f"{r} {fmt(o)} -> {fmt(n)}")
    print(f"M={key[0]} N={key[1]} K={key[2]}: " + " · ".join(out))
PY
true
