#!/usr/bin/env bash
# Fifth GPU call for bench/results/2026-12-05-offm/ (issue #19, session 38): token tiles of M
# rounded up to 8 (TIGHT = 1) against the next power of two, every route, at M = 24, 48, 100.
#
#   OUT=... CACHE=... bench/tight_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part tight 100 bench/results/2026-12-05-offm/tinygemm_tight.family.toml --shard bench --every-route
grep -E "^  M=" "$OUT/tight/report.txt" 2>/dev/null | head -20
