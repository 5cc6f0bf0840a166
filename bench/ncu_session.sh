#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-tall/ (session 40): Nsight Compute on the swapped
# tinygemm at 4096 x 4096, M = 16, 64, 128 (bench/tinygemm_ncu.py), every launch profiled.
#
#   OUT=... CACHE=... bench/ncu_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
timeout 400 ncu --clock-control none --kernel-name regex:tinygemm \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
    --csv --page details python3 bench/tinygemm_ncu.py > "$OUT/ncu.csv" 2> "$OUT/ncu.log"
echo "== ncu: exit $? at $(( $(date +%s) - SESSION_START )) s"
grep -v '^"' "$OUT/ncu.csv" | head -20
grep -E 'Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|Stall' "$OUT/ncu.csv" | cut -c1-220 | head -60
true
