# CAKE-C009: the passing near-miss — a 128-column TMEM accumulator (a power of two) on sm_100a
import cake
from cake import lm


@cake.schedule(targets=["sm_100a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    tacc = lm.tmem(cols=128, shape=(128, 128), dtype=lm.f32)
    load = lm.role(warp=0)
    issue = lm.role(warp=1)
    epi = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[issue])
    empty = lm.barrier(pipe, producers=[issue], consumers=[load])
    done = lm.barrier(producers=[issue], consumers=[epi])
    out = epi.fragment(shape=(128, 128), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 128), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with issue:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(tacc, sA, sB.T, accumulate=k > 0)
                lm.commit(empty)
            lm.commit(done)
        with epi:
            lm.wait(done)
            lm.tmem_load(out, tacc)
            lm.store(C, lm.cast(out, lm.bf16), coords=(tm * 128, tn * 128))
