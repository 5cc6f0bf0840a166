#!/usr/bin/env bash
# Third GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): ring depth at each
# stage width (BK 64-512, 2-16 stages), every route at the contract's 40 shapes.
#
#   OUT=... CACHE=... bench/bk3_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part bk3 240 bench/results/2026-12-05-bk/tinygemm_bk3.family.toml --shard bench --every-route
grep -E "^  [a-z]" "$OUT/bk3/report.txt" 2>/dev/null | head -20
