"""A GEMM whose consumer role holds two 64x192 f32 accumulators (192 registers per thread) with
no register budget, within what a thread can address but past the 168 of the launch
allocation: `cake check` warns (CAKE-D008), ptxas must spill, and `cake build` must say so on
the fragment's line."""
import cake
from cake import lm

BM, BN, BK = 128, 192, 64
STAGES = 4


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

    load = lm.role(warpgroup=0)
    math = lm.role(warpgroups=[1, 2])

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    acc2 = math.fragment(shape=(64, BN), dtype=lm.f32)  # two 96-register accumulators per thread cannot fit in 168

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
                lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0)
                lm.mma(acc2, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc + acc2, lm.bf16), coords=(tm * BM + wg_rows(math.index), tn * BN))
