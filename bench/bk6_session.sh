#!/usr/bin/env bash
# Sixth GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): the TMA streaming
# probe at the tinygemm's five weights (bench/stream_probe.py: the weight's streaming ceiling
# without MMAs, token loads or epilogue), then the shipped tinygemm table in the same call.
#
#   OUT=... CACHE=... bench/bk6_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
timeout 200 python3 bench/stream_probe.py --cake "$CAKE" --out "$OUT/stream_probe.json" 2>&1 | tail -12
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part table 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part bk 200 bench/results/2026-12-05-bk/tinygemm_bk.family.toml --shard bench --every-route
