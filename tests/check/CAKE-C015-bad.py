# CAKE-C015: an mma.sync target with a warpgroup role and a (64, N) accumulator, the wgmma shape
import cake
from cake import lm

BM, BN, BK = 64, 128, 32     # one warpgroup tile of 64 rows
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

    main = lm.role(warpgroup=0)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])    # completes on cp.async
    empty = lm.barrier(pipe, producers=[main], consumers=[main])   # completes on MMA release

    # Fragments are per replica: every warp of `main` holds its own copy.
    # A warpgroup-wide (64, 128) accumulator: the wgmma shape, which sm_80 has no instruction for.
    acc = main.fragment(shape=(64, BN), dtype=lm.f32)
    a_frag = main.fragment(shape=(64, BK), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)                                   # the stage's last MMAs retired
                sA.cp_async(A, coords=(tm * BM, k * BK), barrier=full)
                sB.cp_async(B, coords=(tn * BN, k * BK), barrier=full)
                lm.wait(full)                                    # every thread's copies landed
                lm.ldmatrix(a_frag, sA.rows(0, 64))
                lm.mma(acc, a_frag, sB.T, accumulate=k > 0, release=empty)  # error[CAKE-C015]
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * BM, tn * BN))
