#!/usr/bin/env python3
"""Would an L2 evict_first policy on tinygemm's weight stream help under the harness's protocol?
The harness flushes L2 by writing it (bench/flush_probe.py: a weight-streaming kernel then pays
the writeback of the dirty lines its loads evict). With evict_first, the weight's own lines are
the first victims, so fewer dirty lines are evicted while the kernel runs. Kernels from
bench/evict_probe.sh (.carry/ef/m<M>_n<N>/{base,ef}); each is checked against an f32 oracle,
then cuBLAS, base and ef are timed interleaved under CUPTI with the harness's flush (median of
30). Prints a table, writes JSON to argv[1].
"""
import json
import sys

import torch

import cake
from cake.harness.stats import summarize
from cake.harness.timing import make_flush_buffer, time_cupti_interleaved

props = torch.cuda.get_device_properties(0)
flush = make_flush_buffer(torch, props.L2_cache_size, "cuda")
rows = []
for m, n, k in ((1, 4096, 4096), (8, 4096, 4096), (1, 14336, 4096), (16, 2048, 7168), (64, 7168, 2048)):
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)
    ref = a.float() @ b.float().t()
    outs, calls = {}, {}
    cb = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    calls["cublas"] = lambda: torch.matmul(a, b.t(), out=cb)
    ok = {}
    for v in ("base", "ef"):
        kern = cake.load_kernel(f".carry/ef/m{m}_n{n}/{v}/tinygemm.launch.json")
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        kern(A=a, B=b, C=c)
        torch.cuda.synchronize()
        ok[v] = bool(torch.allclose(c.float(), ref, rtol=0.02, atol=0.02 * ref.abs().max().item() / 10 + 0.02))
        calls[v] = (lambda kern=kern, c=c: kern(A=a, B=b, C=c))
    names = list(calls)
    res = time_cupti_interleaved(torch, [calls[x] for x in names], 30, flush)
    med = {x: summarize(r.spans_ms)["median"] * 1e3 for x, r in zip(names, res)}
    rows.append(dict(M=m, N=n, K=k, correct=ok, **{f"{x}_us": round(v, 2) for x, v in med.items()}))
    print(f"M={m:<3} N={n:<6} K={k:<5} cublas {med['cublas']:7.2f}  base {med['base']:7.2f} ({med['cublas'] / med['base']:.3f}x)  "
          f"ef {med['ef']:7.2f} ({med['cublas'] / med['ef']:.3f}x)  ef/base {med['base'] / med['ef']:.3f}  correct {ok}", flush=True)
json.dump(dict(rows=rows), open(sys.argv[1], "w"), indent=1)
