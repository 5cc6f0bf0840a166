# shape: M=135168,K=4096
# CAKE-P007: a copy ring bound by DRAM bandwidth
import cake
from cake import lm

BM, BK = 128, 64
STAGES = 4
REUSE = 1048576


@cake.schedule(targets=["sm_90a"], persistent=True)
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warp=0)
    drain = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[drain])
    empty = lm.barrier(pipe, producers=[drain], consumers=[load])
    token = drain.fragment(shape=(64, 8), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, BM)):  # note[CAKE-P007]: memory-bound
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=((tm % REUSE) * BM, k * BK), barrier=full)
        with drain:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(token, sA.rows(0, 64), sA.rows(0, 8).T, accumulate=False, release=empty)
