#!/usr/bin/env bash
# GPU call for bench/results/2026-12-05-rings/ (issue #19, session 41): the two-ring small-M GEMM
# (examples/tinygemm_rings_sm90.py) against the shipped table's one-ring routes, every route at
# the contract's shapes with M >= 16, cuBLAS in the same run.
#
#   OUT=... CACHE=... bench/rings_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
# ONLY_H200=1: record the card and stop unless it is an H200.
if [ "${ONLY_H200:-0}" = 1 ] && ! grep -q H200 "$OUT/gpu.txt"; then echo "not an H200: nothing run"; exit 0; fi
D=bench/results/2026-12-05-rings
# M 64-128 first (where the hypothesis predicts a gain), then M 16-32; PARTS=m64 runs the first
# alone (a call with less device time left).
for p in ${PARTS:-m64 m16}; do
    case $p in
        m64) part m64 330 $D/rings_m64.family.toml --shard bench --every-route ;;
        m16) part m16 240 $D/rings_m16.family.toml --shard bench --every-route ;;
    esac
done
for r in m64 m16; do [ -f "$OUT/$r/report.txt" ] && { echo "## $r"; head -24 "$OUT/$r/report.txt"; }; done
true
