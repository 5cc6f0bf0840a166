#!/usr/bin/env bash
# Build the hand-written small-M references of bench/gemv_hand.cu (issue #19: the weight-streaming
# floor, hand GEMVs on the CUDA cores and with mma.sync) into folders `cake.load_kernel` reads: one cubin, one launch.json each.
# Runs on the build machine (compile-only CUDA toolchain); bench/gemv_hand.py times them.
#   bench/gemv_hand.sh [OUTDIR]      (default .carry/gemv)
# TC_ONLY=1 leaves out the CUDA-core GEMVs (each folder carries a copy of the cubin).
set -euo pipefail
OUTDIR=${1:-.carry/gemv}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
"$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v ${TC_ONLY:+-DTC_ONLY} \
    -o "$OUTDIR/gemv_hand.cubin" bench/gemv_hand.cu 2> "$OUTDIR/ptxas.txt"
# Spills would make a reference slower than it should be: name them.
grep "bytes spill stores" "$OUTDIR/ptxas.txt" | grep -v " 0 bytes spill stores" || true
python3 - "$OUTDIR" <<'PY'
import json, os, re, shutil, sys
out = sys.argv[1]
names = re.findall(r"Compiling entry function '([a-z_0-9]+)'", open(os.path.join(out, "ptxas.txt")).read())
for sym in names:
    block = 256
    if sym.startswith("read_sum"):
        grid = 132 * 4
    elif sym.startswith("tc_"):
        r16, ks, warps = map(int, re.match(r"tc_m\d+_r(\d+)_k(\d+)_u\d+_e\d_w(\d+)_p\d_o\d+", sym).groups())
        grid, block = ["cdiv", "N", (warps // ks) * 16 * r16], warps * 32
    else:
        rpw, ks = map(int, re.match(r"gemv_m\d+_r(\d+)_k(\d+)_u\d+", sym).groups())
        grid = ["cdiv", "N", (8 // ks) * rpw]
    d = os.path.join(out, sym); os.makedirs(d)
    shutil.copy(os.path.join(out, "gemv_hand.cubin"), os.path.join(d, "k.cubin"))
    meta = {
        "schema": "cake.launch/v0", "kernel": sym, "symbol": sym, "target": "sm_90a",
        "cubin": "k.cubin", "block": [block, 1, 1], "cluster": [1, 1, 1], "dynamic_smem": 0,
        "grid": {"kind": "tiles", "tiles": [grid]},
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
print(len(names), "kernels in", out)
PY
