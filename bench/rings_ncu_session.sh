#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-rings/ (issue #19): Nsight Compute on the one-ring and
# two-ring small-M GEMMs at 4096 x 4096, M = 64 and 128 (bench/rings_ncu.py), every launch
# profiled: DRAM and L2 throughput, stalls, against the weight bytes each holds in flight.
#
#   OUT=... CACHE=... bench/rings_ncu_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
timeout 420 ncu --clock-control none --kernel-name regex:tinygemm \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section LaunchStats --section Occupancy \
    --csv --page details python3 bench/rings_ncu.py > "$OUT/ncu.csv" 2> "$OUT/ncu.log"
echo "== ncu: exit $? at $(( $(date +%s) - SESSION_START )) s"
grep -v '^"' "$OUT/ncu.csv" | head -20
grep -E 'Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput' "$OUT/ncu.csv" | cut -c1-220 | head -60
true
