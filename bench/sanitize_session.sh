#!/usr/bin/env bash
# GPU call 6 for bench/results/2026-12-06-timeline/: the clustered GEMMs built with the deferred
# cluster wait (bench/sanitize_clusters.sh) under compute-sanitizer's memcheck, racecheck and
# synccheck, then the shipped tinygemm table through dispatch twice.
#   OUT=... CACHE=... SANITIZE_DIR=.carry/sanitize bench/sanitize_session.sh   # GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
export SANITIZE_DIR=${SANITIZE_DIR:-.carry/sanitize}
CS=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
for tool in memcheck racecheck synccheck; do
    timeout 150 "$CS" --tool $tool --target-processes all python3 bench/sanitize_clusters.py > "$OUT/$tool.log" 2>&1
    echo "== $tool: exit $? at $(( $(date +%s) - SESSION_START )) s"
    grep -E "correct|WRONG|ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$OUT/$tool.log" | tail -5
done
for i in $(seq 1 "${PAIRS:-2}"); do
    part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
done
true
