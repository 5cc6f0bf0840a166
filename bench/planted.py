#!/usr/bin/env python3
"""Plant known faults into a built Cake GEMM, to show the evaluation harness catches them.

    python3 bench/planted.py BUILD_DIR OUT_DIR [--nvcc PATH]

BUILD_DIR holds `gemm.cu` and `gemm.launch.json` from `cake build examples/gemm_sm90.py`.
Each fault is a small textual edit of the generated CUDA, made after verification (so the
verifier cannot see it), compiled for sm_90a into OUT_DIR/<fault>/ with a copy of the launch
metadata, ready for `cake test CONTRACT --kernel OUT_DIR/<fault>/gemm.launch.json`:

- `unwritten`: the epilogue skips the last of its four TMA stores, so columns 192..255 of every
  256-column tile are never written;
- `deadlock`: the `empty` barrier expects one arrival more than its consumers make, so the
  producer waits forever once the pipeline wraps (K > 3 * 64) and the consumers wait on it;
- `illegal_address`: one thread stores through a null pointer at entry (a sticky CUDA error).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys


def plant_unwritten(cu: str) -> str:
    lines = cu.splitlines(keepends=True)
    stores = [i for i, l in enumerate(lines) if "cake_tma_store_2d(&tmap_C" in l]
    if len(stores) < 2:
        raise SystemExit("unwritten: expected several TMA stores of C in the epilogue")
    del lines[stores[-1]]
    return "".join(lines)


def plant_deadlock(cu: str) -> str:
    out, n = re.subn(r"cake_mbar_init\(empty \+ 8 \* s, (\d+)\)",
                     lambda m: f"cake_mbar_init(empty + 8 * s, {int(m.group(1)) + 1})", cu)
    if n != 1:
        raise SystemExit("deadlock: expected one initialisation of the `empty` barrier")
    return out


def plant_illegal_address(cu: str) -> str:
    anchor = "  __syncthreads();\n"
    if anchor not in cu:
        raise SystemExit("illegal_address: no __syncthreads() after barrier initialisation")
    bad = "  if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile int*)nullptr = 1;  // planted\n"
    return cu.replace(anchor, anchor + bad, 1)


FAULTS = {
    "unwritten": plant_unwritten,
    "deadlock": plant_deadlock,
    "illegal_address": plant_illegal_address,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    args = ap.parse_args()
    with open(os.path.join(args.build_dir, "gemm.cu")) as f:
        cu = f.read()
    for name, plant in FAULTS.items():
        d = os.path.join(args.out_dir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "gemm.cu"), "w") as f:
            f.write(plant(cu))
        shutil.copy(os.path.join(args.build_dir, "gemm.launch.json"), d)
        cmd = [args.nvcc, "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-O3", "-std=c++17",
               "-o", os.path.join(d, "gemm.cubin"), os.path.join(d, "gemm.cu")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr)
            return 1
        print(f"{name}: {os.path.join(d, 'gemm.launch.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
