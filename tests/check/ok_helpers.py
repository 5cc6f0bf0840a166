# Helpers: defaults, keywords, helpers calling helpers, and recursion that ends at compile
# time (the near miss of CAKE-L014).
import cake
from cake import lm

BM, BN, BK = 128, 128, 64


def pow2(n):
    if n == 0:
        return 1
    return 2 * pow2(n - 1)


def rows_of(index, rows=64):
    return index * rows


def tile_origin(tm, tn, bm=BM, bn=BN):
    return (tm * bm, tn * bn)


def first(pair):
    return pair[0]


def stage_count():
    return max(2, min(pow2(2), 8))


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    stages = stage_count()
    assert stages == 4, "pow2(2) is 4"
    assert pow2(6) == BK
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=stages, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=stages, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=stages)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        m0, n0 = tile_origin(tm, tn)
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(m0, k * BK), barrier=full)
                sB.tma_load(B, coords=(first(tile_origin(tn, tm, bm=BN)), k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(rows_of(math.index), 64), sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(m0 + rows_of(index=math.index), n0))
