#!/usr/bin/env bash
# Build the hand-written small-M GEMMs of bench/tinygemm_hand.cu (issue #19: mma.sync fed straight
# from global loads) into folders `cake.load_kernel` reads: one cubin, one launch.json per kernel.
# Runs on the build machine (compile-only CUDA toolchain); bench/tinygemm_hand.py times them.
#   bench/tinygemm_hand.sh [OUTDIR]      (default .carry/hand)
set -euo pipefail
OUTDIR=${1:-.carry/hand}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
"$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v \
    -o "$OUTDIR/tinygemm_hand.cubin" bench/tinygemm_hand.cu 2> "$OUTDIR/ptxas.txt"
grep -o "Compiling entry function '[a-z_0-9]*'\|Used [0-9]* registers\|[0-9]* bytes spill stores" "$OUTDIR/ptxas.txt" \
    | paste - - - | sed "s/Compiling entry function //"
python3 - "$OUTDIR" <<'PY'
import json, os, re, shutil, sys
out = sys.argv[1]
ptxas = open(os.path.join(out, "ptxas.txt")).read()
for sym in sorted(set(re.findall(r"Compiling entry function '(tg_r\d+_w\d+_n\d+_u\d+)'", ptxas))):
    rt, wk, nt, u = map(int, re.findall(r"\d+", sym))
    d = os.path.join(out, sym); os.makedirs(d)
    shutil.copy(os.path.join(out, "tinygemm_hand.cubin"), os.path.join(d, "k.cubin"))
    meta = {
        "schema": "cake.launch/v0", "kernel": sym, "symbol": sym, "target": "sm_90a",
        "cubin": "k.cubin", "block": [32 * wk, 1, 1], "cluster": [1, 1, 1],
        "dynamic_smem": wk * rt * nt * 4 * 32 * 4,
        "grid": {"kind": "tiles", "tiles": [["cdiv", "N", 16 * rt]]},
        "tensors": [
            {"name": "A", "dtype": "bf16", "dims": ["M", "K"], "access": "read"},
            {"name": "B", "dtype": "bf16", "dims": ["N", "K"], "access": "read"},
            {"name": "C", "dtype": "bf16", "dims": ["M", "N"], "access": "write"}],
        "scalars": [],
        "args": [{"kind": "ptr", "tensor": "A"}, {"kind": "ptr", "tensor": "B"},
                 {"kind": "ptr", "tensor": "C"}, {"kind": "dim", "name": "M"},
                 {"kind": "dim", "name": "N"}, {"kind": "dim", "name": "K"}],
    }
    json.dump(meta, open(os.path.join(d, "k.launch.json"), "w"), indent=1)
PY
