#!/usr/bin/env bash
# Build the clustered GEMMs that bench/sanitize_clusters.py runs under compute-sanitizer: the
# GEMM in clusters of two with B multicast, split-K in clusters, and the tinygemm split in two.
# Each folder's name ends with the M, N and K it runs at. On the build machine:
#   bench/sanitize_clusters.sh [OUTDIR]     (default .carry/sanitize)
set -euo pipefail
OUT=${1:-.carry/sanitize}
CAKE=${CAKE:-target/release/cake}
rm -rf "$OUT"; mkdir -p "$OUT"
"$CAKE" build examples/gemm_cluster_sm90.py --target sm_90a -o "$OUT/gemm_cluster_512_1024_512"
"$CAKE" build examples/gemm_splitk_sm90.py --target sm_90a -o "$OUT/gemm_splitk_256_512_1024"
sed -e 's/^M = .*/M = 8/' -e 's/^NW = .*/NW = 2048/' -e 's/^TIGHT = .*/TIGHT = 1/' -e 's/^BK = .*/BK = 256/' \
    examples/tinygemm_sm90.py > "$OUT/tinygemm_split.py"
"$CAKE" build "$OUT/tinygemm_split.py" --target sm_90a -o "$OUT/tinygemm_split_8_2048_7168"
rm "$OUT/tinygemm_split.py"
