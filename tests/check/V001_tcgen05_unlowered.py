# CAKE-V001 on the tcgen05 lowering (sm_100a): an M = 64 tcgen05.mma and a 64-row TMEM read are
# valid schedules that the sm_100a lowering does not implement yet; each is a coverage note for
# `cake check` (an error for `cake lower`), never a crash
import cake
from cake import lm


@cake.schedule(targets=["sm_100a"])
def gemm64(A: lm.tensor[lm.bf16, "M", "K"],
           B: lm.tensor[lm.bf16, "N", "K"],
           C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    acc = lm.tmem(cols=128, shape=(64, 128), dtype=lm.f32)
    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load])
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])
    out = epilogue.fragment(shape=(64, 128), dtype=lm.f32)  # note[CAKE-V001]
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with mma:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)  # note[CAKE-V001]
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            lm.tmem_load(out, acc)  # note[CAKE-V001]
            lm.store(C, lm.cast(out, lm.bf16), coords=(tm * 64, tn * 128))  # note[CAKE-V001]
