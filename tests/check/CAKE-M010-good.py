# CAKE-M010: the passing near-miss — C = A·Bᵀ with each operand copied from its own tensor
import cake
from cake import lm

BM, BN, BK = 128, 128, 64


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "M", "K"],
         C: lm.tensor[lm.bf16, "M", "M"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=3, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=3, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=3)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(M, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * BM + math.index * 64, tn * BN))
