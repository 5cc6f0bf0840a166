# CAKE-C016: the release waited for before the storer's own arrival orders the reads, but its first phase never completes: a deadlock (CAKE-S012)
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], cluster=(2, 1, 1), persistent=True)
def splitk(A: lm.tensor[lm.bf16, 16, "K"],
           B: lm.tensor[lm.bf16, "N", "K"],
           C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    part = pool.view(shape=(64, 16), dtype=lm.f32)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    parts = lm.barrier(producers=[math], consumers=[math], cluster=True)
    drained = lm.barrier(producers=[math], consumers=[math], cluster=True)
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    KB = lm.cdiv(lm.cdiv(K, 64), 2)
    for ks, tn in lm.tiles(2, lm.cdiv(N, 64)):
        with load:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, (ks * KB + k) * 64), barrier=full)
                sX.tma_load(A, coords=(0, (ks * KB + k) * 64), barrier=full)
        with math:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > 0, release=empty)
            part.store(acc)
            lm.wait(drained)  # error[CAKE-S012]: role `math` waits forever on `drained`
            lm.arrive(parts)
            lm.wait(parts)
            if ks == 0:
                lm.store(C, lm.cast(acc + part.load(cta=1), lm.bf16), coords=(0, tn * 64), transpose=True)
            lm.arrive(drained)
