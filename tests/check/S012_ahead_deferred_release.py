# lm.ahead on wgmma: a stage a wgmma reads is released one iteration late, so one warpgroup that
# issues its copies STAGES - 1 iterations early waits for a stage it releases only later in the
# same iteration. The explorer runs the regions where the lowering issues them and finds it.
import cake
from cake import lm

BM, BN, BK = 64, 128, 64
STAGES = 3


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    main = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])
    empty = lm.barrier(pipe, producers=[main], consumers=[main])
    acc = main.fragment(shape=(BM, BN), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                with lm.ahead(STAGES - 1):
                    lm.wait(empty)  # error[CAKE-S012]: waits forever on `empty`
                    sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                    sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * BM, tn * BN))
