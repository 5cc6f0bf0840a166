"""BF16 GEMM C = Aᵀ · B (f32 accumulation) for Ampere and Ada with A stored (K, M) and B stored
(K, N): the weight gradient of examples/gemm_tn_sm90.py on mma.sync. examples/gemm_sm80.py's
schedule (one role of four warps, a 2 × 2 warp grid of 64 × 64 quarters, a cp.async ring) with
both operands MN-major: each is read with `ldmatrix.trans`, which hands mma.sync's K-major
registers the transpose of what is stored (docs/language.md §9.5, §9.6).

A warp's 64 columns of A (its rows of M) and of B are a column block of the stored tile, so
both tiles are stacked along the views' rows as (BK, 64) blocks, one cp.async box each: warp w
multiplies `sA.rows((w // 2) * BK, BK).T` by `sB.rows((w % 2) * BK, BK)`."""
import cake
from cake import lm

BM, BN, BK = 128, 128, 32
STAGES = 4                    # 4 × (8 KiB + 8 KiB) = 64 KiB: fits sm_89's 99 KiB
WM, WN = 64, 64               # per-warp output tile


@cake.schedule(targets=["sm_80", "sm_89"])
def gemm(A: lm.tensor[lm.bf16, "K", "M"],
         B: lm.tensor[lm.bf16, "K", "N"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    # The (BK, 128) tiles of A and B as two (BK, 64) blocks each, stacked along the rows.
    sA = pool.view(shape=(2 * BK, WM), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(2 * BK, WN), dtype=lm.bf16, stages=STAGES, swizzle=128)

    main = lm.role(warps=[0, 1, 2, 3])

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])    # completes on cp.async
    empty = lm.barrier(pipe, producers=[main], consumers=[main])   # completes on MMA release

    acc = main.fragment(shape=(WM, WN), dtype=lm.f32)
    a_frag = main.fragment(shape=(WM, BK), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.rows(0, BK).cp_async(A, coords=(k * BK, tm * BM), barrier=full)
                sA.rows(BK, BK).cp_async(A, coords=(k * BK, tm * BM + WM), barrier=full)
                sB.rows(0, BK).cp_async(B, coords=(k * BK, tn * BN), barrier=full)
                sB.rows(BK, BK).cp_async(B, coords=(k * BK, tn * BN + WN), barrier=full)
                lm.wait(full)
                lm.ldmatrix(a_frag, sA.rows((main.index // 2) * BK, BK).T)
                lm.mma(acc, a_frag, sB.rows((main.index % 2) * BK, BK),
                       accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + (main.index // 2) * WM, tn * BN + (main.index % 2) * WN))
