# `lm.store(..., transpose=True)` writes a 2-D value's transpose: a 1-D value has none, and the
# flag is a compile-time bool.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def swapped(A: lm.tensor[lm.bf16, 8, "K"], B: lm.tensor[lm.bf16, "N", "K"],
            C: lm.tensor[lm.bf16, 8, "N"], S: lm.tensor[lm.f32, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sX = pool.view(shape=(8, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 8), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > 0, release=empty)
            lm.store(S, lm.sum(acc, axis=1), coords=(tn * 64,), transpose=True)  # error[CAKE-L007]
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=1)  # error[CAKE-L004]
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)
