#!/usr/bin/env bash
# Third GPU call for bench/results/2026-12-05-offm/ (session 38): the stream-K GEMM with
# data-parallel waves first, beside gemm_sm90; the tinygemm stream-K schedule's correctness
# protocol again (the tile loop changed); the two tinygemm tables once each.
#
#   OUT=... CACHE=... bench/streamk3_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
T=bench/results/2026-12-05-mcast
for g in gemm_streamk_sm90 gemm_sm90; do
    record bench-$g 50 bench kernels/gemm/gemm.contract.toml --kernel examples/$g.py --shapes bench
done
record gemm-streamk-test 60 test kernels/gemm/gemm.contract.toml --kernel examples/gemm_streamk_sm90.py
record streamk-test 60 test kernels/tinygemm/tinygemm.contract.toml --kernel examples/tinygemm_streamk_sm90.py
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 45 $T/tinygemm_table_tall.family.toml --shard bench
