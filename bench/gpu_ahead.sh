#!/usr/bin/env bash
# One GPU session for `with lm.ahead(n):` (docs/language.md §8.3a) on the one-role Ampere GEMM,
# examples/gemm_sm80.py (bench/gpu_sm80_knob.sh with KNOB=AHEAD): each AHEAD of 0 (the copy
# waited for in its own iteration), 2 and 3 (STAGES - 1) is checked under the GEMM contract's
# check shapes (tails in M, N and K, a K of two and of one step: fewer steps than the region is
# issued ahead), then AHEAD 0 and 3 are timed against torch.matmul at the bench shapes and at
# the held-out shapes, alternately. Everything lands in $OUT.tgz; a short table is printed last.
#
#   CAKE=path/to/cake bench/gpu_ahead.sh   # on the GPU host, from a directory holding dist/,
#                                          # examples/, kernels/ (CAKE: default dist/cake)
set -u
OUT=${OUT:-out/gpu-ahead}
BIN=${CAKE:-}
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "$BIN" ] && CAKE=$BIN

CONTRACT=kernels/gemm/gemm.contract.toml
mkdir -p "$OUT/schedules"
# WGMMA_ONLY=1: only the one-warpgroup TMA + wgmma loop (tests/check/S012_ahead_deferred_release.py)
# with its copies issued 0 and 1 iterations early (2 deadlocks there, CAKE-S012), built for sm_90a:
# checked, then timed against torch.matmul at the bench shapes.
if [ -n "${WGMMA_ONLY:-}" ]; then
    for a in 0 1; do
        sed "s/lm.ahead(STAGES - 1)/lm.ahead($a)/" tests/check/S012_ahead_deferred_release.py \
            > "$OUT/schedules/wg_ahead$a.py"
        grep -q "lm.ahead($a)" "$OUT/schedules/wg_ahead$a.py" || { echo "ahead $a not set"; exit 1; }
    done
    {
    for a in 0 1; do
        record "wg-test-ahead$a" 150 test $CONTRACT --kernel "$OUT/schedules/wg_ahead$a.py" --target sm_90a
    done
    for a in 0 1; do
        record "wg-bench-ahead$a" 200 bench $CONTRACT --kernel "$OUT/schedules/wg_ahead$a.py" \
            --target sm_90a --baseline torch_matmul
    done
    } 2>&1 | tee "$OUT/log.txt"
    tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
    exit 0
fi
KNOB=AHEAD CHECK="0 2 3" TIME="0 3" OUT=$OUT CAKE=$CAKE exec bash "$(dirname "$0")/gpu_sm80_knob.sh"
