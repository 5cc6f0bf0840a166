"""Probe (issue #19, M = 128): the swapped tinygemm's loop (examples/tinygemm_sm90.py, 64-row
weight tiles, one long CTA per tile, unsplit) taken apart. The producer streams the weight
evict-first and, with TOKENS = 1, the M tokens' K-slice beside it into every stage, as the GEMM
does; the consumer either runs the GEMM's MMAs (MMA = 1: the 64 x MP accumulator over every stage)
or one 64 x 8 MMA per stage that only releases it (MMA = 0). The epilogue stores one f32 per weight
row (the accumulator's row sums, so that ptxas keeps the MMAs), not the tile.

    weight alone            TOKENS = 0, MMA = 0   (what bench/probes/stream_grid.py times)
    weight + tokens         TOKENS = 1, MMA = 0   (the tokens' L2 reads)
    weight + tokens + MMA   TOKENS = 1, MMA = 1   (the GEMM's loop without its store)

Differences between them, and against the GEMM itself, say which part sets the GEMM's time."""
import cake
from cake import lm

M = 128                                 # tokens
MP = (M + 7) // 8 * 8                   # wgmma's N: M rounded up to 8
BK = 64
STAGES = 8
TOKENS = 1
MMA = 1


@cake.schedule(targets=["sm_90a"])
def tokens_stream(A: lm.tensor[lm.bf16, M, "K"], B: lm.tensor[lm.bf16, "N", "K"],
                  OUT: lm.tensor[lm.f32, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sX = pool.view(shape=(MP, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, MP if MMA == 1 else 8), dtype=lm.f32)
    KB = lm.cdiv(K, BK)
    for tn in lm.tiles(lm.cdiv(N, 64)):
        with load:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * BK), barrier=full, evict="first")
                if TOKENS == 1:
                    sX.tma_load(A, coords=(0, k * BK), barrier=full)
        with math:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(full)
                if MMA == 1:
                    lm.mma(acc, sW, sX.T, accumulate=k > 0, release=empty)
                else:
                    lm.mma(acc, sW, sW.rows(0, 8).T, accumulate=False, release=empty)
            # One sum per weight row keeps the accumulator live: without a use of it, ptxas
            # replaces the MMAs by empty HGMMA placeholders (seen in the SASS of the first build).
            lm.store(OUT, lm.sum(acc, axis=1), coords=(tn * 64,))
