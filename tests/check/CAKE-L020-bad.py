# CAKE-L020: a constant behind 202 unary minus signs nests past the limit of 200
import cake
from cake import lm


STAGES = ----------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------2  # error[CAKE-L020]


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    BM = 64
    pool = lm.smem()
    sA = pool.view(shape=(BM, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(BM, 256), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, 256)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * BM, tn * 256))
