# CAKE-D006: an outer loop over runs of the inner loop's boxes must step by the whole run: 4 boxes
# of BK per `kc`, stepped by 8 · BK, leave every other run of K unloaded
import cake
from cake import lm

BM, BN, BK = 128, 256, 64
STAGES = 3


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for kc in lm.range(lm.cdiv(K, 4 * BK)):
                for k in lm.range(4, pipeline=pipe):
                    lm.wait(empty)
                    sA.tma_load(A, coords=(tm * BM, kc * (8 * BK) + k * BK), barrier=full)  # error[CAKE-D006]: the inner loop's run of boxes (`sA`) is 256 wide
                    sB.tma_load(B, coords=(tn * BN, kc * (4 * BK) + k * BK), barrier=full)
        with math:
            for kc in lm.range(lm.cdiv(K, 4 * BK)):
                for k in lm.range(4, pipeline=pipe):
                    lm.wait(full)
                    lm.mma(acc, sA.rows(64 * math.index, 64), sB.T, accumulate=kc + k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * BM + 64 * math.index, tn * BN))
