#!/usr/bin/env bash
# Build bench/span_probe.cu's empty kernel into launch folders (shared memory × block × grid)
# and the GEMM schedules at their shipped settings, for bench/span_probe.py.
#   bench/span_probe.sh [OUTDIR]      (default .carry/span)
set -euo pipefail
OUTDIR=${1:-.carry/span}
CAKE=${CAKE:-target/release/cake}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
"$CUDA_HOME/bin/nvcc" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -o "$OUTDIR/span.cubin" bench/span_probe.cu
python3 - "$OUTDIR" <<'PY'
import json, os, shutil, sys
out = sys.argv[1]
for smem in (0, 49152, 102400, 163840, 218112):
    for block in (128, 384):
        for grid in (1, 132):
            d = os.path.join(out, f"empty_s{smem // 1024}k_b{block}_g{grid}"); os.makedirs(d)
            shutil.copy(os.path.join(out, "span.cubin"), os.path.join(d, "k.cubin"))
            json.dump({"schema": "cake.launch/v0", "kernel": "empty", "symbol": "empty_k",
                       "target": "sm_90a", "cubin": "k.cubin", "block": [block, 1, 1],
                       "cluster": [1, 1, 1], "dynamic_smem": smem,
                       "grid": {"kind": "tiles", "tiles": [grid]},
                       "tensors": [{"name": "X", "dtype": "bf16", "dims": ["R", 8], "access": "read"},
                                   {"name": "W", "dtype": "bf16", "dims": [8], "access": "read"},
                                   {"name": "Y", "dtype": "bf16", "dims": ["R", 8], "access": "write"}],
                       "scalars": [{"name": "eps", "dtype": "f32"}],
                       "args": [{"kind": "ptr", "tensor": "X"}, {"kind": "ptr", "tensor": "W"},
                                {"kind": "ptr", "tensor": "Y"}, {"kind": "dim", "name": "R"},
                                {"kind": "scalar", "name": "eps"}]},
                      open(os.path.join(d, "k.launch.json"), "w"), indent=1)
PY
"$CAKE" build examples/gemm_sm90.py --target sm_90a -o "$OUTDIR/gemm" > /dev/null
sed -e 's/^STAGES = 3 .*/STAGES = 2/' examples/gemm_sm90.py > "$OUTDIR/gemm_s2.py"
"$CAKE" build "$OUTDIR/gemm_s2.py" --target sm_90a -o "$OUTDIR/gemm_s2" > /dev/null
rm "$OUTDIR/gemm_s2.py"
