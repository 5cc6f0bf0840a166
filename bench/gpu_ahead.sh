#!/usr/bin/env bash
# One GPU session for `with lm.ahead(n):` (docs/language.md §8.3a) on the one-role Ampere GEMM,
# examples/gemm_sm80.py, built for sm_80 with its PTX embedded and run through the driver's JIT
# on a Hopper GPU (as bench/gpu_ampere.sh): each AHEAD of 0 (the copy waited for in its own
# iteration), 2 and 3 (STAGES - 1) is checked under the GEMM contract's check shapes (tails in
# M, N and K, a K of two and of one step: fewer steps than the region is issued ahead), then
# AHEAD 0 and 3 are timed against torch.matmul at the bench shapes and at the held-out shapes,
# alternately. Everything lands under $OUT; a short table is printed last.
#
#   CAKE=path/to/cake bench/gpu_ahead.sh   # on the GPU host, from a directory holding dist/,
#                                          # examples/, kernels/ (CAKE: default dist/cake)
set -u
OUT=${OUT:-out/gpu-ahead}
BIN=${CAKE:-}
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "$BIN" ] && CAKE=$BIN

CONTRACT=kernels/gemm/gemm.contract.toml
mkdir -p "$OUT/schedules"
# WGMMA_ONLY=1: only the one-warpgroup TMA + wgmma loop (tests/check/S012_ahead_deferred_release.py)
# with its copies issued 0 and 1 iterations early (2 deadlocks there, CAKE-S012), built for sm_90a:
# checked, then timed against torch.matmul at the bench shapes.
if [ -n "${WGMMA_ONLY:-}" ]; then
    for a in 0 1; do
        sed "s/lm.ahead(STAGES - 1)/lm.ahead($a)/" tests/check/S012_ahead_deferred_release.py \
            > "$OUT/schedules/wg_ahead$a.py"
        grep -q "lm.ahead($a)" "$OUT/schedules/wg_ahead$a.py" || { echo "ahead $a not set"; exit 1; }
    done
    {
    for a in 0 1; do
        record "wg-test-ahead$a" 150 test $CONTRACT --kernel "$OUT/schedules/wg_ahead$a.py" --target sm_90a
    done
    for a in 0 1; do
        record "wg-bench-ahead$a" 200 bench $CONTRACT --kernel "$OUT/schedules/wg_ahead$a.py" \
            --target sm_90a --baseline torch_matmul
    done
    } 2>&1 | tee "$OUT/log.txt"
    tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
    exit 0
fi
for a in 0 2 3; do
    sed "s/^AHEAD = STAGES - 1 /AHEAD = $a /" examples/gemm_sm80.py > "$OUT/schedules/gemm_sm80_ahead$a.py"
    grep -q "^AHEAD = $a " "$OUT/schedules/gemm_sm80_ahead$a.py" || { echo "AHEAD=$a not set"; exit 1; }
done
{
for a in 0 2 3; do
    record "test-ahead$a" 150 test $CONTRACT --kernel "$OUT/schedules/gemm_sm80_ahead$a.py" \
        --target sm_80 --embed-ptx
done
# `cake bench` times the contract's bench shapes; the held-out shapes (and a small one with
# tails) are timed through a copy of the contract whose bench shapes they are.
HELD=kernels/gemm/ahead_held_out.contract.toml
python3 - "$CONTRACT" "$HELD" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
held = '[\n    { M = 2048, N = 12288, K = 1536 },\n    { M = 3000, N = 5000, K = 1000 },\n    { M = 777, N = 1000, K = 136 },\n]'
out = re.sub(r"(?ms)^bench = \[.*?^\]", "bench = " + held, src, count=1)
assert out != src
open(sys.argv[2], "w").write(out)
PY
for c in "bench:$CONTRACT" "held_out:$HELD"; do
    for a in 0 3; do
        record "${c%%:*}-ahead$a" 240 bench "${c#*:}" --kernel "$OUT/schedules/gemm_sm80_ahead$a.py" \
            --target sm_80 --embed-ptx --baseline torch_matmul
    done
done
rm -f "$HELD"
} 2>&1 | tee "$OUT/log.txt"

echo "== summary (CUPTI medians, µs; x torch.matmul in the same process)"
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
for a in (0, 2, 3):
    d = load(f"test-ahead{a}")
    c = (d or {}).get("correctness", {})
    checks = c.get("checks", [])
    ok = sum(1 for x in checks if x.get("passed", x.get("ok")))
    print(f"AHEAD={a}: correctness {'passed' if c.get('passed') else 'NOT passed'} ({ok}/{len(checks)} checks)" if d else f"AHEAD={a}: no record")
print(f"{'shape':26} {'AHEAD=0 µs':>11} {'x torch':>8} {'AHEAD=3 µs':>11} {'x torch':>8} {'3 vs 0':>7}")
rows = {}
for shapes in ("bench", "held_out"):
    for a in (0, 3):
        d = load(f"{shapes}-ahead{a}")
        for s in ((d or {}).get("timing") or {}).get("shapes", []):
            key = " ".join(f"{k}={v}" for k, v in sorted(s["shape"].items()))
            res = (s.get("candidate") or {}).get("result") or {}
            us = res.get("cupti_ms", {}).get("median", float("nan")) * 1e3
            x = (s.get("speedup") or {}).get("torch_matmul", {}).get("cupti", float("nan"))
            rows.setdefault(key, {})[a] = (us, x, s.get("outputs_wrong"))
for key, r in rows.items():
    (u0, x0, w0), (u3, x3, w3) = r.get(0, (float("nan"),) * 3), r.get(3, (float("nan"),) * 3)
    flag = "" if not (w0 or w3) else "  OUTPUTS WRONG"
    print(f"{key:26} {u0:11.1f} {x0:8.3f} {u3:11.1f} {x3:8.3f} {u0 / u3:7.3f}{flag}")
PY
# Everything in one file: the device returns a limited number of files.
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
