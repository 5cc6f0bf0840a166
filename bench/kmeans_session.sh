#!/usr/bin/env bash
# k-means schedules (assign by default; CONTRACT= picks another contract), each in its own
# `cake bench` against flash-kmeans 0.3.1 (issue #6),
# in the order given, so an A B ... A B list measures each candidate twice, interleaved.
#
#   KERNELS="examples/kmeans_assign_sm90.py path/to/variant.py examples/kmeans_assign_sm90.py ..." \
#       bench/kmeans_session.sh        # on the GPU host, from the repository root
#
# Expects dist/cake, dist/cake-*.whl and .whl/flash_kmeans-0.3.1-*.whl (carry: dist, .whl).
set -u
OUT=${OUT:-out/kmeans-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
CONTRACT=${CONTRACT:-kernels/kmeans/assign.contract.toml}
i=0
for kernel in ${KERNELS:-examples/kmeans_assign_sm90.py}; do
    i=$((i + 1))
    name=$i-$(basename "$kernel" .py)
    echo "== $name ($kernel)"
    timeout 240 "$CAKE" bench "$CONTRACT" --kernel "$kernel" --build-dir "/tmp/b-$name" \
        --record "$OUT/$name.json" 2>&1 | grep -E "^bench|correctness|verdict|fail|error"
done
echo "== summary"
python3 - "$OUT" <<'PY'
import json, pathlib, sys
print(f"{'run':32} {'verdict':8} {'cake ms':>8} {'flash ms':>9} {'x events':>9} {'x cupti':>8}")
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json"), key=lambda p: int(p.stem.split("-")[0])):
    r = json.loads(p.read_text())
    for s in (r.get("timing") or {}).get("shapes", []):
        cand = (s["candidate"].get("result") or {}).get("events_ms", {}).get("median", float("nan"))
        base = s["baselines"]["flash_kmeans"]["result"]["events_ms"]["median"]
        x = s.get("speedup", {}).get("flash_kmeans", {})
        print(f"{p.stem:32} {r.get('verdict', '?'):8} {cand:8.3f} {base:9.3f} "
              f"{x.get('events', float('nan')):9.3f} {x.get('cupti', float('nan')):8.3f}")
PY
