# CAKE-S008 for cp.async: per-thread copies write shared memory through the generic proxy, so the
# role whose wgmma reads them fences after waiting on the copies' barrier. `sA`'s fence is in the
# right place; `sB`'s comes before the wait, when the copies may not have landed.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.f32, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=104)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full_a = lm.barrier(pipe, producers=[load], consumers=[math])
    full_b = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 64)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.cp_async(A, coords=(tm * 64, k * 64), barrier=full_a)
                sB.cp_async(B, coords=(tn * 64, k * 64), barrier=full_b)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full_a)
                lm.fence_proxy_async()
                lm.wait(full_b)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)  # error[CAKE-S008]: `sB` was written by cp.async
            lm.store(C, acc, coords=(tm * 64, tn * 64))
