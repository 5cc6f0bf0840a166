#!/usr/bin/env python3
"""One launch of a k-means update schedule at the primary shape (B=32, N=65536, K=1024, D=128),
for a profiler to attach to: `ncu --kernel-name cake_kmeans_update --launch-skip 1
--launch-count 1 ... python3 bench/update_profile.py [SCHEDULE]`. The sums and counts are
checked against torch afterwards, so a profile of a broken kernel is not mistaken for one."""
import sys

import torch

import cake

path = sys.argv[1] if len(sys.argv) > 1 else "examples/kmeans_update_sm90.py"
mod = cake.compile(path)
B, N, K, D = 32, 65536, 1024, 128
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(B, N, D, device="cuda", generator=g).to(torch.bfloat16)
c = torch.randn(B, K, D, device="cuda", generator=g).to(torch.bfloat16)
ids = torch.randint(0, K, (B, N), device="cuda", generator=g, dtype=torch.int32)
sums = torch.full((B, K, D), float("nan"), device="cuda")
counts = torch.full((B, K), -1, dtype=torch.int32, device="cuda")
for _ in range(2):  # a warm-up launch, then the profiled one
    mod.kmeans_update(x, c, ids, sums, counts)
torch.cuda.synchronize()
flat = (ids.long() + K * torch.arange(B, device="cuda")[:, None]).reshape(-1)
ref = torch.zeros(B * K, D, device="cuda").index_add_(0, flat, x.reshape(-1, D).float())
ref_counts = torch.bincount(flat, minlength=B * K).reshape(B, K)
print("sums max abs error", (sums.reshape(B * K, D) - ref).abs().max().item(),
      "counts equal", bool((counts == ref_counts).all()))
