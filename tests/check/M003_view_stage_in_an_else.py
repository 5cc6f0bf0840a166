# CAKE-M003: in the `else` of `if math.index < 1:` the warpgroup is the second, so its stage
# `math.index + 1` is 2, past the two-stage epilogue view: the `if` narrows the index, and the
# narrowed stage is still out of range.
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
    sC = pool.view(shape=(64, BN), dtype=lm.bf16, stages=2, swizzle=128)  # a stage per consumer

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
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0, release=empty)
            if math.index < 1:
                sC.stage(math.index).store(lm.cast(acc, lm.bf16))
                lm.fence_proxy_async()
                sC.stage(math.index).tma_store(C, coords=(tm * BM + wg_rows(math.index), tn * BN))
            else:
                sC.stage(math.index + 1).store(lm.cast(acc, lm.bf16))  # error[CAKE-M003]: can be any of 2..=2
                lm.fence_proxy_async()
                sC.stage(math.index).tma_store(C, coords=(tm * BM + wg_rows(math.index), tn * BN))
