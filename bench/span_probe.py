"""Decompose a small kernel's CUPTI span (see bench/span_probe.cu): empty kernels by dynamic
shared memory, block and grid, and the GEMM builds under $SPAN/gemm* (the schedule at 3 and 2
stages; bench/gemm_parts.sh adds copies with parts of the kernel removed) and cuBLAS at small
shapes ($SHAPES), each timed with an L2 flush (a kernel without shared memory) before every call, as the
contracts time, and back to back without it. CUPTI medians of 30; writes $OUT/span_probe.json.
   SPAN=.carry/span python3 bench/span_probe.py"""
import json, os, statistics
import torch
import cake
from cake.harness import timing

SPAN = os.environ.get("SPAN", ".carry/span")
OUT = os.environ.get("OUT", "out")
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)


def spans(calls):
    out = {}
    for mode, fl in (("flush", flush), ("back_to_back", None)):
        res = timing.time_cupti_interleaved(torch, calls, 30, fl)
        out[mode] = [statistics.median(r.spans_ms) * 1e3 for r in res]
    return out


records = []
X = torch.zeros(1, 8, dtype=torch.bfloat16, device=dev); Y = torch.zeros_like(X); W = torch.zeros(8, dtype=torch.bfloat16, device=dev)
names = sorted(n for n in os.listdir(SPAN) if n.startswith("empty_"))
ks = [cake.load_kernel(os.path.join(SPAN, n)) for n in names]
calls = [lambda k=k: k(X=X, W=W, Y=Y, eps=0.0) for k in ks]
s = spans(calls)
for i, n in enumerate(names):
    records.append({"kernel": n, "flush_us": s["flush"][i], "back_to_back_us": s["back_to_back"][i]})

gemms = {n: cake.load_kernel(os.path.join(SPAN, n)) for n in sorted(os.listdir(SPAN)) if n.startswith("gemm")}
SHAPES = [tuple(int(x) for x in s.split("x")) for s in
          os.environ.get("SHAPES", "128x256x64,65x336x320,255x1272x328,2048x2048x2048").split(",")]
for M, N, K in SHAPES:
    A = torch.randn(M, K, dtype=torch.bfloat16, device=dev); B = torch.randn(N, K, dtype=torch.bfloat16, device=dev)
    Cs = {n: torch.empty(M, N, dtype=torch.bfloat16, device=dev) for n in list(gemms) + ["cublas"]}
    calls = [lambda k=k, n=n: k(A=A, B=B, C=Cs[n]) for n, k in gemms.items()]
    calls.append(lambda: torch.matmul(A, B.T, out=Cs["cublas"]))
    s = spans(calls)
    ref = (A.float() @ B.float().T)
    for i, n in enumerate(list(gemms) + ["cublas"]):
        ok = torch.allclose(Cs[n].float(), ref, rtol=2e-2, atol=2e-2 * K ** 0.5)
        records.append({"kernel": n, "M": M, "N": N, "K": K, "correct": bool(ok),
                        "flush_us": s["flush"][i], "back_to_back_us": s["back_to_back"][i]})
json.dump(records, open(f"{OUT}/span_probe.json", "w"), indent=1)
print(f"{'kernel':28} {'shape':18} {'flush us':>9} {'b2b us':>9}")
for r in records:
    shape = f"{r['M']}x{r['N']}x{r['K']}" if "M" in r else ""
    print(f"{r['kernel']:28} {shape:18} {r['flush_us']:9.2f} {r['back_to_back_us']:9.2f} {'' if r.get('correct', True) else 'WRONG'}")
