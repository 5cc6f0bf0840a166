#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-offm/ (issue #19, session 38), most important first:
#   1. the stream-K schedule (examples/tinygemm_streamk_sm90.py) through the contract's
#      correctness protocol at its check shapes (tails, K shorter than the ring);
#   2. the stream-K GEMM (two consumer warpgroups, a TMA-store epilogue) through the GEMM
#      contract's correctness protocol;
#   3. every route, stream-K among them, at the tinygemm contract's 40 shapes;
#   4. every route of the shipped table, session 37's candidates and stream-K at M the contract
#      does not list (does the persistent route's guard hold?);
#   5. the stream-K GEMM and gemm_sm90 timed against cuBLAS at the GEMM contract's bench shapes.
#
#   OUT=... CACHE=... bench/streamk_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-offm
T=bench/results/2026-12-05-mcast
record streamk-test 90 test kernels/tinygemm/tinygemm.contract.toml --kernel examples/tinygemm_streamk_sm90.py
record gemm-streamk-test 60 test kernels/gemm/gemm.contract.toml --kernel examples/gemm_streamk_sm90.py
part streamk 180 $D/tinygemm_streamk.family.toml --shard bench --every-route
grep -E "^  M=" "$OUT/streamk/report.txt" 2>/dev/null | head -45
for g in gemm_streamk_sm90 gemm_sm90; do
    record bench-$g 50 bench kernels/gemm/gemm.contract.toml --kernel examples/$g.py --shapes bench
done
part offm 110 $D/tinygemm_offm.family.toml --shard bench --every-route
