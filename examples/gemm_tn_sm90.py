"""BF16 GEMM C = Aᵀ · B for Hopper with A stored (K, M) and B stored (K, N): a weight gradient,
dW = Xᵀ · dY, with X and dY stored one row per token. The examples/gemm_nn_sm90.py schedule with
`a` M-major too: wgmma reads both operands with its transpose flags (docs/language.md §9.6).
wgmma's M is 64 and an M-major tile is one 128-byte panel row per K, so the 128 columns of A a
CTA takes are stacked along the view's rows, one (BK, 64) block per consumer warpgroup: two TMA
boxes per stage, and warpgroup w multiplies `sA.rows(w * BK, BK).T`. TMA + wgmma, one producer
warpgroup and two consumer warpgroups, a 3-stage pipeline, a persistent tile loop in grouped
order, and a TMA-store epilogue."""
import cake
from cake import lm

BM, BN, BK = 128, 256, 64
STAGES = 3  # 3 × 48 KiB of operands + 64 KiB for the epilogue tile fit in 227 KiB


def wg_rows(index):
    # Each consumer warpgroup owns a 64-row slice of the M tile (wgmma's M is 64).
    return index * 64


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "K", "M"],
         B: lm.tensor[lm.bf16, "K", "N"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    # A's (BK, BM) tile as BM / 64 blocks of (BK, 64), one per consumer warpgroup.
    sA = pool.view(shape=(BM // 64 * BK, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BK, BN), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sC = pool.view(shape=(BM, BN), dtype=lm.bf16, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)

    # Grouped raster: 8 M-tiles at a time, so CTAs in flight share B tiles in L2.
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN), group=8):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.rows(0, BK).tma_load(A, coords=(k * BK, tm * BM), barrier=full)
                sA.rows(BK, BK).tma_load(A, coords=(k * BK, tm * BM + 64), barrier=full)
                sB.tma_load(B, coords=(k * BK, tn * BN), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * BK, BK).T, sB, accumulate=k > 0, release=empty)
            sC.rows(wg_rows(math.index), 64).store(lm.cast(acc, lm.bf16))
            lm.fence_proxy_async()
            sC.rows(wg_rows(math.index), 64).tma_store(C, coords=(tm * BM + wg_rows(math.index), tn * BN))
