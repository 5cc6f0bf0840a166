# Values at the edges of their legal ranges (the near miss of CAKE-L010).
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], cluster=(2, 1))
def copy(A: lm.tensor[lm.bf16, "M", 64], C: lm.tensor[lm.bf16, "M", 64]):
    pool = lm.smem()
    s0 = pool.view(shape=(64, 64), dtype=lm.bf16, stages=1, swizzle=0)
    s32 = pool.view(shape=(64, 16), dtype=lm.bf16, stages=1, swizzle=32)
    s64 = pool.view(shape=(64, 32), dtype=lm.bf16, stages=1, swizzle=64)
    s128 = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warp=0, regs=255)
    store = lm.role(warps=[4, 5, 6, 7], regs=24)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[store], count=1)
    empty = lm.barrier(pipe, producers=[store], consumers=[load])
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with load:
            for k in lm.range(0, 1, pipeline=pipe):
                lm.wait(empty)
                s128.tma_load(A, coords=(tm * 64, 0), barrier=full)
        with store:
            for k in lm.range(0, 1, pipeline=pipe):
                lm.wait(full)
                s128.tma_store(C, coords=(tm * 64, 0))
                lm.arrive(empty)
