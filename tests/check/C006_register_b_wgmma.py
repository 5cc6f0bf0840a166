# CAKE-C006: wgmma reads `b` from shared memory; a register `b` is mma.sync's (sm_80, sm_89, ...).
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warp=4)
    math = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    b_frag = math.fragment(shape=(64, 128), dtype=lm.bf16)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.ldmatrix(b_frag, sB.T)
                lm.mma(acc, sA, b_frag, accumulate=k > 0, release=empty)  # error[CAKE-C006]
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 128))
