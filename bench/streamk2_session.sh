#!/usr/bin/env bash
# Second GPU call for bench/results/2026-12-05-offm/ (issue #19, session 38), most important first:
#   1. the tinygemm stream-K schedule through the contract's correctness protocol (call 1 could
#      not: the example lacked the `NW` constant the contract specialises);
#   2. the stream-K GEMM with its tiles numbered in grouped raster order (`group=8`), timed
#      beside gemm_sm90 (call 1: 20-22 % slower in row-major order);
#   3. the shipped tinygemm table and session 37's candidate through dispatch, once each.
#
#   OUT=... CACHE=... bench/streamk2_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
T=bench/results/2026-12-05-mcast
record streamk-test 90 test kernels/tinygemm/tinygemm.contract.toml --kernel examples/tinygemm_streamk_sm90.py
for g in gemm_streamk_sm90 gemm_sm90; do
    record bench-$g 50 bench kernels/gemm/gemm.contract.toml --kernel examples/$g.py --shapes bench
done
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 45 $T/tinygemm_table_tall.family.toml --shard bench
