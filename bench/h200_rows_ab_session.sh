#!/usr/bin/env bash
# GPU call 1 for bench/results/2026-12-10-h200-rows-ab/ (issues #20, #19):
# 1. bench/rows_hand.py (twice on an H200): the dynamic hand kernels of bench/rows_hand.cu, their
#    static forms, the compiler's rmsnorm_ring static and with DYNAMIC = 1 (session 48's taker,
#    `cake_ring_dyn`, and this session's, which grabs after the tile's copies: `cake_ring_dyn2`),
#    the shipped RMSNorm,
#    the fine copy, torch's rms_norm and torch's copy, in one process per run.
# 2. On an H200, the tinygemm A/B of bench/h200_ab_session.sh: the shipped table against
#    bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml, alternated twice; on
#    another card, the dynamic tinygemm and causal attention of ../2026-12-09-rows-dynamic/ with
#    this session's taker (every route).
# 3. bench/ldg_probe.py: the weight streamed by evict-first ld.global on the GEMV's and the swapped
#    schedule's grids, and through a shared-memory ring, beside the TMA stream and the GEMV.
# Carried: .carry/ldgp, .carry/m128p, .carry/hand, .carry/rms_shipped, .carry/rms_ring, .carry/rms_ring_dyn{,2}, dist/cake and
# the build cache of every family file named here; bench/carry_rows_ab.sh builds them all but
# rms_ring_dyn (session 48's binary), which rows_hand.py then skips.
#   OUT=... CACHE=... bench/h200_rows_ab_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
H200=0; grep -q H200 "$OUT/gpu.txt" && H200=1
cp .carry/hand/ptxas.txt "$OUT/" 2>/dev/null
# Another card runs the compiled kernels only (the hand ones ran on an H100 in session 48).
HAND=.carry/hand; [ $H200 = 1 ] || { HAND=.carry/no-hand; mkdir -p $HAND; }
# SHORT=1: rows at 32768 and 8192 only (rows_hand.py's ROWS), one A/B pair, no attention.
[ -n "${SHORT:-}" ] && export ROWS=${ROWS:-32768,8192}
rows() {
    mkdir -p "$OUT/run$1"
    OUT=$OUT/run$1 HAND=$HAND SHIPPED=.carry/rms_shipped \
        CAKE_BUILDS=cake_ring=.carry/rms_ring,cake_ring_dyn=.carry/rms_ring_dyn,cake_ring_dyn2=.carry/rms_ring_dyn2 \
        timeout 150 python3 bench/rows_hand.py > "$OUT/run$1/rows_hand.log" 2>&1
    echo "== rows run $1: exit $? at $(( $(date +%s) - SESSION_START )) s"
}
# Session 50: the same routes at held-out shapes drawn from the domain (narrowed to problems a
# call times in seconds), D = 128 and D = 64.
attention_off() {
    part attention-off 150 bench/results/2026-12-11-attention-dynamic/attention_causal_dynamic_off.family.toml --shard held_out --n 10 --seed 1 --every-route
    part attention-off64 90 bench/results/2026-12-11-attention-dynamic/attention_causal_dynamic_off64.family.toml --shard held_out --n 6 --seed 1 --every-route
}
# Session 52: the M = 128 decomposition (bench/m128_probe.py, built into .carry/m128p): on another
# card with M128_ONLY=1 it is all the call runs; on an H200 it runs last.
m128() {
    timeout 200 python3 bench/m128_probe.py run --dir .carry/m128p --out "$OUT/m128_probe.json" > "$OUT/m128_probe.log" 2>&1
    echo "== m128 probe: exit $? at $(( $(date +%s) - SESSION_START )) s"
    cat "$OUT/m128_probe.log"
    # The staged store against the element-wise one, every route, with the contract's checks.
    part staged 150 bench/results/2026-12-12-m128-parts/staged.family.toml --shard bench --every-route
    grep -A16 "^  shape" "$OUT/staged/report.txt"
    # ... and at held-out shapes (M 17-128 with tails, boxes of rows past M).
    part staged-off 120 bench/results/2026-12-12-m128-parts/staged_off.family.toml --shard held_out --n 8 --seed 1 --every-route
    grep -A10 "^  shape" "$OUT/staged-off/report.txt"
}
if [ $H200 = 0 ] && [ -n "${M128_ONLY:-}" ]; then m128; exit 0; fi
# Session 50: call 1 ran the other-card branch on an H100; another card now repeats only the
# attention (a second sample for its route), so a lent H100 costs a minute, not five.
if [ $H200 = 0 ] && [ -n "${ATTENTION_ONLY:-}" ]; then
    part attention 120 bench/results/2026-12-11-attention-dynamic/attention_causal_dynamic.family.toml --shard bench --every-route
    attention_off
    grep -A12 "^  route" "$OUT"/attention*/report.txt
    exit 0
fi
rows 1
# The load-unit stream probes (bench/ldg_probe.py; built by bench/ldg_probe.sh into .carry/ldgp).
timeout 200 python3 bench/ldg_probe.py run --dir .carry/ldgp --out "$OUT/ldg_probe.json" > "$OUT/ldg_probe.log" 2>&1
echo "== ldg probe: exit $? at $(( $(date +%s) - SESSION_START )) s"
if [ $H200 = 1 ]; then
    # The parts in order of what they decide, so a call cut short keeps the first.
    tail -40 "$OUT/run1/rows_hand.log"; cat "$OUT/ldg_probe.log"
    # SHORT=1 (a session with little device time left): one pair, no attention, no second rows run.
    for i in $( [ -n "${SHORT:-}" ] && echo 1 || echo 1 2 ); do
        part shipped-$i 90 kernels/tinygemm/tinygemm.family.toml --shard bench
        part candidate-$i 90 bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml --shard bench
        # Session 52: the shipped table with the staged store on its M 17-128 routes.
        part staged-table-$i 90 bench/results/2026-12-12-m128-parts/tinygemm_h200_staged_candidate.family.toml --shard bench
        # Call 2 (session 50): the dynamic causal attention beat the shipped route at all five
        # D = 128 shapes on an H100 (call 1); the attention routes were chosen on an H200.
        [ $i = 1 ] && [ -z "${SHORT:-}" ] && part attention 120 bench/results/2026-12-11-attention-dynamic/attention_causal_dynamic.family.toml --shard bench --every-route
        [ $i = 1 ] && [ -z "${SHORT:-}" ] && attention_off
    done
    [ -z "${SHORT:-}" ] && rows 2
    m128
else
    # Another card: the compiled dynamic loops with this session's taker instead of the A/B.
    part tinygemm 120 bench/results/2026-12-09-rows-dynamic/tinygemm_dynamic.family.toml --shard bench --every-route
    part attention 200 bench/results/2026-12-11-attention-dynamic/attention_causal_dynamic.family.toml --shard bench --every-route
    grep -A12 "^  shape" "$OUT/attention/report.txt"
    grep -A30 "^  shape" "$OUT/tinygemm/report.txt" | grep "N=14336 K=4096"
fi
tail -40 "$OUT/run1/rows_hand.log"
cat "$OUT/ldg_probe.log"
grep -A8 "^  route" "$OUT/attention/report.txt"
