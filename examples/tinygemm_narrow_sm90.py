"""Small-M BF16 GEMM C = A · Bᵀ for Hopper with narrow weight tiles (issue #19): the tokens sit on
wgmma's 64-row side (rows past M read zeros and are not stored) and BN ≤ 64 of the weight's rows
on its N side, so a weight of few rows still makes enough tiles to keep every SM streaming:

    C[0 : M, n0 : n0 + BN] = A · B[n0 : n0 + BN, :]ᵀ          (64 × BN tile, one per CTA)

The swapped schedule (examples/tinygemm_sm90.py) puts the weight's rows on the 64-row side, so
4096 weight rows make 64 tiles for 132 SMs, and it splits K across a cluster to fill the others.
Here 4096 rows make 128 tiles of 32 rows with no reduction. The price: the MMAs multiply 64 token
rows however few are real (the tensor cores are idle at M ≤ 16 anyway) and each stage holds
A's 64 × 64 slice beside the weight's (TMA fills the rows past M with zeros without reading them).

Measured (H100, bench/results/2026-12-05-persistent/ c1): correct; slower than the swapped
schedule wherever M ≤ 32 (4096 × 4096, M = 1: 19.8 against 16.1 µs; 2048 × 7168: 0.55-0.65×)
and equal at M = 64. The weight bytes in flight across the GPU set the rate, not the number of
SMs streaming: 128 CTAs × 16 stages × 4 KB hold what 64 × 16 × 8 KB do, and each stage also
carries A's 8 KB. No route takes it.
"""
import cake
from cake import lm

# Tokens (specialised per shape by the contract). Below 64, A's box runs past its rows: the zero
# rows feed only accumulator rows that the store skips (so CAKE-S015 stays quiet).
M = 64
NW = 4096                               # weight rows N (specialised per shape: it sets BN)
# Weight rows per tile: about one tile per SM at the contract's weights (2048 rows: 128 tiles of
# 16; 4096: 128 of 32); wider weights take 64.
BN = 16 if NW <= 2048 else 32 if NW <= 4096 else 64
BK = 64                                 # K per stage (one 128-byte swizzle row)
# Stages: 16 × (8 KB of A + BN × 128 B of weight) fit the shared memory up to BN = 32.
STAGES = 16 if BN <= 32 else 12
# The weight is read once: its lines go first when L2 needs room (as in the swapped schedule).
EVICT_FIRST = 1
WEIGHT_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"])
def tinygemm_narrow(A: lm.tensor[lm.bf16, M, "K"],
                    B: lm.tensor[lm.bf16, "N", "K"],
                    C: lm.tensor[lm.bf16, M, "N"]):
    assert M <= 64, "the tokens fill at most wgmma's 64 rows: the swapped schedule takes more"
    pool = lm.smem()
    sA = pool.view(shape=(64, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sW = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)

    for tn in lm.tiles(lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * BN, k * BK), barrier=full, evict=WEIGHT_EVICT)
                sA.tma_load(A, coords=(0, k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sW.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * BN))
