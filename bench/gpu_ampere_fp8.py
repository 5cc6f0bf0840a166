"""FP8 mma.sync on a later GPU: examples/gemm_fp8_sm89.py built for sm_89 with its PTX embedded,
run through the driver's JIT, checked against an f32 product of the same e4m3 inputs and timed.

    python3 bench/gpu_ampere_fp8.py --out results.json     # on the GPU host, cake installed

Inputs are fresh random e4m3 values (normal, then uniform in [-4, 4)); the output is poisoned
with NaN before every call; the error is ‖C − ref‖ / ‖ref‖ with ref = A·Bᵀ in f32 rounded to
bf16 once. Timing: CUDA events, L2 flushed before each sample, median of 30, torch.matmul on the
bf16 upcasts in the same process for scale.
"""
import argparse
import json

import torch

import cake

SHAPES = [(1000, 777, 512), (128, 128, 64), (1, 8, 16), (777, 1000, 144), (4096, 4096, 4096)]


def inputs(m, n, k, dist, gen):
    def one(r, c):
        if dist == "normal":
            x = torch.randn(r, c, device="cuda", generator=gen)
        else:
            x = torch.rand(r, c, device="cuda", generator=gen) * 8 - 4
        return x.to(torch.float8_e4m3fn)
    return one(m, k), one(n, k)


def timed(fn, flush):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(30)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(30)]
    for _ in range(5):
        fn()
    for s, e in zip(start, end):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(start, end))[15]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    mod = cake.compile("examples/gemm_fp8_sm89.py", target="sm_89", embed_ptx=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261129)
    checks, ok = [], True
    for m, n, k in SHAPES:
        for dist in ("normal", "uniform"):
            a, b = inputs(m, n, k, dist, gen)
            ref = (a.float() @ b.float().T).to(torch.bfloat16).float()
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            mod.gemm_fp8(a, b, c)
            torch.cuda.synchronize()
            out = c.float()
            unwritten = int(torch.isnan(out).sum())
            rel = float((out - ref).norm() / ref.norm().clamp_min(1e-30))
            passed = unwritten == 0 and rel < 1e-2
            ok &= passed
            checks.append({"M": m, "N": n, "K": k, "dist": dist, "rel_l2": rel,
                           "unwritten": unwritten, "passed": passed})
            print(f"check {m}x{n}x{k} {dist:<8} rel {rel:.2e} unwritten {unwritten} "
                  f"{'pass' if passed else 'FAIL'}")
    timing = None
    if ok:
        m = n = k = 4096
        a, b = inputs(m, n, k, "normal", gen)
        c = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
        a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
        flush = torch.empty(64 << 20, device="cuda", dtype=torch.int32)
        prepared = mod.gemm_fp8.prepare(a, b, c)
        t_cake = timed(prepared, flush)
        t_torch = timed(lambda: torch.matmul(a16, b16.T, out=c), flush)
        flops = 2 * m * n * k
        timing = {"shape": [m, n, k], "cake_ms": t_cake, "torch_matmul_bf16_ms": t_torch,
                  "cake_tflops": flops / t_cake / 1e9, "torch_tflops": flops / t_torch / 1e9}
        print(f"time 4096^3: cake fp8 (sm_89 PTX, JIT) {t_cake:.4f} ms "
              f"({flops / t_cake / 1e9:.0f} TF/s); torch.matmul bf16 {t_torch:.4f} ms")
    with open(args.out, "w") as fh:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "checks": checks, "passed": ok, "timing": timing}, fh, indent=1)
    print(f"fp8: {sum(c['passed'] for c in checks)}/{len(checks)} checks passed")


if __name__ == "__main__":
    main()
