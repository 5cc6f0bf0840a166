"""Row-wise scales on the mma.sync accumulator (sm_89): examples/gemm_fp8_sm89.py with C scaled by
one f32 per row of A and one per row of B in the epilogue, each warp reading the rows and columns
of its 64 × 64 fragment (per-row rows 16·mt + lane/4 and + 8)."""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
STAGES = 4
WM, WN = 64, 64


@cake.schedule(targets=["sm_89"])
def gemm_fp8(A: lm.tensor[lm.e4m3, "M", "K"],
             B: lm.tensor[lm.e4m3, "N", "K"],
             SA: lm.tensor[lm.f32, "M"],
             SB: lm.tensor[lm.f32, "N"],
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
            row0 = tm * BM + (main.index // 2) * WM
            col0 = tn * BN + (main.index % 2) * WN
            sa = lm.load(SA, coords=(row0,), shape=(WM,))
            sb = lm.load(SB, coords=(col0,), shape=(WN,))
            lm.store(C, lm.cast(acc * sa[:, None] * sb[None, :], lm.bf16), coords=(row0, col0))
