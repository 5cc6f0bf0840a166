# `evict=` on lm.load and lm.store is lowered for row-layout values only: on an accumulator's
# epilogue (a store of the tile, a per-column bias read in its layout) it is a note at its place.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm_bias(A: lm.tensor[lm.bf16, "M", "K"],
              B: lm.tensor[lm.bf16, "N", "K"],
              Bias: lm.tensor[lm.f32, "N"],
              C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)
            bias = lm.load(Bias, coords=(tn * 128,), shape=(128,), evict="last")  # note[CAKE-V001]
            lm.store(C, lm.cast(acc + bias[None, :], lm.bf16), coords=(tm * 64, tn * 128), evict="first")  # note[CAKE-V001]
