#!/usr/bin/env bash
# Build the load-unit stream probes of bench/probes/ldg_stream.cu (issue #19) into folders
# `cake.load_kernel` reads (one launch.json per kernel), and the TMA stream and GEMV beside them
# (bench/ldg_probe.py build). Runs on the build machine; bench/ldg_probe.py run times them.
#   bench/ldg_probe.sh OUTDIR CAKE_BINARY
set -euo pipefail
OUTDIR=$1
CAKE_BIN=$2
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR/hand"
"$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v \
    -o "$OUTDIR/hand/ldg_stream.cubin" bench/probes/ldg_stream.cu 2> "$OUTDIR/hand/ptxas.txt"
grep -o "Compiling entry function '[a-z_0-9]*'\|Used [0-9]* registers\|[0-9]* bytes spill stores" \
    "$OUTDIR/hand/ptxas.txt" | paste - - - | sed "s/Compiling entry function //"
python3 bench/ldg_probe.py build --cake "$CAKE_BIN" --dir "$OUTDIR"
