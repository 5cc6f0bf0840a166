"""BF16 GEMM C = A · Bᵀ (f32 accumulation) for Ampere and Ada: cp.async + ldmatrix + mma.sync.

One role of four warps does everything, the way a classic Ampere kernel does: each warp owns a
64 × 64 quarter of the 128 × 128 output tile (a 2 × 2 warp grid). Per K step the role copies the
A and B tiles into one stage of a 4-stage shared-memory ring with cp.async (completion is
signalled on the stage's `full` mbarrier), waits for them, loads its 64 rows of A into registers
with ldmatrix and issues the MMA with B read from shared memory. The MMA's `release=empty`
frees the stage again; `empty` is released only by MMAs, so its stages start free and the first
`lm.wait(empty)` on each stage passes.

`AHEAD` is how many k-steps early the role issues a step's copies (`with lm.ahead(AHEAD):`,
docs/language.md §8.3a): at 0 the copy of step k is waited for in the iteration that issues it,
so a warp's copy and math do not overlap (only the ring lets a warp that finished its MMAs start
the next copy while slower warps still read the previous stage); at STAGES - 1 the classic
multistage pipeline keeps three steps' copies in flight while the warps compute on a fourth
(1.20-1.55x faster than 0 on an H100 through the JIT, bench/results/2026-12-13-ahead/).

`B_REGS` says where the MMA's `b` comes from. At 0 it is the stage's view: the lowering loads B's
registers as the MMAs need them (one ldmatrix.x4 from sB per pair of 8-column tiles and k-step,
no .trans) and `release=empty` frees the stage after the MMAs. At 1 the warp loads both operands
into registers with `lm.ldmatrix` (docs/language.md §9.5) and frees the stage before its MMAs, as
a hand-written Ampere kernel does, at the cost of holding B's registers too.
"""
import cake
from cake import lm

BM, BN, BK = 128, 128, 32     # a 32-wide bf16 row is 64 B: one 64B-swizzle span
STAGES = 4                    # 4 × (8 KiB + 8 KiB) = 64 KiB: fits sm_89's 99 KiB
AHEAD = STAGES - 1            # k-steps whose copies are in flight ahead of the one computed on
WM, WN = 64, 64               # per-warp output tile
B_REGS = 1  # 1: B loaded into registers too, and the stage freed before the MMAs


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
    if B_REGS:
        b_frag = main.fragment(shape=(BK, WN), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with main:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                with lm.ahead(AHEAD):                            # issued AHEAD iterations early
                    lm.wait(empty)                               # the stage's last MMAs retired
                    sA.cp_async(A, coords=(tm * BM, k * BK), barrier=full)
                    sB.cp_async(B, coords=(tn * BN, k * BK), barrier=full)
                lm.wait(full)                                    # every thread's copies landed
                lm.ldmatrix(a_frag, sA.rows(warp_row(main.index), WM))
                if B_REGS:
                    lm.ldmatrix(b_frag, sB.rows(warp_col(main.index), WN).T)
                    lm.arrive(empty)                             # the stage's reads are done
                    lm.mma(acc, a_frag, b_frag, accumulate=k > 0)
                else:
                    lm.mma(acc, a_frag, sB.rows(warp_col(main.index), WN).T,
                           accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + warp_row(main.index), tn * BN + warp_col(main.index)))
