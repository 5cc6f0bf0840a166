#!/usr/bin/env bash
# GPU call for bench/results/2026-12-08-streamk-fixup/ (the cost model's deferred-release ring,
# a held-out check): examples/gemm_sm90.py at 2 and 3 ring stages, every route at the GEMM
# contract's bench shapes, cuBLAS in the same run.
#   OUT=... CACHE=... bench/ring_depth_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
part stages 240 bench/results/2026-12-08-streamk-fixup/gemm_stages.family.toml --shard bench --every-route
tail -8 "$OUT/stages/report.txt" 2>/dev/null
true
