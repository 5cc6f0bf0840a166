#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-regs-gemm/ (issue #19): the hand-written mma.sync small-M
# GEMMs of bench/tinygemm_hand.cu (built into $HAND by bench/tinygemm_hand.sh) against cuBLAS,
# then the shipped tinygemm table through dispatch, in one call.
#   OUT=... CACHE=... HAND=... bench/regs_gemm_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
HAND=${HAND:-.carry/hand} timeout 300 python3 bench/tinygemm_hand.py > "$OUT/hand.log" 2>&1
echo "== hand: exit $? at $(( $(date +%s) - SESSION_START )) s"
grep -v "^ *[0-9]* *[0-9]* *[0-9]* tg_\|cublas" "$OUT/hand.log" | head -40
[ "${SHIPPED:-1}" = 1 ] && part shipped 90 kernels/tinygemm/tinygemm.family.toml --shard bench
true
