#!/usr/bin/env python3
"""One launch of the k-means assign example at the primary shape (B=32, N=65536, K=1024, D=128),
for a profiler to attach to: `ncu --kernel-name cake_kmeans_assign --launch-skip 1
--launch-count 1 ... python3 bench/kmeans_profile.py [SCHEDULE]`. Inputs are random normal;
the ids are checked against torch so a profile of a broken kernel is not mistaken for one."""
import sys

import torch

import cake

path = sys.argv[1] if len(sys.argv) > 1 else "examples/kmeans_assign_sm90.py"
mod = cake.compile(path)
B, N, K, D = 32, 65536, 1024, 128
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(B, N, D, device="cuda", generator=g).to(torch.bfloat16)
c = torch.randn(B, K, D, device="cuda", generator=g).to(torch.bfloat16)
xsq = (x.float() ** 2).sum(-1)
csq = (c.float() ** 2).sum(-1)
ids = torch.full((B, N), -1, dtype=torch.int32, device="cuda")
for _ in range(2):  # a warm-up launch, then the profiled one
    mod.kmeans_assign(x, c, xsq, csq, ids)
torch.cuda.synchronize()
d = csq[:4, None, :] - 2.0 * torch.bmm(x[:4].float(), c[:4].float().transpose(1, 2))
best = d.min(-1).values
got = d.gather(-1, ids[:4, :, None].long()).squeeze(-1)
bad = (got - best > 1e-3 * best.abs().clamp_min(1.0)).sum().item()
print(f"ids checked on 4 batches: {bad} rows not at the minimum")
