"""Nsight Compute's view of the swapped tinygemm at 4096 x 4096 for M = 16, 64 and 128 (issue #19):
why M = 128 runs 21 % over a bare stream of its weight where M = 16 runs 3 % over it
(bench/results/2026-12-05-tall/). Calls the routes through their family files, three launches
each; run under ncu, which profiles the last launch of each M:

    ncu --clock-control none --kernel-name regex:tinygemm --launch-skip-before-match 0 \
        --section SpeedOfLight ... python3 bench/tinygemm_ncu.py
"""
import torch

import cake

N = K = 4096
TALL = "bench/results/2026-12-05-tall/tall.family.toml"
SHIPPED = "kernels/tinygemm/tinygemm.family.toml"


def main() -> None:
    torch.manual_seed(0)
    families = {SHIPPED: cake.family(SHIPPED), TALL: cake.family(TALL)}
    B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    # M = 16: the shipped table's swapped-bk256; 64: swapped-bk128; 128: swapped (BK = 64).
    for m, path in [(16, SHIPPED), (64, TALL), (128, TALL)]:
        A = torch.randn(m, K, device="cuda").to(torch.bfloat16)
        C = torch.empty(m, N, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            families[path](A=A, B=B, C=C)
        torch.cuda.synchronize()
        err = (C.float() - (A.float() @ B.float().T)).abs().max().item()
        print(f"M={m}: max |error| {err:.3g}", flush=True)


if __name__ == "__main__":
    main()
