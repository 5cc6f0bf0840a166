#!/usr/bin/env bash
# One GPU session that compares values of one module constant of the Ampere GEMM,
# examples/gemm_sm80.py, built for sm_80 with its PTX embedded and run through the driver's JIT
# on a Hopper GPU (as bench/gpu_ampere.sh): each value in CHECK is checked under the GEMM
# contract's check shapes (tails in M, N and K, a K of two and of one step), then the two values
# in TIME are timed against torch.matmul at the bench shapes and at held-out shapes, alternately.
# Everything lands in one archive, $OUT.tgz; a short table is printed last.
#
#   KNOB=B_REGS CHECK="0 1" TIME="0 1" CAKE=path/to/cake bench/gpu_sm80_knob.sh
#     # on the GPU host, from a directory holding dist/, examples/, kernels/ (CAKE: default
#     # dist/cake). bench/gpu_ahead.sh runs it for AHEAD.
set -u
OUT=${OUT:-out/gpu-$KNOB}
BIN=${CAKE:-}
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "$BIN" ] && CAKE=$BIN
read -r T0 T1 <<< "$TIME"

CONTRACT=kernels/gemm/gemm.contract.toml
mkdir -p "$OUT/schedules"
for v in $CHECK; do
    sed "s/^$KNOB = [^#]*#/$KNOB = $v  #/" examples/gemm_sm80.py > "$OUT/schedules/gemm_sm80_$KNOB$v.py"
    grep -q "^$KNOB = $v  #" "$OUT/schedules/gemm_sm80_$KNOB$v.py" || { echo "$KNOB=$v not set"; exit 1; }
done
{
for v in $CHECK; do
    record "test-$KNOB$v" 150 test $CONTRACT --kernel "$OUT/schedules/gemm_sm80_$KNOB$v.py" \
        --target sm_80 --embed-ptx
done
# `cake bench` times the contract's bench shapes; the held-out shapes (and a small one with
# tails) are timed through a copy of the contract whose bench shapes they are.
HELD=kernels/gemm/knob_held_out.contract.toml
python3 - "$CONTRACT" "$HELD" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
held = '[\n    { M = 2048, N = 12288, K = 1536 },\n    { M = 3000, N = 5000, K = 1000 },\n    { M = 777, N = 1000, K = 136 },\n]'
out = re.sub(r"(?ms)^bench = \[.*?^\]", "bench = " + held, src, count=1)
assert out != src
open(sys.argv[2], "w").write(out)
PY
for c in "bench:$CONTRACT" "held_out:$HELD"; do
    for v in $T0 $T1; do
        record "${c%%:*}-$KNOB$v" 240 bench "${c#*:}" --kernel "$OUT/schedules/gemm_sm80_$KNOB$v.py" \
            --target sm_80 --embed-ptx --baseline torch_matmul
    done
done
rm -f "$HELD"
} 2>&1 | tee "$OUT/log.txt"

echo "== summary (CUPTI medians, µs; x torch.matmul in the same process)"
python3 - "$OUT" "$KNOB" "$CHECK" "$T0" "$T1" <<'PY'
import json, os, sys
out, knob, check, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4], sys.argv[5]
def load(name):
    p = os.path.join(out, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
for v in check:
    d = load(f"test-{knob}{v}")
    c = (d or {}).get("correctness", {})
    checks = c.get("checks", [])
    ok = sum(1 for x in checks if x.get("passed", x.get("ok")))
    print(f"{knob}={v}: correctness {'passed' if c.get('passed') else 'NOT passed'} ({ok}/{len(checks)} checks)" if d else f"{knob}={v}: no record")
a, b = f"{knob}={t0} µs", f"{knob}={t1} µs"
print(f"{'shape':26} {a:>13} {'x torch':>8} {b:>13} {'x torch':>8} {t1 + ' vs ' + t0:>8}")
rows = {}
for shapes in ("bench", "held_out"):
    for v in (t0, t1):
        d = load(f"{shapes}-{knob}{v}")
        for s in ((d or {}).get("timing") or {}).get("shapes", []):
            key = " ".join(f"{k}={x}" for k, x in sorted(s["shape"].items()))
            res = (s.get("candidate") or {}).get("result") or {}
            us = res.get("cupti_ms", {}).get("median", float("nan")) * 1e3
            x = (s.get("speedup") or {}).get("torch_matmul", {}).get("cupti", float("nan"))
            rows.setdefault(key, {})[v] = (us, x, s.get("outputs_wrong"))
for key, r in rows.items():
    (u0, x0, w0), (u1, x1, w1) = r.get(t0, (float("nan"),) * 3), r.get(t1, (float("nan"),) * 3)
    flag = "" if not (w0 or w1) else "  OUTPUTS WRONG"
    print(f"{key:26} {u0:13.1f} {x0:8.3f} {u1:13.1f} {x1:8.3f} {u0 / u1:8.3f}{flag}")
PY
# Everything in one file: the device returns a limited number of files.
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
