#!/usr/bin/env python3
"""Check and time a Cake k-means assign kernel against flash-kmeans on the GPU.

The kernel takes (X (B,N,D) bf16, Cen (B,K,D) bf16, XSQ (B,N) f32, CSQ (B,K) f32, IDS (B,N) i32)
and writes nearest-centroid ids. Correctness uses the argmin-with-ties policy: an id is accepted
if its distance (fp32, from the same bf16 inputs) is within tolerance of the row's minimum.
Inputs are fresh per check (seed recorded) from several distributions, IDS is poisoned before
launch, inputs are verified unmodified, and each check runs twice. Timing: L2 flushed before
every sample, CUDA events around the call, warm-up, median of N; flash-kmeans
(`euclid_assign_triton`, given the same norms) timed the same way in the same process.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from cake import LaunchError, load_kernel  # noqa: E402,F401

WARMUP = 5


def make_inputs(B, N, K, D, dist, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dist == "normal":
        x = torch.randn(B, N, D, device="cuda", generator=g)
        c = torch.randn(B, K, D, device="cuda", generator=g)
    elif dist == "clustered":
        c = torch.randn(B, K, D, device="cuda", generator=g) * 3
        pick = torch.randint(0, K, (B, N), device="cuda", generator=g)
        x = torch.gather(c, 1, pick[..., None].expand(B, N, D)) + 0.1 * torch.randn(B, N, D, device="cuda", generator=g)
    elif dist == "ties":
        # Every centroid appears twice: the lower index must win (or an equally near one).
        half = torch.randn(B, (K + 1) // 2, D, device="cuda", generator=g)
        c = torch.cat([half, half], dim=1)[:, :K]
        x = torch.randn(B, N, D, device="cuda", generator=g)
    else:
        raise ValueError(dist)
    x, c = x.to(torch.bfloat16).contiguous(), c.to(torch.bfloat16).contiguous()
    x_sq = (x.float() ** 2).sum(-1).contiguous()
    c_sq = (c.float() ** 2).sum(-1).contiguous()
    return x, c, x_sq, c_sq


def check_ids(x, c, x_sq, c_sq, ids) -> dict:
    """Argmin-with-ties: accept ids whose distance is within tolerance of the row minimum."""
    B, N, _ = x.shape
    K = c.shape[1]
    worst, bad, unwritten = 0.0, 0, int((ids < 0).sum().item()) + int((ids >= K).sum().item())
    for b in range(B):
        for n0 in range(0, N, 16384):
            xb = x[b, n0:n0 + 16384].float()
            d = x_sq[b, n0:n0 + 16384, None] + c_sq[b][None, :] - 2.0 * (xb @ c[b].float().T)
            dmin = d.min(dim=1).values
            idx = ids[b, n0:n0 + 16384].long().clamp(0, K - 1)
            got = d.gather(1, idx[:, None])[:, 0]
            gap = got - dmin
            tol = 1e-3 * torch.clamp(dmin.abs(), min=1.0)
            bad += int((gap > tol).sum().item())
            worst = max(worst, float((gap / torch.clamp(dmin.abs(), min=1.0)).max().item()))
    return {"wrong": bad, "unwritten_or_out_of_range": unwritten, "worst_rel_gap": worst, "pass": bad == 0 and unwritten == 0}


def time_fn(fn, samples, flush):
    stream = torch.cuda.current_stream()
    out = []
    for i in range(WARMUP + samples):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(stream)
        fn()
        e.record(stream)
        torch.cuda.synchronize()
        if i >= WARMUP:
            out.append(s.elapsed_time(e))
    out.sort()
    q = lambda p: out[min(len(out) - 1, int(p * len(out)))]  # noqa: E731
    return {"median_ms": q(0.5), "min_ms": out[0], "max_ms": out[-1], "iqr_ms": q(0.75) - q(0.25), "samples": len(out)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", default="2x1000x1000x128,2x4096x4096x128,1x65536x1024x128,3x777x130x128")
    ap.add_argument("--bench", default="32x65536x1024x128")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()
    kern = load_kernel(args.build)
    try:
        from flash_kmeans.assign_euclid_triton import euclid_assign_triton
    except Exception as e:  # noqa: BLE001
        euclid_assign_triton = None
        print("flash-kmeans unavailable:", e)
    parse = lambda s: [tuple(int(v) for v in t.split("x")) for t in s.split(",") if t]  # noqa: E731
    result = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(),
        "driver_version": subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip(),
        "torch_version": torch.__version__,
        "launch": kern.meta,
        "seed": args.seed,
        "checks": [],
        "bench": [],
    }
    ok = True
    seed = args.seed
    for (B, N, K, D) in parse(args.check) + parse(args.bench):
        for dist in ("normal", "clustered", "ties"):
            for rep in range(2):
                seed += 1
                x, c, x_sq, c_sq = make_inputs(B, N, K, D, dist, seed)
                before = (x.float().sum().item(), c.float().sum().item(), x_sq.sum().item(), c_sq.sum().item())
                ids = torch.full((B, N), -1, dtype=torch.int32, device="cuda")
                kern(x, c, x_sq, c_sq, ids)
                torch.cuda.synchronize()
                after = (x.float().sum().item(), c.float().sum().item(), x_sq.sum().item(), c_sq.sum().item())
                r = check_ids(x, c, x_sq, c_sq, ids)
                r.update({"shape": [B, N, K, D], "dist": dist, "rep": rep, "seed": seed, "inputs_unmodified": before == after})
                r["pass"] = r["pass"] and r["inputs_unmodified"]
                ok &= r["pass"]
                result["checks"].append(r)
                print(f"check {B}x{N}x{K}x{D} {dist:9s} rep{rep}: pass={r['pass']} wrong={r['wrong']} worst_gap={r['worst_rel_gap']:.2e}", flush=True)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    for (B, N, K, D) in parse(args.bench):
        if not ok:
            print("correctness failed: no timing")
            break
        x, c, x_sq, c_sq = make_inputs(B, N, K, D, "normal", args.seed)
        ids = torch.empty((B, N), dtype=torch.int32, device="cuda")
        row = {"shape": [B, N, K, D], "flops": 2.0 * B * N * K * D}
        row["cake"] = time_fn(lambda: kern(x, c, x_sq, c_sq, ids), args.samples, flush)
        if euclid_assign_triton is not None:
            out = torch.empty((B, N), dtype=torch.int32, device="cuda")
            fk = lambda: euclid_assign_triton(x, c, x_sq, out, c_sq)  # noqa: E731
            fk()
            torch.cuda.synchronize()
            row["flash_kmeans_check"] = check_ids(x, c, x_sq, c_sq, out)
            row["flash_kmeans"] = time_fn(fk, args.samples, flush)
            row["speedup"] = row["flash_kmeans"]["median_ms"] / row["cake"]["median_ms"]
        row["cake_tflops"] = row["flops"] / row["cake"]["median_ms"] / 1e9
        result["bench"].append(row)
        fkms = row.get("flash_kmeans", {}).get("median_ms", float("nan"))
        print(f"bench {B}x{N}x{K}x{D}: cake {row['cake']['median_ms']:.4f} ms ({row['cake_tflops']:.0f} TF-equiv)  flash-kmeans {fkms:.4f} ms  speedup {row.get('speedup', float('nan')):.3f}x", flush=True)
    result["all_pass"] = ok
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
