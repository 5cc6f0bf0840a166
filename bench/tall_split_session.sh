#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-tall/ (issue #19, session 40): at M >= 32, tall tiles
# split over K and 64-row tiles split further, against the shipped routes, every route; and the
# TN GEMM's bench again (bench/results/2026-12-05-tn/, for the verdict the cost model's error
# denied it in that call 1).
#
#   OUT=... CACHE=... bench/tall_split_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part tall 300 bench/results/2026-12-05-tall/tall.family.toml --shard bench --every-route
record tn-bench 150 bench kernels/gemm/gemm_tn.contract.toml --shapes bench
[ -f "$OUT/tall/report.txt" ] && sed -n 1,40p "$OUT/tall/report.txt"
true
