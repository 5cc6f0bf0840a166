#!/usr/bin/env bash
# GPU call for bench/results/2026-12-19-fp8-gemm/: the row-wise scaled FP8 GEMM
# (examples/gemm_fp8_sm90.py, kernels/gemm/gemm_fp8.contract.toml) against torch._scaled_mm.
# 1. `cake test` on the check shapes (tails, one row, every distribution);
# 2. `cake bench` on the bench shapes: both baselines (use_fast_accum False and True), CUPTI;
# 3. `cake test` on the held-out shapes;
# 4. every route of kernels/gemm/gemm_fp8.candidates.family.toml at 6 shapes drawn from the
#    domain (held-out shard, seed 1), each against torch._scaled_mm in the same process;
# 5. the calibration probes `wgmma` and `wgmma_fp8` (python -m cake.calibrate --only): the
#    measured FP8 wgmma rate beside the 16-bit one (mma_tflops_8bit, until now assumed twice).
#   OUT=... bash bench/fp8_session.sh        # on the GPU host, repository root; carry: dist
# Each part's time limit: REP_S, TEST_S, BENCH_S, HELD_S, ROUTES_S, CAL_S (seconds; 0 skips it).
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
C=kernels/gemm/gemm_fp8.contract.toml
on() { [ "$1" != 0 ]; }
# The family table's evidence: every route at 24 representative shapes (`cake family choose`
# takes only this shard).
if on ${REP_S:=240}; then
    part representative $REP_S kernels/gemm/gemm_fp8.candidates.family.toml --shard representative --n 24 --seed 10 --every-route
    grep -A10 "^  route" "$OUT/representative/report.txt"
fi
on ${TEST_S:=150} && record test $TEST_S test $C
on ${BENCH_S:=240} && record bench $BENCH_S bench $C
on ${HELD_S:=120} && record held $HELD_S test $C --shapes held_out
if on ${ROUTES_S:=240}; then
    part routes $ROUTES_S kernels/gemm/gemm_fp8.candidates.family.toml --shard held_out --n 6 --seed 1 --every-route
    grep -A14 "^  route" "$OUT/routes/report.txt"
fi
on ${CAL_S:=90} || exit 0
timeout $CAL_S python3 -m cake.calibrate --target sm_90a --cake "$CAKE" --only wgmma \
    --only wgmma_fp8 --out "$OUT/calibrate.json" > "$OUT/calibrate.log" 2>&1
echo "== calibrate: exit $? at $(( $(date +%s) - SESSION_START )) s"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['probes']; [print(k, v.get('median_ms'), v.get('flops', 0) / max(v.get('median_ms') or 1, 1e-9) / 1e9, 'TFLOP/s', v.get('error', '')) for k, v in d.items()]" "$OUT/calibrate.json"
