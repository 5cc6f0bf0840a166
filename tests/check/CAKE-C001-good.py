# CAKE-C001: the passing near-miss — the same GEMM written for sm_80 with cp.async and mma.sync
import cake
from cake import lm


@cake.schedule(targets=["sm_80"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 32), dtype=lm.bf16, stages=3)
    sB = pool.view(shape=(128, 32), dtype=lm.bf16, stages=3)
    warps = lm.role(warps=[0, 1, 2, 3])
    pipe = lm.pipeline(stages=3)
    full = lm.barrier(pipe, producers=[warps], consumers=[warps])
    empty = lm.barrier(pipe, producers=[warps], consumers=[warps])
    acc = warps.fragment(shape=(32, 128), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 128), lm.cdiv(N, 128)):
        with warps:
            for k in lm.range(lm.cdiv(K, 32), pipeline=pipe):
                lm.wait(empty)
                sA.cp_async(A, coords=(tm * 128, k * 32), barrier=full)
                sB.cp_async(B, coords=(tn * 128, k * 32), barrier=full)
                lm.wait(full)
                lm.mma(acc, sA.rows(warps.index * 32, 32), sB.T, accumulate=k > 0)
                lm.arrive(empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 128 + warps.index * 32, tn * 128))
