"""Time the hand-written small-M GEMMs of bench/tinygemm_hand.cu (built by bench/tinygemm_hand.sh)
against cuBLAS (torch.matmul) in one process, at issue #19's five weights and M 4-64 (and the
M values of MS). Every kernel is checked against the contract's oracle (f64 product rounded to
bf16, the contract's tolerance) before it is timed; a wrong kernel gets no time. CUPTI kernel
spans, L2 flushed before each call, samples interleaved; median of 50.
Writes $OUT/tinygemm_hand.json and prints a table.
   HAND=.carry/hand MS=4,8,16,32,64 python3 bench/tinygemm_hand.py"""
import json, os, re, statistics, sys
import torch
sys.path.insert(0, "kernels/gemm")
import contract as C
import cake
from cake.harness import timing

HAND = os.environ.get("HAND", ".carry/hand")
OUT = os.environ.get("OUT", "out")
MS = [int(m) for m in os.environ.get("MS", "4,8,16,32,64").split(",")]
WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (7168, 2048), (2048, 7168)]
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)

kernels = {}
for name in sorted(os.listdir(HAND)):
    if os.path.isdir(os.path.join(HAND, name)):
        tokens = 8 * int(re.search(r"_n(\d+)_", name).group(1))
        kernels[name] = (tokens, cake.load_kernel(os.path.join(HAND, name)))

records = []
for N, K in WEIGHTS:
    for M in MS:
        g = torch.Generator(device=dev); g.manual_seed(M * 100003 + N + K)
        ins = C.make_inputs({"M": M, "N": N, "K": K}, "normal", g)
        ref = C.oracle(**ins)["C"].float()
        fit = min(t for t, _ in kernels.values() if t >= M)
        calls, names = [], []
        for name, (tokens, k) in kernels.items():
            if tokens != fit:
                continue
            out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=dev)
            try:
                k(**ins, C=out); torch.cuda.synchronize()
                ok = bool(torch.allclose(out.float(), ref, rtol=0.02, atol=0.02))
            except Exception as e:
                records.append({"M": M, "N": N, "K": K, "kernel": name, "error": f"{type(e).__name__}: {e}"[:300]})
                continue
            if not ok:
                records.append({"M": M, "N": N, "K": K, "kernel": name, "correct": False,
                                "max_err": float((out.float() - ref).abs().nan_to_num(1e9).max())})
                continue
            calls.append(lambda k=k, out=out: k(**ins, C=out)); names.append(name)
        Ct = torch.empty((M, N), dtype=torch.bfloat16, device=dev)
        calls.append(lambda: C.torch_matmul(**ins, C=Ct)); names.append("cublas")
        res = timing.time_cupti_interleaved(torch, calls, 50, flush)
        by = {}
        for name, r in zip(names, res):
            us = statistics.median(r.spans_ms) * 1e3
            by[name] = {"M": M, "N": N, "K": K, "kernel": name, "correct": True, "us": us,
                        "tbs": N * K * 2 / us / 1e6, "spans_ms": r.spans_ms}
        for r in by.values():
            r["vs_cublas"] = by["cublas"]["us"] / r["us"]
        records += by.values()
        best = max((r for r in by.values() if r["kernel"] != "cublas"), key=lambda r: r["vs_cublas"], default=None)
        print(f"{N:6} {K:6} M={M:3} cublas {by['cublas']['us']:6.2f} us  best "
              + (f"{best['kernel']} {best['us']:6.2f} us {best['vs_cublas']:.3f}x" if best else "none"), flush=True)
json.dump(records, open(f"{OUT}/tinygemm_hand.json", "w"), indent=1)
print(f"\n{'N':>6} {'K':>6} {'M':>3} {'kernel':16} {'us':>7} {'TB/s':>5} {'x cuBLAS':>8}")
for r in records:
    if "us" in r:
        print(f"{r['N']:6} {r['K']:6} {r['M']:3} {r['kernel']:16} {r['us']:7.2f} {r['tbs']:5.2f} {r['vs_cublas']:8.3f}")
    else:
        print(f"{r['N']:6} {r['K']:6} {r['M']:3} {r['kernel']:16} {'WRONG' if 'correct' in r else 'ERROR'} {r.get('max_err', r.get('error', ''))}")
