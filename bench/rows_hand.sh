#!/usr/bin/env bash
# Build the hand-written reference kernels of bench/rows_hand.cu (the row-kernel ceiling, issue
# #20) into folders `cake.load_kernel` reads: one cubin, one launch.json per kernel and grid.
# Runs on the build machine (compile-only CUDA toolchain); bench/rows_hand.py times them.
#   bench/rows_hand.sh [OUTDIR]      (default .carry/hand)
set -euo pipefail
OUTDIR=${1:-.carry/hand}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
"$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v \
    -o "$OUTDIR/rows_hand.cubin" bench/rows_hand.cu 2> "$OUTDIR/ptxas.txt"
grep -o "Compiling entry function '[a-z_0-9]*'\|Used [0-9]* registers\|[0-9]* bytes spill stores" "$OUTDIR/ptxas.txt" \
    | paste - - - | sed "s/Compiling entry function //"
python3 - "$OUTDIR" <<'PY'
import json, sys, shutil, os
out = sys.argv[1]
SMS = 132
# name: (symbol, block, dynamic smem, grid tiles)
variants = {
    "copy_u1": ("copy_u1", 256, 0, SMS * 8),
    "copy_u4": ("copy_u4", 256, 0, SMS * 8),
    "copy_bulk8x16k": ("copy_bulk8x16k", 32, 8 * 16384, SMS),
    "copy_bulk4x16k": ("copy_bulk4x16k", 32, 4 * 16384, SMS * 2),
    "rms_packed1": ("rms_packed1", 128, 0, ["cdiv", "R", 1]),
    "rms_packed2": ("rms_packed2", 128, 0, ["cdiv", "R", 2]),
    "rms_packed4": ("rms_packed4", 128, 0, ["cdiv", "R", 4]),
    "rms_prefetch_g6": ("rms_prefetch", 128, 0, SMS * 6),
    "rms_prefetch_g8": ("rms_prefetch", 128, 0, SMS * 8),
    "rms_prefetch_g12": ("rms_prefetch", 128, 0, SMS * 12),
    "rms_bulk4_g4": ("rms_bulk4", 160, 4 * 8192, SMS * 4),
    "rms_bulk4_g6": ("rms_bulk4", 160, 4 * 8192, SMS * 6),
    "rms_bulk8_g3": ("rms_bulk8", 160, 8 * 8192, SMS * 3),
    "copy_fine1": ("copy_fine1", 128, 0, ["mul", "R", 4]),
    "copy_fine2": ("copy_fine2", 128, 0, ["mul", "R", 2]),
    "copy_fine4": ("copy_fine4", 128, 0, "R"),
    "copy_fine8": ("copy_fine8", 128, 0, ["cdiv", "R", 2]),
    "rms_cta64": ("rms_cta64", 64, 0, "R"),
    "rms_cta256": ("rms_cta256", 256, 0, "R"),
    "rms_cta512": ("rms_cta512", 512, 0, "R"),
    "rms_packed2_o8": ("rms_packed2_o8", 128, 0, ["cdiv", "R", 2]),
    "rms_packed2_cs": ("rms_packed2_cs", 128, 0, ["cdiv", "R", 2]),
    "rms_packed2_ef": ("rms_packed2_ef", 128, 0, ["cdiv", "R", 2]),
    "rms_packed2_efload": ("rms_packed2_efload", 128, 0, ["cdiv", "R", 2]),
    "copy_fine1_cs": ("copy_fine1_cs", 128, 0, ["mul", "R", 4]),
    "copy_fine1_ef": ("copy_fine1_ef", 128, 0, ["mul", "R", 4]),
    "copy_bulk_dyn8x16k": ("copy_bulk_dyn8x16k", 32, 8 * 16384, SMS),
    "copy_bulk_dyn4x16k": ("copy_bulk_dyn4x16k", 32, 4 * 16384, SMS * 2),
    "copy_bulk_dyn8x8k": ("copy_bulk_dyn8x8k", 32, 8 * 8192, SMS * 3),
    "rms_bulk_dyn4_g4": ("rms_bulk_dyn4", 160, 4 * 8192, SMS * 4),
    "rms_bulk_dyn4_g6": ("rms_bulk_dyn4", 160, 4 * 8192, SMS * 6),
    "rms_bulk_dyn8_g3": ("rms_bulk_dyn8", 160, 8 * 8192, SMS * 3),
    "rms_reg_dyn_g6": ("rms_reg_dyn", 128, 0, SMS * 6),
    "rms_reg_dyn_g8": ("rms_reg_dyn", 128, 0, SMS * 8),
    "rms_smem1": ("rms_smem1", 128, 8192, "R"),
    "rms_smem1_bs": ("rms_smem1_bs", 128, 8192, "R"),
    "rms_smem2": ("rms_smem2", 128, 2 * 8192, ["cdiv", "R", 2]),
    "rms_smem1_t64": ("rms_smem1_t64", 64, 8192, "R"),
    "rms_smem2_t256": ("rms_smem2_t256", 256, 2 * 8192, ["cdiv", "R", 2]),
}
ONLY = os.environ.get("ONLY")
if ONLY:
    variants = {k: v for k, v in variants.items() if k in ONLY.split(",")}
for name, (sym, block, smem, grid) in variants.items():
    d = os.path.join(out, name); os.makedirs(d)
    shutil.copy(os.path.join(out, "rows_hand.cubin"), os.path.join(d, "k.cubin"))
    meta = {
        "schema": "cake.launch/v0", "kernel": name, "symbol": sym, "target": "sm_90a",
        "cubin": "k.cubin", "block": [block, 1, 1], "cluster": [1, 1, 1], "dynamic_smem": smem,
        "grid": {"kind": "tiles", "tiles": [grid]},
        "tensors": [
            {"name": "X", "dtype": "bf16", "dims": ["R", 4096], "access": "read"},
            {"name": "W", "dtype": "bf16", "dims": [4096], "access": "read"},
            {"name": "Y", "dtype": "bf16", "dims": ["R", 4096], "access": "write"}],
        "scalars": [{"name": "eps", "dtype": "f32"}],
        "args": [{"kind": "ptr", "tensor": "X"}, {"kind": "ptr", "tensor": "W"},
                 {"kind": "ptr", "tensor": "Y"}, {"kind": "dim", "name": "R"},
                 {"kind": "scalar", "name": "eps"}],
    }
    json.dump(meta, open(os.path.join(d, "k.launch.json"), "w"), indent=1)
PY
