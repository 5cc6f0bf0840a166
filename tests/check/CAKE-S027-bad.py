# CAKE-S027: every run stores its accumulator, but only the run that ends the tile holds its sum
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def streamk(A: lm.tensor[lm.bf16, 16, "K"],
            B: lm.tensor[lm.bf16, "N", "K"],
            C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    KB = lm.cdiv(K, 64)
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)
            lm.stream_fixup(acc)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)  # error[CAKE-S027]
