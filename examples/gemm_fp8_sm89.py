"""FP8 (e4m3) GEMM C = A · Bᵀ for Ada (sm_89): the gemm_sm80 schedule with 8-bit inputs.

mma.sync m16n8k32 with e4m3 operands and f32 accumulation; a 64-wide e4m3 row is 64 B, one
64B-swizzle span, so the copy and ldmatrix patterns are those of the bf16 kernel byte for byte.
"""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
STAGES = 4
WM, WN = 64, 64


@cake.schedule(targets=["sm_89"])
def gemm_fp8(A: lm.tensor[lm.e4m3, "M", "K"],
             B: lm.tensor[lm.e4m3, "N", "K"],
             C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.e4m3, stages=STAGES, swizzle=64)
    sB = pool.view(shape=(BN, BK), dtype=lm.e4m3, stages=STAGES, swizzle=64)
    main = lm.role(warps=[0, 1, 2, 3])
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])
    empty = lm.barrier(pipe, producers=[main], consumers=[main])
    acc = main.fragment(shape=(WM, WN), dtype=lm.f32)
    a_frag = main.fragment(shape=(WM, BK), dtype=lm.e4m3)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.cp_async(A, coords=(tm * BM, k * BK), barrier=full)
                sB.cp_async(B, coords=(tn * BN, k * BK), barrier=full)
                lm.wait(full)
                lm.ldmatrix(a_frag, sA.rows((main.index // 2) * WM, WM))
                lm.mma(acc, a_frag, sB.rows((main.index % 2) * WN, WN).T,
                       accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + (main.index // 2) * WM, tn * BN + (main.index % 2) * WN))
