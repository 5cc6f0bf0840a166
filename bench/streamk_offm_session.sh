#!/usr/bin/env bash
# GPU call 4 for bench/results/2026-12-08-streamk-fixup/: the stream-K example at three stage
# widths and the swapped routes at the off-contract M of 2026-12-05-offm (every route, cuBLAS in
# the same run): the changed example measured at shapes the contract does not list.
#   OUT=... CACHE=... bench/streamk_offm_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part offm 240 bench/results/2026-12-08-streamk-fixup/tinygemm_streamk_offm.family.toml --shard bench --every-route
sed -n '1,16p' "$OUT/offm/report.txt" 2>/dev/null
true
