"""BF16 GEMM for Blackwell (sm_100a / sm_103a), persistent: the gemm_sm100 example with one CTA
per SM walking the tiles.

The TMEM accumulator has `ACC_STAGES` stages, one per tile in flight, taken in turn through the
`accpipe` pipeline: each role runs a one-iteration loop over `accpipe` per tile, so tile t uses
stage t mod ACC_STAGES. The MMA warp waits on `acc_empty` (that stage's) before a tile's first
MMA, and the epilogue arrives on it once its tcgen05.ld of the stage is done. Cake derives that
`acc_empty` starts free (its wait guards the MMAs that overwrite `acc`, and its only arriver
reads `acc`: language.md §11.3), so the first ACC_STAGES tiles do not wait. With two stages the
MMAs of tile t + 1 run while the epilogue drains tile t (double-buffered TMEM, 2 × BN of the
512 columns); with one, a tile's MMAs wait for the previous tile's epilogue. The loads run
ahead through the 4-stage ring either way. The epilogue reads EPI columns at a time
(`acc.cols(...)`, §9.7), so BN = 256 with two stages (all 512 columns) and EPI = 64 lowers too. No Blackwell GPU is available here: proven by ptxas
and the golden only.
"""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
STAGES = 4  # 4 × 32 KiB of operands
ACC_STAGES = 2  # accumulators in TMEM: 2 lets a tile's MMAs overlap the previous tile's epilogue
EPI = BN        # accumulator columns the epilogue loads and stores at a time (a multiple of 32)


@cake.schedule(targets=["sm_100a", "sm_103a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # 128 lanes (one per output row) × 128 f32 columns, per stage.
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32, stages=ACC_STAGES)

    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load])
    accpipe = lm.pipeline(stages=ACC_STAGES)  # one iteration per tile
    acc_full = lm.barrier(accpipe, producers=[mma], consumers=[epilogue])
    acc_empty = lm.barrier(accpipe, producers=[epilogue], consumers=[mma])

    out = epilogue.fragment(shape=(BM, EPI), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with mma:
            for _ in lm.range(1, pipeline=accpipe):
                lm.wait(acc_empty)
                d = acc.stage(accpipe.stage)       # the k loop below is over `pipe`
                for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                    lm.wait(full)
                    lm.mma(d, sA, sB.T, accumulate=k > 0, release=empty)
                lm.commit(acc_full)
        with epilogue:
            for _ in lm.range(1, pipeline=accpipe):
                lm.wait(acc_full)
                for c in range(BN // EPI):
                    lm.tmem_load(out, acc.cols(c * EPI, EPI))  # this loop's stage of `accpipe`
                    if c == BN // EPI - 1:
                        lm.arrive(acc_empty)       # the last columns are in registers
                    lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN + c * EPI))
