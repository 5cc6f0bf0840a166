# CAKE-M009: the store was lost: the kernel writes nothing and `C` is never touched
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],  # error[CAKE-M009]: writes no global memory
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):  # warning[CAKE-M005]: nothing loads or stores it
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=3, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=3, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=3)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 128), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
