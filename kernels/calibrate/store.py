"""Calibration probes: epilogue stores. Each CTA's warpgroup computes a 64 x BN accumulator with
one MMA (which gives it its register layout) and writes it to C as bf16, either straight from
the accumulator layout with `lm.store` (store_direct) or through a swizzled shared tile and a
TMA store (store_tma). The grid covers C, so the time is the store rate (store_gbps,
tma_store_gbps)."""
import cake
from cake import lm

BN, BK = 256, 64


@cake.schedule(targets=["sm_90a"])
def store_direct(A: lm.tensor[lm.bf16, "M", BK],
                 B: lm.tensor[lm.bf16, BN, BK],
                 C: lm.tensor[lm.bf16, "M", BN]):
    pool = lm.smem()
    sA = pool.view(shape=(64, BK), dtype=lm.bf16, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    ready = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=ready)
            sB.tma_load(B, coords=(0, 0), barrier=ready)
            lm.wait(ready)
            lm.mma(acc, sA, sB.T, accumulate=False)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, 0))


@cake.schedule(targets=["sm_90a"])
def store_tma(A: lm.tensor[lm.bf16, "M", BK],
              B: lm.tensor[lm.bf16, BN, BK],
              C: lm.tensor[lm.bf16, "M", BN]):
    pool = lm.smem()
    sA = pool.view(shape=(64, BK), dtype=lm.bf16, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, swizzle=128)
    sC = pool.view(shape=(64, BN), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    ready = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=ready)
            sB.tma_load(B, coords=(0, 0), barrier=ready)
            lm.wait(ready)
            lm.mma(acc, sA, sB.T, accumulate=False)
            sC.store(lm.cast(acc, lm.bf16))
            lm.fence_proxy_async()
            sC.tma_store(C, coords=(tm * 64, 0))
