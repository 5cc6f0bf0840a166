"""FP8 (e4m3) GEMM with row-wise scales for Hopper: C = (A · Bᵀ) · sa[:, None] · sb[None, :],
the product `torch._scaled_mm` computes with `scale_a` of shape (M, 1) and `scale_b` (1, N).

One producer warpgroup streams 128 × 128 e4m3 tiles of A and B (128 bytes of K per row: one
128B-swizzle span) through a 4-stage TMA ring; two consumer warpgroups each own 64 rows of the
128-row tile and issue wgmma m64n128k32 (four per 128-deep block).

Promotion: Hopper's FP8 wgmma keeps fewer bits than f32 in its running sum, so over a long K the
error grows well past bf16's (CAKE-D004). Each 128-deep block is accumulated afresh and added
into an f32 `total`. With BUFFERS = 2 the block's accumulator has two register copies, so the
next block's wgmma runs while this one's is added (docs/language.md §9.6); on an H100 that form
ran 0.87x of torch._scaled_mm at the bench shapes against 0.995x for one copy (the two consumer
warpgroups already overlap each other's additions; bench/results/2026-12-19-fp8-gemm/), so one
copy is the default.

The epilogue scales `total` by the row and column scales, rounds to bf16, and stores through a
swizzled shared-memory tile with TMA. With CLUSTER = 2 the two CTAs of a cluster take neighbouring
M tiles of one N tile and each loads half of the B tile for both (TMA multicast): 24 KiB leave
L2 per CTA and block instead of 32 (examples/gemm_cluster_sm90.py is the bf16 form).
"""
import cake
from cake import lm

BM, BN, BK = 128, 128, 128
STAGES = 4      # 4 × 32 KiB of operands + 32 KiB for the epilogue tile
GROUP = 8       # grouped raster: 8 M-tiles at a time share B tiles in L2
BUFFERS = 1     # 2: the next block's wgmma overlaps this block's promotion (measured slower)
CLUSTER = 1     # 2: clusters of two CTAs, the B tile multicast to both (measured 2-7 % slower)
PROMOTE = 1     # 0: one accumulator over the whole of K, no promotion (CAKE-D004 says why not):
                # what `torch._scaled_mm(..., use_fast_accum=True)` does


def wg_rows(index):
    return index * 64


@cake.schedule(targets=["sm_90a"], persistent=True, cluster=(CLUSTER, 1, 1))
def gemm_fp8(A: lm.tensor[lm.e4m3, "M", "K"],
             B: lm.tensor[lm.e4m3, "N", "K"],
             SA: lm.tensor[lm.f32, "M"],
             SB: lm.tensor[lm.f32, "N"],
             C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.e4m3, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.e4m3, stages=STAGES, swizzle=128)
    sC = pool.view(shape=(BM, BN), dtype=lm.bf16, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load], cluster=CLUSTER > 1)
    if PROMOTE:
        acc = math.fragment(shape=(64, BN), dtype=lm.f32, buffers=BUFFERS)
        total = math.fragment(shape=(64, BN), dtype=lm.f32)
    else:
        total = math.fragment(shape=(64, BN), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN), group=GROUP):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full, multicast=CLUSTER)
        with math:
            if PROMOTE:
                total[:] = 0.0
                for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                    lm.wait(full)
                    lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=False,
                           release=empty)
                    total[:] = total + acc
            else:
                for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                    lm.wait(full)
                    lm.mma(total, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0,
                           release=empty)
            sa = lm.load(SA, coords=(tm * BM + wg_rows(math.index),), shape=(64,))
            sb = lm.load(SB, coords=(tn * BN,), shape=(BN,))
            sC.rows(wg_rows(math.index), 64).store(lm.cast(total * sa[:, None] * sb[None, :], lm.bf16))
            lm.fence_proxy_async()
            sC.rows(wg_rows(math.index), 64).tma_store(C, coords=(tm * BM + wg_rows(math.index), tn * BN))
