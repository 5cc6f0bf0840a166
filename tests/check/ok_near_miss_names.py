# Names one edit apart are all defined: nothing here is a typo, so nothing is suggested.
"""Docstrings are fine at the top of the module and of a function."""
import cake
from cake import lm

TILE = 128
TILES = 2
BK = 64
BK2 = BK * 2


@cake.schedule(targets=["sm_90a"], persistent=False, cluster=(1, 1, 1))
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    """A GEMM whose names are deliberately close to each other."""
    pool = lm.smem()
    sA = pool.view(shape=(TILE, BK), dtype=lm.bf16, stages=TILES, swizzle=128)
    sB = pool.view(shape=(TILE, BK), dtype=lm.bf16, stages=TILES, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    loads = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=TILES)
    full = lm.barrier(pipe, producers=[load], consumers=[loads])
    fulls = lm.barrier(pipe, producers=[loads], consumers=[load])
    acc = loads.fragment(shape=(64, TILE), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, TILE)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(fulls)
                sA.tma_load(A, coords=(tm * 64, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * TILE, k * BK), barrier=full)
        with loads:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(0, 64), sB.T, accumulate=k > 0, release=fulls)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * TILE))
