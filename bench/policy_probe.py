#!/usr/bin/env python3
"""The L2 cache-policy descriptors `createpolicy.fractional.L2::<priority>.b64 %p, 1.0` returns on
the GPU, read back, against the constants call 3 of bench/results/2026-12-06-grid/ passed to hinted
`cp.async` copies instead of a createpolicy (EXPECTED): they must be equal, or such copies carry
another policy than the schedule asked for.

    python3 bench/policy_probe.py build DIR     (build machine: nvcc, a hand kernel and its launch.json)
    python3 bench/policy_probe.py run DIR       (GPU host, with the cake wheel: prints and checks)
"""
import json
import os
import subprocess
import sys

PRIORITIES = ["evict_first", "evict_last", "evict_normal", "evict_unchanged"]
SOURCE = "#include <cstdint>\nextern \"C\" __global__ void cake_policy_probe(long long* P, int N) {\n" \
    "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n" + "".join(
        f"  {{ uint64_t p; asm volatile(\"createpolicy.fractional.L2::{q}.b64 %0, 1.0;\" : \"=l\"(p)); P[{i}] = (long long)p; }}\n"
        for i, q in enumerate(PRIORITIES)) + "}\n"


# The descriptors a constant-policy lowering passed (session 45, call 3).
EXPECTED = {"evict_first": 0x12F0000000000000, "evict_last": 0x14F0000000000000}


def main() -> int:
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "build":
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "k.cu"), "w").write(SOURCE)
        nvcc = os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "nvcc")
        subprocess.run([nvcc, "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-O3", "-o",
                        os.path.join(d, "k.cubin"), os.path.join(d, "k.cu")], check=True)
        launch = {"schema": "cake.launch/v0", "kernel": "policy_probe", "symbol": "cake_policy_probe",
                  "target": "sm_90a", "cubin": "k.cubin", "block": [32, 1, 1], "cluster": [1, 1, 1],
                  "dynamic_smem": 0, "grid": {"kind": "tiles", "tiles": [["cdiv", "N", 8]]},
                  "tensors": [{"name": "P", "dtype": "i64", "dims": ["N"], "access": "write"}],
                  "scalars": [], "args": [{"kind": "ptr", "tensor": "P"}, {"kind": "dim", "name": "N"}]}
        json.dump(launch, open(os.path.join(d, "k.launch.json"), "w"), indent=1)
        json.dump(EXPECTED, open(os.path.join(d, "expected.json"), "w"), indent=1)
        return 0
    import torch
    import cake
    k = cake.load_kernel(d)
    P = torch.zeros(8, dtype=torch.int64, device="cuda")
    k(P=P)
    torch.cuda.synchronize()
    got = {q: int(P[i].item()) & (2**64 - 1) for i, q in enumerate(PRIORITIES)}
    expected = json.load(open(os.path.join(d, "expected.json")))
    ok = True
    for q in PRIORITIES:
        mark = "" if q not in expected else (" == lowering" if expected[q] == got[q] else
                                              f" != lowering 0x{expected[q]:016X}")
        ok &= q not in expected or expected[q] == got[q]
        print(f"{q:<16} 0x{got[q]:016X}{mark}")
    print("policy constants:", "MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
