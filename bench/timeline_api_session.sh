#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-timeline-api/: the compiler's timeline stamps
# (bench/timeline_api.py, built on the build machine into $TL).
#   OUT=... TL=.carry/tl bench/timeline_api_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
timeout 300 python3 bench/timeline_api.py run 2>&1 | tee "$OUT/timeline_api.log" | tail -40
