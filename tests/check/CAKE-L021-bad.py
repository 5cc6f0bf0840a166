# CAKE-L021: a helper that calls itself twice per level: 2^25 inlined calls
import cake
from cake import lm


def fan(n):
    if n == 0:
        return 128
    return fan(n - 1) // 2 + fan(n - 1) // 2  # error[CAKE-L021]


def tile_rows(n):
    return fan(24) // 2


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    BM = tile_rows(128)
    pool = lm.smem()
    sA = pool.view(shape=(BM, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=2)
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
