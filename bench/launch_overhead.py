#!/usr/bin/env python3
"""Host cost of launching a Cake kernel from PyTorch, per call, against torch.matmul's.

    python3 bench/launch_overhead.py --out launch_overhead.json [--calls 2000]

Times the host side only (wall clock around N back-to-back calls on a tiny GEMM, whose GPU time
is far below the host cost, then one synchronize): `mod.gemm(A, B, C)` (bind, validate, encode
three tensor maps, launch), a prepared launch (`mod.gemm.prepare(A, B, C)` called repeatedly:
launch only), and `torch.matmul(A, B.T, out=C)`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

import cake

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def per_call_us(fn, calls: int, repeats: int = 5) -> dict:
    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        runs.append((t1 - t0) / calls * 1e6)
    return {"median_us": statistics.median(runs), "min_us": min(runs), "runs_us": runs}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    mod = cake.compile(os.path.join(ROOT, "examples", "gemm_sm90.py"))
    M, N, K = 128, 256, 64
    A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    prepared = mod.gemm.prepare(A, B, C)
    Bt = B.T
    k = mod.gemm
    tensors, scalars, _ = k._describe((A, B, C), {})
    handle = int(torch.cuda.current_stream().cuda_stream)
    result = {
        "shape": [M, N, K],
        "calls": args.calls,
        "cake_call": per_call_us(lambda: mod.gemm(A, B, C), args.calls),
        "cake_prepared": per_call_us(prepared, args.calls),
        "torch_matmul": per_call_us(lambda: torch.matmul(A, Bt, out=C), args.calls),
        # Where an unprepared call's time goes (each part alone, same loop):
        "part_describe_tensors": per_call_us(lambda: k._describe((A, B, C), {}), args.calls),
        "part_current_stream": per_call_us(lambda: torch.cuda.current_stream(0).cuda_stream, args.calls),
        "part_native_bind": per_call_us(lambda: k._k.bind(tensors, scalars, num_sms=132), args.calls),
        "part_native_prepare": per_call_us(lambda: k._k.prepare(tensors, scalars, handle, 0), args.calls),
        "part_native_launch": per_call_us(lambda: k._k.launch(tensors, scalars, handle, 0), args.calls),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for name, r in result.items():
        if isinstance(r, dict):
            print(f"{name:>22}: {r['median_us']:7.2f} us per call (min {r['min_us']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
