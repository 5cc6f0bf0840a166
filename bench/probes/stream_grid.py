"""Probe (issue #19): a bare evict-first TMA stream of a weight of M rows x K, cut into 64-row
tiles and SPLIT runs of K, one short CTA per (tile, run), PER_SM CTAs per SM. Nothing is computed
but a token MMA per stage, so the time is what streaming the weight costs on that grid: SPLIT = 1
is the swapped tinygemm's grid (one long CTA per tile); larger SPLIT gives many short CTAs that
the block scheduler hands out as SMs free up, as the GEMV's grid does. ORDER = 0 numbers a tile's
runs next to each other (a cluster split's order); ORDER = 1 the tiles of one run."""
import cake
from cake import lm

BM, BK = 64, 256
STAGES = 4
SPLIT = 1
PER_SM = 1
ORDER = 0
EVICT_FIRST = 1


@cake.schedule(targets=["sm_90a"], ctas_per_sm=PER_SM)
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warp=0)
    drain = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[drain])
    empty = lm.barrier(pipe, producers=[drain], consumers=[load])
    token = drain.fragment(shape=(64, 8), dtype=lm.f32)
    KB = lm.cdiv(lm.cdiv(K, BK), SPLIT)
    for t0, t1 in lm.tiles(SPLIT if ORDER == 0 else lm.cdiv(M, BM), lm.cdiv(M, BM) if ORDER == 0 else SPLIT):
        ks = t0 if ORDER == 0 else t1
        tm = t1 if ORDER == 0 else t0
        with load:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, (ks * KB + k) * BK), barrier=full,
                            evict="first" if EVICT_FIRST == 1 else None)
        with drain:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(full)
                lm.mma(token, sA.rows(0, 64), sA.rows(0, 8).T, accumulate=False, release=empty)
