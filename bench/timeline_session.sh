#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-timeline/ (issue #19): the small-M schedules with
# %globaltimer stamps (bench/timeline_probe.py), built on the build machine into $PROBE.
#   OUT=... PROBE=.carry/probe bench/timeline_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
export PROBE=${PROBE:-.carry/probe}
timeout 400 python3 bench/timeline_probe.py run 2>&1 | tee "$OUT/timeline.log" | tail -14
