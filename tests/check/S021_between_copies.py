# CAKE-S021: the wait on `full` sits between the two copies that complete it
import cake
from cake import lm

BM, BN, BK = 128, 128, 32     # a 32-wide bf16 row is 64 B: one 64B-swizzle span
STAGES = 4                    # 4 × (8 KiB + 8 KiB) = 64 KiB: fits sm_89's 99 KiB
WM, WN = 64, 64               # per-warp output tile


def warp_row(index):
    # Warps 0, 1 take the upper 64 rows of the tile, warps 2, 3 the lower 64.
    return (index // 2) * WM


def warp_col(index):
    return (index % 2) * WN


@cake.schedule(targets=["sm_80", "sm_89"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=64)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=64)

    main = lm.role(warps=[0, 1, 2, 3])

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])    # completes on cp.async
    empty = lm.barrier(pipe, producers=[main], consumers=[main])   # completes on MMA release

    # Fragments are per replica: every warp of `main` holds its own copy.
    acc = main.fragment(shape=(WM, WN), dtype=lm.f32)
    a_frag = main.fragment(shape=(WM, BK), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)                                   # the stage's last MMAs retired
                sA.cp_async(A, coords=(tm * BM, k * BK), barrier=full)
                lm.wait(full)  # error[CAKE-S021]: completes on `full` after the wait
                sB.cp_async(B, coords=(tn * BN, k * BK), barrier=full)
                lm.ldmatrix(a_frag, sA.rows(warp_row(main.index), WM))
                lm.mma(acc, a_frag, sB.rows(warp_col(main.index), WN).T,
                       accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + warp_row(main.index), tn * BN + warp_col(main.index)))
