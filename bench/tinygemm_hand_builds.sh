#!/usr/bin/env bash
# Build what the shipped tinygemm table (kernels/tinygemm/tinygemm.family.toml) runs at each of
# issue #19's shapes, into folders bench/gemv_hand.py times beside the hand kernels and cuBLAS:
# cake_k<K>_m<M>_n<N> (the swapped schedule, with the table's constants for that shape) and
# cake_k<K>_m1_n<N> (the GEMV where the table routes M = 1 to it).
#   bench/tinygemm_hand_builds.sh [OUTDIR]     (default .carry/cakegemv; needs target/release/cake)
set -euo pipefail
OUTDIR=${1:-.carry/cakegemv}
CAKE=${CAKE:-target/release/cake}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for nk in 4096x4096 14336x4096 4096x14336 7168x2048 2048x7168; do
    N=${nk%x*}; K=${nk#*x}
    for M in ${MS:-1 2 4 8 16 32}; do
        if [ "$M" = 1 ] && [ "$K" != 14336 ]; then
            sed -e "s/^K = 4096 /K = $K /" examples/gemv_sm90.py > "$tmp/k.py"
        else
            sed -e "s/^M = 8 /M = $M /" -e "s/^NW = 2048 /NW = $N /" examples/tinygemm_sm90.py > "$tmp/k.py"
            if [ "$N" = 7168 ] && [ "$K" = 2048 ] && [ "$M" -ge 2 ] && [ "$M" -le 16 ]; then
                sed -i "s/^PER_SM = 1$/PER_SM = 2/" "$tmp/k.py"
            fi
            if [ "$N" = 4096 ] && [ "$K" = 14336 ] && [ "$M" -ge 32 ]; then
                sed -i "s/^SPLIT_UPTO = 2048 /SPLIT_UPTO = 4224 /" "$tmp/k.py"
            fi
        fi
        "$CAKE" build --target sm_90a -o "$OUTDIR/cake_k${K}_m${M}_n${N}" "$tmp/k.py" > /dev/null
    done
done
ls "$OUTDIR" | wc -l
