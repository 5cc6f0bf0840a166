#!/usr/bin/env python3
"""Does the harness's L2 flush cost the timed kernel? `flush_l2` writes a buffer of twice the
L2, so the L2 it leaves holds dirty lines, and a kernel that then streams from DRAM writes them
back as its misses evict them. Timed here under CUPTI (the harness's spans), interleaved, three
ways of flushing: `write` (the harness: zero the buffer), `write+read` (zero it, then read it
all: the dirty lines are written back during the flush, L2 is left clean), `read` (read it
only). Kernels: torch.matmul at small M (cuBLAS), a plain read (`sum`) of the same weight, and
examples/tinygemm_sm90.py (Cake) at the same shapes. Prints a table, writes JSON to argv[1].

    python3 bench/flush_probe.py OUT.json        (on the GPU host, with the cake wheel installed)
"""
import json
import os
import sys
import tempfile

import torch

import cake
from cake.calibrate import substitute_constants
from cake.harness.stats import summarize
from cake.harness.timing import flush_bytes, time_cupti_interleaved

props = torch.cuda.get_device_properties(0)
buf = torch.empty(flush_bytes(props.L2_cache_size), dtype=torch.uint8, device="cuda")


class Flush:
    """What `flush_l2` calls (`zero_`), done one of three ways."""

    def __init__(self, how):
        self.how = how

    def zero_(self):
        if "write" in self.how:
            buf.zero_()
        if "read" in self.how:
            buf.view(torch.int32).sum()


def tinygemm(m, n):
    src = open("examples/tinygemm_sm90.py").read()
    d = tempfile.mkdtemp()
    path = os.path.join(d, "tinygemm_sm90.py")
    # The weight streamed with the default L2 priority, as when this probe was measured.
    open(path, "w").write(substitute_constants(src, dict(M=m, NW=n, EVICT_FIRST=0)))
    return cake.compile(path, "sm_90a")["tinygemm"]


rows = []
for m, n, k in ((1, 4096, 4096), (8, 4096, 4096), (1, 14336, 4096), (16, 2048, 7168), (64, 7168, 2048)):
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    kern = tinygemm(m, n)
    calls = {
        "cublas": lambda: torch.matmul(a, b.t(), out=c),
        "read": lambda: b.sum(),
        "tinygemm": lambda: kern(A=a, B=b, C=c),
    }
    for name, call in calls.items():
        call()
        torch.cuda.synchronize()
        med = {}
        for how in ("write", "write+read", "read"):
            r = time_cupti_interleaved(torch, [call], 30, Flush(how))[0]
            med[how] = summarize(r.spans_ms)["median"] * 1e3
        rows.append(dict(M=m, N=n, K=k, kernel=name, weight_mb=n * k * 2 / 1e6, **{f"{h}_us": round(v, 2) for h, v in med.items()}))
        print(f"M={m:<3} N={n:<6} K={k:<5} {name:<9} write {med['write']:7.2f}  write+read {med['write+read']:7.2f}  "
              f"read {med['read']:7.2f} us  (write - write+read {med['write'] - med['write+read']:+.2f})", flush=True)
json.dump(dict(l2_bytes=props.L2_cache_size, flush_bytes=buf.numel(), rows=rows), open(sys.argv[1], "w"), indent=1)
