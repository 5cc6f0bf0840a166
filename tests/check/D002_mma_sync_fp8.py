# CAKE-D002 on mma.sync (sm_89): an FP8 `b` that is MN-major. ldmatrix .trans moves 16-bit
# elements, so 8-bit operands must be K-major in shared memory: `b` as the transpose of (N, K).
import cake
from cake import lm


@cake.schedule(targets=["sm_89"])
def gemm_fp8(A: lm.tensor[lm.e4m3, "M", "K"],
             B: lm.tensor[lm.e4m3, "K", "N"],
             C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.e4m3, stages=2, swizzle=64)
    sB = pool.view(shape=(64, 64), dtype=lm.e4m3, stages=2, swizzle=64)
    main = lm.role(warps=[0])
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[main], consumers=[main])
    empty = lm.barrier(pipe, producers=[main], consumers=[main])
    acc = main.fragment(shape=(64, 64), dtype=lm.f32)
    a = main.fragment(shape=(64, 64), dtype=lm.e4m3)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 64)):
        with main:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.cp_async(A, coords=(tm * 64, k * 64), barrier=full)
                sB.cp_async(B, coords=(k * 64, tn * 64), barrier=full)
                lm.wait(full)
                lm.ldmatrix(a, sA)
                lm.mma(acc, a, sB, accumulate=k > 0, release=empty)  # error[CAKE-D002]: K-major only
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 64))
