# A module-level constant whose value fails is reported once, where it fails: the names computed
# from it, and the schedule that uses them, report nothing more (no "not defined").
import cake
from cake import lm

BK = 32
STAGES = 16 // (BK // 64)  # error[CAKE-L010]: division by zero
DEPTH = STAGES * 2


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=DEPTH, swizzle=128)
    load = lm.role(warp=0)
    drain = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[drain])
    empty = lm.barrier(pipe, producers=[drain], consumers=[load])
    token = drain.fragment(shape=(64, 8), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, 64)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)
        with drain:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(token, sA.rows(0, 64), sA.rows(0, 8).T, accumulate=False, release=empty)
