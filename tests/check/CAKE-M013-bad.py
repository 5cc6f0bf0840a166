# CAKE-M013: a one-role Ampere pipeline issues its copies as many iterations early as it has stages
import cake
from cake import lm

BM, BN, BK = 128, 128, 32
STAGES = 4


@cake.schedule(targets=["sm_80"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=64)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=64)
    main = lm.role(warps=[0, 1, 2, 3])
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])
    empty = lm.barrier(pipe, producers=[main], consumers=[main])
    acc = main.fragment(shape=(64, 64), dtype=lm.f32)
    a_frag = main.fragment(shape=(64, BK), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                with lm.ahead(STAGES):  # error[CAKE-M013]: has 4 stages
                    lm.wait(empty)
                    sA.cp_async(A, coords=(tm * BM, k * BK), barrier=full)
                    sB.cp_async(B, coords=(tn * BN, k * BK), barrier=full)
                lm.wait(full)
                lm.ldmatrix(a_frag, sA.rows((main.index // 2) * 64, 64))
                lm.mma(acc, a_frag, sB.rows((main.index % 2) * 64, 64).T,
                       accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + (main.index // 2) * 64, tn * BN + (main.index % 2) * 64))
