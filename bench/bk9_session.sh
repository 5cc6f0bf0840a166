#!/usr/bin/env bash
# Ninth GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): 2048 x 7168 without
# the split against the two-way split, at three stage widths (every route, the contract's 8 M).
#
#   OUT=... CACHE=... bench/bk9_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part unsplit 120 bench/results/2026-12-05-bk/tinygemm_unsplit.family.toml --shard bench --every-route
grep -E "^  (route|split|unsplit|M=)" "$OUT/unsplit/report.txt" 2>/dev/null | grep -v fallback | head -20
