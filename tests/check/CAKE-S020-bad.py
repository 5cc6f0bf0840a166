# CAKE-S020: the stage of A is released on the first of the two MMAs that read it
import cake
from cake import lm

BM, BN, BK = 128, 128, 64


@cake.schedule(targets=["sm_100a"])
def gemm2(A: lm.tensor[lm.bf16, "M", "K"],
          B: lm.tensor[lm.bf16, "N", "K"],
          B2: lm.tensor[lm.bf16, "N", "K"],
          C: lm.tensor[lm.bf16, "M", "N"],
          D: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=3, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=3, swizzle=128)
    sB2 = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=3, swizzle=128)
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)
    acc2 = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)
    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)
    pipe = lm.pipeline(stages=3)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load])
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])
    out = epilogue.fragment(shape=(BM, BN), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
                sB2.tma_load(B2, coords=(tn * BN, k * BK), barrier=full)
        with mma:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)  # error[CAKE-S020]
                lm.mma(acc2, sA, sB2.T, accumulate=k > 0)
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            lm.tmem_load(out, acc)
            lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN))
            lm.tmem_load(out, acc2)
            lm.store(D, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN))
