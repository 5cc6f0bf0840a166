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
    timeout 50 "$CAKE" bench kernels/gemm/gemm.contract.toml --kernel examples/$g.py --shapes bench \
        --record "$OUT/bench-$g.json" > "$OUT/bench-$g.log" 2>&1
    echo "== bench-$g: exit $? at $(( $(date +%s) - SESSION_START )) s"
    tail -6 "$OUT/bench-$g.log"
done
timeout 60 "$CAKE" test kernels/gemm/gemm.contract.toml --kernel examples/gemm_streamk_sm90.py \
    --record "$OUT/gemm-streamk-test.json" > "$OUT/gemm-streamk-test.log" 2>&1
echo "== gemm-streamk-test: exit $? at $(( $(date +%s) - SESSION_START )) s"
tail -3 "$OUT/gemm-streamk-test.log"
timeout 60 "$CAKE" test kernels/tinygemm/tinygemm.contract.toml --kernel examples/tinygemm_streamk_sm90.py \
    --record "$OUT/streamk-test.json" > "$OUT/streamk-test.log" 2>&1
echo "== streamk-test: exit $? at $(( $(date +%s) - SESSION_START )) s"
tail -3 "$OUT/streamk-test.log"
part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 45 $T/tinygemm_table_tall.family.toml --shard bench
