"""Fragments written from an MMA accumulator (docs/language.md §10.7), for the build test: `out`
and `twice` are placed by no MMA and declared without `rows=`; each takes the accumulator's
register layout from the value assigned to it (`twice` from a copy). Stream-K, so the copies are
taken after the fix-up (`CAKE-S027` otherwise): C = 3 · A · Bᵀ."""
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def accumulator_copy(A: lm.tensor[lm.bf16, 16, "K"],
                     B: lm.tensor[lm.bf16, "N", "K"],
                     C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    out = math.fragment(shape=(64, 16), dtype=lm.f32)
    twice = math.fragment(shape=(64, 16), dtype=lm.f32)
    KB = lm.cdiv(K, 64)
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)
            lm.stream_fixup(acc)
            out[:] = acc * 2.0
            twice[:] = out + acc
            if k1 == KB:
                lm.store(C, lm.cast(twice, lm.bf16), coords=(0, tn * 64), transpose=True)
