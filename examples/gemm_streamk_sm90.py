"""BF16 GEMM C = A · Bᵀ for Hopper with stream-K: the gemm_sm90 example's producer and two
consumer warpgroups (TMA + wgmma over 128 × 256 tiles, a TMA-store epilogue), but a persistent
grid of one CTA per SM takes equal shares of all tiles' K steps instead of whole tiles, so a
tile count that leaves the last wave part full (256 tiles on 132 SMs: 1.94 waves) costs no idle
SMs. A run that stops before its tile's end publishes each warpgroup's partial; the run that ends
the tile adds them and stores it (docs/language.md §8.1a). The whole waves but the last run
data-parallel (CTA c takes tiles c, c + grid, ...), so only one to two waves' worth is split.

Measured (bench/results/2026-12-05-offm/): correct; 0.84x / 0.93x / 0.85x of gemm_sm90's speed
at 4096 x 7168 x 4096, 8192^3, 4096^3 on an H100 (splitting every step: 0.78-0.82x cuBLAS on
the H200 where gemm_sm90 ran 0.98-1.02x). Not a GEMM route."""
import cake
from cake import lm

BM, BN, BK = 128, 256, 64
STAGES = 3  # 3 × 48 KiB of operands + 64 KiB for the epilogue tile fit in 227 KiB


def wg_rows(index):
    # Each consumer warpgroup owns a 64-row slice of the M tile (wgmma's M is 64).
    return index * 64


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sC = pool.view(shape=(BM, BN), dtype=lm.bf16, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)

    KB = lm.cdiv(K, BK)                     # K steps per tile
    # Grouped raster: tiles numbered 8 M-tiles at a time, so the CTAs in flight share B in L2.
    for tm, tn, k0, k1 in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN), group=8, stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > k0, release=empty)
            lm.stream_fixup(acc)
            if k1 == KB:                    # this run ends the tile: acc is its sum
                sC.rows(wg_rows(math.index), 64).store(lm.cast(acc, lm.bf16))
                lm.fence_proxy_async()
                sC.rows(wg_rows(math.index), 64).tma_store(C, coords=(tm * BM + wg_rows(math.index), tn * BN))
