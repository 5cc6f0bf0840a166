#!/usr/bin/env bash
# First GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): the swapped-operand
# schedule's K per stage (BK = 64, 128, 256) every route at the contract's 40 shapes; the BK = 128
# and 256 forms through the contract's correctness protocol at its check shapes (tails); the
# shipped table through dispatch on this card, and at the off-contract shapes.
#
#   OUT=... CACHE=... bench/bk_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
D=bench/results/2026-12-05-bk
part bk 200 $D/tinygemm_bk.family.toml --shard bench --every-route
for bk in 128 256; do
    sed "s/^BK = 64$/BK = $bk/; s/^TIGHT = 0$/TIGHT = 1/" examples/tinygemm_sm90.py > /tmp/tinygemm_bk$bk.py
    record test-bk$bk 90 test kernels/tinygemm/tinygemm.contract.toml --kernel /tmp/tinygemm_bk$bk.py
done
part table 45 kernels/tinygemm/tinygemm.family.toml --shard bench
part table-offm 45 bench/results/2026-12-05-offm/tinygemm_table_offm.family.toml --shard bench
grep -E "^  (route|swapped|split|rows)" "$OUT/bk/report.txt" 2>/dev/null | head -20
