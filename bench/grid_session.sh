#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-grid/ (issue #19): the bare-stream grid probe
# (bench/grid_probe.py, built on the build machine into $PROBE), then the shipped tinygemm table
# through dispatch.
#   OUT=... PROBE=.carry/gp CACHE=... bench/grid_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
timeout 300 python3 bench/grid_probe.py run --dir "${PROBE:-.carry/gp}" --out "$OUT/grid_probe.json" \
    > "$OUT/grid_probe.log" 2>&1
echo "== grid probe: exit $? at $(( $(date +%s) - SESSION_START )) s"
cat "$OUT/grid_probe.log" | grep -v "^ *$" | tail -65
[ "${TABLE:-1}" = 1 ] && part shipped 120 kernels/tinygemm/tinygemm.family.toml --shard bench
true
