# CAKE-S015 stays quiet where the zero-filled rows cannot reach a result: 1000 rows of A fill
# only part of the last 128-row box, but A is read only by the MMA, whose accumulator rows from
# the filled rows go only to a store that skips rows past C. The same kernel with a row
# reduction across the filled entries is CAKE-S015-bad.py.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, 1000, "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, 1000, "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(1000, 128), lm.cdiv(N, 256)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc * 2.0, lm.bf16), coords=(tm * 128 + math.index * 64, tn * 256))
