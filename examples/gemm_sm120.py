"""BF16 GEMM C = A · Bᵀ (f32 accumulation) for consumer Blackwell (sm_120a / sm_121a): TMA +
mma.sync, the shape of an sm_90a kernel without wgmma.

These GPUs have TMA and mbarrier transaction counts like Hopper, but their tensor cores are fed
by the warp-synchronous mma.sync (no wgmma, no tcgen05/TMEM). So a producer warp streams the A and
B tiles into a 3-stage ring with TMA (completion counted in bytes on `full`), and four consumer
warps each own a 64 × 64 quarter of the 128 × 128 output tile: per K step a consumer waits for
the stage, loads its 64 rows of A into registers with ldmatrix, issues mma.sync with B read from
the stage (the lowering derives B's ldmatrix loads) and releases the stage on `empty`.

Shared memory: 3 × (16 KiB + 16 KiB) = 96 KiB, inside the 99 KiB these GPUs give one block.
No GPU of this family exists here: the example is proven by ptxas accepting it and by its golden
CUDA, not by a run.
"""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64     # a 64-wide bf16 row is 128 B: one 128B-swizzle span
STAGES = 3
WM, WN = 64, 64               # per-warp output tile


def warp_row(index):
    return (index // 2) * WM


def warp_col(index):
    return (index % 2) * WN


@cake.schedule(targets=["sm_120a", "sm_121a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warps=[0])
    math = lm.role(warps=[1, 2, 3, 4])

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])    # completes on TMA bytes
    empty = lm.barrier(pipe, producers=[math], consumers=[load])   # released by the MMAs

    acc = math.fragment(shape=(WM, WN), dtype=lm.f32)
    a_frag = math.fragment(shape=(WM, BK), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.ldmatrix(a_frag, sA.rows(warp_row(math.index), WM))
                lm.mma(acc, a_frag, sB.rows(warp_col(math.index), WN).T,
                       accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + warp_row(math.index), tn * BN + warp_col(math.index)))
