#!/usr/bin/env python3
"""GPU smoke test and benchmark for a Cake GEMM: C = A @ B^T, all bf16 row-major.

    python3 bench/gemm_smoke.py --build DIR --out results.json \
        [--shapes 4096x7168x4096,8192x8192x8192] [--samples 30] [--check-only]

Shapes are MxNxK: A is (M, K), B is (N, K), C is (M, N). The kernel's launch.json must
declare tensors A, B, C in that order (scalars, if any, are not supported here).

For each shape: two correctness checks with fresh random inputs (C poisoned with NaN,
inputs checked unmodified), then, if both pass and timing is on, CUDA-event timing of the
Cake kernel and of torch.matmul(A, B.T) in the same process, each sample after an L2
flush. Failures in one shape are recorded and the next shape runs. Exit status 1 if any
shape failed its correctness check or raised.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import statistics
import subprocess
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

from cake import LaunchError, load_kernel  # noqa: E402

DEFAULT_SHAPES = "4096x7168x4096,8192x8192x8192,4096x4096x4096"
H200_PEAK_FLOPS = 990e12  # dense bf16 spec peak: a faster time is a measurement bug
REL_TOL = 1e-2
FLUSH_BYTES = 256 * 1024 * 1024  # > 4x the 60 MB L2
WARMUP = 5


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    shapes = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise SystemExit(f"bad shape {item!r}: expected MxNxK with positive ints, e.g. 4096x7168x4096")
        shapes.append(tuple(int(p) for p in parts))
    if not shapes:
        raise SystemExit("--shapes: no shapes given")
    return shapes


def find_launch_json(build: str, kernel: str | None) -> str:
    if os.path.isfile(build):
        return build
    if kernel:
        return os.path.join(build, f"{kernel}.launch.json")
    found = sorted(f for f in os.listdir(build) if f.endswith(".launch.json"))
    if len(found) == 1:
        return os.path.join(build, found[0])
    if "gemm.launch.json" in found:
        return os.path.join(build, "gemm.launch.json")
    raise SystemExit(f"{build}: expected one *.launch.json (or pass --kernel), found {found or 'none'}")


def driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def make_inputs(M: int, N: int, K: int, seed: int):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    # Entries ~ N(0, 1/sqrt(K)) so each dot product of K terms has variance ~1: C stays O(1).
    scale = K ** -0.25
    A = (torch.randn(M, K, device="cuda", generator=g) * scale).to(torch.bfloat16)
    B = (torch.randn(N, K, device="cuda", generator=g) * scale).to(torch.bfloat16)
    return A, B


def check_once(kern, M: int, N: int, K: int, seed: int) -> dict:
    A, B = make_inputs(M, N, K, seed)
    A0, B0 = A.clone(), B.clone()
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)  # poison
    kern(A, B, C)
    torch.cuda.synchronize()
    ref = A.float() @ B.float().T  # fp32 reference (TF32 off, see main)
    diff = C.float() - ref
    ref_norm = ref.norm().item()
    rel = diff.norm().item() / ref_norm if ref_norm > 0 else diff.norm().item()
    nan_count = int(torch.isnan(C).sum().item())
    inf_count = int(torch.isinf(C).sum().item())
    inputs_ok = bool(torch.equal(A, A0) and torch.equal(B, B0))
    ok = math.isfinite(rel) and rel < REL_TOL and nan_count == 0 and inf_count == 0 and inputs_ok
    return {
        "seed": seed,
        "rel_err": rel,
        "max_abs_err": float(diff.abs().max().item()) if diff.numel() else 0.0,
        "nan_count": nan_count,
        "inf_count": inf_count,
        "inputs_unmodified": inputs_ok,
        "grid": list(kern.last_grid) if kern.last_grid else None,
        "pass": ok,
    }


def time_fn(fn, samples: int, flush: torch.Tensor) -> list[float]:
    """Milliseconds per call: CUDA events around just fn, L2 flushed before each sample."""
    stream = torch.cuda.current_stream()
    out = []
    for i in range(WARMUP + samples):
        flush.zero_()  # evict A/B/C from L2; also keeps the GPU busy while the host enqueues fn
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        fn()
        end.record(stream)
        torch.cuda.synchronize()
        if i >= WARMUP:
            out.append(start.elapsed_time(end))
    return out


def summarize(ms: list[float], flops: float) -> dict:
    q = statistics.quantiles(ms, n=4, method="inclusive") if len(ms) > 1 else [ms[0]] * 3
    med = statistics.median(ms)
    floor_ms = flops / H200_PEAK_FLOPS * 1e3
    below = sum(1 for t in ms if t < floor_ms)
    return {
        "samples_ms": ms,
        "median_ms": med,
        "min_ms": min(ms),
        "max_ms": max(ms),
        "iqr_ms": q[2] - q[0],
        "tflops": flops / (med * 1e-3) / 1e12,
        "floor_ms": floor_ms,
        "suspicious": below > 0,
        "samples_below_floor": below,
    }


def run_shape(kern, M: int, N: int, K: int, args, flush, seed_base: int) -> dict:
    res: dict = {"shape": [M, N, K], "flops": 2.0 * M * N * K}
    res["checks"] = [check_once(kern, M, N, K, seed_base + j) for j in range(2)]
    res["pass"] = all(c["pass"] for c in res["checks"])
    res["rel_err"] = max(c["rel_err"] for c in res["checks"])
    if not res["pass"] or args.check_only:
        return res

    A, B = make_inputs(M, N, K, seed_base + 2)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    # Bind, validate and encode the tensor maps once, so that only the launch call itself
    # sits between the events (host-side binding would otherwise inflate small shapes).
    launch = kern.prepare(A, B, C)
    res["cake"] = summarize(time_fn(launch, args.samples, flush), res["flops"])

    Cb = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    Bt = B.T
    res["cublas"] = summarize(time_fn(lambda: torch.matmul(A, Bt, out=Cb), args.samples, flush), res["flops"])
    res["speedup_vs_cublas"] = res["cublas"]["median_ms"] / res["cake"]["median_ms"]

    # The output of the repeated launches must still be right (catches races that only
    # show under back-to-back runs) and agree with cuBLAS.
    torch.cuda.synchronize()
    ref = A.float() @ B.float().T
    res["post_timing_rel_err"] = ((C.float() - ref).norm() / ref.norm()).item()
    res["post_timing_pass"] = bool(math.isfinite(res["post_timing_rel_err"])
                                   and res["post_timing_rel_err"] < REL_TOL)
    return res


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def print_table(results: list[dict]) -> None:
    head = f"{'shape (MxNxK)':>20} {'cake ms':>9} {'TF/s':>7} {'cuBLAS ms':>10} {'TF/s':>7} {'ratio':>6} {'rel err':>9} {'pass':>5}"
    print(head)
    print("-" * len(head))
    for r in results:
        shape = "x".join(map(str, r["shape"]))
        cake, cub = r.get("cake") or {}, r.get("cublas") or {}
        status = "ERR" if "error" in r else ("yes" if r.get("pass") else "NO")
        flag = " !" if cake.get("suspicious") else ""
        print(f"{shape:>20} {fmt(cake.get('median_ms'), '9.4f')} {fmt(cake.get('tflops'), '7.1f')} "
              f"{fmt(cub.get('median_ms'), '10.4f')} {fmt(cub.get('tflops'), '7.1f')} "
              f"{fmt(r.get('speedup_vs_cublas'), '6.3f')} {fmt(r.get('rel_err'), '9.2e')} {status:>5}{flag}")
        if "error" in r:
            print(f"{'':>20} error: {r['error'].strip().splitlines()[-1]}")
    if any((r.get("cake") or {}).get("suspicious") for r in results):
        print("! = some samples faster than the 990 TFLOP/s floor: the timing is suspect")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="directory from `cake build -o DIR` (or a launch.json)")
    ap.add_argument("--kernel", help="kernel name when DIR holds several launch.json files")
    ap.add_argument("--out", required=True, help="where to write the JSON results")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"comma-separated MxNxK (default {DEFAULT_SHAPES})")
    ap.add_argument("--samples", type=int, default=30, help="timed samples per kernel (default 30)")
    ap.add_argument("--seed", type=int, default=1234, help="base RNG seed (default 1234)")
    ap.add_argument("--check-only", action="store_true", help="correctness only, no timing")
    args = ap.parse_args()
    if args.samples < 1:
        raise SystemExit("--samples must be >= 1")
    shapes = parse_shapes(args.shapes)

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to torch")
    # Exact fp32 reference: keep TF32 out of the reference matmul.
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"  # torch >= 2.9 spelling
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.allow_tf32 = False

    path = find_launch_json(args.build, args.kernel)
    kern = load_kernel(path)
    names = [t["name"] for t in kern.meta.get("tensors", [])]
    if names != ["A", "B", "C"] or kern.meta.get("scalars"):
        raise SystemExit(f"{path}: expected tensors [A, B, C] and no scalars, got tensors {names} "
                         f"and scalars {[s.get('name') for s in kern.meta.get('scalars', [])]}")

    report = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(),
        "sm_count": torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count,
        "driver_version": driver_version(),
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "launch_json": os.path.abspath(path),
        "meta": kern.meta,
        "args": {"shapes": args.shapes, "samples": args.samples, "warmup": WARMUP, "seed": args.seed,
                 "check_only": args.check_only, "rel_tol": REL_TOL, "flush_bytes": FLUSH_BYTES,
                 "peak_floor_flops": H200_PEAK_FLOPS},
        "results": [],
    }
    try:
        report["func_attributes"] = kern.func_attributes()
    except LaunchError as e:
        report["func_attributes_error"] = str(e)

    flush = None if args.check_only else torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    failed = False
    for i, (M, N, K) in enumerate(shapes):
        seed_base = args.seed + 10 * i
        try:
            r = run_shape(kern, M, N, K, args, flush, seed_base)
        except Exception:  # record and move on to the next shape
            r = {"shape": [M, N, K], "pass": False, "error": traceback.format_exc()}
            try:
                torch.cuda.synchronize()
            except Exception as e:  # a sticky CUDA error poisons the context for later shapes
                r["sync_error"] = repr(e)
        failed |= not r.get("pass", False)
        report["results"].append(r)
        print(f"[{i + 1}/{len(shapes)}] {M}x{N}x{K}: "
              + ("ERROR" if "error" in r else f"pass={r['pass']} rel={r['rel_err']:.2e}"), flush=True)
        # Write after every shape so a crash still leaves the results so far.
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)

    report["all_pass"] = not failed
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    print()
    print(f"{report['gpu']}, driver {report['driver_version']}, torch {report['torch_version']}, "
          f"kernel {kern.meta.get('kernel')} ({os.path.basename(path)})")
    print_table(report["results"])
    print(f"\nwrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
