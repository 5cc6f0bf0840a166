#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-offm/ (issue #19, session 38), most important first:
#   1. the stream-K schedule (examples/tinygemm_streamk_sm90.py) through the contract's
#      correctness protocol at its check shapes (tails, K shorter than the ring);
#   2. every route, stream-K among them, at the contract's 40 shapes;
#   3. every route of the shipped table, session 37's candidates and stream-K at M the contract
#      does not list (does the persistent route's guard hold?);
#   4. the shipped table and session 37's candidate through dispatch, once each.
#
#   OUT=... CACHE=... bench/streamk_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-offm
T=bench/results/2026-12-05-mcast
timeout 90 "$CAKE" test kernels/tinygemm/tinygemm.contract.toml --kernel examples/tinygemm_streamk_sm90.py \
    --record "$OUT/streamk-test.json" > "$OUT/streamk-test.log" 2>&1
echo "== streamk-test: exit $? at $(( $(date +%s) - SESSION_START )) s"
tail -12 "$OUT/streamk-test.log"
part streamk 210 $D/tinygemm_streamk.family.toml --shard bench --every-route
grep -E "^  M=" "$OUT/streamk/report.txt" 2>/dev/null | head -45
part offm 150 $D/tinygemm_offm.family.toml --shard bench --every-route
part table-1 40 kernels/tinygemm/tinygemm.family.toml --shard bench
part tall-table-1 40 $T/tinygemm_table_tall.family.toml --shard bench
