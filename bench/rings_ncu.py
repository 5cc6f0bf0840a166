"""Nsight Compute's view of the two-ring small-M GEMM against the one-ring schedule at
4096 x 4096 (issue #19, bench/results/2026-12-05-rings/): whether a deeper weight ring per CTA
draws more of DRAM's bandwidth at M = 64 and 128, as the one-ring schedule's falling DRAM rate
with M suggested (bench/results/2026-12-05-tall/, call 2). Builds each schedule with its
constants, launches it three times and checks the last result; run under ncu:

    ncu --clock-control none --kernel-name regex:tinygemm --section SpeedOfLight ... \\
        python3 bench/rings_ncu.py
"""
import torch

import cake

N = K = 4096
ONE = "examples/tinygemm_sm90.py"
RINGS = "examples/tinygemm_rings_sm90.py"
# (label, schedule, entry, constants besides M and NW)
VARIANTS = [
    ("one-ring", ONE, "tinygemm", {"TIGHT": 1}),
    ("one-ring split", ONE, "tinygemm", {"TIGHT": 1, "SPLIT_UPTO": 4224}),
    ("rings r2x2", RINGS, "tinygemm_rings", {"R": 2, "X_STAGES": 2}),
    ("rings bk128 r1x3", RINGS, "tinygemm_rings", {"BK": 128, "R": 1, "X_STAGES": 3}),
    ("rings split", RINGS, "tinygemm_rings", {"SPLIT_UPTO": 4224, "R": 1, "X_STAGES": 3}),
]


def build(path: str, entry: str, m: int, constants: dict):
    with open(path, encoding="utf-8") as fh:
        source = cake.specialize(fh.read(), M=m, NW=N, **constants)
    return cake.compile(path, source=source)[entry]


def main() -> None:
    torch.manual_seed(0)
    B = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    for m in (64, 128):
        A = torch.randn(m, K, device="cuda").to(torch.bfloat16)
        want = A.float() @ B.float().T
        for label, path, entry, constants in VARIANTS:
            kernel = build(path, entry, m, constants)
            C = torch.empty(m, N, device="cuda", dtype=torch.bfloat16)
            for _ in range(3):
                kernel(A=A, B=B, C=C)
            torch.cuda.synchronize()
            err = (C.float() - want).abs().max().item()
            print(f"M={m} {label}: max |error| {err:.3g}", flush=True)


if __name__ == "__main__":
    main()
