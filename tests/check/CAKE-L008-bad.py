# CAKE-L008: an f16 tensor copied into a bf16 view
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.f16, "M", "K"],
         B: lm.tensor[lm.f16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.f16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)  # error[CAKE-L008]: holds bf16 but tensor `A` holds f16
                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)  # error[CAKE-L008]: mma inputs differ
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))
