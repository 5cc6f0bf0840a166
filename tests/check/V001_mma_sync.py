# CAKE-V001 on the mma.sync generator (sm_89): constructs it does not lower yet are coverage notes
# on their own lines, never a crash — here an ldmatrix of a transposed FP8 view (ldmatrix .trans
# moves 16-bit elements; a bf16 one lowers, examples/gemm_tn_sm80.py).
import cake
from cake import lm


@cake.schedule(targets=["sm_89"])
def gemm(A: lm.tensor[lm.e4m3, "K", "M"],
         B: lm.tensor[lm.e4m3, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sAt = pool.view(shape=(64, 64), dtype=lm.e4m3, stages=2, swizzle=64)
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
                sAt.cp_async(A, coords=(k * 64, tm * 64), barrier=full)
                sB.cp_async(B, coords=(tn * 64, k * 64), barrier=full)
                lm.wait(full)
                lm.ldmatrix(a, sAt.T)  # note[CAKE-V001]: ldmatrix.trans, which moves 16-bit elements
                lm.mma(acc, a, sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 64))
