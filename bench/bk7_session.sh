#!/usr/bin/env bash
# Seventh GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): the streaming probe
# at the tinygemm's five weights with its lines loaded plainly and evict-first
# (bench/stream_probe.py), then the tinygemm every-route in the same call.
#
#   OUT=... CACHE=... bench/bk7_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
timeout 200 python3 bench/stream_probe.py --cake "$CAKE" --out "$OUT/stream_probe.json" 2>&1 | grep -v -i warn | tail -20
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part bk 200 bench/results/2026-12-05-bk/tinygemm_bk.family.toml --shard bench --every-route
