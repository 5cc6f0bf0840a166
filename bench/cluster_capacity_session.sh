#!/usr/bin/env bash
# GPU call for bench/results/2026-12-07-clusters/: how many clusters of each size run at once
# (bench/probes/cluster_capacity.cu, built on the build machine into $PROBE), and on an H200 the
# alternated A/B of the tinygemm candidate table (bench/h200_ab_session.sh); with RESIDENCY=1 first
# bench/residency_check.py (Kernel.residency on clustered tinygemms).
#   OUT=... PROBE=.carry/cluster_capacity CACHE=... bench/cluster_capacity_session.sh
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
timeout 60 "${PROBE:-.carry/cluster_capacity}" > "$OUT/cluster_capacity.json" 2> "$OUT/cluster_capacity.err"
echo "== cluster capacity: exit $? at $(( $(date +%s) - SESSION_START )) s"
python3 - "$OUT/cluster_capacity.json" <<'PY' || cat "$OUT/cluster_capacity.err"
import json, sys
d = json.load(open(sys.argv[1]))
print(d["gpu"], d["sms"], "SMs")
for r in d["max_active_clusters"]:
    print(f"  cluster {r['cluster']:2} smem {r['smem'] // 1024:3} KB: {r['clusters']:3} clusters, {r['ctas']:3} CTAs")
for r in d["timed"]:
    print(f"  cluster {r['cluster']:2} x {r['clusters']:3}: span {r['span_us']:6.2f} us on {r['distinct_sms']} SMs")
PY
[ "${RESIDENCY:-0}" = 1 ] && { timeout 240 python3 bench/residency_check.py --out "$OUT/residency.json" \
    > "$OUT/residency.log" 2>&1; echo "== residency: exit $?"; tail -5 "$OUT/residency.log"; }
# CALIBRATE=1: the calibration's residency probes alone, and the table cake derives from them.
[ "${CALIBRATE:-0}" = 1 ] && { timeout 240 python3 -m cake.calibrate --only cluster_c2 --only cluster_c4 \
    --only cluster_c8 --target sm_90a --cake "$CAKE" --out "$OUT/calibrate.json" > "$OUT/calibrate.log" 2>&1
    echo "== calibrate: exit $?"; cat "$OUT/calibrate.log" | tail -4
    "$CAKE" calibrate --target sm_90a --measurements "$OUT/calibrate.json" -o "$OUT/calibrate.toml" \
        && grep -A4 "cluster_ctas" "$OUT/calibrate.toml"; }
# BENCH=1: `cake bench` of the tinygemm split four ways at every size (SPLIT_UPTO = 4224) on the
# contract's check shapes: its lines name the waves and the cluster limit.
if [ "${BENCH:-0}" = 1 ]; then
    sed -e 's/^SPLIT_WAYS = 2 /SPLIT_WAYS = 4 /' -e 's/^SPLIT_UPTO = 2048 /SPLIT_UPTO = 4224 /' \
        -e 's/^BK = 64$/BK = 128/' examples/tinygemm_sm90.py > /tmp/tinygemm_split4.py
    record bench-split4 300 bench kernels/tinygemm/tinygemm.contract.toml --kernel /tmp/tinygemm_split4.py \
        --shapes check
    grep "^bench" "$OUT/bench-split4.log" | cut -c1-60,200-400
fi
# TIMELINE=1: `cake bench --timeline` of the RMSNorm contract (each bench shape's phases).
if [ "${TIMELINE:-0}" = 1 ]; then
    record bench-rmsnorm-timeline 300 bench kernels/rows/rmsnorm.contract.toml --timeline
    grep -E "^bench|^  timeline" "$OUT/bench-rmsnorm-timeline.log" | cut -c1-260
fi
grep -q H200 "$OUT/gpu.txt" && OUT=$OUT/ab bash "$(dirname "$0")/h200_ab_session.sh"
true
